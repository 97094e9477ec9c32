"""Stress tests on a target's generator: arms, paired drops against the control, and the
``stress`` tier on the reference service (its extractive generator reads only the first
passage, so the gold context placed last must cost it, placed first must not)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.runner.config import parse_config
from ragmeter.runner.engine import run_benchmark
from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig
from ragmeter.targets.stress import arm_contexts, arms, paired_drops


def test_arms_and_positions() -> None:
    assert arms([4]) == ["control", "first@4", "middle@4", "last@4", "shuffled@4"]
    gold, pool = ["G"], [f"d{i}" for i in range(8)]
    rng = random.Random(1)
    assert arm_contexts("control", gold, pool, rng) == ["G"]
    assert arm_contexts("first@4", gold, pool, rng) == ["G", "d0", "d1", "d2", "d3"]
    assert arm_contexts("middle@4", gold, pool, rng) == ["d0", "d1", "G", "d2", "d3"]
    assert arm_contexts("last@4", gold, pool, rng) == ["d0", "d1", "d2", "d3", "G"]
    mixed = arm_contexts("shuffled@8", gold, pool, random.Random(3))
    assert sorted(mixed) == sorted(["G", *pool]) and len(mixed) == 9


def test_paired_drops_use_samples_scored_in_both_arms() -> None:
    sig = Signature.make(metric="m")
    ctrl = EvalResult("c")
    ctrl.add(MetricResult("m", ["a", "b", "c"], np.array([1.0, 0.5, np.nan]), sig,
                          reasons={2: "judge_timeout"}))
    arm = EvalResult("x")
    arm.add(MetricResult("m", ["a", "b", "c"], np.array([0.5, 0.5, 1.0]), sig))
    (drop,) = paired_drops(ctrl, arm, "last@4")
    assert drop.metric == "m:last@4-control"
    assert drop.aggregate.mean == pytest.approx(-0.25) and drop.aggregate.n == 2
    assert drop.reasons == {2: "judge_timeout"}


@pytest.mark.slow
def test_stress_tier_on_the_reference_service(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")   # the distractors are BM25's top passages
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with ExampleService(ServiceConfig()) as srv:
        cfg = parse_config({
            "name": "stress", "limit": 30, "run_dir": str(tmp_path / "runs"),
            "store": str(tmp_path / "s.sqlite"),
            "datasets": [{"path": str(DATA / "evalset.jsonl"), "format": "evalset"}],
            "corpus": {"path": str(DATA / "corpus.jsonl")},
            "target": {"kind": "http", "name": "bot", "url": srv.url + "/answer",
                       "entries": {"generate": {"url": srv.url + "/generate"}}},
            "tiers": [{"name": "stress", "metrics": ["rouge_l"], "options": {"ks": [4]}}]},
            base_dir=tmp_path)
        run = run_benchmark(cfg)
        calls = srv.counts["requests"]
    res = {r.name: r for r in run.tiers["stress"].results}
    drops = res["bot:stress"]
    n = res["bot:control"]["rouge_l"].aggregate.n
    assert calls == 5 * n                          # five arms, every sample once each
    first = drops["rouge_l:first@4-control"].aggregate
    last = drops["rouge_l:last@4-control"].aggregate
    assert first.mean == pytest.approx(0.0, abs=1e-9)
    assert last.mean is not None and last.ci_high is not None and last.ci_high < 0
    assert "arm:last@4" in str(res["bot:last@4"]["rouge_l"].signature)


def test_paraphrase_arm_asks_the_question_in_other_words(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    import json

    from ragmeter.data.sample import Sample
    from ragmeter.targets.stress import paraphrase_of

    needs_extra("retrieval", "bm25s", "Stemmer")   # the distractors are BM25's top passages

    assert paraphrase_of(Sample(id="a", metadata={"paraphrases": ["  ", "Другими словами?"]})
                         ) == "Другими словами?"
    assert paraphrase_of(Sample(id="b")) is None
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    rows = [json.loads(x) for x in (DATA / "evalset.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r.get("type") != "negative"][:6]
    for r in rows[:3]:
        r["metadata"] = {**r.get("metadata", {}), "paraphrases": ["Скажите, " + r["question"]]}
    ev = tmp_path / "ev.jsonl"
    ev.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    with ExampleService(ServiceConfig()) as srv:
        cfg = parse_config({
            "name": "stress", "run_dir": str(tmp_path / "runs"),
            "store": str(tmp_path / "s.sqlite"),
            "datasets": [{"path": str(ev), "format": "evalset"}],
            "corpus": {"path": str(DATA / "corpus.jsonl")},
            "target": {"kind": "http", "name": "bot", "url": srv.url + "/answer",
                       "entries": {"generate": {"url": srv.url + "/generate"}}},
            "tiers": [{"name": "stress", "metrics": ["rouge_l"],
                       "options": {"ks": [4], "shuffled": False}}]}, base_dir=tmp_path)
        run = run_benchmark(cfg)
        calls = srv.counts["requests"]
    res = {r.name: r for r in run.tiers["stress"].results}
    assert calls == 4 * 6 + 3                      # control + 3 positions for all, 3 rephrased
    drop = res["bot:stress"]["rouge_l:paraphrase-control"].aggregate
    assert drop.n == 3 and drop.n_unscored == 3
    assert res["bot:stress"].meta["arms"][-1] == "paraphrase"
