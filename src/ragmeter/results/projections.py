"""Paired tests between stored runs prepared when each run is stored, so a diff or a compare
page of two large runs costs a subtraction, not ten thousand resamples.

The randomization test of B against A flips the sign of each difference ``d = b − a`` with
draws that depend only on the seed and the number of samples, so it is linear in ``d``. So each
run keeps, per metric (from :data:`PROJECT_MIN` samples, every one scored), its values' sums
under the test's draws (:func:`ragmeter.stats.resampling.sign_flip_sums`) (and its bootstrap
means): the p-value of two runs scored on the same samples in the same order is the difference
of their projections, the same as :func:`ragmeter.results.records.compare_metric` computes (up
to rounding in the last bits); the CI of the difference is the direct test's own
(:func:`ragmeter.stats.intervals.paired_interval`: no resampling, cheap). Any other pair is
tested the ordinary way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.results.statistic import is_statistic
from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_N_RESAMPLES, PairedComparison
from ragmeter.stats.intervals import paired_interval
from ragmeter.stats.resampling import bootstrap_means, sign_flip_sums

#: samples from which a metric's projections are stored (below it a test is cheap anyway)
PROJECT_MIN = 1000


@dataclass(frozen=True)
class Projection:
    """One metric's values under the paired test's draws (seed ``seed``)."""

    seed: int
    signs: np.ndarray   # sign_flip_sums(values, seed, n_resamples)
    boots: np.ndarray   # bootstrap_means(values, seed + 1, n_boot)


def project(mr: Any) -> Projection | None:
    """A metric's projections, or None below :data:`PROJECT_MIN` samples or with an
    unscored sample (its pairs depend on the other run)."""
    values = np.asarray(mr.values, dtype=np.float64)
    if (values.size < PROJECT_MIN or np.isnan(values).any()
            or is_statistic(mr.metric, mr.counts)):
        return None
    seed = int(mr.seed)
    return Projection(seed, sign_flip_sums(values, seed, DEFAULT_N_RESAMPLES),
                      bootstrap_means(values, seed=seed + 1, n_boot=DEFAULT_N_BOOT))


def to_columns(p: Projection | None) -> dict[str, bytes | None]:
    """The store's columns of a projection (``None``: not stored)."""
    if p is None:
        return {"signs_blob": None, "boots_blob": None}
    return {"signs_blob": np.asarray(p.signs, dtype="<f8").tobytes(),
            "boots_blob": np.asarray(p.boots, dtype="<f8").tobytes()}


def from_columns(seed: int, signs: bytes | None, boots: bytes | None) -> Projection | None:
    if not signs or not boots:
        return None
    return Projection(int(seed), np.frombuffer(signs, dtype="<f8").astype(np.float64),
                      np.frombuffer(boots, dtype="<f8").astype(np.float64))


def paired_projected(a: Any, b: Any, *, method: str = "randomization",
                     n_resamples: int = DEFAULT_N_RESAMPLES, seed: int | None = None,
                     level: float = 0.95) -> PairedComparison | None:
    """:func:`~ragmeter.results.records.compare_metric` from the two metrics' stored
    projections (``a.projection``), or None when they cannot give it: no projections, other
    samples or order, an unscored sample, another method, seed or number of resamples."""
    pa, pb = a.__dict__.get("projection"), b.__dict__.get("projection")
    if pa is None or pb is None or is_statistic(a.metric, a.counts):
        return None
    used = int(a.seed if seed is None else seed)
    if (method != "randomization" or pa.seed != used
            or pb.seed != used or pa.signs.size != n_resamples
            or pb.signs.size != n_resamples or pa.boots.size != pb.boots.size
            or list(a.sample_ids) != list(b.sample_ids)):
        return None
    xa = np.asarray(a.values, dtype=np.float64)
    xb = np.asarray(b.values, dtype=np.float64)
    if xa.shape != xb.shape or np.isnan(xa).any() or np.isnan(xb).any():
        return None
    d = xb - xa
    n = d.size
    obs = float(d.mean())
    perm = (2.0 * (pb.signs - pa.signs) - float(d.sum())) / n
    extreme = int(np.count_nonzero(np.abs(perm) >= abs(obs) - 1e-12))
    p = (1 + extreme) / (1 + n_resamples)
    ci = paired_interval(xa, xb, level)   # the direct test's interval (no resampling)
    if obs == 0.0 and np.all(d == 0):
        p = 1.0
    return PairedComparison(
        metric=a.metric, n=n, mean_a=float(xa.mean()), mean_b=float(xb.mean()), diff=obs,
        ci_low=ci.low, ci_high=ci.high, p_value=float(min(1.0, p)), method=method,
        n_resamples=n_resamples, seed=used, n_dropped=0, higher_is_better=a.higher_is_better,
        ci_method=ci.method)


__all__ = ["PROJECT_MIN", "Projection", "from_columns", "paired_projected", "project",
           "to_columns"]
