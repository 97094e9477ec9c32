"""Agreement between raters (judges, repeats of one judge, humans) and flakiness of verdicts.

* Krippendorff's alpha at any level of measurement (:func:`krippendorff_alpha`, with a
  bootstrap CI over units :func:`krippendorff_alpha_ci`);
* Cohen's κ ``= (p_o − p_e) / (1 − p_e)``; the weighted form uses disagreement weights
  ``w_ij = (i − j)² / (k − 1)²`` (quadratic) over ``k`` ordered categories:
  ``κ_w = 1 − Σ w_ij O_ij / Σ w_ij E_ij`` with ``E`` the outer product of the marginals
  (:func:`cohen_kappa`; unweighted, ``w = 1 − I`` gives the plain κ);
* Spearman ρ: Pearson correlation of average ranks (:func:`spearman`, :func:`rankdata`);
* flip rates of repeated verdicts (:func:`flip_stats`, :func:`verdict_flip_rate`).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from ragmeter.stats.resampling import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_stat

Level = Literal["nominal", "ordinal", "interval", "ratio"]


def krippendorff_alpha(matrix: np.ndarray, level: Level = "nominal") -> float:
    """Krippendorff's alpha of a ``(raters, units)`` matrix, NaN = missing.

    Built from the coincidence matrix; units with fewer than two values are not pairable.
    Returns NaN when there is no variation to measure (one value only, or no pairable unit).
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"expected a (raters, units) matrix, got shape {m.shape}")
    vals = np.unique(m[~np.isnan(m)])
    if vals.size < 2:
        return float("nan")
    present = ~np.isnan(m)
    counts = np.zeros((m.shape[1], vals.size))  # counts[unit, value]
    np.add.at(counts, (np.nonzero(present)[1], np.searchsorted(vals, m[present])), 1.0)
    mu = counts.sum(axis=1)
    pairable = mu >= 2
    if not pairable.any():
        return float("nan")
    c = counts[pairable]
    w = 1.0 / (mu[pairable] - 1.0)
    o = (c * w[:, None]).T @ c - np.diag((c * w[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        d2 = 1.0 - np.eye(vals.size)
    elif level == "interval":
        d2 = (vals[:, None] - vals[None, :]) ** 2
    elif level == "ratio":
        s = vals[:, None] + vals[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            d2 = np.where(s == 0, 0.0, ((vals[:, None] - vals[None, :]) / s) ** 2)
    elif level == "ordinal":
        cum = np.cumsum(n_c)
        d2 = np.zeros((vals.size, vals.size))
        for a in range(vals.size):
            for b in range(vals.size):
                lo, hi = min(a, b), max(a, b)
                between = cum[hi] - (cum[lo - 1] if lo > 0 else 0.0)
                d2[a, b] = (between - (n_c[a] + n_c[b]) / 2.0) ** 2
    else:
        raise ValueError(f"unknown level {level!r} (nominal, ordinal, interval, ratio)")
    d_o = float((o * d2).sum())
    d_e = float((np.outer(n_c, n_c) * d2).sum())
    if d_e == 0:
        return float("nan")
    return 1.0 - (n - 1.0) * d_o / d_e


def krippendorff_alpha_ci(matrix: np.ndarray, level: Level = "interval", *,
                          seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
                          ) -> tuple[float | None, float | None]:
    """95 % percentile bootstrap CI of :func:`krippendorff_alpha`, resampling units (columns)
    with :func:`~ragmeter.stats.resampling.bootstrap_stat`; resamples where alpha is undefined
    are dropped; ``(None, None)`` with fewer than 2 units or no defined alpha."""
    m = np.asarray(matrix, dtype=np.float64)
    units = m.shape[1]
    if units < 2:
        return (None, None)
    est = bootstrap_stat(lambda idx: krippendorff_alpha(m[:, idx], level), units, seed=seed,
                         n_boot=n_boot, min_defined=0.0)
    return est.ci_low, est.ci_high


def cohen_kappa(a: np.ndarray, b: np.ndarray, *, categories: np.ndarray | None = None,
                weights: str | None = None) -> float | None:
    """Cohen's κ of two label vectors; ``weights="quadratic"`` for ordered categories.

    Labels may be numbers or strings; ``categories`` (sorted) fixes the category set and order
    (needed for weighted κ on a sample that misses a grade). ``None`` when chance agreement is
    already perfect (both raters constant on one value) or there is no item.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.size == 0:
        return None
    if a.shape != b.shape:
        raise ValueError("cohen_kappa needs two label vectors of the same length")
    cats = np.unique(np.concatenate([a, b])) if categories is None else np.asarray(categories)
    k = cats.size
    ia = np.searchsorted(cats, a)
    ib = np.searchsorted(cats, b)
    if (ia >= k).any() or (ib >= k).any() or (cats[np.minimum(ia, k - 1)] != a).any() \
            or (cats[np.minimum(ib, k - 1)] != b).any():
        raise ValueError("cohen_kappa: a label outside the given categories")
    obs = np.zeros((k, k))
    np.add.at(obs, (ia, ib), 1.0)
    obs /= a.size
    exp = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    if weights == "quadratic" and k > 1:
        idx = np.arange(k, dtype=np.float64)
        w = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    elif weights is None:
        w = 1.0 - np.eye(k)
    else:
        raise ValueError(f"unknown kappa weights {weights!r} (None or 'quadratic')")
    de = float((w * exp).sum())
    if de <= 1e-15:
        return None
    return 1.0 - float((w * obs).sum()) / de


def rankdata(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing their mean rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    ranks = np.empty(x.size)
    # boundaries of tie groups
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], x.size]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's ρ; ``None`` when either side is constant (ρ undefined)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size < 2:
        return None
    ra, rb = rankdata(a), rankdata(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    if den == 0.0:
        return None
    return float((ra * rb).sum() / den)



def flip_stats(scores: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Per item (columns of a repeats × items matrix, NaN = missing repeat): the flip rate
    (share of repeat pairs whose verdicts ``score ≥ threshold`` differ) and whether the
    verdict crosses ``threshold`` between repeats (some repeats at or above, some below).

    Items with fewer than two scored repeats get NaN in both.
    """
    S = np.asarray(scores, dtype=np.float64)
    ok = ~np.isnan(S)
    m = ok.sum(axis=0)
    above = ((threshold <= S) & ok).sum(axis=0)
    below = m - above
    pairs = m * (m - 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        flip = np.where(m >= 2, above * below / np.where(pairs > 0, pairs, 1.0), np.nan)
        cross = np.where(m >= 2, ((above > 0) & (below > 0)).astype(float), np.nan)
    return flip, cross


def verdict_flip_rate(verdicts: np.ndarray) -> np.ndarray:
    """Per item (columns of a repeats × items matrix of categorical verdicts, NaN = missing):
    the share of repeat pairs that disagree."""
    V = np.asarray(verdicts, dtype=np.float64)
    ok = ~np.isnan(V)
    m = ok.sum(axis=0)
    pairs = m * (m - 1) / 2.0
    same = np.zeros(V.shape[1])
    for v in np.unique(V[ok]):
        c = ((v == V) & ok).sum(axis=0)
        same += c * (c - 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m >= 2, 1.0 - same / np.where(pairs > 0, pairs, 1.0), np.nan)

