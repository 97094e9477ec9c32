"""The Wilson score interval of a proportion ``k`` out of ``n``.

Unlike a percentile bootstrap it does not collapse at the boundary: 0 of 62 gives
[0, 0.058], 62 of 62 gives [0.942, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

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
