"""Compare two runs (or two EvalResult files): paired significance per shared metric."""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.results.records import EvalResult, compare_results
from ragmeter.stats import PairedComparison


@dataclass(frozen=True)
class ComparisonRow:
    result: str
    comparison: PairedComparison

    @property
    def verdict(self) -> str:
        c = self.comparison
        if c.n == 0:
            return "no overlap"
        if c.regression:
            return "regression"
        if c.significant:
            return "improvement"
        return "no significant change"


def pair_results(a: dict[str, EvalResult], b: dict[str, EvalResult]) \
        -> list[tuple[str, EvalResult, EvalResult]]:
    """Pairs of results to compare: by key, else by system name, else the only two."""
    pairs = [(k, a[k], b[k]) for k in a if k in b]
    if pairs:
        return pairs
    by_name_b = {r.name: r for r in b.values()}
    pairs = [(r.name, r, by_name_b[r.name]) for r in a.values() if r.name in by_name_b]
    if pairs:
        return pairs
    if len(a) == 1 and len(b) == 1:
        (ka, ra), (kb, rb) = next(iter(a.items())), next(iter(b.items()))
        return [(ka if ka == kb else f"{ka} vs {kb}", ra, rb)]
    return []


def compare_runs(a: dict[str, EvalResult], b: dict[str, EvalResult], *,
                 method: str = "randomization", n_resamples: int = 10000,
                 seed: int | None = None) -> list[ComparisonRow]:
    rows = []
    for key, ra, rb in pair_results(a, b):
        for c in compare_results(ra, rb, method=method, n_resamples=n_resamples, seed=seed):
            rows.append(ComparisonRow(key, c))
    return rows
