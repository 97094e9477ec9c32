"""Definitions at the edges: trec_eval's measure names as aliases, repeated ids counted once and
alike by every recall, the sample standard deviation, the production reply parsers."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.metrics.registry import parse_metric, parse_metrics
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.tiers.judge_pipeline import parse_production_reply


@pytest.mark.parametrize("trec, ours", [
    ("P_5", "precision@5"), ("recall_10", "recall@10"), ("ndcg_cut_10", "ndcg@10"),
    ("recip_rank", "mrr"), ("success_5", "hit_rate@5"), ("map", "map"),
    ("map_cut_10", "map@10"), ("ndcg", "ndcg"),
])
def test_trec_eval_measure_names_are_aliases(trec: str, ours: str) -> None:
    assert str(parse_metric(trec)) == ours


def test_trec_eval_names_evaluate_like_ours() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"x": 3.0, "a": 2.0, "y": 1.0}}
    res = evaluate_retrieval(qrels=qrels, run=run,
                             metrics=parse_metrics("P_5,recall_10,ndcg_cut_10,success_5"))
    assert res["precision@5"].values.tolist() == [0.2]
    assert res["recall@10"].values.tolist() == [0.5]
    assert res["hit_rate@5"].values.tolist() == [1.0]


@pytest.mark.parametrize("k", [1, 2, 3, 4, None])
def test_repeated_ids_count_once_alike_in_recall_and_id_context_recall(k: int | None) -> None:
    ranking = ["c1", "c1", "c2", "x"]
    gold = ["c1", "c2"]
    suffix = f"@{k}" if k else ""
    gen = evaluate_generation([Sample(id="a", retrieved_ids=ranking, gold_chunk_ids=gold)],
                              [f"id_context_recall{suffix}"])
    ret = evaluate_retrieval([Sample(id="a", retrieved_ids=ranking, gold_chunk_ids=gold)],
                             metrics=[f"recall@{k or 10}"])
    want = {1: 0.5, 2: 0.5, 3: 1.0, 4: 1.0, None: 1.0}[k]  # positions, first occurrence counts
    assert gen[f"id_context_recall{suffix}"].values.tolist() == [want]
    assert ret[f"recall@{k or 10}"].values.tolist() == [want]


def test_std_is_the_sample_standard_deviation() -> None:
    samples = [Sample(id=f"q{i}", retrieved_ids=["a"] if i % 3 else ["b"], gold_chunk_ids=["a"])
               for i in range(7)]
    agg = evaluate_retrieval(samples, metrics=["hit_rate@1"])["hit_rate@1"].aggregate
    vals = [1.0 if i % 3 else 0.0 for i in range(7)]
    assert agg.std == pytest.approx(statistics.stdev(vals))
    assert agg.std == pytest.approx(float(np.std(vals, ddof=1)))


@pytest.mark.parametrize("reply, strict, lenient", [
    ("Yes.", True, True), ("Yes", True, True), ("Да!", True, True), ("No: off topic", False, False),
    ("Yes, because it is right", None, True), ("**Yes**", None, True), ("Maybe", None, None),
])
def test_production_reply_strict_and_lenient(reply: str, strict: bool | None,
                                             lenient: bool | None) -> None:
    assert parse_production_reply(reply, strict=True).decision is strict
    assert parse_production_reply(reply).decision is lenient
