"""Paired tests between stored runs from the projections kept with each run: the same p-value
and CI as the direct test (up to rounding), and no projection used where it cannot give them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ragmeter.results.projections import (
    PROJECT_MIN,
    from_columns,
    paired_projected,
    project,
    to_columns,
)
from ragmeter.results.records import MetricResult, Signature, compare_metric


def _mr(values, ids=None, seed=42, metric="m"):
    ids = ids or [f"q{i}" for i in range(len(values))]
    reasons = {i: "judge_timeout" for i, v in enumerate(values) if np.isnan(v)}
    mr = MetricResult(metric, ids, np.asarray(values, dtype=float), Signature.make(metric=metric),
                      reasons=reasons, seed=seed)
    mr.__dict__["projection"] = project(mr)
    return mr


@pytest.mark.parametrize("kind", ["binary", "graded", "continuous", "same"])
@pytest.mark.parametrize("n", [PROJECT_MIN, 5000])
def test_the_projected_test_is_the_direct_test(kind, n):
    rng = np.random.default_rng(n + len(kind))
    if kind == "binary":
        a, b = (rng.random(n) < 0.6).astype(float), (rng.random(n) < 0.63).astype(float)
    elif kind == "graded":
        a, b = rng.integers(0, 3, n) / 2, rng.integers(0, 3, n) / 2
    elif kind == "continuous":
        a = rng.random(n)
        b = np.clip(a + rng.normal(0.004, 0.1, n), 0, 1)
    else:
        a = b = (rng.random(n) < 0.5).astype(float)
    ma, mb = _mr(a), _mr(b)
    fast, direct = paired_projected(ma, mb), compare_metric(ma, mb)
    assert fast is not None
    assert fast.p_value == direct.p_value and fast.n == direct.n
    for f in ("diff", "ci_low", "ci_high", "mean_a", "mean_b"):
        assert getattr(fast, f) == pytest.approx(getattr(direct, f), abs=1e-12), f


def test_no_projection_where_it_cannot_give_the_test():
    rng = np.random.default_rng(1)
    a, b = rng.random(PROJECT_MIN), rng.random(PROJECT_MIN)
    assert paired_projected(_mr(a), _mr(b, seed=7)) is None            # another seed
    assert paired_projected(_mr(a), _mr(b), seed=3) is None             # another seed asked
    assert paired_projected(_mr(a), _mr(b), n_resamples=999) is None
    assert paired_projected(_mr(a), _mr(b), method="bootstrap") is None
    ids = [f"x{i}" for i in range(PROJECT_MIN)]
    assert paired_projected(_mr(a), _mr(b, ids=ids)) is None            # other samples
    many_gaps = b.copy()
    many_gaps[: PROJECT_MIN // 5] = np.nan
    assert project(_mr(many_gaps)) is None                              # 20 % unscored
    assert project(_mr(a[:PROJECT_MIN - 1])) is None                    # small: tested directly
    stale = _mr(np.where(np.arange(PROJECT_MIN) == 3, np.nan, b))      # stored before gaps
    stale.__dict__["projection"] = replace(stale.__dict__["projection"],
                                           gaps=np.zeros((10000, 0), dtype=np.uint8))
    assert paired_projected(_mr(a), stale) is None


@pytest.mark.parametrize("where", ["a", "b", "both", "overlap"])
def test_unscored_samples_projected_give_the_direct_test(where):
    """A pair unscored in either run is dropped; the stored sums less the draws each run kept
    at its unscored samples give the direct test's p-value exactly."""
    n = 3000
    rng = np.random.default_rng(len(where))
    a, b = rng.integers(0, 3, n) / 2, rng.integers(0, 3, n) / 2
    gaps_a, gaps_b = rng.choice(n, 60, replace=False), rng.choice(n, 45, replace=False)
    if where in ("a", "both", "overlap"):
        a[gaps_a] = np.nan
    if where in ("b", "both"):
        b[gaps_b] = np.nan
    if where == "overlap":
        b[gaps_a[:20]] = np.nan
    ma, mb = _mr(a), _mr(b)
    fast, direct = paired_projected(ma, mb), compare_metric(ma, mb)
    assert fast is not None
    assert fast.p_value == direct.p_value and fast.n == direct.n
    assert fast.n_dropped == direct.n_dropped > 0
    for f in ("diff", "ci_low", "ci_high", "mean_a", "mean_b"):
        assert getattr(fast, f) == pytest.approx(getattr(direct, f), abs=1e-12), f
    # and stored: the draws survive the store's columns
    cols = to_columns(project(ma))
    back = from_columns(42, cols["signs_blob"], cols["boots_blob"], cols["gaps_blob"])
    assert back is not None and np.array_equal(back.gaps, ma.__dict__["projection"].gaps)


def test_dropping_a_pair_keeps_a_valid_test():
    """The randomization test over the kept pairs (a dropped pair counted as 0 under every
    draw) is the test of the kept pairs: equal samples give p = 1, a clear shift a small p."""
    from ragmeter.stats.resampling import paired_test

    rng = np.random.default_rng(5)
    a = rng.random(400)
    keep = rng.random(400) > 0.1
    same = paired_test(a, a.copy(), keep=keep)
    assert same.p_value == 1.0 and same.n == int(keep.sum())
    shifted = paired_test(a, np.clip(a + 0.2, 0, 1), keep=keep)
    assert shifted.p_value < 0.001 and shifted.diff > 0.1
