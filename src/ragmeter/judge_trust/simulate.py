"""Seeded simulations of prediction-powered estimates: does the 95 % interval cover the truth?

One scenario draws ``sims`` datasets of ``n_all`` items: a true human value ``y`` (binary with
mean ``p``, or continuous Beta), a judge value ``f`` that is ``y`` shifted by ``bias`` plus noise
(clipped to [0, 1], so it is also non-linear), and a random labelled subset of ``n_labelled``.
The target is the population mean of ``y`` (known in closed form). Fully vectorised.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragmeter.stats import ppi_mean_batch


@dataclass(frozen=True)
class Scenario:
    kind: str          # "binary" | "continuous"
    bias: float        # judge − human shift before clipping (+ lenient, − strict)
    noise: float       # judge noise (std)
    n_all: int
    n_labelled: int


@dataclass(frozen=True)
class Coverage:
    scenario: Scenario
    sims: int
    ppi_coverage: float
    naive_coverage: float
    mean_width: float
    mean_judge_error: float

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.scenario), "sims": self.sims, "ppi_coverage": self.ppi_coverage,
                "naive_coverage": self.naive_coverage, "mean_width": self.mean_width,
                "mean_judge_error": self.mean_judge_error}


def simulate(sc: Scenario, *, sims: int = 1000, seed: int = 0, level: float = 0.95,
             p: float = 0.6) -> Coverage:
    rng = np.random.default_rng(seed)
    shape = (sims, sc.n_all)
    if sc.kind == "binary":
        y = (rng.random(shape) < p).astype(np.float64)
        truth = p
        # a binary judge: flips "no" to "yes" (lenient) or "yes" to "no" (strict) at rate |bias|
        flip = rng.random(shape) < abs(sc.bias)
        f = np.where(flip, 1.0 if sc.bias > 0 else 0.0, y)
        noisy = rng.random(shape) < sc.noise
        f = np.where(noisy, 1.0 - f, f)
    else:
        a, b = 2.0, 1.5
        y = rng.beta(a, b, size=shape)
        truth = a / (a + b)
        f = np.clip(y + sc.bias + rng.normal(0.0, sc.noise, size=shape), 0.0, 1.0)
    keys = rng.random(shape)
    kth = np.partition(keys, sc.n_labelled - 1, axis=1)[:, sc.n_labelled - 1:sc.n_labelled]
    lab = keys <= kth
    _est, lo, hi = ppi_mean_batch(f, lab, y, level=level, discrete=sc.kind == "binary")
    covered = (lo <= truth) & (truth <= hi)
    # the naive judge-only interval (normal, over all N judge values) for contrast
    fm = f.mean(axis=1)
    fse = f.std(axis=1, ddof=1) / np.sqrt(sc.n_all)
    z = 1.959963984540054 if abs(level - 0.95) < 1e-12 else float(
        __import__("statistics").NormalDist().inv_cdf(0.5 + level / 2))
    naive = (fm - z * fse <= truth) & (truth <= fm + z * fse)
    return Coverage(sc, sims, float(covered.mean()), float(naive.mean()),
                    float((hi - lo).mean()), float((fm - truth).mean()))


def default_scenarios() -> list[Scenario]:
    out = []
    for kind, settings in (("binary", ((0.0, 0.1), (0.2, 0.05), (-0.3, 0.1), (0.1, 0.3))),
                           ("continuous", ((0.0, 0.1), (0.15, 0.1), (-0.2, 0.2), (0.3, 0.3)))):
        for bias, noise in settings:
            for n_lab in (20, 50, 200):
                out.append(Scenario(kind, bias, noise, 1000, n_lab))
    return out


def coverage_table(sims: int = 1000, seed: int = 0) -> list[Coverage]:
    return [simulate(sc, sims=sims, seed=seed + i) for i, sc in enumerate(default_scenarios())]


__all__ = ["Coverage", "Scenario", "coverage_table", "default_scenarios", "simulate"]
