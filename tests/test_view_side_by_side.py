"""Side by side and the diff: one question's answers, contexts (gold marked) and the judge's
claims with verdicts in two runs next to each other; the diff lists regressions and
improvements, each with its metric's paired test."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

from ragmeter.results.records import EvalResult
from ragmeter.results.store import ResultStore

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _judged(verdict: int, reason: str) -> EvalResult:
    details = [{"answer_claims": ["Leave is filed in the HR portal.", "It takes 3 days."],
                "verdicts": {"answer_in_context": [1, verdict]},
                "verdict_reasons": {"answer": ["the portal is in context 1", reason]}}
               for _ in range(4)]
    res = EvalResult("judge-main", meta={"tier": "generation"})
    res.add(builders.metric("faithfulness", [0.5 + verdict / 2] * 4, details=details))
    return res


def _run(run_id: str, day: int, answer: str, verdict: int, mrr: list[float]):
    run = builders.make_run(run_id, n=4)
    run.created_at = f"2026-03-{day:02d}T00:00:00+00:00"
    run.tiers["generation"].results = [_judged(verdict, "stated" if verdict else
                                               "no context mentions 3 days")]
    bm25 = run.tiers["retrieval"].results[0]
    bm25.results["mrr"] = builders.metric("mrr", mrr)
    for sid, s in run.samples.items():
        s["response"] = f"{answer} ({sid})"
        s["retrieved_contexts"] = ["HR portal handles leave.", "Canteen menu."]
        s["retrieved_ids"] = ["d1", "d9"]
        s["gold_doc_ids"] = ["d1"]
    return run


def _app(tmp_path):
    from ragmeter.view import make_app

    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultStore(url)
    store.save_run(_run("run-a", 1, "Use the HR portal; takes 3 days", 0,
                        [1.0, 0.5, 0.2, 0.3]))
    store.save_run(_run("run-b", 2, "File it in the HR portal", 1, [0.2, 0.5, 1.0, 0.3]))
    store.engine.dispose()
    store._write_engine.dispose()
    return make_app(url, lang="en")


async def _get(app, paths):
    from aiohttp.test_utils import TestClient, TestServer

    async with TestClient(TestServer(app)) as client:
        return {p: ((r := await client.get(p)).status, await r.text()) for p in paths}


def test_side_by_side_shows_answers_gold_contexts_and_claims(tmp_path):
    side = "/side?run=run-a&run=run-b&sample=q2"
    got = asyncio.run(_get(_app(tmp_path), [side, "/side", "/side?run=ghost"]))
    status, html = got[side]
    assert status == 200
    cols = html.split("<section class=side-col")[1:]
    assert len(cols) == 2
    assert "Use the HR portal; takes 3 days (q2)" in cols[0]
    assert "File it in the HR portal (q2)" in cols[1]
    for col in cols:  # d1 is gold, d9 is not
        assert re.search(r"<li class=gold><b class=gold-mark>★ gold</b> <code>d1</code>", col)
        assert "<li><code>d9</code> Canteen menu.</li>" in col
        assert "<table class=claims>" in col and "It takes 3 days." in col
    assert "<td class=no>✗ no</td><td>no context mentions 3 days</td>" in cols[0]
    assert "<td class=yes>✓ yes</td><td>stated</td>" in cols[1]
    assert "&quot;verdicts&quot;" not in html and '"verdicts"' not in html  # not raw JSON
    assert got["/side"][0] == 200 and got["/side"][1].count("<section class=side-col") == 2
    assert got["/side?run=ghost"][0] == 400


def test_diff_lists_regressions_and_improvements_with_the_paired_test(tmp_path):
    got = asyncio.run(_get(_app(tmp_path), ["/diff?a=run-a&b=run-b"]))
    status, html = got["/diff?a=run-a&b=run-b"]
    assert status == 200
    reg = html.split("id=sample-regressions", 1)[1].split("</table>", 1)[0]
    imp = html.split("id=sample-improvements", 1)[1].split("</table>", 1)[0]
    def rows(table, kind):
        return {(m.group(1), m.group(2)) for m in re.finditer(
            rf'class=sample-{kind} data-sample="(\w+)".*?<code>([^<]+)</code></td><td class=num>',
            table)}
    worse, better = rows(reg, "regression"), rows(imp, "improvement")
    assert ("q1", "mrr") in worse and ("q1", "mrr") not in better  # mrr 1.0 → 0.2
    assert ("q3", "mrr") in better and ("q3", "mrr") not in worse  # mrr 0.2 → 1.0
    for table in (reg, imp):
        assert "p=" in table and "Δ " in table  # each row with its metric's paired test
        assert "/side?run=run-a&amp;run=run-b&amp;sample=" in table
    assert "faithfulness" in imp  # every sample's faithfulness improved (0.5 → 1.0)


def test_gold_flags_by_id_grade_and_reference_text():
    from ragmeter.view.side import gold_flags

    s = {"gold_chunk_ids": ["c2"], "gold_grades": {"c3": 2, "c4": 0},
         "reference_contexts": ["exact text"]}
    assert gold_flags(s, ["c1", "c2", "c3", "c4", "c5"],
                      ["a", "b", "c", "d", "exact text"]) == [False, True, True, False, True]
    assert not np.any(gold_flags({}, ["x"], ["y"]))


def test_sample_page_shows_the_reasoning_readably(tmp_path):
    got = asyncio.run(_get(_app(tmp_path), ["/run/run-a/sample/q1"]))
    status, html = got["/run/run-a/sample/q1"]
    assert status == 200
    assert "<table class=claims>" in html and "It takes 3 days." in html
    assert "<td class=no>✗ no</td><td>no context mentions 3 days</td>" in html
    # the raw JSON only inside its folded block
    before_raw = html.split("all details (JSON)", 1)[0]
    assert "&quot;verdicts&quot;" not in before_raw
