"""Seeded simulations of prediction-powered estimates: does the 95 % interval cover the truth?

One scenario draws ``sims`` datasets of ``n_all`` items: a true human value ``y`` (binary with
mean ``p``, or continuous Beta), a judge value ``f`` that is ``y`` shifted by ``bias`` plus noise
(clipped to [0, 1], so it is also non-linear), and a random labelled subset of ``n_labelled``.
The target is the population mean of ``y`` (known in closed form). Fully vectorised.

The interval is the one a judge card shows: for yes/no labels of a yes/no judge the exact one
(``interval="exact"`` of :func:`ragmeter.stats.ppi_mean`), else the normal one; the normal
interval's coverage is kept beside it (``t_coverage``) for comparison.
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
    p: float = 0.6     # the true rate of a binary scenario


@dataclass(frozen=True)
class Coverage:
    scenario: Scenario
    sims: int
    ppi_coverage: float
    naive_coverage: float
    mean_width: float
    mean_judge_error: float
    #: the card's interval (``exact`` for yes/no labels and judge, else ``t``)
    interval: str = "t"
    #: coverage of the normal (t) interval on the same data
    t_coverage: float = float("nan")
    t_width: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.scenario), "sims": self.sims, "ppi_coverage": self.ppi_coverage,
                "naive_coverage": self.naive_coverage, "mean_width": self.mean_width,
                "mean_judge_error": self.mean_judge_error, "interval": self.interval,
                "t_coverage": self.t_coverage, "t_width": self.t_width}


def simulate(sc: Scenario, *, sims: int = 1000, seed: int = 0, level: float = 0.95,
             p: float | None = None) -> Coverage:
    """Coverage of the card's interval in ``sims`` seeded datasets of scenario ``sc``
    (``p``: overrides the scenario's true rate of a binary scenario)."""
    rng = np.random.default_rng(seed)
    p = sc.p if p is None else p
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
    _est, tlo, thi = ppi_mean_batch(f, lab, y, level=level, discrete=sc.kind == "binary")
    how = "exact" if sc.kind == "binary" else "t"
    lo, hi = (tlo, thi) if how == "t" else ppi_mean_batch(f, lab, y, level=level,
                                                           interval="exact")[1:]
    lo, hi = np.maximum(lo, 0.0), np.minimum(hi, 1.0)   # cut to the metric's range, as cards
    covered = (lo <= truth) & (truth <= hi)
    # the naive judge-only interval (normal, over all N judge values) for contrast
    fm = f.mean(axis=1)
    fse = f.std(axis=1, ddof=1) / np.sqrt(sc.n_all)
    z = 1.959963984540054 if abs(level - 0.95) < 1e-12 else float(
        __import__("statistics").NormalDist().inv_cdf(0.5 + level / 2))
    naive = (fm - z * fse <= truth) & (truth <= fm + z * fse)
    t_cov = (np.maximum(tlo, 0.0) <= truth) & (truth <= np.minimum(thi, 1.0))
    return Coverage(sc, sims, float(covered.mean()), float(naive.mean()),
                    float((hi - lo).mean()), float((fm - truth).mean()), how,
                    float(t_cov.mean()),
                    float((np.minimum(thi, 1.0) - np.maximum(tlo, 0.0)).mean()))


BINARY_SETTINGS = ((0.0, 0.1), (0.2, 0.05), (-0.3, 0.1), (0.1, 0.3))


def default_scenarios() -> list[Scenario]:
    out = []
    for kind, settings in (("binary", BINARY_SETTINGS),
                           ("continuous", ((0.0, 0.1), (0.15, 0.1), (-0.2, 0.2), (0.3, 0.3)))):
        for bias, noise in settings:
            for n_lab in (20, 50, 200):
                out.append(Scenario(kind, bias, noise, 1000, n_lab))
    return out


def rare_scenarios(p: float = 0.03) -> list[Scenario]:
    """A rare yes/no outcome (``p``) under the binary judges of :func:`default_scenarios`."""
    return [Scenario("binary", bias, noise, 1000, n_lab, p) for bias, noise in BINARY_SETTINGS
            for n_lab in (20, 50, 200)]


def coverage_table(sims: int = 1000, seed: int = 0) -> list[Coverage]:
    scenarios = default_scenarios() + rare_scenarios()
    return [simulate(sc, sims=sims, seed=seed + i) for i, sc in enumerate(scenarios)]


__all__ = ["Coverage", "Scenario", "coverage_table", "default_scenarios", "rare_scenarios",
           "simulate"]
