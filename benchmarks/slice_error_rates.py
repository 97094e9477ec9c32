"""Error rates of per-slice comparisons, by seeded simulation, through ragmeter's own code.

Usage: PYTHONPATH=src python benchmarks/slice_error_rates.py [--sims 1000] [--alt-sims 300]

Each simulated data set has S slices (5, 20, 50) of 15–40 samples. System A's and B's values
of a sample are exchangeable draws around the sample's difficulty (a continuous score in
[0, 1]), so under the null B − A is symmetric and every slice's paired test is a true null.
Under the alternative a fifth of the slices (at least one) regress by 0.15. Each data set goes
through :func:`ragmeter.results.slices.compare_slices` (paired randomization test per slice,
Holm) and the same raw p-values through Benjamini–Hochberg; B's per-slice intervals come from
:func:`ragmeter.results.slices.slice_results`. Reported, with a 95 % Wilson interval of the
Monte Carlo estimate:

* ``FWER``: share of data sets with at least one false "significant" (Holm controls it);
* ``FDR``: mean share of false findings among the findings (BH controls it);
* ``unadjusted FWER``: the same with raw p < 0.05 — what looking at S slices without a
  correction gives;
* ``coverage``: share of per-slice 95 % intervals holding the slice's true mean, for a
  continuous score (Student's t) and for a yes/no metric (Wilson);
* ``power``: share of truly regressed slices found (alternative only).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.slices import compare_slices, slice_results
from ragmeter.stats.multiple import bh

SHIFT = -0.15
NOISE = 0.12
N_RESAMPLES = 4000  # smallest p = 1/4001, below alpha / 50 so 50 slices can reject at all


@dataclass
class Rates:
    slices: int
    scenario: str
    sims: int
    fwer_holm: float
    fdr_bh: float
    fwer_raw: float
    power_holm: float | None
    power_bh: float | None
    coverage_t: float
    coverage_wilson: float


def wilson(k: float, n: int) -> tuple[float, float]:
    """95 % Wilson interval of a proportion k/n (:func:`ragmeter.stats.wilson_interval`)."""
    from ragmeter.stats import wilson_interval

    w = wilson_interval(k, n)  # type: ignore[arg-type]  # k: a rate times n, fractional
    return (math.nan, math.nan) if w.low is None or w.high is None else (w.low, w.high)


def _true_mean(centre: float, shift: float, rng: np.random.Generator) -> float:
    """The mean of a slice's score distribution (Monte Carlo with 200k draws)."""
    u = rng.beta(4 * centre, 4 * (1 - centre), 200_000)
    return float(np.clip(u + rng.normal(0, NOISE, u.size) + shift, 0, 1).mean())


def _result(name: str, ids: list[str], v: np.ndarray, metric: str = "score") -> EvalResult:
    r = EvalResult(name)
    r.add(MetricResult(metric, ids, v, Signature.make(metric=metric)))
    return r


def _one(rng: np.random.Generator, n_slices: int, alternative: bool,
         truth: dict[tuple[float, float], float], seed: int) -> dict[str, float]:
    sizes = rng.integers(15, 41, n_slices)
    centres = rng.choice(np.linspace(0.3, 0.8, 6), n_slices)
    shifts = np.zeros(n_slices)
    if alternative:
        bad = rng.choice(n_slices, max(1, n_slices // 5), replace=False)
        shifts[bad] = SHIFT
    ids: list[str] = []
    keys: dict[str, tuple[str, ...]] = {}
    a_vals, b_vals, yes = [], [], []
    p_yes = rng.uniform(0.5, 0.95, n_slices)
    for k, (n, c, s) in enumerate(zip(sizes, centres, shifts, strict=True)):
        u = rng.beta(4 * c, 4 * (1 - c), n)
        a_vals.append(np.clip(u + rng.normal(0, NOISE, n), 0, 1))
        b_vals.append(np.clip(u + rng.normal(0, NOISE, n) + s, 0, 1))
        yes.append((rng.random(n) < p_yes[k]).astype(float))
        for i in range(n):
            sid = f"s{k}-{i}"
            ids.append(sid)
            keys[sid] = (f"slice{k:02d}",)
    a = _result("A", ids, np.concatenate(a_vals))
    b = _result("B", ids, np.concatenate(b_vals))
    b.add(MetricResult("hit", ids, np.concatenate(yes), Signature.make(metric="hit")))
    table = compare_slices(a, b, keys, ["slice"], min_n=10, correction="holm", seed=seed,
                           n_resamples=N_RESAMPLES, metrics=["score"])
    truly_bad = {f"slice{k:02d}" for k in range(n_slices) if shifts[k] != 0}
    raw = np.array([t.p_value for t in table.tests])
    q_bh = bh(raw)
    nulls = np.array([t.key[0] not in truly_bad for t in table.tests])
    holm_sig = np.array([t.significant for t in table.tests])
    bh_sig = q_bh < 0.05
    out = {"fwer_holm": float((holm_sig & nulls).any()),
           "fwer_raw": float(((raw < 0.05) & nulls).any()),
           "fdr_bh": float((bh_sig & nulls).sum() / max(1, bh_sig.sum()))}
    if truly_bad:
        out["power_holm"] = float((holm_sig & ~nulls).sum() / len(truly_bad))
        out["power_bh"] = float((bh_sig & ~nulls).sum() / len(truly_bad))
    cells = slice_results(b, keys, ["slice"], min_n=10)
    cov_t, cov_w = [], []
    for cell in cells.cells:
        k = int(cell.key[0][5:])
        if cell.metric == "score":
            mu = truth[(float(centres[k]), float(shifts[k]))]
            cov_t.append(cell.ci_low <= mu <= cell.ci_high)  # type: ignore[operator]
        else:
            cov_w.append(cell.ci_low <= p_yes[k] <= cell.ci_high)  # type: ignore[operator]
    out["cov_t_hits"], out["cov_t_n"] = float(sum(cov_t)), float(len(cov_t))
    out["cov_w_hits"], out["cov_w_n"] = float(sum(cov_w)), float(len(cov_w))
    return out


def simulate(n_slices: int, sims: int, *, alternative: bool = False, seed: int = 0) -> Rates:
    """Error rates over ``sims`` seeded data sets of ``n_slices`` slices."""
    rng = np.random.default_rng([seed, n_slices, int(alternative)])
    truth_rng = np.random.default_rng(12345)
    truth = {(float(c), s): _true_mean(float(c), s, truth_rng)
             for c in np.linspace(0.3, 0.8, 6) for s in (0.0, SHIFT)}
    runs = [_one(rng, n_slices, alternative, truth, seed + i) for i in range(sims)]

    def mean(key: str) -> float | None:
        vals = [r[key] for r in runs if key in r]
        return float(np.mean(vals)) if vals else None

    return Rates(n_slices, "alternative" if alternative else "null", sims,
                 mean("fwer_holm") or 0.0, mean("fdr_bh") or 0.0, mean("fwer_raw") or 0.0,
                 mean("power_holm"), mean("power_bh"),
                 sum(r["cov_t_hits"] for r in runs) / sum(r["cov_t_n"] for r in runs),
                 sum(r["cov_w_hits"] for r in runs) / sum(r["cov_w_n"] for r in runs))


def _pct(x: float | None, n: int | None = None) -> str:
    if x is None:
        return "–"
    if n is None:
        return f"{100 * x:.1f} %"
    lo, hi = wilson(x * n, n)
    return f"{100 * x:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def table(rows: list[Rates]) -> str:
    lines = ["| scenario | slices | data sets | FWER (Holm) | FDR (BH) | FWER unadjusted | "
             "power Holm | power BH | coverage t | coverage Wilson |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.scenario} | {r.slices} | {r.sims} | {_pct(r.fwer_holm, r.sims)} | "
                     f"{_pct(r.fdr_bh)} | {_pct(r.fwer_raw)} | {_pct(r.power_holm)} | "
                     f"{_pct(r.power_bh)} | {_pct(r.coverage_t)} | {_pct(r.coverage_wilson)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000, help="data sets per null scenario")
    ap.add_argument("--alt-sims", type=int, default=300, help="data sets per alternative")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = [simulate(s, args.sims, seed=args.seed) for s in (5, 20, 50)]
    rows += [simulate(s, args.alt_sims, alternative=True, seed=args.seed) for s in (5, 20, 50)]
    print(table(rows))
    print(f"\n(seed {args.seed}, {N_RESAMPLES} sign flips per test, slices of 15–40 samples, "
          f"min_n 10, {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
