"""Paired tests between stored runs prepared when each run is stored, so a diff or a compare
page of two large runs costs a subtraction, not ten thousand resamples.

The randomization test of B against A flips the sign of each difference ``d = b − a`` with
draws that depend only on the seed and the number of samples, so it is linear in ``d``. So each
run keeps, per metric (from :data:`PROJECT_MIN` samples, at most :data:`GAPS_MAX` of them
unscored), its values' sums under the test's draws
(:func:`ragmeter.stats.resampling.sign_flip_sums`, an unscored value counted as 0), the draws
at its unscored samples, and its bootstrap means: the p-value of two runs scored on the same
samples in the same order is the difference of their projections less the pairs either run
left unscored, the same as :func:`ragmeter.results.records.compare_metric` computes (up to
rounding in the last bits); the CI of the difference is the direct test's own
(:func:`ragmeter.stats.intervals.paired_interval`: no resampling, cheap). Any other pair is
tested the ordinary way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.results.statistic import is_statistic
from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_N_RESAMPLES, PairedComparison
from ragmeter.stats.intervals import paired_interval
from ragmeter.stats.resampling import bootstrap_means, sign_flip_columns, sign_flip_sums

#: samples from which a metric's projections are stored (below it a test is cheap anyway)
PROJECT_MIN = 1000
#: the largest share of unscored samples a projection keeps the draws of (R/8 bytes each)
GAPS_MAX = 0.1


@dataclass(frozen=True)
class Projection:
    """One metric's values under the paired test's draws (seed ``seed``): ``signs``, the sums
    of its values (an unscored one counted as 0); ``boots``, the bootstrap means of its scored
    values; ``gaps``, the draws at its unscored samples (``(n_resamples, k)`` of 0/1, in
    sample order; empty when every sample is scored)."""

    seed: int
    signs: np.ndarray   # sign_flip_sums(values, seed, n_resamples)
    boots: np.ndarray   # bootstrap_means(values, seed + 1, n_boot)
    gaps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.uint8))


def project(mr: Any) -> Projection | None:
    """A metric's projections, or None below :data:`PROJECT_MIN` samples, with more than
    :data:`GAPS_MAX` of them unscored, or for a statistic (latency percentiles)."""
    values = np.asarray(mr.values, dtype=np.float64)
    gap = np.isnan(values)
    if (values.size < PROJECT_MIN or gap.mean() > GAPS_MAX
            or is_statistic(mr.metric, mr.counts)):
        return None
    seed = int(mr.seed)
    scored = values[~gap]   # at least 90 % of PROJECT_MIN or more: never empty
    return Projection(seed, sign_flip_sums(np.where(gap, 0.0, values), seed,
                                           DEFAULT_N_RESAMPLES),
                      bootstrap_means(scored, seed=seed + 1, n_boot=DEFAULT_N_BOOT),
                      sign_flip_columns(values.size, np.flatnonzero(gap), seed,
                                        DEFAULT_N_RESAMPLES) if gap.any()
                      else np.zeros((DEFAULT_N_RESAMPLES, 0), dtype=np.uint8))


def to_columns(p: Projection | None) -> dict[str, bytes | None]:
    """The store's columns of a projection (``None``: not stored)."""
    if p is None:
        return {"signs_blob": None, "boots_blob": None, "gaps_blob": None}
    return {"signs_blob": np.asarray(p.signs, dtype="<f8").tobytes(),
            "boots_blob": np.asarray(p.boots, dtype="<f8").tobytes(),
            "gaps_blob": np.packbits(p.gaps, axis=0).tobytes() if p.gaps.size else None}


def from_columns(seed: int, signs: bytes | None, boots: bytes | None,
                 gaps: bytes | None = None) -> Projection | None:
    """:func:`to_columns` read back; ``gaps`` of a metric with unscored samples (None: it has
    none, or it was stored before they were kept — it cannot give the test then)."""
    if not signs or not boots:
        return None
    s = np.frombuffer(signs, dtype="<f8").astype(np.float64)
    packed = np.frombuffer(gaps or b"", dtype=np.uint8)
    rows = -(-s.size // 8)
    g = (np.unpackbits(packed.reshape(rows, -1), axis=0)[:s.size] if packed.size
         else np.zeros((s.size, 0), dtype=np.uint8))
    return Projection(int(seed), s, np.frombuffer(boots, dtype="<f8").astype(np.float64), g)


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
    if xa.shape != xb.shape:
        return None
    gap_a, gap_b = np.isnan(xa), np.isnan(xb)
    if pa.gaps.shape[1] != int(gap_a.sum()) or pb.gaps.shape[1] != int(gap_b.sum()):
        return None   # stored before the draws at unscored samples were kept
    kept = ~gap_a & ~gap_b
    n = int(kept.sum())
    if n == 0:
        return None
    a0, b0 = np.where(gap_a, 0.0, xa), np.where(gap_b, 0.0, xb)
    # Σ over kept pairs of b_ri·(b − a): the stored sums less the pairs dropped, whose draws
    # each run kept at its own unscored samples
    sums = pb.signs - pa.signs
    if gap_a.any():
        sums = sums - pa.gaps @ b0[gap_a]
    only_b = gap_b & ~gap_a
    if only_b.any():
        sums = sums + pb.gaps[:, only_b[gap_b]] @ a0[only_b]
    d = xb[kept] - xa[kept]
    obs = float(d.mean())
    perm = (2.0 * sums - float(d.sum())) / n
    extreme = int(np.count_nonzero(np.abs(perm) >= abs(obs) - 1e-12))
    p = (1 + extreme) / (1 + n_resamples)
    ci = paired_interval(xa[kept], xb[kept], level)  # the direct test's interval
    if obs == 0.0 and np.all(d == 0):
        p = 1.0
    return PairedComparison(
        metric=a.metric, n=n, mean_a=float(xa[kept].mean()), mean_b=float(xb[kept].mean()),
        diff=obs, ci_low=ci.low, ci_high=ci.high, p_value=float(min(1.0, p)), method=method,
        n_resamples=n_resamples, seed=used, n_dropped=xa.size - n,
        higher_is_better=a.higher_is_better, ci_method=ci.method)


__all__ = ["GAPS_MAX", "PROJECT_MIN", "Projection", "from_columns", "paired_projected", "project",
           "to_columns"]
