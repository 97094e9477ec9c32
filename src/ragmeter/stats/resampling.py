"""Resampling: seeded bootstrap intervals of a mean or of any statistic, paired tests.

* :func:`bootstrap_means` / :func:`bootstrap_ci` — percentile bootstrap of a mean (vectorised);
* :func:`bootstrap_mean` — the same as an :class:`Estimate` (value, CI, ``n``, seed);
* :func:`bootstrap_stat` — any statistic of the items, computed on resampled item indices;
* :func:`paired_test` — two systems on the same samples (:class:`PairedComparison`): a
  randomization (or bootstrap) p-value, the CI of the difference from
  :func:`ragmeter.stats.intervals.paired_interval`.

Everything is deterministic for a given seed (NumPy ``PCG64`` via ``default_rng``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragmeter.stats.intervals import paired_interval

DEFAULT_SEED = 42
DEFAULT_N_BOOT = 1000
DEFAULT_N_RESAMPLES = 10000
_CHUNK_CELLS = 4_000_000  # bound memory: resample at most this many cells at a time
_GATHER_CELLS = 1 << 16  # bootstrap cells gathered at a time (fits a CPU cache)


def bootstrap_means(
    values: np.ndarray, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT
) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``; vectorised in chunks."""
    return bootstrap_means_many([values], seed=seed, n_boot=n_boot)[0]


def bootstrap_means_many(
    arrays: Sequence[np.ndarray], seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT
) -> list[np.ndarray]:
    """:func:`bootstrap_means` of several arrays of one length, from one set of resamples.

    Each array's result is bit for bit what :func:`bootstrap_means` gives it alone (the same
    seed draws the same index rows); the indices are drawn once for all of them.
    """
    xs = [np.asarray(v, dtype=np.float64) for v in arrays]
    if not xs:
        return []
    n = xs[0].size
    if any(x.size != n for x in xs):
        raise ValueError("bootstrap_means_many needs arrays of one length")
    if n == 0:
        return [np.empty(0) for _ in xs]
    rng = np.random.default_rng(seed)
    outs = [np.empty(n_boot) for _ in xs]
    # a few resamples at a time: their indices and gathered values stay in the CPU cache and
    # the buffers are reused (the generator's stream does not depend on how draws are split)
    rows = max(1, _GATHER_CELLS // n)
    buf = np.empty(rows * n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        picked = buf[:idx.size].reshape(idx.shape)
        for x, out in zip(xs, outs, strict=True):
            np.take(x, idx, out=picked, mode="clip")  # (in range: no check) as x[idx].mean(axis=1)
            np.add.reduce(picked, axis=1, out=out[start:stop])
            np.true_divide(out[start:stop], n, out=out[start:stop])
    return outs


def bootstrap_ci(
    values: np.ndarray,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean. ``(nan, nan)`` only when there is no value at all."""
    return bootstrap_cis([values], seed=seed, n_boot=n_boot, level=level)[0]


def bootstrap_cis(
    arrays: Sequence[np.ndarray],
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = 0.95,
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of each array, equal to it bit for bit; arrays of one length share
    one set of resample indices (drawn once), which is what makes this cheaper."""
    xs = [np.asarray(v, dtype=np.float64) for v in arrays]
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(xs)
    by_size: dict[int, list[int]] = {}
    for i, x in enumerate(xs):
        if x.size == 0:
            continue
        if x.size == 1 or np.all(x == x[0]):
            out[i] = (float(x[0]), float(x[0]))
        else:
            by_size.setdefault(x.size, []).append(i)
    alpha = (1.0 - level) / 2.0
    for members in by_size.values():
        means = bootstrap_means_many([xs[i] for i in members], seed=seed, n_boot=n_boot)
        for i, m in zip(members, means, strict=True):
            lo, hi = np.quantile(m, [alpha, 1.0 - alpha])
            out[i] = (float(lo), float(hi))
    return out


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
    #: the interval of the difference (:func:`ragmeter.stats.intervals.paired_interval`)
    ci_method: str = "-"

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
    keep: np.ndarray | None = None,
) -> PairedComparison:
    """Two-sided paired test of mean(B − A).

    ``randomization``: sign-flip permutation test (Fisher); p = (1 + #{|mean(s·d)| ≥ |mean d|}) /
    (1 + R). ``bootstrap``: p from the bootstrap distribution of the mean difference shifted to
    zero (two-sided). The CI of the difference comes from :func:`paired_interval` (exact
    discordant shares for 0/1 values, MOVER for values in 0–1, t otherwise): never a
    zero-width interval from a bootstrap at the boundary.

    ``keep``: the pairs tested (the others, e.g. unscored in one run, are dropped). The
    randomization test still draws a sign for every pair given, a dropped pair's difference
    counted as 0: the kept pairs' signs are fair coins either way (the same test as over the
    kept pairs alone), and the draws stay those of the samples, so the sums stored with each
    run (:mod:`ragmeter.results.projections`) give it.
    """
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError("paired_test needs two arrays of the same length (aligned samples)")
    kept = None if keep is None or bool(np.all(keep)) else np.asarray(keep, dtype=bool)
    if kept is not None:
        d_all = np.where(kept, np.nan_to_num(xb) - np.nan_to_num(xa), 0.0)
        xa, xb = xa[kept], xb[kept]
    d = xb - xa
    if kept is None:
        d_all = d
    n = d.size
    if n == 0:
        nan = float("nan")
        return PairedComparison(metric, 0, nan, nan, nan, nan, nan, 1.0, method, n_resamples,
                                seed, n_dropped, higher_is_better, "-")
    obs = float(d.mean())
    if method == "randomization":
        perm = (2.0 * sign_flip_sums(d_all, seed, n_resamples) - float(d.sum())) / n
        extreme = int(np.count_nonzero(np.abs(perm) >= abs(obs) - 1e-12))
        p = (1 + extreme) / (1 + n_resamples)
    elif method == "bootstrap":
        boots = bootstrap_means(d, seed=seed, n_boot=n_resamples)
        centred = boots - obs
        p = (1 + int(np.count_nonzero(np.abs(centred) >= abs(obs) - 1e-12))) / (1 + n_resamples)
    else:
        raise ValueError(f"unknown paired test method '{method}' (allowed: randomization, bootstrap)")
    ci = paired_interval(xa, xb, level)
    if obs == 0.0 and np.all(d == 0):
        p = 1.0
    return PairedComparison(
        metric=metric, n=n, mean_a=float(xa.mean()), mean_b=float(xb.mean()), diff=obs,
        ci_low=ci.low, ci_high=ci.high, p_value=float(min(1.0, p)), method=method,
        n_resamples=n_resamples, seed=seed, n_dropped=n_dropped,
        higher_is_better=higher_is_better, ci_method=ci.method,
    )



#: the bits of every byte, most significant first (``np.packbits`` order)
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(7, -1, -1)[None, :]) & 1).astype(np.float64)


def _flip_draws(n: int, seed: int, n_resamples: int) -> Iterator[tuple[int, np.ndarray]]:
    """The randomization test's {0, 1} draws, ``n`` per resample, chunk by chunk: ``(first
    resample, the chunk's draws packed eight to a byte along the samples)``.

    The draws are ``rng.integers(0, 2, (rows, n), int8)`` chunk by chunk, as the test always
    drew them — read from the generator's raw 32-bit words (a bounded int8 in {0, 1} is the
    top bit of one byte of a word; each chunk starts on a fresh word)."""
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        words = rng.integers(0, 1 << 32, size=-(-m * n // 4), dtype=np.uint32)
        low_first = words.astype("<u4", copy=False).view(np.uint8)  # a word's low byte first
        top = low_first[:m * n].reshape(m, n) >= 128                # the {0, 1} draws
        yield start, np.packbits(top, axis=1)


def sign_flip_sums(x: np.ndarray, seed: int = DEFAULT_SEED,
                   n_resamples: int = DEFAULT_N_RESAMPLES) -> np.ndarray:
    """``Σ_i b_ri · x_i`` for each of the randomization test's ``n_resamples`` rows of {0, 1}
    draws ``b`` (seeded; a sign is ``2b − 1``; :func:`_flip_draws`), so that a flip's mean of
    ``d`` is ``(2 · sums(d) − Σ d) / n`` — linear in ``x``: two runs' sums give their
    differences'. Summed eight draws at a time through a table of the 256 sums of every eight
    values: about 3× faster than multiplying the signs out, mostly outside the GIL."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n == 0:
        return np.zeros(n_resamples)
    groups = -(-n // 8)
    padded = np.zeros(groups * 8)
    padded[:n] = x
    table = (_BYTE_BITS @ padded.reshape(groups, 8).T).T.ravel()  # group j: 256 sums
    offsets = np.arange(groups, dtype=np.intp) * 256
    out = np.empty(n_resamples)
    for start, packed in _flip_draws(n, seed, n_resamples):
        out[start:start + packed.shape[0]] = np.take(table, packed + offsets).sum(axis=1)
    return out


def sign_flip_columns(n: int, columns: np.ndarray, seed: int = DEFAULT_SEED,
                      n_resamples: int = DEFAULT_N_RESAMPLES) -> np.ndarray:
    """The draws ``b`` of :func:`sign_flip_sums` for ``n`` samples at the given sample
    positions only: ``(n_resamples, len(columns))`` of 0/1 (uint8)."""
    columns = np.asarray(columns, dtype=np.intp)
    out = np.empty((n_resamples, columns.size), dtype=np.uint8)
    if n == 0 or columns.size == 0:
        return out
    byte, shift = columns // 8, (7 - columns % 8).astype(np.uint8)
    for start, packed in _flip_draws(n, seed, n_resamples):
        out[start:start + packed.shape[0]] = (packed[:, byte] >> shift) & 1
    return out


@dataclass(frozen=True)
class Estimate:
    """A statistic with its seeded percentile-bootstrap CI and the number of items."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    level: float = 0.95
    n_boot: int = DEFAULT_N_BOOT
    seed: int = DEFAULT_SEED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bootstrap_stat(stat: Callable[[np.ndarray], Any], n: int, *,
                   seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
                   level: float = 0.95, batched: bool = False,
                   min_defined: float = 0.5) -> Estimate:
    """``stat`` on all ``n`` items and on ``n_boot`` resamples of item indices (seeded).

    ``stat(idx)`` gets a vector of item indices and returns a number (``None``/NaN when
    undefined). With ``batched=True`` it gets the whole ``(n_boot, n)`` index matrix at once
    and returns one value per row — for statistics that vectorise (F1 over resamples).
    Undefined resamples are dropped from the percentiles; the CI is ``None`` when fewer than
    ``min_defined`` of the resamples (share, ``0`` = at least one) are defined.
    """
    if n == 0:
        return Estimate(None, None, None, 0, level, n_boot, seed)
    full = np.arange(n)
    raw = (np.asarray(stat(full[None, :]), dtype=np.float64)[0] if batched else stat(full))
    if raw is None or not math.isfinite(float(raw)):
        return Estimate(None, None, None, n, level, n_boot, seed)
    value = float(raw)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    if batched:
        vals = np.asarray(stat(idx), dtype=np.float64)
    else:
        vals = np.asarray([np.nan if v is None else float(v) for v in (stat(r) for r in idx)],
                          dtype=np.float64)
    good = vals[np.isfinite(vals)]
    if good.size == 0 or good.size < min_defined * n_boot:
        return Estimate(value, None, None, n, level, n_boot, seed)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(good, [alpha, 1.0 - alpha])
    return Estimate(value, float(lo), float(hi), n, level, n_boot, seed)


def bootstrap_mean(x: np.ndarray, *, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
                   level: float = 0.95) -> Estimate:
    """Mean with a vectorised percentile-bootstrap CI."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return Estimate(None, None, None, 0, level, n_boot, seed)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return Estimate(float(x.mean()), float(lo), float(hi), int(x.size), level, n_boot, seed)
