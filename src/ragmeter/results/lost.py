"""Lost work: values a command meant to compute but lost to backend or parse errors.

An unscored value has a reason. Some reasons are properties of the data — the sample has no
reference, no gold, an empty question (``missing_field:*``, ``empty_input``, ``no_gold`` …):
scoring it again gives the same answer, and the gap is the dataset's. Others say the work
itself failed — the judge's server answered 5xx, timed out, could not be reached, or replied
with text that is not the JSON it was asked for. Those values are *lost*: the mean of the
remaining ones is computed on a silently smaller, possibly biased sample.

:func:`lost_work` counts them per metric and per reason; :func:`check_lost` fails the
command (exit 3, :class:`~ragmeter.errors.WorkFailedError`) when a metric lost more than a
small share of its attempted values (scored + lost), with a per-reason summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import WorkFailedError

#: a call to the user's own system (a target) that gave no usable reply: a reply that is not
#: JSON (an HTML error page, a cut-off body), one without a declared field, 5xx / 429 / a
#: timeout after the retries, an exception or a crash of a Python / command target, ...
TARGET_LOST_REASONS: frozenset[str] = frozenset({
    "target_unreachable", "target_timeout", "target_http_4xx", "target_http_5xx",
    "target_rate_limited", "target_bad_reply", "target_unmapped", "target_error",
    "target_not_recorded", "target_budget", "target_circuit_open", "target_reply_too_large",
    "target_redirected",
})

#: unscored reasons that mean the work failed (judge engine, generator, embedding backends,
#: the target's calls)
LOST_REASONS: frozenset[str] = frozenset({
    "parse_error", "schema_error", "truncated", "timeout", "rate_limited", "http_5xx",
    "http_4xx", "connection_error", "backend_error", "generation_error", "embedding_error",
}) | TARGET_LOST_REASONS

#: the transport part only: where an unparseable reply is itself the finding (a production
#: judge's recorded replies graded by the judge-pipeline tier), parse failures are results
TRANSPORT_REASONS: frozenset[str] = LOST_REASONS - {"parse_error", "schema_error", "truncated"}

#: the share of a metric's attempted values that may be lost before the command fails
DEFAULT_MAX_LOST = 0.02


def is_lost(reason: str | None, reasons: frozenset[str] = LOST_REASONS) -> bool:
    """Whether an unscored reason means lost work (``parse_error``, ``http_5xx``, …) rather
    than a property of the data (``missing_field:reference``, ``empty_input``, ``no_gold``)."""
    return reason is not None and reason.split(":", 1)[0] in reasons


@dataclass(frozen=True)
class MetricLoss:
    """One metric's lost values: how many, of how many attempted, and why."""

    metric: str
    lost: int
    attempted: int
    by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float:
        return self.lost / self.attempted if self.attempted else 0.0

    def line(self) -> str:
        reasons = ", ".join(f"{k}×{v}" for k, v in sorted(self.by_reason.items(),
                                                           key=lambda kv: (-kv[1], kv[0])))
        return (f"{self.metric}: {self.lost} of {self.attempted} values lost "
                f"({self.share:.1%}; {reasons})")


def lost_work(results: Iterable[Any], *, reasons: frozenset[str] = LOST_REASONS,
              prefix: str = "") -> list[MetricLoss]:
    """Per metric result (objects with ``metric``/``name`` and ``aggregate``) that lost any
    value: its :class:`MetricLoss` (``prefix`` is put before the metric's name)."""
    out = []
    for r in results:
        a = getattr(r, "aggregate", None)
        if a is None:
            continue
        by_reason: Counter[str] = Counter()
        for k, v in dict(a.unscored_by_reason).items():
            if is_lost(k, reasons):   # counted by reason (``target_bad_reply``), not by detail
                by_reason[str(k).split(":", 1)[0]] += int(v)
        lost = sum(by_reason.values())
        if lost:
            name = str(getattr(r, "metric", None) or getattr(r, "name", "?"))
            out.append(MetricLoss(prefix + name, lost, int(a.n) + lost, dict(by_reason)))
    return out


def scored_nothing(results: Iterable[Any]) -> str | None:
    """Why a step produced no value at all — every metric of every result scored no sample
    though some were tried — as ``"no value scored (timeout×36, ...)"``; None otherwise."""
    reasons: Counter[str] = Counter()
    tried = False
    for res in results:
        for r in getattr(res, "results", {}).values():
            a = r.aggregate
            if a.n:
                return None
            tried = tried or a.n_unscored > 0
            reasons.update(dict(a.unscored_by_reason))
    if not tried:
        return None
    return "no value scored (" + ", ".join(f"{k}×{v}" for k, v in reasons.most_common(4)) + ")"


def check_lost(losses: Iterable[MetricLoss], max_lost: float = DEFAULT_MAX_LOST) -> list[str]:
    """Raise :class:`WorkFailedError` (exit 3) when a metric lost more than ``max_lost`` of its
    attempted values to backend or parse errors (see :func:`lost_work`); else return warning
    lines for smaller losses."""
    losses = list(losses)
    over = [m for m in losses if m.share > max_lost]
    if over:
        total: Counter[str] = Counter()
        for m in losses:
            total.update(m.by_reason)
        summary = ", ".join(f"{k}×{v}" for k, v in total.most_common())
        raise WorkFailedError(
            f"values lost to backend or parse errors above --max-lost {max_lost:g}:\n  "
            + "\n  ".join(m.line() for m in over)
            + f"\n  by reason (all metrics): {summary}"
            + "\n  the results were written; rerun to retry the lost calls (replies that "
              "were scored come from the cache), or pass --max-lost to accept the loss")
    return [m.line() for m in losses]


__all__ = [
    "DEFAULT_MAX_LOST",
    "LOST_REASONS",
    "TARGET_LOST_REASONS",
    "TRANSPORT_REASONS",
    "MetricLoss",
    "check_lost",
    "is_lost",
    "lost_work",
    "scored_nothing",
]
