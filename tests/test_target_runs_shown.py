"""A run on the user's own systems is shown as it was scored: the side-by-side view, the sample
page, DataFrames and failed-gate messages show each target's own answer, the contexts it
returned (ids with "text not returned" when it returned ids alone) and the call's latency,
labelled with the target's name — never the dataset's recorded answer. Graded judge metrics
keep the judge's reason."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragmeter.runner.config import parse_config
from ragmeter.runner.engine import run_benchmark
from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig

RECORDED = "RECORDED ANSWER FROM THE DATASET"


def ab_run(tmp_path: Path, n: int = 8) -> tuple[str, Any]:
    """A real A/B run of two reference services over HTTP: ``short`` answers one sentence
    and returns its contexts' text, ``long`` answers three sentences, a little slower, and
    returns context ids only. Every sample of the dataset has a recorded answer of its own."""
    rows = [json.loads(x) for x in (DATA / "evalset.jsonl").read_text(encoding="utf-8")
            .splitlines() if x.strip()][:n]
    data = tmp_path / "samples.jsonl"
    data.write_text("\n".join(json.dumps({
        "id": r["id"], "user_input": r["question"], "reference": r.get("reference") or "",
        "response": f"{RECORDED} {r['id']}", "gold_doc_ids": r.get("gold_doc_ids"),
        "gold_chunk_ids": r.get("gold_chunk_ids")}, ensure_ascii=False) for r in rows) + "\n",
        encoding="utf-8")
    store = tmp_path / "store.sqlite"
    with ExampleService(ServiceConfig(sentences=1)) as a, \
            ExampleService(ServiceConfig(sentences=3, latency_s=0.02)) as b:
        cfg = parse_config({
            "name": "ab-targets", "k": [1, 5], "batch_size": 4, "seed": 7, "tags": ["ab-test"],
            "run_dir": str(tmp_path / "runs"), "store": str(store),
            "datasets": [{"name": "main", "path": str(data), "format": "samples"}],
            "targets": [
                {"name": "short", "kind": "http", "url": a.url + "/answer"},
                {"name": "long", "kind": "http", "url": b.url + "/answer",
                 "response": {"answer": "answer", "context_ids": "context_ids"}}],
            "tiers": [{"name": "e2e", "metrics": ["rouge_l", "id_context_recall@5"]}]},
            base_dir=tmp_path)
        run = run_benchmark(cfg)
    return f"sqlite:///{store}", run


@pytest.fixture(scope="module")
def ab(tmp_path_factory):
    return ab_run(tmp_path_factory.mktemp("ab"))


def _get(url: str, paths: list[str]) -> dict[str, tuple[int, str]]:
    from aiohttp.test_utils import TestClient, TestServer

    from ragmeter.view import make_app

    async def go():
        out = {}
        async with TestClient(TestServer(make_app(url, lang="en"))) as client:
            for p in paths:
                r = await client.get(p)
                out[p] = (r.status, await r.text())
        return out
    return asyncio.run(go())


def _stored_answer(run: Any, sid: str, target: str) -> dict[str, Any]:
    return run.samples[sid][f"target:{target}:answer"]


def test_each_target_keeps_its_own_answer_contexts_and_latency(ab):
    _, run = ab
    sid = next(iter(run.samples))
    short, long_ = _stored_answer(run, sid, "short"), _stored_answer(run, sid, "long")
    assert short["answer"] and long_["answer"] and short["answer"] != long_["answer"]
    assert RECORDED not in short["answer"]
    assert short["contexts"] and long_["contexts"] is None and long_["ids"]
    assert short["latency_s"] > 0 and long_["latency_s"] > 0.02


def test_side_by_side_shows_each_target_as_scored(ab):
    url, run = ab
    sid = next(iter(run.samples))
    got = _get(url, [f"/side?run={run.id}&sample={sid}", f"/run/{run.id}/sample/{sid}",
                     f"/side?run={run.id}&sample=nope", f"/run/{run.id}/sample/nope"])
    status, html = got[f"/side?run={run.id}&sample={sid}"]
    assert status == 200, html[-1500:]
    cols = dict(re.findall(r'<section class=side-col data-run="[^"]+" data-target="([^"]+)">'
                           r"(.*?)</section>", html, re.S))
    assert set(cols) == {"short", "long"}
    for name, col in cols.items():
        answer = _stored_answer(run, sid, name)["answer"]
        assert re.sub(r"\s+", " ", answer)[:40] in re.sub(r"\s+", " ", col.replace(
            "&quot;", '"').replace("&#x27;", "'")), name
        assert RECORDED not in col and "latency" in col
        assert "<code>rouge_l</code>" in col and "latency_s" in col and "latency_p95" not in col
    assert "text not returned" in cols["long"] and "text not returned" not in cols["short"]
    status, page = got[f"/run/{run.id}/sample/{sid}"]
    assert status == 200
    calls = page.split("id=target-calls>", 1)[1].split("</section>", 1)[0]
    assert 'data-target="short"' in calls and 'data-target="long"' in calls
    assert RECORDED not in calls and "answer in the dataset" in page
    assert got[f"/side?run={run.id}&sample=nope"][0] == 404
    assert got[f"/run/{run.id}/sample/nope"][0] == 404


def test_frames_and_gate_messages_show_the_targets_answer(ab):
    from ragmeter.results.store import ResultStore
    from ragmeter.runner.gate_report import failing_samples, format_failures
    from ragmeter.runner.gating import Threshold, check_thresholds

    url, run = ab
    stored = ResultStore.open_readonly(url)[0].load_run(run.id)
    res = {r.name: r for r in stored.tiers["e2e"].results}
    samples = [{"id": k, **v} for k, v in stored.samples.items()]
    for name in ("short", "long"):
        df = res[name].to_pandas(samples=samples)
        assert {"target", "latency_s"} <= set(df.columns)
        row = df.iloc[0]
        call = stored.samples[row["sample_id"]][f"target:{name}:answer"]
        assert row["target"] == name and row["answer"] == call["answer"]
        assert row["latency_s"] == pytest.approx(call["latency_s"])
        assert RECORDED not in str(row["answer"])
    long_ctx = res["long"].to_pandas(samples=samples).iloc[0]["contexts"]
    assert long_ctx and all("(text not returned)" in c for c in long_ctx)
    rows = check_thresholds(res, [Threshold("rouge_l", 1.01, None, "long")])
    text = format_failures(failing_samples(res, rows, stored.samples))
    assert "target:   long (latency" in text and RECORDED not in text
    assert "(text not returned)" in text


def test_graded_metrics_keep_the_judges_reason():
    import ragmeter
    from ragmeter import Sample

    def judge(req):
        out: dict[str, Any] = {}
        for key in req.schema["properties"]:
            out[key] = "it answers only the first half" if key == "reason" else 1
        return out
    res = ragmeter.evaluate_generation([Sample("q1", "what is x?", response="x is a thing")],
                                       ["answer_relevance"], judge=judge)
    df = res.to_pandas()
    assert df.iloc[0]["answer_relevance:reason"] == "it answers only the first half"
    assert res["answer_relevance"].details[0]["reason"] == "it answers only the first half"


def test_a_failed_retrieval_gate_names_the_question():
    import ragmeter
    from ragmeter import Sample
    from ragmeter.testing import assert_metrics

    samples = [Sample("q1", "what is x?", retrieved_ids=["a", "b"], gold_doc_ids=["c"]),
               Sample("q2", "where is y?", retrieved_ids=["c"], gold_doc_ids=["c"])]
    res = ragmeter.evaluate_retrieval(samples, metrics=["hit_rate@1"])
    with pytest.raises(AssertionError) as err:
        assert_metrics(res, min={"hit_rate@1": 0.9})
    text = str(err.value)
    assert "question: what is x?" in text and "question: –" not in text
    assert "retrieved: a, b" in text and "gold:     c" in text
