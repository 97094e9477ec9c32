"""Samples mode: hand-computed values, doc level, negatives, missing gold, text matching (seed 002)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.evalset import load_evalset
from ragmeter.data.loaders import load_samples
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MetricSpecError
from ragmeter.metrics.registry import parse_metric
from ragmeter.metrics.registry import parse_metrics as expand_metrics
from ragmeter.results.records import EvalResult
from ragmeter.retrieval.evaluate import DEFAULT_METRICS, evaluate_retrieval
from ragmeter.retrieval.relevance import normalize_text, texts_match

FIX = Path(__file__).parent / "fixtures" / "retrieval"
L2 = math.log2


def test_expand_metrics() -> None:
    got = [str(m) for m in expand_metrics(["ndcg@5,10,20(gain=exp)", "mrr", "hit@1", "ndcg@5(gain=exp)"])]
    assert got == ["ndcg@5(gain=exp)", "ndcg@10(gain=exp)", "ndcg@20(gain=exp)", "mrr", "hit_rate@1"]
    assert [str(m) for m in expand_metrics(["doc_recall@3,5"])] == [
        "recall@3(level=doc)", "recall@5(level=doc)"]
    with pytest.raises(MetricSpecError):
        expand_metrics(["recall"])


def test_aliases_parse_to_canonical() -> None:
    for alias, canon in [("doc_hit@5", "hit_rate@5(level=doc)"), ("doc_mrr", "mrr(level=doc)"),
                         ("doc_ndcg@10", "ndcg@10(level=doc)"), ("doc_precision@3", "precision@3(level=doc)"),
                         ("hit@1", "hit_rate@1"), ("map@10(level=doc)", "map@10(level=doc)")]:
        assert str(parse_metric(alias)) == canon


def test_evalset_hand_computed() -> None:
    samples = load_evalset(FIX / "evalset.jsonl").samples
    res = evaluate_retrieval(samples, metrics=["hit_rate@1", "mrr", "recall@2", "doc_hit@1",
                                               "doc_mrr", "doc_precision@3", "doc_ndcg@3"],
                             score_threshold=0.5)
    # chunk level: q1 gold gk-572#0 at rank 1; q2 gold gk-196#1 at rank 3;
    # q3 has empty chunk gold but doc gold → chunk gold unknown (unscored);
    # q6 retrieved nothing (no retrieved_ids) → missing_from_run, scores 0
    mrr = res["mrr"]
    assert mrr.by_id() == {"q1": 1.0, "q2": pytest.approx(1 / 3), "q6": 0.0, "q3": None}
    assert mrr.reasons == {3: "missing_field:gold_chunk_ids"}
    assert mrr.counts == {"missing_from_run": 1, "no_relevant": 0, "negative": 2,
                          "not_in_qrels": 0, "missing_gold": 1}
    assert res["hit_rate@1"].aggregate.mean == pytest.approx(1 / 3)
    assert res["recall@2"].by_id()["q2"] == 0.0
    # doc level: q1 gk-572 at rank 1 (its second chunk is a repeat), q2 gk-196 at rank 2,
    # q3 gk-606 at rank 2, q6 nothing
    assert res["doc_mrr"].by_id() == {"q1": 1.0, "q2": 0.5, "q3": 0.5, "q6": 0.0}
    assert res["doc_hit@1"].by_id() == {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q6": 0.0}
    assert res["doc_precision@3"].by_id()["q1"] == pytest.approx(1 / 3)  # repeat chunk not counted
    assert res["doc_ndcg@3"].by_id()["q2"] == pytest.approx(1 / L2(3))
    # negatives reported separately
    top = res["negative_top_score"]
    assert top.by_id() == {"q4": 0.62, "q5": 0.31}
    assert not top.higher_is_better
    fr = res["negative_false_retrieval(threshold=0.5)"]
    assert fr.by_id() == {"q4": 1.0, "q5": 0.0}
    assert fr.signature.get("threshold") == "0.5"


def test_signature_and_json_round_trip() -> None:
    samples = load_evalset(FIX / "evalset.jsonl").samples
    res = evaluate_retrieval(samples, metrics=DEFAULT_METRICS, seed=7, name="bm25",
                             extra_signature={"retriever": "bm25"})
    assert list(res.results)[:len(DEFAULT_METRICS)] == [str(parse_metric(m)) for m in DEFAULT_METRICS]
    sig = res["ndcg@10"].signature.as_dict()
    for key in ("ragmeter", "metric", "k", "level", "gain", "ties", "match", "data", "seed"):
        assert key in sig
    assert sig["seed"] == "7" and sig["retriever"] == "bm25" and sig["ties"] == "list-order"
    assert res["mrr"].signature.get("k") == "full"
    back = EvalResult.from_dict(json.loads(res.to_json()))
    for key, r in res.results.items():
        b = back.results[key]
        assert b.sample_ids == r.sample_ids and str(b.signature) == str(r.signature)
        assert np.array_equal(b.values, r.values, equal_nan=True) and b.counts == r.counts
        assert b.aggregate == r.aggregate


def test_data_hash_ignores_system_output() -> None:
    a = [Sample(id="1", user_input="q", gold_chunk_ids=["d#0"], retrieved_ids=["d#0"])]
    b = [Sample(id="1", user_input="q", gold_chunk_ids=["d#0"], retrieved_ids=["x#0"])]
    c = [Sample(id="1", user_input="q", gold_chunk_ids=["d#1"], retrieved_ids=["x#0"])]
    h = [evaluate_retrieval(s, metrics=["mrr"])["mrr"].signature.get("data") for s in (a, b, c)]
    assert h[0] == h[1] != h[2]


def test_separate_run_replaces_retrieved_ids_and_uses_ties() -> None:
    samples = [Sample(id="q", gold_chunk_ids=["b#0"], retrieved_ids=["b#0"]),
               Sample(id="r", gold_chunk_ids=["c#0"])]
    run = {"q": {"a#0": 0.5, "b#0": 0.5}, "zzz": {"a#0": 1.0}}
    stable = evaluate_retrieval(samples, run=run, metrics=["mrr"])
    trec = evaluate_retrieval(samples, run=run, metrics=["mrr"], ties="trec")
    assert stable["mrr"].by_id() == {"q": 0.5, "r": 0.0}
    assert trec["mrr"].by_id() == {"q": 1.0, "r": 0.0}
    assert stable["mrr"].counts["not_in_qrels"] == 1
    assert stable["mrr"].counts["missing_from_run"] == 1
    assert trec["mrr"].signature.get("ties") == "trec"


def test_graded_and_doc_level_bounds() -> None:
    s = Sample(id="q", gold_doc_ids=["a", "b"], gold_chunk_ids=["a#0", "b#0"],
               gold_grades={"a": 3, "b": 1, "a#0": 3, "b#0": 1},
               retrieved_ids=["b#0", "b#1", "b#2", "a#5", "a#0"])
    res = evaluate_retrieval([s], metrics=["ndcg(level=doc)", "ndcg(gain=exp,level=doc)", "ndcg",
                                           "recall@5(level=doc)", "map(level=doc)"])
    # doc ranking: b (1), b, b, a (3), a → relevant at ranks 1 and 4
    lin = (1 + 3 / L2(5)) / (3 + 1 / L2(3))
    exp = (1 + 7 / L2(5)) / (7 + 1 / L2(3))
    assert res["ndcg(level=doc)"].values[0] == pytest.approx(lin)
    assert res["ndcg(gain=exp,level=doc)"].values[0] == pytest.approx(exp)
    assert res["ndcg"].values[0] == pytest.approx((1 + 3 / L2(6)) / (3 + 1 / L2(3)))
    assert res["recall@5(level=doc)"].values[0] == 1.0
    assert res["map(level=doc)"].values[0] == pytest.approx((1 + 2 / 4) / 2)


def test_doc_of_mapping_and_callable() -> None:
    s = Sample(id="q", gold_doc_ids=["law-1"], retrieved_ids=["c17", "c42"])
    mapping = {"c17": "law-9", "c42": "law-1"}
    a = evaluate_retrieval([s], metrics=["doc_mrr"], doc_of=mapping)
    b = evaluate_retrieval([s], metrics=["doc_mrr"], doc_of=mapping.__getitem__)
    assert a["doc_mrr"].values[0] == b["doc_mrr"].values[0] == 0.5


def test_doc_gold_derived_from_chunk_gold() -> None:
    s = Sample(id="q", gold_chunk_ids=["d#3"], retrieved_ids=["d#0"])
    res = evaluate_retrieval([s], metrics=["hit_rate@1", "doc_hit@1"])
    assert res["hit_rate@1"].values[0] == 0.0 and res["doc_hit@1"].values[0] == 1.0


def test_no_gold_fields_is_unscored_not_zero() -> None:
    samples = [Sample(id="a", retrieved_ids=["x"]), Sample(id="b", gold_chunk_ids=[], gold_doc_ids=[])]
    res = evaluate_retrieval(samples, metrics=["mrr", "doc_mrr"])
    assert res["mrr"].reasons == {0: "missing_field:gold_chunk_ids"}
    assert res["doc_mrr"].reasons == {0: "missing_field:gold_doc_ids"}
    assert res["mrr"].counts["no_relevant"] == 1 and res["mrr"].aggregate.n == 0
    assert res["mrr"].aggregate.mean is None


def test_negatives_without_scores_are_not_assessed() -> None:
    samples = [Sample(id="n", type="negative", retrieved_ids=["x"]),
               Sample(id="p", gold_chunk_ids=["x"], retrieved_ids=["x"])]
    res = evaluate_retrieval(samples, metrics=["mrr"], score_threshold=0.5)
    assert "negative_top_score" not in res.results
    assert res.meta["negatives"]["n"] == 1
    samples.append(Sample(id="m", type="negative", retrieved_ids=[], retrieved_scores=[]))
    res = evaluate_retrieval(samples, metrics=["mrr"], score_threshold=0.5)
    fr = res["negative_false_retrieval(threshold=0.5)"]
    assert fr.by_id() == {"n": None, "m": 0.0}
    assert fr.reasons == {0: "missing_field:retrieved_scores"}
    assert res["negative_top_score"].reasons == {0: "missing_field:retrieved_scores",
                                                 1: "empty_input"}


def test_config_errors() -> None:
    s = [Sample(id="q", gold_chunk_ids=["a"], retrieved_ids=["a"])]
    with pytest.raises(ConfigError, match="ties"):
        evaluate_retrieval(s, ties="random")
    with pytest.raises(ConfigError, match="match"):
        evaluate_retrieval(s, match="fuzzy")
    with pytest.raises(ConfigError, match="level=doc"):
        evaluate_retrieval(s, match="text", metrics=["doc_hit@1"])
    with pytest.raises(ConfigError):
        evaluate_retrieval()
    with pytest.raises(ConfigError, match="text"):
        evaluate_retrieval(qrels={"q": {"a": 1}}, run={"q": {"a": 1.0}}, match="text")


# --- text matching (seed 002) -------------------------------------------------------------

def test_normalisation() -> None:
    assert normalize_text("  Анна\u00a0Павловна\n\tШЕРЕР ") == "анна павловна шерер"
    assert normalize_text("ﬁle") == "file"  # NFKC ligature
    assert texts_match("Анна Павловна", "это была АННА  павловна шерер")
    assert texts_match("это была АННА  павловна шерер", "Анна Павловна")
    assert not texts_match("", "anything") and not texts_match("  ", "  ")
    assert not texts_match("Анна", "Пьер")


def test_seed002_example_hand_computed() -> None:
    samples = load_samples(FIX / "text_samples.jsonl").samples
    res = evaluate_retrieval(samples, match="text", metrics=[
        "hit_rate@1", "hit_rate@5", "precision@5", "precision@10", "recall@5", "recall@10",
        "f1@5", "f1@10", "mrr", "ndcg@10", "map"])
    v = {k: r.values[0] for k, r in res.results.items()}
    # matches at ranks 2 (gold 1), 4 (gold 3) and 10 ("the novelty" ⊂ gold 2); rank 6 is empty
    assert v["hit_rate@1"] == 0.0 and v["hit_rate@5"] == 1.0
    assert v["precision@5"] == pytest.approx(2 / 5) and v["precision@10"] == pytest.approx(3 / 10)
    assert v["recall@5"] == pytest.approx(2 / 3) and v["recall@10"] == 1.0
    assert v["f1@5"] == pytest.approx(2 * 0.4 * (2 / 3) / (0.4 + 2 / 3))
    assert v["f1@10"] == pytest.approx(2 * 0.3 / 1.3)
    assert v["mrr"] == 0.5
    dcg = 1 / L2(3) + 1 / L2(5) + 1 / L2(11)
    assert v["ndcg@10"] == pytest.approx(dcg / (1 + 1 / L2(3) + 1 / L2(4)))
    assert v["map"] == pytest.approx((1 / 2 + 2 / 4 + 3 / 10) / 3)
    assert res["mrr"].signature.get("match") == "text"


def test_text_one_retrieved_covering_two_gold_counts_once() -> None:
    s = Sample(id="t", reference_contexts=["alpha beta", "gamma delta", "   "],
               retrieved_contexts=["xx ALPHA beta yy gamma   delta zz", "Alpha  Beta", "nothing"])
    res = evaluate_retrieval([s], match="text", metrics=["precision@3", "recall@1", "hit_rate@1",
                                                         "mrr", "ndcg@3", "map"])
    v = {k: r.values[0] for k, r in res.results.items()}
    assert v["precision@3"] == pytest.approx(2 / 3)  # both matching texts count for precision
    assert v["recall@1"] == 1.0  # blank gold text cannot match and is not counted
    assert v["hit_rate@1"] == 1.0 and v["mrr"] == 1.0
    assert v["ndcg@3"] == pytest.approx(1 / (1 + 1 / L2(3)))  # one new-gold position of two
    assert v["map"] == pytest.approx(0.5)


def test_text_missing_reference_is_unscored() -> None:
    s = [Sample(id="a", retrieved_contexts=["x"]),
         Sample(id="b", reference_contexts=["x"]),
         Sample(id="c", reference_contexts=[""], retrieved_contexts=["x"])]
    res = evaluate_retrieval(s, match="text", metrics=["recall@5"])
    r = res["recall@5"]
    assert r.by_id() == {"b": 0.0, "a": None}
    assert r.counts["missing_from_run"] == 1 and r.counts["no_relevant"] == 1


def test_duplicate_sample_ids_rejected() -> None:
    from ragmeter.errors import DataError

    s = [Sample(id="a", gold_chunk_ids=["x"]), Sample(id="a", gold_chunk_ids=["y"])]
    with pytest.raises(DataError, match="duplicate sample id 'a'"):
        evaluate_retrieval(s)
