"""Statistics on the ground floor: every interval, test and agreement coefficient of ragmeter.

* uncertainty of a mean: seeded percentile bootstrap (:func:`bootstrap_means`,
  :func:`bootstrap_ci`) and paired significance tests between two systems on the same samples
  (:func:`paired_test`, :class:`PairedComparison`);
* classification: F1 of many resamples at once (:func:`f1_vec`), ROC AUC as the Mann–Whitney
  statistic (:func:`roc_auc`) and bootstrap CIs of both (:func:`bootstrap_stat`);
* agreement between judges or between repeats of one judge: Krippendorff's alpha at any level of
  measurement (:func:`krippendorff_alpha`, with :func:`krippendorff_alpha_ci`) and Cohen's kappa
  (:func:`cohen_kappa`).

Everything is deterministic for a given seed: the same values and seed give the same CI and
the same p-value, on any machine (NumPy ``PCG64`` via ``default_rng``). Call accounting of the
judge engine (latency, tokens, cost) is not statistics in this sense and lives with the engine
in ``ragmeter.judges.stats``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

Level = Literal["nominal", "ordinal", "interval", "ratio"]

DEFAULT_SEED = 42
DEFAULT_N_BOOT = 1000
DEFAULT_N_RESAMPLES = 10000
_CHUNK_CELLS = 4_000_000  # bound memory: resample at most this many cells at a time


def bootstrap_means(
    values: np.ndarray, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT
) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``; vectorised in chunks."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n == 0:
        return np.empty(0)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = x[idx].mean(axis=1)
    return out


def bootstrap_ci(
    values: np.ndarray,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean. ``(nan, nan)`` only when there is no value at all."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    means = bootstrap_means(x, seed=seed, n_boot=n_boot)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class PairedComparison:
    """Result of comparing system B against system A on the same samples (B − A)."""

    metric: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    n_resamples: int
    seed: int
    n_dropped: int = 0
    higher_is_better: bool = True

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05

    @property
    def regression(self) -> bool:
        """B is significantly worse than A."""
        worse = self.diff < 0 if self.higher_is_better else self.diff > 0
        return self.significant and worse

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["significant"] = self.significant
        d["regression"] = self.regression
        return d


def paired_test(
    a: np.ndarray,
    b: np.ndarray,
    *,
    metric: str = "",
    method: str = "randomization",
    n_resamples: int = DEFAULT_N_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    higher_is_better: bool = True,
    n_dropped: int = 0,
) -> PairedComparison:
    """Two-sided paired test of mean(B − A).

    ``randomization``: sign-flip permutation test (Fisher); p = (1 + #{|mean(s·d)| ≥ |mean d|}) /
    (1 + R). ``bootstrap``: p from the bootstrap distribution of the mean difference shifted to
    zero (two-sided). The CI of the difference is always a percentile bootstrap CI.
    """
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError("paired_test needs two arrays of the same length (aligned samples)")
    d = xb - xa
    n = d.size
    if n == 0:
        nan = float("nan")
        return PairedComparison(metric, 0, nan, nan, nan, nan, nan, 1.0, method, n_resamples,
                                seed, n_dropped, higher_is_better)
    obs = float(d.mean())
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_CELLS // n)
    if method == "randomization":
        extreme = 0
        for start in range(0, n_resamples, rows):
            m = min(rows, n_resamples - start)
            signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
            perm = (signs * d).mean(axis=1)
            extreme += int(np.count_nonzero(np.abs(perm) >= abs(obs) - 1e-12))
        p = (1 + extreme) / (1 + n_resamples)
    elif method == "bootstrap":
        boots = bootstrap_means(d, seed=seed, n_boot=n_resamples)
        centred = boots - obs
        p = (1 + int(np.count_nonzero(np.abs(centred) >= abs(obs) - 1e-12))) / (1 + n_resamples)
    else:
        raise ValueError(f"unknown paired test method '{method}' (allowed: randomization, bootstrap)")
    lo, hi = bootstrap_ci(d, seed=seed + 1, level=level)
    if obs == 0.0 and np.all(d == 0):
        p = 1.0
    return PairedComparison(
        metric=metric, n=n, mean_a=float(xa.mean()), mean_b=float(xb.mean()), diff=obs,
        ci_low=lo, ci_high=hi, p_value=float(min(1.0, p)), method=method,
        n_resamples=n_resamples, seed=seed, n_dropped=n_dropped,
        higher_is_better=higher_is_better,
    )


# --------------------------------------------------------------------------- classification
def f1_vec(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """F1 of each row of boolean matrices ``(B, n)`` (NaN where 2TP+FP+FN = 0)."""
    g = np.asarray(gold, dtype=bool)
    p = np.asarray(pred, dtype=bool)
    tp = (g & p).sum(axis=-1)
    d = 2 * tp + (~g & p).sum(axis=-1) + (g & ~p).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, 2 * tp / np.maximum(d, 1), np.nan)


def roc_auc(gold: np.ndarray, score: np.ndarray) -> float | None:
    """Mann–Whitney AUC with average ranks for ties; ``None`` without both classes."""
    from scipy.stats import rankdata

    g = np.asarray(gold, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    n_pos = int(g.sum())
    n_neg = int(g.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    r = rankdata(s)
    return float((r[g].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bootstrap_stat(
    gold: np.ndarray,
    pred_or_score: np.ndarray,
    stat: str,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``f1`` or ``auc``, resampling items with replacement.

    Resamples where the statistic is undefined (no positive, one class) are dropped.
    """
    g = np.asarray(gold, dtype=bool)
    x = np.asarray(pred_or_score)
    n = g.size
    if n == 0:
        return (None, None)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    if stat == "f1":
        vals = f1_vec(g[idx], x.astype(bool)[idx])
    elif stat == "auc":
        vals = np.array([v if (v := roc_auc(g[i], x[i])) is not None else np.nan for i in idx])
    else:
        raise ValueError(f"unknown statistic {stat!r}")
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return (None, None)
    a = (1 - level) / 2
    lo, hi = np.quantile(vals, [a, 1 - a])
    return (float(lo), float(hi))


# --------------------------------------------------------------------------- agreement
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
    """95 % percentile bootstrap CI of :func:`krippendorff_alpha`, resampling units (columns);
    resamples where alpha is undefined are dropped; ``(None, None)`` with fewer than 2 units."""
    m = np.asarray(matrix, dtype=np.float64)
    units = m.shape[1]
    if units < 2:
        return (None, None)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        a = krippendorff_alpha(m[:, rng.integers(0, units, units)], level)
        if not np.isnan(a):
            vals.append(a)
    if not vals:
        return (None, None)
    lo, hi = np.quantile(vals, [0.025, 0.975])
    return float(lo), float(hi)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Unweighted Cohen's kappa of two label vectors (``None`` when p_e = 1)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.size == 0:
        return None
    cats = np.unique(np.concatenate([a, b]))
    pa = np.array([(a == c).mean() for c in cats])
    pb = np.array([(b == c).mean() for c in cats])
    pe = float((pa * pb).sum())
    po = float((a == b).mean())
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)
