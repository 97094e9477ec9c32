"""Judge trust: agreement statistics, labels loader, judge cards, prediction-powered
estimates (with a coverage simulation), the bundled benchmark and flaky verdicts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter import stats as S
from ragmeter.errors import DataError
from ragmeter.judge_trust.bench import (
    GRADED,
    TASKS,
    compare_bench,
    item_request,
    load_bench,
    run_bench,
)
from ragmeter.judge_trust.card import card_from_values, compare_cards, metric_card
from ragmeter.judge_trust.labels import labels_from_records, load_labels
from ragmeter.judge_trust.ppi import paired_metric_ppi, ppi_estimates
from ragmeter.judge_trust.simulate import default_scenarios, simulate
from ragmeter.judges import ScriptedJudge

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ statistics
def test_kappa_spearman_auc_match_reference_implementations() -> None:
    skm = pytest.importorskip("sklearn.metrics")
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 80).astype(float)
    b = np.clip(a + rng.integers(-1, 2, 80), 0, 2)
    assert S.cohen_kappa(a, b) == pytest.approx(skm.cohen_kappa_score(a, b))
    assert S.cohen_kappa(a, b, weights="quadratic") == pytest.approx(
        skm.cohen_kappa_score(a, b, weights="quadratic"))
    x = rng.normal(size=50).round(1)
    y = x + rng.normal(size=50)
    assert S.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    pos = rng.random(60) < 0.4
    sc = rng.random(60).round(1) + pos * 0.3
    assert S.roc_auc(pos, sc) == pytest.approx(skm.roc_auc_score(pos, sc))
    assert S.spearman(np.ones(5), np.arange(5)) is None
    assert S.roc_auc(np.ones(60, bool), sc) is None


def test_flip_stats_hand_computed() -> None:
    M = np.array([[1.0, 0.0, 0.7, np.nan],
                  [1.0, 1.0, 0.2, 0.9],
                  [0.0, 1.0, 0.9, np.nan]])
    flip, cross = S.flip_stats(M, 0.5)
    # item 0: verdicts 1,1,0 -> 2 of 3 pairs differ; item 2: 1,0,1 -> 2/3; item 3: one repeat
    assert flip[:3] == pytest.approx([2 / 3, 2 / 3, 2 / 3])
    assert cross[:3].tolist() == [1.0, 1.0, 1.0]
    assert np.isnan(flip[3]) and np.isnan(cross[3])
    same = S.verdict_flip_rate(np.array([[2.0, 1.0], [2.0, 0.0]]))
    assert same.tolist() == [0.0, 1.0]


def test_bootstrap_stat_is_seeded_and_carries_n() -> None:
    x = np.random.default_rng(1).random(40)
    e1 = S.bootstrap_stat(lambda i: float(x[i].mean()), 40, seed=7)
    e2 = S.bootstrap_stat(lambda i: float(x[i].mean()), 40, seed=7)
    assert e1 == e2 and e1.n == 40 and e1.ci_low < e1.value < e1.ci_high


# ------------------------------------------------------------------ PPI
def test_ppi_coverage_at_least_93_percent_in_1000_simulations() -> None:
    """Every scenario (binary and continuous labels; unbiased, lenient and strict judges;
    20, 50 and 200 labels of 1,000 samples) covers the true mean in >= 93 % of 1,000 runs,
    while the judge-only interval fails badly for biased judges."""
    rows = [simulate(sc, sims=1000, seed=i) for i, sc in enumerate(default_scenarios())]
    worst = min(r.ppi_coverage for r in rows)
    assert worst >= 0.93, [(r.scenario, r.ppi_coverage) for r in rows if r.ppi_coverage < 0.93]
    biased = [r for r in rows if abs(r.scenario.bias) >= 0.15 and r.scenario.kind ==
              "continuous"]
    assert max(r.naive_coverage for r in biased) < 0.5


def test_ppi_single_matches_batch_and_reduces_to_human_mean_when_all_labelled() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.6).astype(float)
    f = np.where(rng.random(300) < 0.2, 1.0, y)
    lab = np.zeros(300, bool)
    lab[rng.choice(300, 60, replace=False)] = True
    one = S.ppi_mean(f, f[lab], y[lab], discrete=True)
    est, lo, _hi = S.ppi_mean_batch(f[None], lab[None], y[None], discrete=True)
    assert one.estimate == pytest.approx(est[0]) and one.ci_low == pytest.approx(lo[0])
    assert one.estimate == pytest.approx(f.mean() + (y[lab] - f[lab]).mean())
    full = S.ppi_mean(f, f, y)
    assert full.estimate == pytest.approx(y.mean())
    assert full.std_error == pytest.approx(y.std(ddof=1) / np.sqrt(300), rel=0.01)


def test_label_planner_reaches_target_width() -> None:
    rng = np.random.default_rng(5)
    n_all = 2000
    y = rng.beta(2, 1.5, n_all)
    f = np.clip(y + 0.1 + rng.normal(0, 0.15, n_all), 0, 1)
    est = S.ppi_mean(f, f[:40], y[:40])
    plan = S.labels_needed(est, est.width / 2)
    assert plan.n_needed is not None and plan.n_more > 0
    again = S.ppi_mean(f, f[:plan.n_needed], y[:plan.n_needed])
    assert again.width <= est.width / 2 * 1.15
    assert S.labels_needed(est, est.width * 2).n_more == 0
    tiny = S.labels_needed(est, 1e-4)
    assert tiny.n_needed is None and "more samples" in tiny.reason


def test_paired_ppi_detects_difference_the_judge_hides() -> None:
    """The judge scores both systems alike; human labels show B is better."""
    rng = np.random.default_rng(11)
    n = 400
    ya = (rng.random(n) < 0.5).astype(float)
    yb = (rng.random(n) < 0.7).astype(float)
    fa = np.where(rng.random(n) < 0.5, 1.0, ya)  # a lenient judge: hides A's failures
    fb = yb.copy()
    ids = [f"s{i}" for i in range(n)]
    recs = []
    for i in range(120):
        recs.append((None, {"sample_id": ids[i], "metric": "faithfulness", "label": ya[i],
                            "system": "A"}))
        recs.append((None, {"sample_id": ids[i], "metric": "faithfulness", "label": yb[i],
                            "system": "B"}))
    labels = labels_from_records(recs, "mem")
    p = paired_metric_ppi("faithfulness", dict(zip(ids, fa, strict=True)),
                          dict(zip(ids, fb, strict=True)), labels, system_a="A", system_b="B")
    assert abs(p.raw_diff) < 0.08
    assert p.diff.estimate > 0.1 and p.diff.ci_low > 0 and p.p_value < 0.01


# ------------------------------------------------------------------ labels
def test_labels_loader_formats_scales_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "labels.jsonl"
    f.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in [
        {"sample_id": "q1", "metric": "faithfulness", "label": "да"},
        {"sample_id": "q2", "metric": "faithfulness", "label": "no"},
        {"sample_id": "q1", "metric": "answer_relevance", "label": 2},
        {"sample_id": "q2", "metric": "answer_relevance", "label": 1},
        {"id": "q3", "metric": "answer_correctness", "label": 0.75},
    ]) + "\n", encoding="utf-8")
    labs = load_labels(f)
    assert labs.scales == {"faithfulness": "binary", "answer_relevance": "ordinal",
                           "answer_correctness": "continuous"}
    assert labs.values("answer_relevance") == {"q1": 1.0, "q2": 0.5}
    assert labs.values("faithfulness") == {"q1": 1.0, "q2": 0.0}
    assert len(labs.sha256) == 64
    c = tmp_path / "labels.csv"
    c.write_text("sample_id,metric,label,rater\nq1,faithfulness,yes,ann\nq1,faithfulness,0,"
                 "bob\n", encoding="utf-8")
    assert load_labels(c).values("faithfulness") == {"q1": 0.5}  # raters averaged
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"sample_id": "q1", "metric": "faithfulness", "label": "maybe"}),
        json.dumps({"sample_id": "q2", "label": 1}),
        "{not json",
        json.dumps({"sample_id": "q3", "metric": "faithfulness", "label": 1.5}),
        json.dumps({"sample_id": "q4", "metric": "faithfulness", "lable": 1}),
    ]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_labels(bad)
    msg = str(err.value)
    assert "bad.jsonl:3" in msg and "invalid JSON" in msg  # parse errors come first
    bad.write_text("\n".join(bad.read_text().splitlines()[:2] + bad.read_text().splitlines()
                             [3:]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_labels(bad)
    msg = str(err.value)
    assert "bad.jsonl:1 field 'label'" in msg and "'maybe'" in msg
    assert "bad.jsonl:2 field 'metric': is required" in msg
    assert "bad.jsonl:3 field 'label'" in msg
    assert "bad.jsonl:4 field 'lable': unknown field" in msg
    dup = tmp_path / "dup.jsonl"
    dup.write_text(json.dumps({"sample_id": "q1", "metric": "f", "label": 1}) + "\n"
                   + json.dumps({"sample_id": "q1", "metric": "f", "label": 0}) + "\n")
    with pytest.raises(DataError, match=r"dup\.jsonl:2 field 'sample_id': duplicate"):
        load_labels(dup)


# ------------------------------------------------------------------ cards
def _labels(metric: str, y: dict[str, float], scale: str | None = None):
    return labels_from_records([(i + 1, {"sample_id": s, "metric": metric, "label": v,
                                         **({"scale": scale} if scale else {})})
                                for i, (s, v) in enumerate(y.items())], "mem")


def test_card_perfect_lenient_and_unscored() -> None:
    rng = np.random.default_rng(2)
    ids = [f"q{i}" for i in range(120)]
    y = {s: float(rng.random() < 0.5) for s in ids}
    labs = _labels("faithfulness", y)
    perfect = card_from_values({"faithfulness": dict(y)}, labs, judge="p", model="m")
    m = perfect.metrics["faithfulness"]
    assert m.stats["accuracy"].value == 1.0 and m.stats["kappa"].value == pytest.approx(1.0)
    assert m.stats["auc"].value == 1.0 and m.bias_direction == "none detected"
    lenient: dict[str, float | None] = {s: 1.0 if rng.random() < 0.5 else v
                                        for s, v in y.items()}
    lenient["q0"] = None
    card = card_from_values({"faithfulness": lenient}, labs, judge="l", model="m",
                            reasons={"faithfulness": {"q0": "parse_error"}})
    mc = card.metrics["faithfulness"]
    assert mc.bias_direction == "lenient" and mc.stats["tnr"].value < 0.7
    assert mc.stats["tpr"].value == 1.0
    assert mc.n == 119 and mc.n_unscored == 1 and mc.unscored_by_reason == {"parse_error": 1}
    d = card.to_dict()
    assert d["signature"].startswith("ragmeter:") and "labels:" in d["signature"]
    from ragmeter.judge_trust.card import JudgeCard

    assert JudgeCard.from_dict(json.loads(json.dumps(d))).to_dict() == d
    rows = compare_cards([card, perfect], "kappa")
    assert [r["judge"] for r in rows] == ["p", "l"]


def test_ordinal_card_uses_quadratic_kappa() -> None:
    y = {f"q{i}": float(i % 3) for i in range(60)}
    labs = _labels("answer_relevance", y)
    assert labs.scales["answer_relevance"] == "ordinal"
    off_by_one = {s: min(2.0, v + 1) / 2 for s, v in y.items()}
    mc = card_from_values({"answer_relevance": off_by_one}, labs, judge="j",
                          model="m").metrics["answer_relevance"]
    assert mc.kappa_kind == "quadratic"
    skm = pytest.importorskip("sklearn.metrics")
    cats = np.array([round(v * 2) for v in off_by_one.values()])
    assert mc.stats["kappa"].value == pytest.approx(
        skm.cohen_kappa_score(cats, np.array(list(y.values())), weights="quadratic"))
    assert mc.bias_direction == "lenient"
    cont = metric_card("e2e", [0.1, 0.9, 0.4, 0.8], [0.0, 1.0, 0.5, 0.5], scale="continuous",
                       n_boot=200)
    assert cont.stats["mae"].value == pytest.approx(0.15)


def test_ppi_estimates_from_label_set() -> None:
    rng = np.random.default_rng(9)
    ids = [f"s{i}" for i in range(500)]
    y = {s: float(rng.random() < 0.55) for s in ids}
    f = {s: (1.0 if rng.random() < 0.3 else v) for s, v in y.items()}
    f["s499"] = None  # unscored: outside N
    labs = _labels("faithfulness", {s: y[s] for s in ids[:80]})
    est = ppi_estimates({"faithfulness": f}, labs, target_width=0.05)["faithfulness"]
    e = est.estimate
    assert e.n_all == 499 and e.n_labelled == 80
    assert e.judge_mean > np.mean(list(y.values())) + 0.05  # the judge is lenient
    assert e.ci_low <= np.mean(list(y.values())) <= e.ci_high
    assert est.plan is not None


# ------------------------------------------------------------------ benchmark
def test_bundled_benchmark_size_balance_and_builder_is_reproducible() -> None:
    items = load_bench(lang="all")
    ru = [i for i in items if i.lang == "ru"]
    en = [i for i in items if i.lang == "en"]
    assert len(ru) >= 240 and len(en) >= 30
    for task in TASKS:
        assert sum(i.task == task for i in ru) >= 30
    faith = {i.kind for i in ru if i.task == "faithfulness"}
    assert faith == {"numbers", "dates", "negation", "inference", "partial", "refusal"}
    for task in GRADED:
        assert {i.label for i in ru if i.task == task} == {0, 1, 2}
    assert len({i.id for i in items}) == len(items)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/build_judge_bench.py"),
                           "--check"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def test_benchmark_items_never_enter_static_prompt_text() -> None:
    """Zero-shot: the fixed part of every prompt (everything but the fenced item) contains
    no benchmark text, so items are never few-shot examples."""
    import re

    items = load_bench(lang="all")
    answers = {i.answer for i in items if i.answer} | {i.context for i in items if i.context}
    for it in items[:60]:
        for binary in (False, True):
            req = item_request(it, binary=binary)
            text = "\n".join(m["content"] for m in req.messages)
            static = re.sub(r"<(\w+)>\n.*?\n</\1>", "", text, flags=re.S)
            assert not any(a in static for a in answers), it.id


def _oracle(items, flip: float = 0.0, seed: int = 0):
    by_user = {}
    for it in items:
        for b in (False, True):
            by_user[item_request(it, binary=b).messages[-1]["content"]] = it
    rng = random.Random(seed)

    def fn(req):
        it = by_user[req.messages[-1]["content"]]
        wrong = rng.random() < flip
        binary = "binary" in str(req.schema.get("title", ""))
        if it.task in GRADED:
            g = (int(it.label) + (1 if wrong else 0)) % 3
            if binary:
                yn = "yes" if g >= 1 else "no"
                return ({"contexts": [{"id": 1, "relevant": yn}]}
                        if it.task == "context_relevance" else {"answers_question": yn})
            return ({"contexts": [{"id": 1, "relevance": g}]}
                    if it.task == "context_relevance" else {"answer_relevance": g})
        yn = it.label if not wrong else ("no" if it.label == "yes" else "yes")
        if it.task == "production_gate":
            return {"verdict": yn}
        if it.task == "judged_refusal":
            return {"refused": yn}
        if it.task == "citation_support":
            return {"pairs": [{"id": 1, "supported": yn}]}
        if it.task == "history_faithfulness":
            return {"answer_claims": [{"id": 1, "in_context": yn, "in_history": "no"}]}
        key = "in_context" if it.task == "faithfulness" else "in_reference"
        return {"answer_claims": [{"id": 1, key: yn}]}
    return fn


def test_run_bench_cards_compare_and_flip_rates() -> None:
    items = load_bench(lang="ru", limit=30)
    assert {i.task for i in items} == set(TASKS) and len(items) == 30 * len(TASKS)
    good = run_bench(ScriptedJudge(_oracle(items), name="oracle"), items)
    noisy = run_bench(ScriptedJudge(_oracle(items, 0.35, 1), name="noisy"), items, repeats=3)
    for task in TASKS:
        assert good.card.metrics[task].stats["accuracy"].value == 1.0
        assert noisy.card.metrics[task].stats["accuracy"].value < 0.95
        assert noisy.card.metrics[task].flaky["flip_rate"] > 0.1
    rows = compare_bench([noisy, good], n_resamples=2000)
    faith = [r for r in rows if r["task"] == "faithfulness"]
    assert faith[0]["judge"] == "oracle" and faith[1]["vs_best_diff"] < 0
    assert faith[1]["vs_best_p"] < 0.05
    assert good.card.meta["prompt_variant"] == "graded"
    demo = run_bench(ScriptedJudge(_oracle(items), name="demo", demo=True), items)
    assert demo.card.meta["prompt_variant"] == "binary"
    # binary prompts cannot express the middle grade: the card shows it
    assert demo.card.metrics["answer_relevance"].stats["accuracy"].value < 0.9


def test_unparseable_bench_reply_is_unscored_not_zero() -> None:
    items = load_bench(lang="en", tasks=["production_gate"])
    run = run_bench(ScriptedJudge(lambda req: "I would rather not say.", name="bad"), items)
    mc = run.card.metrics["production_gate"]
    assert mc.n == 0 and mc.n_unscored == len(items)
    assert mc.stats["accuracy"].value is None


def test_label_scale_comes_from_the_judged_metric_rows() -> None:
    from ragmeter.metrics.judged import ROWS, label_scale_of

    # only grades 0 and 1 seen: inference would say binary, the row says ordinal
    labs = _labels("answer_relevance", {"q1": 0, "q2": 1, "q3": 1})
    assert labs.scales["answer_relevance"] == "ordinal"
    assert labs.values("answer_relevance") == {"q1": 0.0, "q2": 0.5, "q3": 0.5}
    for row in ROWS:
        raw = {"binary": 1, "ordinal": 2, "continuous": 0.5}[row.label_scale]
        assert _labels(row.name, {"q1": raw}).scales[row.name] == row.label_scale
        assert label_scale_of(f"{row.name}(x=1)") == row.label_scale
    assert label_scale_of("my_custom_metric") is None
    assert _labels("my_custom_metric", {"q1": 2, "q2": 0}).scales["my_custom_metric"] \
        == "ordinal"  # no row: inferred
    with pytest.raises(DataError) as e:
        _labels("e2e_score", {"q1": 0.75})
    assert "mem:1 field 'label'" in str(e.value) and "ordinal" in str(e.value)
    assert _labels("e2e_score", {"q1": 0.75}, scale="continuous").scales["e2e_score"] \
        == "continuous"
