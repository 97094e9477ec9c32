"""Coverage of ragmeter's 95 % intervals by seeded simulation, per kind of metric value.

Usage: PYTHONPATH=src python benchmarks/ci_coverage.py [--sims 2000] [--slice-sims 500]
       [--seed 0] [--before]

Each cell draws ``sims`` data sets of ``n`` values (n = 20, 50, 200, 1000) of one kind:

* yes/no values with true rate p ∈ {0, 0.01, 0.05, 0.5, 0.95, 0.99, 1};
* graded verdicts 0/0.5/1, near 1 (P = 0.03/0.07/0.90) and in the middle (0.10/0.20/0.70);
* MRR-like values 1/rank (first relevant rank geometric, 0 beyond rank 10), near 1
  (P(rank 1) = 0.9) and lower (0.5);
* scores within 0–1 (Beta(2, 1.5); Beta(8, 1), skewed near 1);
* unbounded values (log-normal, σ = 1) — the interval there is Student's t and approximate.

and counts how often the interval holds the true mean, through ragmeter's own code:

* ``aggregate``: :func:`ragmeter.stats.mean_interval`, what ``MetricResult.aggregate`` reports;
* ``slice``: :func:`ragmeter.results.slices.slice_results` on three slices of ``n`` values each
  (different true means; every slice cell counted; ``--slice-sims`` data sets);
* ``paired``: :func:`ragmeter.stats.paired_interval` (what ``paired_test`` / ``compare`` report)
  on two systems with equal true means, their values correlated through a shared draw (the
  same draw for both on 60 % of the samples);
* ``PPI``: :func:`ragmeter.stats.ppi_mean_batch` with the interval a judge card uses (exact for
  yes/no labels of a yes/no judge, else Student t), ``n`` labels among ``N = max(2000, 4n)``
  judged items, the judge right on 90 % of items and a fresh draw of the same kind otherwise.

Each cell prints ``coverage`` and, when any, the share of zero-width intervals in brackets.
``--before`` adds the intervals ragmeter used before (a percentile bootstrap for aggregates and
paired differences, Student's t for slices and PPI) for n ≤ 200.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.slices import slice_results
from ragmeter.stats import bootstrap_ci, mean_interval, paired_interval, ppi_mean_batch

NS = (20, 50, 200, 1000)
MIX = 0.6      # share of samples on which the two systems of a pair share their draw
JUDGE_RIGHT = 0.9


@dataclass(frozen=True)
class Kind:
    """A kind of metric value: an inverse CDF on uniforms and its true mean."""

    name: str
    group: str                      # binary | skewed | continuous | unbounded
    quantile: Callable[[np.ndarray], np.ndarray]
    mean: float
    discrete: bool = True


def _binary(p: float) -> Kind:
    return Kind(f"yes/no p={p:g}", "binary", lambda u: (u < p).astype(np.float64), p)


def _grades(p0: float, p5: float, label: str) -> Kind:
    def q(u: np.ndarray) -> np.ndarray:
        return np.where(u < p0, 0.0, np.where(u < p0 + p5, 0.5, 1.0))
    return Kind(f"grades 0/0.5/1 {label}", "skewed", q, 0.5 * p5 + (1 - p0 - p5))


def _mrr(p1: float) -> Kind:
    def q(u: np.ndarray) -> np.ndarray:
        rank = np.maximum(np.ceil(np.log1p(-u) / math.log1p(-p1)), 1.0)
        return np.where(rank <= 10, 1.0 / rank, 0.0)
    ks = np.arange(1, 11)
    return Kind(f"MRR-like P(rank 1)={p1:g}", "skewed", q,
                float((p1 * (1 - p1) ** (ks - 1) / ks).sum()))


def _beta(a: float, b: float) -> Kind:
    from scipy.stats import beta

    return Kind(f"0-1 score Beta({a:g},{b:g})", "continuous", lambda u: beta.ppf(u, a, b),
                a / (a + b), discrete=False)


def _lognormal() -> Kind:
    from scipy.stats import norm

    return Kind("unbounded log-normal", "unbounded", lambda u: np.exp(norm.ppf(u)),
                math.exp(0.5), discrete=False)


def kinds() -> list[Kind]:
    return ([_binary(p) for p in (0.0, 0.01, 0.05, 0.5, 0.95, 0.99, 1.0)]
            + [_grades(0.03, 0.07, "near 1"), _grades(0.10, 0.20, "middle"),
               _mrr(0.9), _mrr(0.5), _beta(2, 1.5), _beta(8, 1), _lognormal()])


def _shift(k: Kind, i: int) -> Kind:
    """Slice ``i`` of a kind: the same family with a different true mean (the uniforms are
    bent towards 0 or 1), so slices of one data set differ."""
    if i == 0:
        return k
    power = (0.8, 1.25)[i - 1]
    us = (np.arange(200_000) + 0.5) / 200_000
    return Kind(k.name, k.group, lambda u: k.quantile(u ** power),
                float(k.quantile(us ** power).mean()), k.discrete)


def _cover(lo: np.ndarray, hi: np.ndarray, truth: float | np.ndarray) -> tuple[float, float]:
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    eps = 1e-12
    hit = (lo <= truth + eps) & (truth - eps <= hi)
    return float(hit.mean()), float((hi - lo <= eps).mean())


def aggregate_cell(k: Kind, n: int, sims: int, rng: np.random.Generator,
                   before: bool) -> tuple[tuple[float, float], tuple[float, float] | None]:
    x = k.quantile(rng.random((sims, n)))
    cis = [mean_interval(row) for row in x]
    after = _cover(np.array([c.low for c in cis]), np.array([c.high for c in cis]), k.mean)
    old = None
    if before:
        b = [bootstrap_ci(row, seed=i) for i, row in enumerate(x[: min(sims, 500)])]
        old = _cover(np.array([c[0] for c in b]), np.array([c[1] for c in b]), k.mean)
    return after, old


def _old_slice_ci(x: np.ndarray) -> tuple[float, float]:
    from scipy.stats import t as student

    n, m, z = x.size, float(x.mean()), 1.959963984540054
    if np.isin(x, (0.0, 1.0)).all():
        den = 1 + z * z / n
        c = (m + z * z / (2 * n)) / den
        h = z * math.sqrt(m * (1 - m) / n + z * z / (4 * n * n)) / den
        return max(0.0, c - h), min(1.0, c + h)
    h = float(student.ppf(0.975, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return m - h, m + h


def slice_cell(k: Kind, n: int, sims: int, rng: np.random.Generator,
               before: bool) -> tuple[tuple[float, float], tuple[float, float] | None]:
    parts = [_shift(k, i) for i in range(3)]
    ids = [f"s{i}" for i in range(3 * n)]
    keys = {sid: (("a", "b", "c")[i // n],) for i, sid in enumerate(ids)}
    truth = {("a",): parts[0].mean, ("b",): parts[1].mean, ("c",): parts[2].mean}
    hits, zero, cells, old_hits = 0, 0, 0, 0
    for _ in range(sims):
        v = np.concatenate([p.quantile(rng.random(n)) for p in parts])
        res = EvalResult("sys")
        res.add(MetricResult("score", ids, v, Signature.make(metric="score")))
        for c in slice_results(res, keys, "type", min_n=1).cells:
            assert c.ci_low is not None and c.ci_high is not None
            cells += 1
            hits += c.ci_low - 1e-12 <= truth[c.key] <= c.ci_high + 1e-12
            zero += c.ci_high - c.ci_low <= 1e-12
            if before:   # Wilson for 0/1 values, Student's t otherwise
                x = v[[i for i, sid in enumerate(ids) if keys[sid] == c.key]]
                lo, hi = _old_slice_ci(x)
                old_hits += lo - 1e-12 <= truth[c.key] <= hi + 1e-12
    return (hits / cells, zero / cells), ((old_hits / cells, math.nan) if before else None)


def paired_cell(k: Kind, n: int, sims: int, rng: np.random.Generator,
                before: bool) -> tuple[tuple[float, float], tuple[float, float] | None]:
    u = rng.random((sims, n))
    v = np.where(rng.random((sims, n)) < MIX, u, rng.random((sims, n)))
    a, b = k.quantile(u), k.quantile(v)
    cis = [paired_interval(a[i], b[i]) for i in range(sims)]
    after = _cover(np.array([c.low for c in cis]), np.array([c.high for c in cis]), 0.0)
    old = None
    if before:
        m = min(sims, 500)
        bs = [bootstrap_ci(b[i] - a[i], seed=i) for i in range(m)]
        old = _cover(np.array([c[0] for c in bs]), np.array([c[1] for c in bs]), 0.0)
    return after, old


def ppi_cell(k: Kind, n: int, sims: int, rng: np.random.Generator,
             before: bool) -> tuple[tuple[float, float], tuple[float, float] | None]:
    n_all = max(2000, 4 * n)
    y = k.quantile(rng.random((sims, n_all)))
    f = np.where(rng.random((sims, n_all)) < JUDGE_RIGHT, y, k.quantile(rng.random((sims,
                                                                                     n_all))))
    keys = rng.random((sims, n_all))
    lab = keys <= np.partition(keys, n - 1, axis=1)[:, n - 1:n]
    exact = k.group == "binary"
    _e, tlo, thi = ppi_mean_batch(f, lab, y, discrete=k.discrete)
    if exact:
        _e, lo, hi = ppi_mean_batch(f, lab, y, interval="exact")
    else:
        lo, hi = tlo, thi
    if k.group != "unbounded":                     # a judged metric's range: cut to 0-1
        lo, hi, tlo, thi = (np.clip(x, 0.0, 1.0) for x in (lo, hi, tlo, thi))
    after = _cover(lo, hi, k.mean)
    return after, (_cover(tlo, thi, k.mean) if before else None)


CONTEXTS = {"aggregate": aggregate_cell, "slice": slice_cell, "paired": paired_cell,
            "PPI": ppi_cell}


def _fmt(cov: tuple[float, float] | None) -> str:
    if cov is None:
        return "–"
    c, z = cov
    return f"{c:.3f}" + (f" ({z:.0%} zero)" if z and z == z else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--slice-sims", type=int, default=500)
    ap.add_argument("--ppi-sims", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--before", action="store_true", help="add the intervals used before")
    ap.add_argument("--contexts", default=",".join(CONTEXTS))
    args = ap.parse_args()
    t0 = time.perf_counter()
    worst: dict[str, tuple[float, str]] = {}
    zero_cells = 0
    for ctx in args.contexts.split(","):
        fn = CONTEXTS[ctx]
        sims = {"slice": args.slice_sims, "PPI": args.ppi_sims}.get(ctx, args.sims)
        print(f"\n### {ctx} ({sims} data sets per cell)\n")
        head = " | ".join(f"n={n}" + (f" | before n={n}" if args.before and n <= 200 else "")
                          for n in NS)
        print(f"| kind | {head} |")
        print("|---" * (1 + len(NS) + (3 if args.before else 0)) + "|")
        for ki, k in enumerate(kinds()):
            cols = []
            for n in NS:
                rng = np.random.default_rng([args.seed, ki, n, len(ctx)])
                after, old = fn(k, n, sims, rng, args.before and n <= 200)
                cols.append(_fmt(after))
                if args.before and n <= 200:
                    cols.append(_fmt(old))
                if after[1] > 0:
                    zero_cells += 1
                if k.group in ("binary", "skewed") and n >= 30:
                    w = worst.get(ctx)
                    if w is None or after[0] < w[0]:
                        worst[ctx] = (after[0], f"{k.name}, n={n}")
            print(f"| {k.name} | " + " | ".join(cols) + " |", flush=True)
    print()
    for ctx, (c, where) in worst.items():
        print(f"lowest coverage over yes/no and skewed cells with n >= 30, {ctx}: {c:.3f} "
              f"({where})")
    print(f"cells with any zero-width interval: {zero_cells}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
