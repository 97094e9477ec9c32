"""One table of cases through ragmeter, trec_eval (pytrec_eval) and ranx: identical values.

Fixtures are generated (seeded) to cover ties, empty runs, cutoffs beyond the run length, graded
qrels, queries missing from the run, run-only queries and queries with nothing relevant.

Like with like: trec_eval breaks score ties by doc id descending, which is our ``ties="trec"``;
ranx orders tied scores with an unstable sort (implementation-defined), so ranx is compared on
tie-free runs only (where every tie policy gives the same ranking).
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from ragmeter.data.trec import load_qrels, load_run, save_qrels, save_run
from ragmeter.errors import DataError
from ragmeter.retrieval.evaluate import evaluate_retrieval

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 5, 10, 20)


def make_case(seed: int, *, n_q: int = 60, ties: bool, graded: bool) -> tuple[dict, dict]:
    """Random qrels/run with every awkward situation represented."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_q):
        q = f"q{i:03d}"
        pool = [f"d{j:03d}" for j in range(rng.randint(3, 40))]
        judged = rng.sample(pool, rng.randint(1, len(pool)))
        kind = rng.random()
        if kind < 0.06:
            qrels[q] = {d: 0 for d in judged}  # nothing relevant
        else:
            qrels[q] = {d: (rng.choice([0, 1, 1, 2, 3]) if graded else rng.choice([0, 1]))
                        for d in judged}
            if not any(qrels[q].values()):
                qrels[q][judged[0]] = 1
            qrels[q][f"unret{i}"] = 1  # a relevant doc never retrieved
        if 0.06 <= kind < 0.14:
            continue  # missing from the run
        n_ret = 0 if 0.14 <= kind < 0.18 else rng.randint(1, len(pool))  # empty / short runs
        docs = rng.sample(pool, n_ret)
        if ties:
            run[q] = {d: rng.choice([0.1, 0.25, 0.5, 0.75, 1.0]) for d in docs}
        else:
            run[q] = {d: rng.random() for d in docs}
    for i in range(3):
        run[f"extra{i}"] = {"d000": 1.0}  # run-only queries
    return qrels, run


CASES = [
    pytest.param(1, False, False, id="binary-no-ties"),
    pytest.param(2, False, True, id="graded-no-ties"),
    pytest.param(3, True, False, id="binary-ties"),
    pytest.param(4, True, True, id="graded-ties"),
    pytest.param(5, True, True, id="graded-ties-2"),
]

# ragmeter metric -> trec_eval measure
TREC_MAP = {"map": "map", "ndcg": "ndcg", "mrr": "recip_rank",
            **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in (5, 10, 20)},
            **{f"map@{k}": f"map_cut_{k}" for k in (5, 10, 20)},
            **{f"precision@{k}": f"P_{k}" for k in (5, 10, 20)},
            **{f"recall@{k}": f"recall_{k}" for k in (5, 10, 20)},
            **{f"hit_rate@{k}": f"success_{k}" for k in (1, 5, 10)}}
RANX_MAP = {"map": "map", "ndcg": "ndcg", "mrr": "mrr", "ndcg@5(gain=exp)": "ndcg_burges@5",
            **{f"{m}@{k}": f"{m}@{k}" for m in ("ndcg", "map", "mrr", "precision", "recall",
                                                 "hit_rate", "f1") for k in KS}}


def ours(qrels: dict, run: dict, metrics: list[str], ties: str) -> dict[str, dict[str, float]]:
    res = evaluate_retrieval(qrels=qrels, run=run, metrics=metrics, ties=ties)
    return {m: res[m].by_id() for m in metrics}  # type: ignore[misc]


@pytest.mark.parametrize("seed,ties,graded", CASES)
def test_against_trec_eval(seed: int, ties: bool, graded: bool) -> None:
    qrels, run = make_case(seed, ties=ties, graded=graded)
    metrics = list(TREC_MAP)
    got = ours(qrels, run, metrics, ties="trec")
    ev = pytrec_eval.RelevanceEvaluator(
        qrels, {"map", "ndcg", "recip_rank", "ndcg_cut", "map_cut", "P", "recall", "success"})
    ref = ev.evaluate(run)
    population = set(got["map"])
    assert population == {q for q, d in qrels.items() if any(v > 0 for v in d.values())}
    checked = 0
    for metric, measure in TREC_MAP.items():
        for q in population:
            expected = ref[q][measure] if q in ref else 0.0  # trec_eval drops unretrieved queries
            assert got[metric][q] == pytest.approx(expected, abs=1e-12), (metric, q)
            checked += 1
    assert checked == len(TREC_MAP) * len(population)


@pytest.mark.parametrize("seed,ties,graded", [c for c in CASES if not c.values[1]])
@pytest.mark.parametrize("policy", ["stable", "trec"])
@pytest.mark.slow
def test_against_ranx(seed: int, ties: bool, graded: bool, policy: str) -> None:
    ranx = pytest.importorskip("ranx")
    qrels, run = make_case(seed, ties=ties, graded=graded)
    metrics = list(RANX_MAP)
    got = ours(qrels, run, metrics, ties=policy)
    rq, rr = ranx.Qrels(qrels), ranx.Run(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(rq, rr, list(RANX_MAP.values()), make_comparable=True,
                      save_results_in_run=True)
    for metric, name in RANX_MAP.items():
        ref = rr.scores[name]
        for q, value in got[metric].items():
            assert value == pytest.approx(ref.get(q, 0.0), abs=1e-12), (metric, q)


def test_trec_files_round_trip_and_match_dicts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    qrels, run = make_case(7, ties=True, graded=True)
    save_qrels(qrels, tmp_path / "q.txt")
    save_run(run, tmp_path / "r.txt")
    save_qrels(qrels, tmp_path / "q.json", format="json")
    save_run(run, tmp_path / "r.json", format="json")
    assert load_qrels(tmp_path / "q.txt") == load_qrels(tmp_path / "q.json") == qrels
    assert load_run(tmp_path / "r.json") == run
    # an empty ranking has no line in a TREC file: the query becomes "missing from the run"
    assert load_run(tmp_path / "r.txt") == {q: d for q, d in run.items() if d}
    a = evaluate_retrieval(qrels=qrels, run=run, ties="trec")
    b = evaluate_retrieval(qrels=load_qrels(tmp_path / "q.txt"), run=load_run(tmp_path / "r.txt"),
                           ties="trec")
    assert a.means() == b.means()


def test_tie_policies_differ_only_on_ties() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 0.5, "b": 0.5}}  # input order: a first; trec: b first (doc id desc)
    stable = evaluate_retrieval(qrels=qrels, run=run, metrics=["mrr"], ties="stable")
    trec = evaluate_retrieval(qrels=qrels, run=run, metrics=["mrr"], ties="trec")
    assert stable["mrr"].values.tolist() == [1.0]
    assert trec["mrr"].values.tolist() == [0.5]
    assert trec["mrr"].signature.get("ties") == "trec"


def test_policy_counts() -> None:
    qrels, run = make_case(3, ties=True, graded=False)
    res = evaluate_retrieval(qrels=qrels, run=run, metrics=["ndcg@10"])
    r = res["ndcg@10"]
    relevant = [q for q, d in qrels.items() if any(v > 0 for v in d.values())]
    assert r.counts["no_relevant"] == len(qrels) - len(relevant) > 0
    assert r.counts["missing_from_run"] == sum(1 for q in relevant if not run.get(q)) > 0
    assert r.counts["not_in_qrels"] == 3
    assert len(r.sample_ids) == len(relevant)
    missing = [q for q in relevant if not run.get(q)]
    assert all(r.by_id()[q] == 0.0 for q in missing)


@pytest.mark.parametrize("text,fragment", [
    ("q1 0 d1 1\nq1 0 d1 2\n", "line 1"),
    ("q1 0 d1\n", "expected 4 columns"),
    ("q1 0 d1 x\n", "integer grade"),
])
def test_qrels_errors(tmp_path, text: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "qrels.txt"
    p.write_text(text)
    with pytest.raises(DataError, match=fragment) as info:
        load_qrels(p)
    assert str(p) in str(info.value)


def test_run_duplicate_doc_names_both_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "run.txt"
    p.write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.8 t\nq1 Q0 d1 3 0.7 t\nq2 Q0 d1 1 zz t\n")
    with pytest.raises(DataError) as info:
        load_run(p)
    problems = info.value.problems
    assert [(pr.line, pr.field) for pr in problems] == [(3, "docid"), (4, "score")]
    assert "first on line 1" in problems[0].message


def test_json_duplicate_keys_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "run.json"
    p.write_text('{"q1": {"d1": 0.5, "d1": 0.7}}')
    with pytest.raises(DataError, match="repeated"):
        load_run(p)


def test_nan_score_rejected(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "run.txt"
    p.write_text("q1 Q0 d1 1 nan t\n")
    with pytest.raises(DataError, match="score"):
        load_run(p)


def test_large_random_agrees_with_trec_eval() -> None:
    rng = np.random.default_rng(11)
    qrels, run = {}, {}
    for i in range(300):
        q = str(i)
        qrels[q] = {f"d{j}": int(rng.integers(0, 4)) for j in rng.choice(200, 15, replace=False)}
        qrels[q]["d0"] = 1
        run[q] = {f"d{j}": float(rng.integers(0, 20)) / 4 for j in rng.choice(200, 100, replace=False)}
    got = ours(qrels, run, ["ndcg@10", "map", "mrr"], ties="trec")
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut", "map", "recip_rank"}).evaluate(run)
    for q in qrels:
        assert math.isclose(got["ndcg@10"][q], ref[q]["ndcg_cut_10"], abs_tol=1e-12)
        assert math.isclose(got["map"][q], ref[q]["map"], abs_tol=1e-12)
        assert math.isclose(got["mrr"][q], ref[q]["recip_rank"], abs_tol=1e-12)


def test_trec_ties_at_single_precision_like_trec_eval() -> None:
    """trec_eval stores scores as C float: values equal in float32 tie (then doc id desc)."""
    qrels = {"q": {"b": 1}, "r": {"a": 1}}
    run = {"q": {"a": 0.9375956528715874, "b": 0.9375956422768629, "c": 0.5},
           "r": {"c": 0.9375956528715874, "a": 0.9375956422768629, "b": 0.1}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    trec = evaluate_retrieval(qrels=qrels, run=run, metrics=["mrr", "mrr(level=doc)"], ties="trec")
    stable = evaluate_retrieval(qrels=qrels, run=run, metrics=["mrr"], ties="stable")
    assert ref["q"]["recip_rank"] == 1.0 and ref["r"]["recip_rank"] == 0.5
    assert trec["mrr"].by_id() == {"q": 1.0, "r": 0.5}
    assert trec["mrr(level=doc)"].by_id() == {"q": 1.0, "r": 0.5}  # list builder, same order
    assert stable["mrr"].by_id() == {"q": 0.5, "r": 0.5}  # full precision: no tie


def test_in_memory_run_nan_and_other_mappings() -> None:
    from types import MappingProxyType

    qrels = {"q": {"a": 1}, "r": {"b": 2}}
    with pytest.raises(DataError, match="NaN"):
        evaluate_retrieval(qrels=qrels, run={"q": {"a": float("nan")}})
    run = {"q": MappingProxyType({"x": 0.9, "a": 0.5}), "r": {"b": 0.1}}
    res = evaluate_retrieval(qrels=qrels, run=run, metrics=["mrr"])  # type: ignore[arg-type]
    assert res["mrr"].by_id() == {"q": 0.5, "r": 1.0}


def test_uneven_run_lengths_and_infinite_scores() -> None:
    qrels = {"q": {"a": 1, "c": 1}, "r": {"z": 1}}
    run = {"q": {"b": float("-inf"), "a": float("-inf"), "c": 3.0}, "r": {"z": 1.0}}
    stable = evaluate_retrieval(qrels=qrels, run=run, metrics=["map", "ndcg@3"])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.3"}).evaluate(
        {"q": {"b": -1e30, "a": -1e30, "c": 3.0}, "r": {"z": 1.0}})
    trec = evaluate_retrieval(qrels=qrels, run=run, metrics=["map", "ndcg@3"], ties="trec")
    assert stable["map"].by_id()["q"] == pytest.approx((1 + 2 / 3) / 2)  # a after b (input order)
    assert trec["map"].by_id()["q"] == pytest.approx(ref["q"]["map"])  # tie: b before a (id desc)
    assert trec["ndcg@3"].by_id()["q"] == pytest.approx(ref["q"]["ndcg_cut_3"])
