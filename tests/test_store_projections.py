"""Paired tests between stored runs from the projections kept with each run: the same p-value
and CI as the direct test (up to rounding), and no projection used where it cannot give them."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.results.projections import PROJECT_MIN, paired_projected, project
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
    with_gap = b.copy()
    with_gap[3] = np.nan
    assert project(_mr(with_gap)) is None                               # an unscored sample
    assert project(_mr(a[:PROJECT_MIN - 1])) is None                    # small: tested directly
