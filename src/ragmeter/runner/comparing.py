"""Compare two runs (or two EvalResult files): paired significance per shared metric, and
per slice with the family's p-values adjusted (:func:`compare_runs_by_slices`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult, compare_results
from ragmeter.results.slices import (
    DEFAULT_MIN_N,
    SliceSpec,
    SliceTable,
    adjust_family,
    compare_slices,
    slice_keys,
    stored_slices,
)
from ragmeter.stats import PairedComparison


@dataclass(frozen=True)
class ComparisonRow:
    result: str
    comparison: PairedComparison
    #: ``"latency"`` for a target's latency result (shown in a block of its own)
    block: str = ""

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
                 seed: int | None = None, compare: Any = None) -> list[ComparisonRow]:
    """The paired test of every metric two paired results share; ``compare``: the test of
    one metric, ``compare_metric``'s signature (the viewer passes one that keeps its
    results per store version)."""
    from ragmeter.results.statistic import LATENCY_BLOCK, is_latency

    rows = []
    for key, ra, rb in pair_results(a, b):
        block = LATENCY_BLOCK if is_latency(ra) else ""
        tests = (compare_results(ra, rb, method=method, n_resamples=n_resamples, seed=seed)
                 if compare is None else
                 [compare(ra.results[m], rb.results[m], method=method, n_resamples=n_resamples,
                          seed=seed) for m in ra.results if m in rb.results])
        rows += [ComparisonRow(key, c, block) for c in tests]
    return rows


def compare_runs_by_slices(a: dict[str, EvalResult], b: dict[str, EvalResult], *,
                           by: Sequence[str] | None = None, min_n: int | None = None,
                           correction: str | None = None,
                           samples: Sequence[Sample] | None = None,
                           n_resamples: int = 10000, seed: int = 42) -> list[SliceTable]:
    """Per-slice paired tests of B against A for every result pair, adjusted as one family.

    The slices come from ``samples`` when given, else from those kept with B (or A) by a run
    made with slices; ``by``, ``min_n`` and ``correction`` default to the kept ones.
    """
    tables = []
    spec: SliceSpec | None = None
    for key, ra, rb in pair_results(a, b):
        stored = stored_slices(rb) or stored_slices(ra)
        if samples is None and stored is None:
            raise ConfigError("by", f"'{key}' was not run with slices: give the samples file "
                              "(--samples) to slice it")
        base = stored[0] if stored is not None else None
        fields_ = tuple(by) if by else (base.by if base is not None else ())
        spec = SliceSpec(fields_, min_n or (base.min_n if base else DEFAULT_MIN_N),
                         correction or (base.correction if base else "holm"))
        keys = slice_keys(samples, spec.by) if samples is not None else _restrict(stored, spec)
        tb = compare_slices(ra, rb, keys, spec.by, min_n=spec.min_n,
                            correction=spec.correction, seed=seed, n_resamples=n_resamples)
        tb.system = f"{key}:{rb.name}"
        tables.append(tb)
    if spec is not None:
        adjust_family(tables, spec.correction)
    return tables


def _restrict(stored: Any, spec: SliceSpec) -> dict[str, tuple[str, ...]]:
    """Stored keys, reduced to the fields asked for (which must have been stored)."""
    kept, keys = stored
    missing = [f for f in spec.by if f not in kept.by]
    if missing:
        raise ConfigError("by", f"the run was sliced by {', '.join(kept.by)}, not by "
                          f"{', '.join(missing)}: give the samples file (--samples)")
    pos = [kept.by.index(f) for f in spec.by]
    return {sid: tuple(k[i] for i in pos) for sid, k in keys.items()}
