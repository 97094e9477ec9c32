"""Multiple comparisons: adjusted p-values for a family of tests (one test per slice, say).

* :func:`holm` — Holm's step-down adjustment: controls the family-wise error rate (the chance
  of *any* false "significant") at α for any dependence between the tests;
* :func:`bh` — Benjamini–Hochberg step-up adjustment (q-values): controls the false-discovery
  rate (the expected share of false findings among the findings) at α for independent or
  positively dependent tests;
* :func:`adjust` — either by name (``holm``, ``bh``, or ``none`` to report raw p-values, which
  a report then labels as unadjusted).

An adjusted p-value ``p_adj < α`` is the same decision as the procedure at level α. NaN
p-values (a test that could not be made) stay NaN and do not count in the family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

CORRECTIONS = ("holm", "bh", "none")


def _valid(pvals: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pvals, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p-values must be a flat sequence")
    ok = ~np.isnan(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    return p, ok


def _step(pvals: Sequence[float], step: Callable[[np.ndarray, int], np.ndarray]
          ) -> np.ndarray:
    """``step(sorted p-values, m)`` -> adjusted values in sorted order, put back in the input
    order; NaN p-values stay NaN and are not counted in ``m``."""
    p, ok = _valid(pvals)
    out = np.full(p.shape, np.nan)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="stable")
    res = np.empty(m)
    res[order] = step(q[order], m)
    out[ok] = res
    return out


def holm(pvals: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: ``max_{j ≤ i} min(1, (m − j + 1) · p_(j))`` in sorted order."""
    return _step(pvals, lambda s, m: np.maximum.accumulate(
        np.minimum(1.0, (m - np.arange(m)) * s)))


def bh(pvals: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg q-values: ``min_{j ≥ i} min(1, m · p_(j) / j)`` in sorted order."""
    return _step(pvals, lambda s, m: np.minimum(
        1.0, np.minimum.accumulate((s * m / np.arange(1, m + 1))[::-1])[::-1]))


def adjust(pvals: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values by ``method`` (``holm``, ``bh`` or ``none``)."""
    if method == "holm":
        return holm(pvals)
    if method == "bh":
        return bh(pvals)
    if method == "none":
        return _valid(pvals)[0].copy()
    raise ValueError(f"unknown correction {method!r} (allowed: {', '.join(CORRECTIONS)})")


__all__ = ["CORRECTIONS", "adjust", "bh", "holm"]
