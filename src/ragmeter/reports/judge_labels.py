"""Which judges behind a run's numbers are not graders: the offline demonstration judge and
``ragmeter serve mock-judge`` (random test replies). Reports, the Markdown summary and the dashboard
label their numbers and give them no quality band."""

from __future__ import annotations

from html import escape

from ragmeter.reports.i18n import t
from ragmeter.results.store import StoredRun


def is_demo(run: StoredRun) -> list[str]:
    """Names of demo judges behind this run's numbers (empty when none)."""
    names = list(run.meta.get("demo_judges") or [])
    for rec in run.tiers.values():
        for res in rec.results:
            if res.meta.get("demo") or res.meta.get("demo_judge"):
                names.append(str(res.meta.get("judge") or res.name))
            for mr in res.results.values():
                sig = mr.signature.as_dict()
                if sig.get("demo") == "yes" or sig.get("judge_demo") == "yes":
                    names.append(sig.get("judge") or res.name)
    return sorted(set(names))


def is_mock(run: StoredRun) -> list[str]:
    """Names of judges whose replies behind this run's numbers came from ``ragmeter serve mock-judge``
    (random test replies; ``mock:yes`` in the signature), empty when none."""
    names = set()
    for rec in run.tiers.values():
        for res in rec.results:
            for mr in res.results.values():
                sig = mr.signature.as_dict()
                if sig.get("mock") == "yes":
                    names.add(sig.get("judge") or res.name)
    return sorted(names)


def mock_banner(run: StoredRun, lang: str) -> str:
    """The report's (and dashboard's) banner over numbers from mock replies ('' when none)."""
    names = is_mock(run)
    if not names:
        return ""
    return ('<div class="banner demo" id="mock-banner">'
            + escape(t("mock_banner", lang, names=", ".join(names))) + "</div>")


__all__ = ["is_demo", "is_mock", "mock_banner"]
