"""Judge cards stored with a run are shown: the HTML report's "Judge card" section (with the
bias-corrected estimate beside the raw judge mean), the Markdown summary, ``ragmeter view``'s
run page through the same renderer, and the viewer's judges page comparing cards of runs."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import numpy as np

from ragmeter.judge_trust.card import card_from_values
from ragmeter.judge_trust.labels import labels_from_records
from ragmeter.judge_trust.ppi import ppi_estimates
from ragmeter.judge_trust.runs import TIER, attach_to_run, judged_values, trust_result
from ragmeter.reports.html import render_run_html
from ragmeter.reports.markdown import run_markdown
from ragmeter.reports.tiers_view import tier_title
from ragmeter.results.store import ResultStore

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _labelled_run(run_id: str, judge: str, lenient: float = 0.0):
    """A run whose faithfulness is labelled by humans on 20 of its 30 samples."""
    run = builders.make_run(run_id)
    fa = run.tiers["generation"].results[0].results["faithfulness"]
    rng = np.random.default_rng(11)
    recs = []
    for i, (sid, v) in enumerate(zip(fa.sample_ids[:20], fa.values[:20], strict=True)):
        y = int(rng.random() < 0.2) if np.isnan(v) else int(v - lenient >= 0.75)
        recs.append((i + 1, {"sample_id": sid, "metric": "faithfulness", "label": y}))
    labels = labels_from_records(recs, "labels.jsonl")
    values, reasons, _ = judged_values(run, labels)
    card = card_from_values(values, labels, judge=judge, model=f"{judge}-model",
                            reasons=reasons, n_boot=200)
    est = ppi_estimates(values, labels, target_width=0.05)
    return run, card, est, trust_result(card, labels, values, est)


def test_report_shows_the_stored_card_with_the_corrected_estimate(tmp_path: Path) -> None:
    store = ResultStore(f"sqlite:///{tmp_path / 's.sqlite'}")
    run, card, est, res = _labelled_run("run-card", "judge-a")
    store.save_run(run)
    attach_to_run(store, run.id, res)
    stored = store.load_run(run.id)
    assert TIER in stored.tiers
    html = render_run_html(stored, lang="en")
    sec = html[html.index("<section id=judge-card>"):]
    sec = sec[:sec.index("</section>")]
    m = card.metrics["faithfulness"]
    assert "Judge card" in sec and "judge-a" in sec and card.signature in sec
    assert f"<td class=num>{m.n}" in sec
    for stat in ("accuracy", "kappa", "auc", "tpr", "tnr", "mae"):
        e = m.stats[stat]
        assert f"{e.value:.3f}" in sec, stat
    acc = m.stats["accuracy"]
    assert f"[{acc.ci_low:.3f}, {acc.ci_high:.3f}]" in sec
    assert {"lenient": "lenient", "strict": "strict"}.get(m.bias_direction,
                                                          m.bias_direction) in sec
    p = est["faithfulness"].estimate
    assert "Bias-corrected estimates" in sec
    assert f"{p.judge_mean:.3f}" in sec and f"<b>{p.estimate:.3f}</b>" in sec
    assert f"[{p.ci_low:.3f}, {p.ci_high:.3f}]" in sec
    # the cards' tier is not a decision between systems; its title is readable
    assert 'id="decision-judge_trust"' not in html
    assert tier_title(TIER, "en") == "Judge card" and tier_title(TIER, "ru") == "Карточка судьи"
    ru = render_run_html(stored, lang="ru")
    assert "Карточка судьи" in ru and "Оценки с поправкой на смещение" in ru
    md = run_markdown(stored, lang="en")
    assert "### Judge card: judge-a (`judge-a-model`)" in md
    line = next(x for x in md.splitlines() if x.startswith("| `faithfulness` | "))
    assert f"| {m.n} | {acc.value:.3f} |" in line and f"{p.estimate:.3f}" in line
    assert "Карточка судьи" in run_markdown(stored, lang="ru")


def test_report_without_card_has_no_section() -> None:
    run = builders.make_run("plain")
    assert "id=judge-card" not in render_run_html(run, lang="en")
    assert "Judge card" not in run_markdown(run, lang="en")


def test_view_run_page_and_judges_page_show_cards(tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    for rid, judge, shift in (("run-a", "judge-a", 0.0), ("run-b", "judge-b", 0.2)):
        run, _card, _est, res = _labelled_run(rid, judge, shift)
        store.save_run(run)
        attach_to_run(store, rid, res)
    store.save_run(builders.make_run("run-none"))

    async def go() -> dict[str, tuple[int, str]]:
        out = {}
        async with TestClient(TestServer(make_app(url, lang="en"))) as client:
            for path in ("/run/run-a", "/judges", "/judges?stat=mae&lang=ru", "/run/run-none"):
                resp = await client.get(path)
                out[path] = (resp.status, await resp.text())
        return out

    pages = asyncio.run(go())
    status, body = pages["/run/run-a"]
    assert status == 200 and "<section id=judge-card>" in body and "judge-a" in body
    status, body = pages["/judges"]
    assert status == 200 and "judge-a" in body and "judge-b" in body
    table = body[body.index("<table class=judges>"):body.index("</table>")]
    assert table.count("<tr><td><code>faithfulness</code>") == 2 and "run-none" not in table
    status, body = pages["/judges?stat=mae&lang=ru"]
    assert status == 200 and "Судьи" in body and "MAE" in body
    assert "id=judge-card" not in pages["/run/run-none"][1]
