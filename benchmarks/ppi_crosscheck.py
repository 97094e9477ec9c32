"""Our PPI intervals re-checked with an implementation written by other people: ``ppi_py``
(the ``ppi-python`` package of Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, the authors
of prediction-powered inference and PPI++), on the data sets of ``benchmarks/ppi_coverage.py``.

Usage: PYTHONPATH=src:DIR_WITH_PPI_PY python benchmarks/ppi_crosscheck.py [--sims 1000]
       [--n 200] [--seed 0]

``ppi-python`` is not a ragmeter dependency: install it apart (``pip install --target DIR
--no-deps ppi-python statsmodels patsy formulaic interface_meta wrapt gdown``). Per scenario
(the four of ``ppi_coverage.py``, ``N = 2000`` in four slices) and ``--sims`` seeded data sets:
a uniform random sample of ``--n`` labelled items; ragmeter's classic PPI and PPI++ estimates
(the normal interval, as in the design tables) next to ``ppi_py.ppi_mean_ci`` with ``lam=1``
(classic) and ``lam=None`` (its own power tuning), the unlabelled items' judge values as its
unlabelled predictions. Printed: each side's coverage of the population mean, median width,
and the median absolute difference of the two point estimates and of the two widths.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppi_coverage import SCENARIOS, simulated

from ragmeter.stats.ppi_estimators import ppi_estimate
from ragmeter.stats.selection import select


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    t0 = time.perf_counter()
    print("| scenario | estimator | ragmeter coverage | ppi_py coverage | ragmeter median width "
          "| ppi_py median width | median abs. diff. of estimates | median abs. diff. of "
          "widths |")
    print("|---|---|---|---|---|---|---|---|")
    for name in SCENARIOS:
        rows: dict[str, list[tuple[float, float, float, float, float, float]]] = {
            "classic": [], "ppi++": []}
        for s in range(args.sims):
            pop = simulated(name, np.random.default_rng([args.seed, s, len(name)]))
            sel = select(pop.ids, "uniform", args.n, s, strata=pop.slices)
            lab = np.zeros(len(pop.ids), bool)
            lab[list(sel.order)] = True
            y, f = pop.y[lab], pop.f[lab]
            f_un = pop.f[~lab]
            for est, lam in (("classic", 1.0), ("ppi++", None)):
                ours = ppi_estimate(pop.f, pop.y, lab, estimator=est, design="srs",
                                    discrete=True, interval="t", bounds=(0.0, 1.0),
                                    target=pop.target)
                lo, hi = ppi_mean_ci(y, f, f_un, alpha=0.05, lam=lam)
                lo, hi = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
                point = float(np.ravel(ppi_mean_pointestimate(y, f, f_un, lam=lam))[0])
                rows[est].append((float(ours.ci_low <= pop.truth <= ours.ci_high),
                                  float(lo <= pop.truth <= hi), ours.width, hi - lo,
                                  abs(ours.estimate - point), abs(ours.width - (hi - lo))))
        for est, r in rows.items():
            a = np.asarray(r)
            print(f"| {name} | {est} | {a[:, 0].mean():.3f} | {a[:, 1].mean():.3f} | "
                  f"{np.median(a[:, 2]):.3f} | {np.median(a[:, 3]):.3f} | "
                  f"{np.median(a[:, 4]):.4f} | {np.median(a[:, 5]):.4f} |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
