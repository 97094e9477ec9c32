"""Bootstrap CIs and paired tests: deterministic for a seed, sensible on known cases."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.results.records import MetricResult, SampleScore, Signature, compare_metric
from ragmeter.stats import bootstrap_ci, paired_test


def test_bootstrap_deterministic_and_covers_mean() -> None:
    x = np.random.default_rng(0).random(200)
    a = bootstrap_ci(x, seed=7)
    assert a == bootstrap_ci(x, seed=7)
    assert a != bootstrap_ci(x, seed=8)
    assert a[0] < x.mean() < a[1]


def test_bootstrap_degenerate() -> None:
    assert bootstrap_ci(np.array([0.5, 0.5, 0.5])) == (0.5, 0.5)
    lo, hi = bootstrap_ci(np.array([]))
    assert np.isnan(lo) and np.isnan(hi)


def test_paired_identical_is_not_significant() -> None:
    x = np.random.default_rng(1).random(50)
    r = paired_test(x, x.copy(), seed=3)
    assert r.diff == 0 and r.p_value == 1.0 and not r.significant


def test_paired_clear_improvement() -> None:
    rng = np.random.default_rng(2)
    a = rng.random(100)
    b = a + 0.2 + rng.normal(0, 0.05, 100)
    for method in ("randomization", "bootstrap"):
        r = paired_test(a, b, seed=5, method=method, n_resamples=2000)
        assert r.p_value < 0.01 and r.ci_low > 0.1 and r.diff == pytest.approx(0.2, abs=0.03)
        assert r == paired_test(a, b, seed=5, method=method, n_resamples=2000)


def test_paired_matches_exact_sign_flip_distribution() -> None:
    # n=4 differences: the exact two-sided sign-flip p-value is 2/16 for all-positive d.
    d = np.array([1.0, 2.0, 3.0, 4.0])
    r = paired_test(np.zeros(4), d, seed=0, n_resamples=20000)
    assert r.p_value == pytest.approx(2 / 16, abs=0.01)


def test_unscored_excluded_and_counted() -> None:
    sig = Signature.make(metric="x")
    res = MetricResult.from_scores("x", [SampleScore("a", 1.0), SampleScore("b", None, "parse_error"),
                                         SampleScore("c", 0.0)], sig)
    agg = res.aggregate
    assert agg.mean == 0.5 and agg.n == 2 and agg.n_unscored == 1
    assert agg.unscored_by_reason == {"parse_error": 1}
    with pytest.raises(ValueError, match="reason"):
        MetricResult("x", ["a"], np.array([np.nan]), sig)
    back = MetricResult.from_dict(res.to_dict())
    assert back.aggregate == agg and str(back.signature) == str(sig)


def test_compare_aligns_by_id_and_drops_unscored() -> None:
    sig = Signature.make(metric="x")
    a = MetricResult.from_scores("x", [SampleScore(i, v) for i, v in zip("abcd", [0, 1, 0, 1], strict=True)], sig)
    b = MetricResult.from_scores("x", [SampleScore("d", 1.0), SampleScore("c", 1.0),
                                       SampleScore("b", None, "timeout"), SampleScore("a", 1.0)], sig)
    r = compare_metric(a, b, n_resamples=500)
    assert r.n == 3 and r.n_dropped == 1 and r.diff == pytest.approx(2 / 3)


def test_weighted_capable_kappa_equals_the_plain_formula() -> None:
    """The one Cohen's κ (categories/weights capable) equals (p_o − p_e)/(1 − p_e)."""
    import numpy as np

    from ragmeter.stats import cohen_kappa

    rng = np.random.default_rng(3)
    for _ in range(50):
        a = rng.integers(0, 4, 40).astype(float)
        b = np.where(rng.random(40) < 0.6, a, rng.integers(0, 4, 40)).astype(float)
        cats = np.unique(np.concatenate([a, b]))
        pa = np.array([(a == c).mean() for c in cats])
        pb = np.array([(b == c).mean() for c in cats])
        pe, po = float((pa * pb).sum()), float((a == b).mean())
        assert cohen_kappa(a, b) == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    assert cohen_kappa(np.array(["yes", "no", "yes"]), np.array(["yes", "no", "no"])) \
        == pytest.approx(0.4)
    assert cohen_kappa(np.ones(5), np.ones(5)) is None


def test_one_bootstrap_stat_batched_equals_per_resample() -> None:
    import numpy as np

    from ragmeter.stats import bootstrap_stat, f1_vec

    rng = np.random.default_rng(5)
    g = rng.random(30) < 0.5
    p = rng.random(30) < 0.5
    batched = bootstrap_stat(lambda i: f1_vec(g[i], p[i]), 30, batched=True, seed=9)
    looped = bootstrap_stat(lambda i: float(f1_vec(g[i], p[i])), 30, seed=9)
    assert batched == looped and batched.ci_low is not None
