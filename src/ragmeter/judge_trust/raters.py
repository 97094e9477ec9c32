"""Agreement between human labellers: how far the labels themselves can be trusted.

When several people label the same items (their ``rater`` ids are kept in the labels file),
their agreement bounds what any judge can reach against them. Per metric:

* Krippendorff's α over every labeller and item (nominal for yes/no labels, interval for
  grades and scores; items labelled by one person only are not pairable), with a bootstrap
  CI over items;
* Cohen's κ for every pair of labellers on the items both labelled (quadratic-weighted for
  graded labels), with ``n``.

Statistics come from :mod:`ragmeter.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from ragmeter.judge_trust.labels import LabelSet
from ragmeter.stats import cohen_kappa, krippendorff_alpha, krippendorff_alpha_ci
from ragmeter.stats.agreement import Level


@dataclass(frozen=True)
class PairKappa:
    """Cohen's κ of two labellers on the items both labelled."""

    a: str
    b: str
    n: int
    kappa: float | None
    agreement: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "n": self.n, "kappa": self.kappa,
                "agreement": self.agreement}


@dataclass(frozen=True)
class RaterAgreement:
    """Agreement of the labellers of one metric."""

    metric: str
    scale: str
    raters: dict[str, int]
    shared_items: int
    alpha: float | None
    alpha_ci: tuple[float | None, float | None]
    level: str
    pairs: list[PairKappa] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "scale": self.scale, "raters": dict(self.raters),
                "shared_items": self.shared_items, "alpha": self.alpha,
                "alpha_ci": list(self.alpha_ci), "alpha_level": self.level,
                "pairs": [p.to_dict() for p in self.pairs]}

    def line(self) -> str:
        """One line for a console."""
        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.2f}"
        lo, hi = self.alpha_ci
        pairs = "; ".join(f"{p.a}/{p.b} κ {f(p.kappa)} (n={p.n})" for p in self.pairs)
        return (f"{self.metric}: {len(self.raters)} labellers, {self.shared_items} items "
                f"labelled by two or more; Krippendorff's alpha ({self.level}) "
                f"{f(self.alpha)} [{f(lo)}, {f(hi)}]" + (f"; {pairs}" if pairs else ""))


def _categories(values: np.ndarray, scale: str) -> np.ndarray:
    """Labels on 0–1 as the categories κ compares: yes/no, or grades 0/1/2."""
    if scale == "binary":
        return (values >= 0.5).astype(np.float64)
    return np.clip(np.floor(values * 2.0 + 0.5), 0, 2)


def rater_agreement(labels: LabelSet, metric: str, system: str | None = None, *,
                    seed: int = 42, n_boot: int = 1000) -> RaterAgreement | None:
    """Agreement of the labellers of ``metric`` (``None`` with fewer than two of them)."""
    per = {r: v for r, v in labels.by_rater(metric, system).items() if v}
    if len(per) < 2:
        return None
    scale = labels.scales[metric]
    raters = sorted(per)
    items = sorted({s for v in per.values() for s in v})
    m = np.full((len(raters), len(items)), np.nan)
    col = {s: j for j, s in enumerate(items)}
    for i, r in enumerate(raters):
        for s, v in per[r].items():
            m[i, col[s]] = v
    shared = (~np.isnan(m)).sum(axis=0) >= 2
    level: Level = "nominal" if scale == "binary" else "interval"
    alpha: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    if shared.any():
        a = krippendorff_alpha(m[:, shared], level)
        alpha = None if math.isnan(a) else float(a)
        ci = krippendorff_alpha_ci(m[:, shared], level, seed=seed, n_boot=n_boot)
    cats = np.array([0.0, 1.0]) if scale == "binary" else np.array([0.0, 1.0, 2.0])
    pairs = []
    for a_name, b_name in combinations(raters, 2):
        both = sorted(set(per[a_name]) & set(per[b_name]))
        if not both:
            pairs.append(PairKappa(a_name, b_name, 0, None, None))
            continue
        x = _categories(np.asarray([per[a_name][s] for s in both]), scale)
        y = _categories(np.asarray([per[b_name][s] for s in both]), scale)
        k = cohen_kappa(x, y, categories=cats,
                        weights=None if scale == "binary" else "quadratic")
        pairs.append(PairKappa(a_name, b_name, len(both), k, float((x == y).mean())))
    return RaterAgreement(metric, scale, {r: len(per[r]) for r in raters}, int(shared.sum()),
                          alpha, ci, level, pairs)


__all__ = ["PairKappa", "RaterAgreement", "rater_agreement"]
