"""Property tests (hypothesis): bounds, monotonicity, invariances, and the two builders agree."""

from __future__ import annotations

import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.data.sample import Sample
from ragmeter.retrieval.evaluate import evaluate_retrieval

CHUNKS = [f"d{d}#{c}" for d in range(4) for c in range(6)]  # many chunks per doc
KS = (1, 2, 3, 5, 10, 30)
ALL = [f"{m}@{k}(level={lv})" for m in ("hit_rate", "precision", "recall", "f1", "ndcg", "map",
                                        "mrr") for k in KS for lv in ("chunk", "doc")]
ALL += [f"{m}(level={lv})" for m in ("ndcg", "map", "mrr") for lv in ("chunk", "doc")]
ALL += ["ndcg@5(gain=exp)", "ndcg(gain=exp,level=doc)"]


@st.composite
def queries(draw: st.DrawFn, unique: bool = False) -> list[Sample]:
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        gold = draw(st.lists(st.sampled_from(CHUNKS), min_size=1, max_size=6, unique=True))
        grades = {g: draw(st.integers(1, 3)) for g in gold}
        grades.update({g.split("#")[0]: draw(st.integers(1, 3)) for g in gold})
        ret = draw(st.lists(st.sampled_from(CHUNKS), max_size=14, unique=unique))
        out.append(Sample(id=f"q{i}", gold_chunk_ids=gold, gold_grades=grades, retrieved_ids=ret))
    return out


def values(samples: list[Sample], metrics: list[str] = ALL) -> dict[str, dict[str, float | None]]:
    res = evaluate_retrieval(samples, metrics=metrics)
    return {m: res[m].by_id() for m in metrics}


@settings(max_examples=60, deadline=None)
@given(queries())
def test_bounds(samples: list[Sample]) -> None:
    for metric, by in values(samples).items():
        for v in by.values():
            assert v is not None and 0.0 <= v <= 1.0 + 1e-12, metric


@settings(max_examples=60, deadline=None)
@given(queries())
def test_monotone_in_k_and_hit_dominates_precision(samples: list[Sample]) -> None:
    v = values(samples)
    for lv in ("chunk", "doc"):
        for a, b in itertools.pairwise(KS):
            for m in ("recall", "hit_rate", "mrr", "map"):
                for q in v[f"{m}@{a}(level={lv})"]:
                    assert v[f"{m}@{a}(level={lv})"][q] <= v[f"{m}@{b}(level={lv})"][q] + 1e-12
        for k in KS:
            for q, hit in v[f"hit_rate@{k}(level={lv})"].items():
                assert hit >= v[f"precision@{k}(level={lv})"][q]  # type: ignore[operator]
        for m in ("mrr", "map"):
            for q, full in v[f"{m}(level={lv})"].items():
                assert v[f"{m}@30(level={lv})"][q] <= full  # type: ignore[operator]


@settings(max_examples=40, deadline=None)
@given(queries(), st.randoms(use_true_random=False))
def test_query_permutation_invariance(samples: list[Sample], rnd: random.Random) -> None:
    shuffled = list(samples)
    rnd.shuffle(shuffled)
    a, b = values(samples), values(shuffled)
    assert a == b
    ea = evaluate_retrieval(samples, metrics=["ndcg@5"])["ndcg@5"].aggregate.mean
    eb = evaluate_retrieval(shuffled, metrics=["ndcg@5"])["ndcg@5"].aggregate.mean
    assert abs(ea - eb) < 1e-12  # type: ignore[operator]


@settings(max_examples=60, deadline=None)
@given(queries(unique=True), st.booleans())
def test_samples_mode_equals_qrels_run_mode(samples: list[Sample], with_ties: bool) -> None:
    """The generic list builder and the vectorised run builder give identical values."""
    qrels = {s.id: {g: s.gold_grades[g] for g in s.gold_chunk_ids}  # type: ignore[index,union-attr]
             for s in samples}
    run = {}
    for s in samples:
        ids = s.retrieved_ids or []
        if with_ties:  # scores tied in pairs; the list becomes the trec order (doc id desc)
            scores = {d: float((len(ids) - i + 1) // 2) for i, d in enumerate(ids)}
            ids = sorted(scores, key=lambda d: (scores[d], d), reverse=True)
        else:
            scores = {d: float(len(ids) - i) for i, d in enumerate(ids)}
        run[s.id] = dict(sorted(scores.items()))  # insertion order must not matter
        s.retrieved_ids = ids
    for s in samples:
        s.gold_doc_ids = None  # doc gold = parents of the gold chunks, as in qrels mode
    a = values(samples, ALL)
    b = evaluate_retrieval(qrels=qrels, run=run, metrics=ALL, ties="trec")
    for m in ALL:
        got = b[m].by_id()
        for q, v in a[m].items():
            assert abs(got[q] - v) < 1e-12, (m, q)  # type: ignore[operator]


@settings(max_examples=40, deadline=None)
@given(queries())
def test_ideal_ranking_scores_one(samples: list[Sample]) -> None:
    for s in samples:
        grades = s.gold_grades or {}
        s.retrieved_ids = sorted(s.gold_chunk_ids or [], key=lambda g: -grades[g])
    v = values(samples, ["ndcg", "ndcg@3", "ndcg(gain=exp)", "map", "mrr", "recall@30"])
    for m, by in v.items():
        assert all(abs(x - 1.0) < 1e-12 for x in by.values()), m  # type: ignore[operator]


def test_vectorised_builder_scales_and_matches_bruteforce() -> None:
    rng = np.random.default_rng(3)
    qrels, run = {}, {}
    for i in range(500):
        docs = [f"d{j}" for j in rng.choice(300, 60, replace=False)]
        qrels[str(i)] = {d: int(rng.integers(0, 3)) for d in docs[:5]} | {"d_new": 1}
        run[str(i)] = {d: float(rng.integers(0, 10)) for d in docs[rng.integers(0, 3):]}
    res = evaluate_retrieval(qrels=qrels, run=run, metrics=["ndcg@10", "recall@20"], ties="stable")
    for q in list(qrels)[:100]:
        ranked = sorted(run[q], key=run[q].__getitem__, reverse=True)  # stable: input order
        rels = [qrels[q].get(d, 0) for d in ranked]
        ideal = sorted((g for g in qrels[q].values() if g > 0), reverse=True)
        dcg = sum(g / np.log2(i + 2) for i, g in enumerate(rels[:10]))
        idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal[:10]))
        assert abs(res["ndcg@10"].by_id()[q] - dcg / idcg) < 1e-12  # type: ignore[operator]
        rec = sum(1 for g in rels[:20] if g > 0) / len(ideal)
        assert abs(res["recall@20"].by_id()[q] - rec) < 1e-12  # type: ignore[operator]
