"""Slices: per-slice mean, CI and n, withheld small cells, paired tests per slice with the
family's p-values adjusted (Holm / Benjamini–Hochberg)."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.slices import (
    SliceTable,
    compare_slices,
    mean_ci,
    parse_by,
    slice_keys,
    slice_results,
)
from ragmeter.stats.multiple import adjust, bh, holm


def test_holm_and_bh_match_hand_computed_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005,0.01,0.03,0.04 × 4,3,2,1 = 0.02,0.03,0.06,0.04 → monotone 0.06
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: sorted × 4/1..4 = 0.02,0.02,0.04,0.04 → step-up minimum from the top
    assert bh(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert np.isnan(holm([0.5, float("nan")])[1])
    with pytest.raises(ValueError):
        adjust([0.1], "bonferroni")
    with pytest.raises(ValueError):
        holm([1.5])


def _samples(n: int = 60) -> list[Sample]:
    out = []
    for i in range(n):
        kind = ("fact", "howto", "rare")[0 if i < 30 else (1 if i < 55 else 2)]
        out.append(Sample(id=f"q{i}", user_input="What is it?", type=kind,
                          metadata={"section": "a" if i % 2 else "b"},
                          history=[{"role": "user", "content": "hi"}] if i % 3 == 0 else None))
    return out


def _result(name: str, values: np.ndarray, metric: str = "mrr") -> EvalResult:
    r = EvalResult(name)
    ids = [f"q{i}" for i in range(values.size)]
    r.add(MetricResult(metric, ids, values, Signature.make(metric=metric)))
    return r


def test_cells_mean_ci_n_and_withheld() -> None:
    rng = np.random.default_rng(1)
    res = _result("sys", rng.uniform(0, 1, 60))
    table = slice_results(res, _samples(), "type", min_n=10)
    by_label = {c.label: c for c in table.cells}
    assert set(by_label) == {"type=fact", "type=howto", "type=rare"}
    assert by_label["type=fact"].n == 30 and not by_label["type=fact"].withheld
    rare = by_label["type=rare"]
    assert rare.withheld and rare.n == 5 and rare.mean is None   # n shown, mean withheld
    fact = by_label["type=fact"]
    # scores in 0-1: exact interval on the effective sample size, inside 0-1
    assert 0 <= fact.ci_low < fact.mean < fact.ci_high <= 1 and fact.ci_method == "cp-eff"
    assert table.worst("mrr") in (by_label["type=fact"], by_label["type=howto"])
    assert "slices:type" in str(table.signature) and "min_n:10" in str(table.signature)
    back = SliceTable.from_dict(table.to_dict())
    assert back.cells == table.cells


def test_two_fields_turn_and_metadata() -> None:
    keys = slice_keys(_samples(), parse_by("section,turn"))
    assert keys["q0"] == ("b", "1") and keys["q1"] == ("a", "0")
    with pytest.raises(ConfigError, match="sectoin"):
        slice_keys(_samples(), ["sectoin"])


def test_exact_interval_for_yes_no_values() -> None:
    lo, hi, method = mean_ci(np.ones(10))
    assert method == "cp" and hi == pytest.approx(1.0) and lo < 0.75   # not a zero-width interval
    assert lo == pytest.approx(0.025 ** (1 / 10))                       # Clopper-Pearson, 10 of 10
    lo, hi, method = mean_ci(np.asarray([3.0, 5.0, 4.0]))               # unbounded values: t
    assert method == "t" and lo < 4.0 < hi


def test_paired_tests_per_slice_are_adjusted_and_find_the_hidden_regression() -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(0.4, 1.0, 60)
    b = a + rng.normal(0, 0.02, 60)
    b[30:55] -= 0.3                       # the how-to questions regressed
    table = compare_slices(_result("base", a), _result("new", np.clip(b, 0, 1)), _samples(),
                           "type", min_n=10, n_resamples=2000)
    assert [t.label for t in table.regressed()] == ["type=howto"]
    assert len(table.tests) == 2            # the rare slice (5 samples) is not tested
    for t in table.tests:
        assert t.p_adjusted >= t.p_value
    sig = str(table.signature)
    assert "correction:holm" in sig and "family:2" in sig
    bh_table = compare_slices(_result("base", a), _result("new", np.clip(b, 0, 1)), _samples(),
                              "type", correction="bh", n_resamples=2000)
    assert "correction:bh" in str(bh_table.signature)
    with pytest.raises(ConfigError):
        compare_slices(_result("a", a), _result("b", b), _samples(), "type",
                       correction="none")


def test_result_by_uses_samples_or_the_kept_slices() -> None:
    from ragmeter.results.slices import SliceSpec, attach_slices

    res = _result("sys", np.linspace(0, 1, 60))
    direct = res.by("type", _samples())
    with pytest.raises(ValueError, match="pass the samples"):
        res.by("type")
    attach_slices([res], _samples(), SliceSpec(("type", "section")))
    kept = res.by("type")
    assert [c.mean for c in kept.cells] == [c.mean for c in direct.cells]
    with pytest.raises(ValueError, match="not turn"):
        res.by("turn")


def test_ppi_per_slice_where_labels_exist() -> None:
    from ragmeter.judge_trust.labels import labels_from_records
    from ragmeter.judge_trust.ppi import ppi_by_slice

    rng = np.random.default_rng(5)
    keys = slice_keys(_samples(), ["type"])
    judge = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.5, 1.0, 60))}
    # humans are 0.2 stricter than the judge; every third sample labelled
    recs = [(i + 1, {"sample_id": f"q{i}", "metric": "faithfulness",
                     "label": round(judge[f"q{i}"] - 0.2, 3), "scale": "continuous"})
            for i in range(0, 60, 3)]
    labels = labels_from_records(recs, "labels.jsonl")
    per = ppi_by_slice("faithfulness", judge, labels, keys, min_n=10)
    assert per[("rare",)] is None                    # 5 samples: withheld
    fact = per[("fact",)]
    assert fact is not None
    raw = np.mean([judge[f"q{i}"] for i in range(30)])
    assert fact.estimate.estimate == pytest.approx(raw - 0.2, abs=1e-3)   # labels rounded


def test_intervals_are_cut_to_the_metric_range() -> None:
    from ragmeter.reports.slices import value_ranges

    res = _result("sys", np.r_[np.ones(28), [0.2, 0.4], np.ones(30)])
    raw = slice_results(res, _samples(), "type")
    # values in 0-1 get an interval inside 0-1 by construction (no cut needed)
    assert max(c.ci_high for c in raw.cells if not c.withheld) <= 1.0
    # a metric on -1..1 gets a t interval, which can pass its range and is cut to it
    res = _result("sys", np.r_[np.ones(28), [-0.6, 0.4], np.ones(30)],
                  metric="semantic_similarity")
    raw = slice_results(res, _samples(), "type")
    cut = slice_results(res, _samples(), "type",
                        value_ranges=value_ranges(["semantic_similarity"]))
    assert max(c.ci_high for c in raw.cells if not c.withheld) > 1.0    # a t interval
    assert max(c.ci_high for c in cut.cells if not c.withheld) == 1.0
    assert value_ranges(["ndcg@10", "no_such_metric"]) == {"ndcg@10": (0.0, 1.0),
                                                          "no_such_metric": None}
