"""Coverage and width of prediction-powered 95 % intervals, by seeded simulation and by replay.

Usage: PYTHONPATH=src python benchmarks/ppi_coverage.py [--sims 1000] [--plan-sims 60]
       [--n 200] [--seed 0] [--sections classic,designs,replay] [--interval t|auto]
       [--replay benchmarks/data/judge_bench_lexical.json [--jury OTHER.json]]

Three sections:

``classic`` — classic PPI under judges with a known bias and noise (the table of
:mod:`ragmeter.judge_trust.simulate`, rare outcomes p = 0.03 included): coverage of the
interval a judge card shows next to the normal interval's.

``designs`` — every estimator (classic, PPI++, stratified) × every selection mode (uniform,
stratified, active) × four scenarios. ``N = 2000`` judged items in four slices of 500; per
item the judge's probability ``q`` (Beta per slice), the human label ``y ~ Bernoulli(q)`` and
the judge's verdict ``f = 1[q ≥ 0.5]``; ``active`` ranks by the judge's uncertainty
``√(q(1 − q))``; ``stratified`` spends 10 labels per slice on a pilot and the rest by Neyman
allocation from the pilot's spread. Scenarios: ``homogeneous`` (every slice q ~ Beta(0.48,
0.32): accuracy 0.85), ``heterogeneous`` (judge accuracy 0.96 / 0.88 / 0.77 / 0.60 by slice),
``rare`` (p = 0.03), ``biased`` (a lenient judge: yes from q ≥ 0.3). Per row: coverage of the
population mean in ``--sims`` data sets at ``--n`` labels, median width relative to classic
PPI with uniform selection on the same data, median effective sample size, and the labels
needed for a median half-width of 0.05 (``--plan-sims`` data sets per tried ``n``: a guess
from the half-width's ``√(1/n − 1/N)`` scaling, measured, then stepped by 5 %).

``replay`` — the judge benchmark's 352 labelled items, their labels taken as the humans' and a
judge's recorded values (``benchmarks/judge_values.py``; by default the lexical judge) as the
predictions; slices are the tasks; the target is the mean label over the 352 items. ``active``
ranks items by the judge's distance from its threshold (a graded judge), or by the
disagreement of two prompt variants of one judge (``--jury``: a jury of two); a yes/no judge
without a jury has no uncertainty to use and ``active`` is left out.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragmeter.judge_trust.simulate import coverage_table
from ragmeter.stats.ppi_estimators import ESTIMATORS, ppi_estimate
from ragmeter.stats.selection import pilot_sigmas, select, uncertainty_from_margin

MODES = ("uniform", "stratified", "active")
PILOT_PER_SLICE = 10
HALF_WIDTH = 0.05


# ---------------------------------------------------------------------------- populations
@dataclass(frozen=True)
class Population:
    """One data set: judged items with their label, judge value, slice and uncertainty."""

    ids: list[str]
    y: np.ndarray
    f: np.ndarray
    slices: list[str]
    uncertainty: np.ndarray | None
    truth: float
    target: str            # population | items
    discrete: bool = True


SCENARIOS: dict[str, tuple[list[tuple[float, float]], float]] = {
    # per slice (mean, concentration) of the judge's probability q; the verdict threshold
    "homogeneous": ([(0.6, 0.8)] * 4, 0.5),
    "heterogeneous": ([(0.5, 0.15), (0.6, 0.3), (0.5, 20.0), (0.6, 20.0)], 0.5),
    "rare": ([(0.03, 0.5)] * 4, 0.5),
    "biased": ([(0.6, 0.8)] * 4, 0.3),
}


def simulated(name: str, rng: np.random.Generator, per_slice: int = 500) -> Population:
    params, threshold = SCENARIOS[name]
    q = np.concatenate([rng.beta(m * k, (1 - m) * k, per_slice) for m, k in params])
    y = (rng.random(q.size) < q).astype(np.float64)
    f = (q >= threshold).astype(np.float64)
    slices = [f"s{h}" for h in range(len(params)) for _ in range(per_slice)]
    return Population([f"i{i}" for i in range(q.size)], y, f, slices,
                      np.sqrt(q * (1 - q)), float(np.mean([m for m, _ in params])),
                      "population")


def replayed(path: str, jury: str | None) -> Population:
    from pathlib import Path

    data = json.loads(Path(path).read_text(encoding="utf-8"))["items"]
    other = json.loads(Path(jury).read_text(encoding="utf-8"))["items"] if jury else None
    ids = sorted(k for k, v in data.items() if v["judge"] is not None)
    y = np.asarray([float(data[i]["label"]) for i in ids])
    f = np.asarray([float(data[i]["judge"]) for i in ids])
    unc = None
    if other is not None:   # a jury of two prompt variants: their disagreement
        g = np.asarray([np.nan if other.get(i, {}).get("judge") is None
                        else float(other[i]["judge"]) for i in ids])
        unc = np.where(np.isnan(g), 0.5, np.abs(f - np.nan_to_num(g)))
    elif not np.all((f == 0) | (f == 1)):   # a graded judge: its distance to the threshold
        unc = uncertainty_from_margin(f)
    return Population(ids, y, f, [data[i]["task"] for i in ids], unc, float(y.mean()),
                      "items")


# ------------------------------------------------------------------------------ one draw
def draw(pop: Population, mode: str, n: int, seed: int) -> tuple[dict[str, float], object]:
    """The labels a selection of ``mode`` and size ``n`` gets, and the selection."""
    y = dict(zip(pop.ids, pop.y, strict=True))
    if mode == "uniform":
        sel = select(pop.ids, "uniform", n, seed, strata=pop.slices)
    elif mode == "stratified":
        k = len(set(pop.slices))
        pilot = select(pop.ids, "stratified", min(n, PILOT_PER_SLICE * k), seed,
                       strata=pop.slices)
        sig = pilot_sigmas(dict(zip(pop.ids, pop.slices, strict=True)),
                           {i: y[i] for i in pilot.chosen},
                           dict(zip(pop.ids, pop.f, strict=True)))
        sel = select(pop.ids, "stratified", n, seed + 1, strata=pop.slices, pilot=sig,
                     keep=pilot.chosen)
    else:
        assert pop.uncertainty is not None
        sel = select(pop.ids, "active", n, seed, uncertainty=pop.uncertainty,
                     strata=pop.slices)
    return {i: y[i] for i in sel.chosen}, sel


def one(pop: Population, mode: str, estimator: str, n: int, seed: int,
        interval: str) -> tuple[float, float, float, float]:
    """``(covered, width, ess, labels)`` of one seeded selection and estimate (the array form
    of :func:`ragmeter.stats.ppi_estimators.estimate`: same estimator, no id lookups)."""
    _labels, sel = draw(pop, mode, n, seed)
    lab = np.zeros(len(pop.ids), bool)
    lab[list(sel.order)] = True                        # type: ignore[attr-defined]
    strata = np.asarray(pop.slices) if (estimator == "stratified" or mode == "stratified") \
        else None
    e = ppi_estimate(pop.f, pop.y, lab, estimator=estimator,
                     design="poisson" if mode == "active" else "srs",
                     pi=np.asarray(sel.pi) if mode == "active" else None,  # type: ignore[attr-defined]
                     strata=strata, discrete=pop.discrete, interval=interval,
                     bounds=(0.0, 1.0), target=pop.target)
    return (float(e.ci_low <= pop.truth <= e.ci_high), e.width, e.ess or float("nan"),
            float(e.n_labelled))


def labels_needed(make: Callable[[int], Population], mode: str, estimator: str, sims: int,
                  interval: str, n_max: int, n0: int, hw0: float) -> int | None:
    """About the smallest ``n`` whose median half-width over ``sims`` draws is ≤ 0.05: the
    half-width ``hw0`` measured at ``n0`` is taken to scale as ``√(1/n − 1/N)``, the guess is
    measured and corrected the same way once, then stepped by 5 % until it brackets 0.05."""
    cache: dict[int, float] = {n0: hw0}

    def hw(n: int) -> float:
        if n not in cache:
            cache[n] = float(np.median([one(make(s), mode, estimator, n, 10_000 + s,
                                            interval)[1] / 2 for s in range(sims)]))
        return cache[n]

    def guess(n: int) -> int:
        k = hw(n) / np.sqrt(max(1.0 / n - 1.0 / n_max, 1e-12))
        inv = (HALF_WIDTH / k) ** 2 + 1.0 / n_max
        return int(min(n_max, max(10, round(1.0 / inv))))

    g = guess(guess(n0))
    if g >= n_max and hw(n_max) > HALF_WIDTH:
        return None
    step = max(1, g // 20)
    if hw(g) > HALF_WIDTH:
        while hw(g) > HALF_WIDTH and g < n_max:
            g = min(n_max, g + step)
        return g if hw(g) <= HALF_WIDTH else None
    while g - step >= 10 and hw(g - step) <= HALF_WIDTH:
        g -= step
    return g


# ------------------------------------------------------------------------------- sections
def classic_section(sims: int, seed: int) -> None:
    print("\n## classic PPI under judge bias and noise (the card's interval)\n")
    print("| labels | p | judge | bias | noise | N | n | interval | coverage | normal coverage "
          "| width | normal width |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in coverage_table(sims, seed):
        s = c.scenario
        judge = "lenient" if s.bias > 0 else "strict" if s.bias < 0 else "unbiased"
        print(f"| {s.kind} | {s.p:g} | {judge} | {s.bias:+.2f} | {s.noise:.2f} | {s.n_all} | "
              f"{s.n_labelled} | {c.interval} | {c.ppi_coverage:.3f} | {c.t_coverage:.3f} | "
              f"{c.mean_width:.3f} | {c.t_width:.3f} |", flush=True)


def table(title: str, make: Callable[[int], Population], modes: tuple[str, ...], n: int,
          sims: int, plan_sims: int, interval: str, n_max: int) -> None:
    print(f"\n### {title}: n = {n} labels\n")
    print("| estimator | selection | coverage | median width | width / classic uniform | "
          "median ESS | labels for ±0.05 |")
    print("|---|---|---|---|---|---|---|")
    ref: float | None = None
    for mode in modes:
        for est in ESTIMATORS:
            rows = [one(make(s), mode, est, n, s, interval) for s in range(sims)]
            cov = float(np.mean([r[0] for r in rows]))
            width = float(np.median([r[1] for r in rows]))
            ess = float(np.nanmedian([r[2] for r in rows]))
            if ref is None:
                ref = width
            need = labels_needed(make, mode, est, plan_sims, interval, n_max, n, width / 2)
            print(f"| {est} | {mode} | {cov:.3f} | {width:.3f} | {width / ref:.2f} | "
                  f"{ess:.0f} | {need if need is not None else 'not reached'} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--plan-sims", type=int, default=60)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    # one interval family for every row of a comparison: the normal one (the exact interval a
    # card takes for yes/no labels on a random sample is measured in the classic section)
    ap.add_argument("--interval", default="t", choices=["auto", "t"])
    ap.add_argument("--sections", default="classic,designs,replay")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--replay", default="benchmarks/data/judge_bench_lexical.json")
    ap.add_argument("--jury", default="")
    ap.add_argument("--replay-n", type=int, default=100)
    args = ap.parse_args()
    t0 = time.perf_counter()
    sections = args.sections.split(",")
    if "classic" in sections:
        classic_section(args.sims, args.seed)
    if "designs" in sections:
        print("\n## estimators x selection modes, simulated (N = 2000, 4 slices)")
        for name in args.scenarios.split(","):
            def make(s: int, name: str = name) -> Population:
                return simulated(name, np.random.default_rng([args.seed, s, len(name)]))
            table(name, make, MODES, args.n, args.sims, args.plan_sims, args.interval, 2000)
    if "replay" in sections:
        import os

        jury = args.jury if args.jury and os.path.exists(args.jury) else None
        pop = replayed(args.replay, jury)
        modes = MODES if pop.uncertainty is not None else MODES[:2]
        print(f"\n## replay: {len(pop.ids)} judge-benchmark items, labels as the humans' "
              f"(truth {pop.truth:.3f}), judge values from {args.replay}"
              + (f", jury {jury}" if jury else ""))
        table("replay", lambda s: pop, modes, args.replay_n, args.sims, args.plan_sims,
              args.interval, len(pop.ids))
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
