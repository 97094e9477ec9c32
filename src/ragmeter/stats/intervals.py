"""Confidence intervals of a mean and of a paired difference that hold at the edges.

The one home of "which interval for which values"; aggregates, slices, paired comparisons,
prediction-powered estimates of yes/no labels and the live run page all ask it:

* **values all 0 or 1** (hit@k, refusal and error rates, yes/no verdicts): the
  Clopper–Pearson interval (``cp``) — exact, it covers at least the nominal level for every
  true rate and every ``n``; 0 of 62 gives [0, 0.058], never [0, 0];
* **other values within 0–1** (graded verdicts 0/0.5/1, MRR, NDCG, scores on 0–1):
  Clopper–Pearson on the effective sample size (``cp-eff``). A mean ``m`` of values in 0–1
  has a variance of at most ``m(1−m)/n`` (the 0/1 case); the observed variance ``s²`` is a
  share ``φ = s²/(m(1−m))`` of it, so the data carry as much as ``n/φ`` yes/no outcomes, and
  the exact interval of ``m·n/φ`` successes in ``n/φ`` trials is used (the design-effect
  device of Korn and Graubard, 1998). Skewed scores near 1 get an asymmetric interval
  inside 0–1 instead of a symmetric t interval that under-covers; ``φ`` is kept within
  ``[1/n, 1]`` so values that happen to be all alike (all 0.5) still get a width;
* **other values** (unbounded: latency, counts, a 0–100 scale): Student's t (``t``),
  approximate on skewed data — ``benchmarks/ci_coverage.py`` measures how far.

A paired difference B − A (the same samples scored by two systems):

* **both 0/1**: the two discordant shares (B = 1, A = 0 and B = 0, A = 1), each with its
  Clopper–Pearson interval, combined by MOVER (the method of variance estimates recovery:
  Zou and Donner, 2008; Newcombe's method for paired proportions) with the multinomial
  correlation of the two shares (``mover-cp``);
* **both within 0–1**: each system's mean with its interval as above, combined by MOVER with
  the Pearson correlation of the pairs (``mover-cp-eff``);
* **otherwise**: Student's t on the differences (``t``).

A count reported as a rate — a detector's recall or precision, ``k`` of ``n`` labelled cases
(:func:`wilson_interval` → :class:`Proportion`) — gets the Wilson score interval: it does not
collapse at 0 or ``n`` either (0 of 62 gives [0, 0.058]) and sits closer to the nominal level
on average than Clopper–Pearson, which is what a table of measured rates wants; where the
level must hold for every true rate (a gate, a mean's interval above) the exact one is used.

Every function is deterministic (no resampling) and works on moments, so a caller that keeps
only sums (the live page) gets the same interval as one holding every value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["binary", "unit", "real"]

#: method names, as they appear in aggregates, slice tables and signatures
CP, CP_EFF, T, MOVER_CP, MOVER_CP_EFF = "cp", "cp-eff", "t", "mover-cp", "mover-cp-eff"


@dataclass(frozen=True)
class Interval:
    """An interval of a mean (or of a difference of means) and the method that made it."""

    low: float
    high: float
    method: str

    @property
    def width(self) -> float:
        return self.high - self.low


def value_kind(x: np.ndarray) -> Kind:
    """``binary`` (every value 0 or 1), ``unit`` (every value within 0–1) or ``real``."""
    x = np.asarray(x, dtype=np.float64)
    if x.size and np.all((x == 0.0) | (x == 1.0)):
        return "binary"
    if x.size and float(x.min()) >= 0.0 and float(x.max()) <= 1.0:
        return "unit"
    return "real"


def clopper_pearson(k: np.ndarray | float, n: np.ndarray | float, level: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) interval of ``k`` successes in ``n`` trials, elementwise.

    ``k`` and ``n`` may be fractional (effective counts); ``n = 0`` gives ``(nan, nan)``.
    """
    from scipy.special import betaincinv

    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    k = np.clip(k, 0.0, np.maximum(n, 0.0))
    a = (1.0 - level) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(k > 0, betaincinv(np.maximum(k, 1e-300), n - k + 1.0, a), 0.0)
        hi = np.where(k < n, betaincinv(k + 1.0, np.maximum(n - k, 1e-300), 1.0 - a), 1.0)
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def unit_bounds(n: np.ndarray | float, mean: np.ndarray | float, var0: np.ndarray | float,
                level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``cp-eff`` bounds of means of values within 0–1 (elementwise; ``var0``: the variance
    with divisor ``n``). For 0/1 values ``var0 = m(1−m)`` and this is Clopper–Pearson."""
    n = np.asarray(n, dtype=np.float64)
    m = np.clip(np.asarray(mean, dtype=np.float64), 0.0, 1.0)
    bern = m * (1.0 - m)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(bern > 0, np.asarray(var0, dtype=np.float64) / bern, 1.0)
        phi = np.clip(phi, 1.0 / np.maximum(n, 1.0), 1.0)
        n_eff = n / phi
    return clopper_pearson(m * n_eff, n_eff, level)


def t_bounds(n: np.ndarray | float, mean: np.ndarray | float, var0: np.ndarray | float,
             level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Student's t bounds (elementwise; ``var0``: the variance with divisor ``n``)."""
    from scipy.stats import t as student

    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(np.maximum(np.asarray(var0, dtype=np.float64), 0.0) / np.maximum(n - 1, 1))
        h = student.ppf(0.5 + level / 2.0, np.maximum(n - 1.0, 1.0)) * se
    h = np.where(n > 1, h, 0.0)
    return m - h, m + h


def interval_from_moments(n: int, mean: float, var0: float, kind: Kind,
                          level: float = 0.95) -> Interval:
    """The interval of a mean from ``n``, the mean, the variance with divisor ``n`` and the
    kind of the values (:func:`value_kind`); ``n = 0`` gives NaN bounds."""
    if n <= 0:
        return Interval(math.nan, math.nan, "-")
    if kind == "binary":
        lo, hi = clopper_pearson(round(mean * n), n, level)
        return Interval(float(lo), float(hi), CP)
    if kind == "unit":
        lo, hi = unit_bounds(n, mean, var0, level)
        return Interval(float(lo), float(hi), CP_EFF)
    lo, hi = t_bounds(n, mean, var0, level)
    return Interval(float(lo), float(hi), T)


def mean_interval(x: np.ndarray, level: float = 0.95) -> Interval:
    """The interval of the mean of the (finite) values ``x``, by their kind (module doc)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return Interval(math.nan, math.nan, "-")
    return interval_from_moments(int(x.size), float(x.mean()), float(x.var()), value_kind(x),
                                 level)


def mover_difference(m1: np.ndarray | float, l1: np.ndarray | float, u1: np.ndarray | float,
                     m2: np.ndarray | float, l2: np.ndarray | float, u2: np.ndarray | float,
                     r: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """MOVER bounds of ``m1 − m2`` from each estimate's own interval and their correlation
    ``r`` (elementwise)."""
    m1, l1, u1, m2, l2, u2, r = (np.asarray(v, dtype=np.float64)
                                 for v in (m1, l1, u1, m2, l2, u2, r))
    d = m1 - m2
    lo = d - np.sqrt(np.maximum((m1 - l1) ** 2 + (u2 - m2) ** 2
                                - 2.0 * r * (m1 - l1) * (u2 - m2), 0.0))
    hi = d + np.sqrt(np.maximum((u1 - m1) ** 2 + (m2 - l2) ** 2
                                - 2.0 * r * (u1 - m1) * (m2 - l2), 0.0))
    return lo, hi


def discordant_bounds(n: np.ndarray | float, n_up: np.ndarray | float,
                      n_down: np.ndarray | float, level: float = 0.95
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``mover-cp`` bounds of ``(n_up − n_down) / n``: the difference of two shares of one
    multinomial sample (the pairs that moved up, the pairs that moved down), each with its
    Clopper–Pearson interval and their correlation ``−√(p q / ((1−p)(1−q)))``."""
    n = np.asarray(n, dtype=np.float64)
    up = np.asarray(n_up, dtype=np.float64)
    down = np.asarray(n_down, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, q = up / n, down / n
        r = -np.sqrt(p * q / ((1.0 - p) * (1.0 - q)))
    r = np.where(np.isfinite(r), r, 0.0)
    lp, hp = clopper_pearson(up, n, level)
    lq, hq = clopper_pearson(down, n, level)
    lo, hi = mover_difference(p, lp, hp, q, lq, hq, r)
    return np.maximum(lo, -1.0), np.minimum(hi, 1.0)


def paired_interval(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> Interval:
    """The interval of ``mean(b − a)`` over aligned pairs (module doc for the methods)."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError("paired_interval needs two arrays of the same length")
    n = int(xa.size)
    if n == 0:
        return Interval(math.nan, math.nan, "-")
    ka, kb = value_kind(xa), value_kind(xb)
    if ka == kb == "binary":
        up = int(np.count_nonzero((xb == 1.0) & (xa == 0.0)))
        down = int(np.count_nonzero((xb == 0.0) & (xa == 1.0)))
        lo, hi = discordant_bounds(n, up, down, level)
        return Interval(float(lo), float(hi), MOVER_CP)
    if ka != "real" and kb != "real":
        ma, mb = float(xa.mean()), float(xb.mean())
        va, vb = float(xa.var()), float(xb.var())
        la, ua = unit_bounds(n, ma, va, level)
        lb, ub = unit_bounds(n, mb, vb, level)
        r = float(((xa - ma) * (xb - mb)).mean() / math.sqrt(va * vb)) if va > 0 and vb > 0 \
            else 0.0
        lo, hi = mover_difference(mb, lb, ub, ma, la, ua, r)
        return Interval(max(float(lo), -1.0), min(float(hi), 1.0), MOVER_CP_EFF)
    d = xb - xa
    lo, hi = t_bounds(n, float(d.mean()), float(d.var()), level)
    return Interval(float(lo), float(hi), T)


# ------------------------------------------------------------- a rate: k of n labelled cases
#: the normal quantile of a two-sided 95 % interval
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Proportion:
    """``k`` of ``n`` with its Wilson interval (``None`` when ``n`` is 0)."""

    k: int
    n: int
    value: float | None
    low: float | None
    high: float | None

    def text(self, digits: int = 3) -> str:
        """``0.957 [0.880, 0.985] (45/47)``, or ``— (0/0)``."""
        if self.value is None or self.low is None or self.high is None:
            return f"— ({self.k}/{self.n})"
        return (f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}] "
                f"({self.k}/{self.n})")


def wilson_interval(k: int, n: int, z: float = Z95) -> Proportion:
    """``k`` of ``n`` with its Wilson score interval at the level of ``z`` (95 % by default)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"a proportion needs 0 <= k <= n, got {k} of {n}")
    if n == 0:
        return Proportion(k, n, None, None, None)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    margin = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5 / denom
    return Proportion(k, n, p, max(0.0, centre - margin), min(1.0, centre + margin))


__all__ = ["CP", "CP_EFF", "MOVER_CP", "MOVER_CP_EFF", "T", "Z95", "Interval", "Kind",  # noqa: RUF022
           "Proportion", "clopper_pearson", "discordant_bounds", "interval_from_moments",
           "mean_interval", "mover_difference", "paired_interval", "t_bounds", "unit_bounds",
           "value_kind", "wilson_interval"]
