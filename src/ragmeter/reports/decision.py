"""The decision table: which system is best on each key metric, and is its lead real?

For one tier, systems (retrievers, judges, runs…) are compared on a few key metrics. Each
cell carries the mean, its 95% bootstrap CI and n; the best mean is marked; every other system
is compared with the best by a paired randomization test on the samples both scored, and
marked when the gap is significant (p < 0.05). A one-line verdict in plain words is derived
from the tier's primary metric. The same code serves the report (systems of one run) and the
viewer (the same tier across several runs).

A target's latency results (:func:`ragmeter.results.statistic.is_latency`) are not systems to
choose between on quality: they form the decision's latency block (:attr:`TierDecision.latency`,
one row per target, the latency percentiles, throughput, error rate and — for priced targets —
the cost per answer as columns, each best in its own direction), and the verdict speaks of
quality alone. With two or more targets the decision marks the quality–latency–cost Pareto
front (:func:`pareto_front`): the targets no other one beats on all three at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.metrics.registry import metric_base, split_metric_key
from ragmeter.reports.bands import find_band
from ragmeter.reports.i18n import join_names, t
from ragmeter.reports.slices import value_ranges
from ragmeter.results.records import EvalResult, MetricResult, compare_metric
from ragmeter.results.slices import (
    SliceTable,
    adjust_family,
    compare_slices,
    slice_results,
    stored_slices,
)
from ragmeter.results.statistic import (
    LATENCY_METRICS,
    is_cost_block,
    is_latency,
    latency_order,
)
from ragmeter.stats import DEFAULT_N_RESAMPLES, DEFAULT_SEED

METHOD = "randomization"
ALPHA = 0.05
MAX_KEY_METRICS = 5
# preferred key metrics, most decisive first (the first one present is the tier's primary)
PREFERRED = ("mrr", "ndcg@10", "hit_rate@1", "recall@10", "e2e_score", "faithfulness",
             "answer_correctness", "answer_relevancy", "semantic_similarity", "rouge_l",
             "cls_accuracy", "accuracy", "f1", "cohen_kappa", "consistency", "silhouette",
             "cache_hit_rate", "context_preservation")


def base_name(metric: str) -> str:
    """``hit_rate@1(level=doc)`` → ``hit_rate@1`` (the metric-name grammar's own split)."""
    return metric_base(metric)


@dataclass
class Cell:
    """One system × metric of the decision table."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_unscored: int
    higher_is_better: bool = True
    best: bool = False
    p_value: float | None = None  # paired test against the best (None for the best itself)
    significant: bool = False  # worse than the best, significantly
    paired: bool = True  # False: no sample scored by both this system and the best
    #: a judged metric's judge-card backing (:class:`ragmeter.judge_trust.backing.Backing`:
    #: card-backed with its corrected interval, or advisory); None when no judge scored it
    card: Any = None

    @property
    def scored(self) -> bool:
        return self.n > 0 and self.mean is not None and not math.isnan(self.mean)


@dataclass
class TierDecision:
    tier: str
    systems: list[str]
    metrics: list[str]
    cells: dict[tuple[str, str], Cell]
    primary: str | None
    n_resamples: int
    seed: int
    method: str = METHOD
    verdict_parts: dict[str, object] = field(default_factory=dict)
    #: per system, its slices of the primary metric (results kept with their slices)
    slices: dict[str, SliceTable] = field(default_factory=dict)
    #: every other system against the best, per slice, one adjusted family
    slice_tests: list[SliceTable] = field(default_factory=list)
    #: the latency block: the targets' latency results (rows named after the target)
    latency: TierDecision | None = None
    #: row label → the label the result was given (the latency block's rows drop
    #: ``:latency``)
    names: dict[str, str] = field(default_factory=dict)
    #: A/B of targets: the targets on the quality–latency–cost Pareto front (no other target
    #: at least as good on every dimension of :attr:`front_dims` and better on one)
    front: list[str] = field(default_factory=list)
    #: the dimensions of the front: the primary quality metric, then ``latency_p50`` and
    #: ``cost_per_answer`` where every target has them
    front_dims: list[str] = field(default_factory=list)

    def slice_lines(self, lang: str = "en") -> list[str]:
        """The "worst slice" and "regressed slice" lines (empty when nothing was sliced)."""
        if not self.slices or self.primary is None:
            return []
        w = _SLICE_WORDS.get(lang, _SLICE_WORDS["en"])
        worst = []
        for system, table in self.slices.items():
            c = table.worst(self.primary)
            if c is not None:
                worst.append(f"{system}: {c.label} {c.mean:.3f} [{c.ci_low:.3f}, "
                             f"{c.ci_high:.3f}] n={c.n}")
        withheld = sum(1 for tb in self.slices.values() for c in tb.cells if c.withheld)
        first = next(iter(self.slices.values()))
        line = f"{w['worst']} ({self.primary}): " + ("; ".join(worst) or w["none_shown"])
        if withheld:
            line += f" ({w['withheld'].format(n=withheld, min_n=first.min_n)})"
        lines = [line]
        if self.slice_tests:
            tb = self.slice_tests[0]
            family = tb.family or len(tb.tests)
            how = f"{tb.correction}, {w['family']} {family}"
            reg = [f"{x.system} {r.label} {r.diff:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] "
                   f"p_adj={r.p_adjusted:.3g}" for x in self.slice_tests for r in x.regressed()]
            lines.append(f"{w['regressed']} ({self.primary}, {w['vs']} {tb.baseline}; {how}): "
                         + ("; ".join(reg) if reg else w["no_regressed"]))
        return lines

    def verdict(self, lang: str = "en") -> str:
        text = self._verdict(lang)
        return " ".join([text, *(f"{x}." for x in self.slice_lines(lang))])

    def _verdict(self, lang: str = "en") -> str:
        v = self.verdict_parts
        kind = v.get("kind")
        if kind is None:
            return t("verdict_none", lang)
        if kind == "single":
            return t("verdict_single", lang, system=v["best"], metric=v["metric"],
                     value=v["value"])
        sig = [str(x) for x in v.get("sig", [])]  # type: ignore[attr-defined]
        nosig = [str(x) for x in v.get("nosig", [])]  # type: ignore[attr-defined]
        unpaired = [str(x) for x in v.get("unpaired", [])]  # type: ignore[attr-defined]
        tied = [str(x) for x in v.get("tied", [])]  # type: ignore[attr-defined]
        best = str(v["best"])
        if tied:
            best = t("tied", lang, best=best, others=join_names(tied, lang))
        if sig and nosig:
            text = t("verdict_best_mixed", lang, best=best, metric=v["metric"],
                     sig=join_names(sig, lang), nosig=join_names(nosig, lang))
        elif sig or nosig:
            key = "verdict_best_sig" if sig else "verdict_best_nosig"
            text = t(key, lang, best=best, metric=v["metric"],
                     others=join_names(sig or nosig, lang))
        else:
            text = t("verdict_best_only", lang, best=best, metric=v["metric"])
        if unpaired:
            text += " " + t("verdict_unpaired", lang, others=join_names(unpaired, lang))
        return text


_SLICE_WORDS = {
    "en": {"worst": "Worst slice", "regressed": "Regressed slices", "vs": "vs",
           "family": "family of", "no_regressed": "none after adjustment",
           "none_shown": "every slice withheld",
           "withheld": "{n} slice cell(s) withheld: fewer than {min_n} samples"},
    "ru": {"worst": "Худший срез", "regressed": "Срезы с ухудшением", "vs": "против",
           "family": "семейство из", "no_regressed": "нет после поправки",
           "none_shown": "все срезы скрыты",
           "withheld": "скрыто ячеек: {n}, в них меньше {min_n} примеров"},
}


#: tiers whose headline is a metric of their own kind whatever its parameters (real users:
#: where the user was sent, not how the answer compares with the logged one)
TIER_PREFERRED = {"real_users": ("mrr", "hit_rate@1", "hit_rate@5", "ndcg@10", "ndcg@5",
                                 "recall@5", "hit_rate@10", "recall@10")}


def rank_metrics(names: Sequence[str], has_data: set[str] | None = None,
                 tier: str | None = None) -> list[str]:
    """Metric names, most decisive first: metrics with scored samples before empty ones, a
    tier's own headline metrics first (:data:`TIER_PREFERRED`), plain names before
    parameterised ones, preferred names (those with a quality band among them) first, then
    the given order."""
    has = set(names) if has_data is None else has_data
    order = list(dict.fromkeys(names))
    own = TIER_PREFERRED.get(tier or "", ())

    def rank(key: str) -> tuple[bool, bool, float, int]:
        name = base_name(key)
        if name in own:
            return (key not in has, False, -1000.0 + own.index(name), order.index(key))
        stem = split_metric_key(key)[0]
        if name in PREFERRED:
            pref: float = PREFERRED.index(name)
        elif stem in PREFERRED:
            pref = PREFERRED.index(stem) + 0.5
        elif find_band(key, tier) is not None:
            pref = len(PREFERRED)
        else:
            pref = 1000.0
        return (key not in has, "(" in key, pref, order.index(key))

    return sorted(order, key=rank)


def key_metrics(results: Sequence[EvalResult], tier: str | None = None,
                limit: int = MAX_KEY_METRICS) -> list[str]:
    """A tier's key metrics (see :func:`rank_metrics`); at most ``limit``."""
    seen: list[str] = []
    has_data: set[str] = set()
    for res in results:
        for key, mr in res.results.items():
            seen.append(key)
            if mr.aggregate.n > 0:
                has_data.add(key)
    return rank_metrics(seen, has_data, tier)[:limit]


def _cell(mr: MetricResult | None) -> Cell:
    if mr is None:
        return Cell(None, None, None, 0, 0)
    a = mr.aggregate
    return Cell(a.mean, a.ci_low, a.ci_high, a.n, a.n_unscored, mr.higher_is_better)


def latency_label(label: str) -> str:
    """A latency result's row label: the target's name (``bot:latency`` → ``bot``)."""
    return label[:-len(":latency")] if label.endswith(":latency") else label


#: the paired test a decision runs (``compare_metric``'s signature); a caller may pass one
#: that remembers its results (the viewer keeps them per store version)
Compare = Callable[..., Any]


def decide(tier: str, systems: Sequence[tuple[str, EvalResult]], *,
           metrics: Sequence[str] | None = None, n_resamples: int = DEFAULT_N_RESAMPLES,
           seed: int = DEFAULT_SEED, lang: str = "en",
           compare: Compare | None = None,
           backing: Callable[[EvalResult, str], Any] | None = None) -> TierDecision:
    """Decision table of ``systems`` (label, result) on ``metrics`` (default: key metrics);
    the targets' latency results go to its latency block (:attr:`TierDecision.latency`).
    ``compare``: the paired test (default :func:`compare_metric`); ``backing``: a judged
    metric's judge-card backing (:func:`ragmeter.judge_trust.backing.run_backing`), kept on
    its cells."""
    quality = [(label, r) for label, r in systems if not is_latency(r) and not is_cost_block(r)]
    timing = [(latency_label(label), r) for label, r in systems if is_latency(r)]
    test = compare or compare_metric
    dec = _decide(tier, quality, metrics=metrics, n_resamples=n_resamples, seed=seed,
                  compare=test)
    if backing is not None:
        for label, res in quality:
            for key in dec.metrics:
                if key in res.results:
                    dec.cells[(label, key)].card = backing(res, key)
    _add_slices(dec, quality)
    if timing:
        present = latency_order(list(dict.fromkeys(
            k for _, r in timing for k in r.results if k in LATENCY_METRICS)))
        dec.latency = _decide(tier, timing, metrics=present, n_resamples=n_resamples,
                              seed=seed, compare=test)
        dec.latency.names = {latency_label(label): label for label, r in systems
                             if is_latency(r)}
        dec.front, dec.front_dims = pareto_front(dec)
    return dec


#: the latency and cost dimensions of a target's front, each lower-is-better
FRONT_TIMING = ("latency_p50", "cost_per_answer")


def pareto_front(dec: TierDecision) -> tuple[list[str], list[str]]:
    """The targets of an A/B (two or more targets, each with a quality row and a latency
    row) on the Pareto front of the tier's primary quality metric, the median latency and the
    cost per answer: a target is on it when no other is at least as good on every dimension
    and better on one. A dimension some target has no value for (a target without a price,
    every call's usage unknown) is left out, and so is the front when no timing dimension
    remains. Returns the front and its dimensions (empty when there is no A/B)."""
    lat = dec.latency
    if lat is None or dec.primary is None:
        return [], []
    targets = [s for s in lat.systems if s in dec.systems]
    if len(targets) < 2:
        return [], []

    def value(d: TierDecision, s: str, m: str) -> float | None:
        c = d.cells.get((s, m))
        return float(c.mean) if c is not None and c.scored else None  # type: ignore[arg-type]

    dims: list[tuple[str, TierDecision, float]] = []
    q0 = dec.cells.get((targets[0], dec.primary))
    if all(value(dec, s, dec.primary) is not None for s in targets):
        dims.append((dec.primary, dec, 1.0 if (q0 is None or q0.higher_is_better) else -1.0))
    for m in FRONT_TIMING:
        if m in lat.metrics and all(value(lat, s, m) is not None for s in targets):
            dims.append((m, lat, -1.0))
    if len(dims) < 2 or dims[0][0] != dec.primary:
        return [], []
    points = {s: [sign * value(d, s, m) for m, d, sign in dims]  # type: ignore[operator]
              for s in targets}

    def beaten(a: list[float], b: list[float]) -> bool:   # b dominates a (all higher-better)
        return all(y >= x for x, y in zip(a, b, strict=True)) and any(
            y > x for x, y in zip(a, b, strict=True))

    front = [s for s in targets if not any(beaten(points[s], points[o])
                                           for o in targets if o != s)]
    return front, [m for m, _, _ in dims]


def _decide(tier: str, systems: Sequence[tuple[str, EvalResult]], *,
            metrics: Sequence[str] | None, n_resamples: int, seed: int,
            compare: Compare) -> TierDecision:
    results = [r for _, r in systems]
    keys = list(metrics) if metrics is not None else key_metrics(results, tier)
    labels = [label for label, _ in systems]
    cells: dict[tuple[str, str], Cell] = {}
    primary: str | None = None
    verdict: dict[str, object] = {}
    for key in keys:
        mrs = {label: res.results.get(key) for label, res in systems}
        col = {label: _cell(mr) for label, mr in mrs.items()}
        cells.update({(label, key): c for label, c in col.items()})
        scored = [label for label in labels if col[label].scored]
        if not scored:
            continue
        hib = col[scored[0]].higher_is_better
        best = (max if hib else min)(scored, key=lambda s: col[s].mean)  # type: ignore[arg-type,return-value]
        tied = [x for x in scored if col[x].mean == col[best].mean]
        for label in tied:
            col[label].best = True
        sig: list[str] = []
        nosig: list[str] = []
        unpaired: list[str] = []
        for label in scored:
            if label in tied:
                continue
            a, b = mrs[best], mrs[label]
            assert a is not None and b is not None
            cmp = compare(a, b, method=METHOD, n_resamples=n_resamples, seed=seed)
            if not cmp.n:  # no sample scored by both: no paired test is possible
                col[label].paired = False
                unpaired.append(label)
                continue
            col[label].p_value = cmp.p_value
            col[label].significant = cmp.p_value < ALPHA
            (sig if col[label].significant else nosig).append(label)
        if primary is None:
            primary = key
            if len(scored) == 1:
                verdict = {"kind": "single", "best": best, "metric": key,
                           "value": f"{col[best].mean:.3f}"}
            else:
                verdict = {"kind": "best", "best": best, "tied": tied[1:], "metric": key,
                           "sig": sig, "nosig": nosig, "unpaired": unpaired}
    return TierDecision(tier, labels, keys, cells, primary, n_resamples, seed,
                        verdict_parts=verdict)


def _add_slices(dec: TierDecision, systems: Sequence[tuple[str, EvalResult]]) -> None:
    """Slices of the primary metric for results kept with their slices; every other system
    tested against the best per slice, the p-values adjusted over the whole family."""
    metric = dec.primary
    if metric is None:
        return
    sliced = [(label, res, st) for label, res in systems
              if metric in res.results and (st := stored_slices(res)) is not None]
    if not sliced:
        return
    for label, res, (spec, keys) in sliced:
        table = slice_results(res, keys, spec.by, min_n=spec.min_n, metrics=[metric],
                              value_ranges=value_ranges([metric]))
        if table.cells:
            dec.slices[label] = table
    best = dec.verdict_parts.get("best")
    base = next(((res, st) for label, res, st in sliced if label == best), None)
    if base is None:
        return
    base_res, (spec, keys) = base
    for label, res, (_, k) in sliced:
        if label == best:
            continue
        tb = compare_slices(base_res, res, {**keys, **k}, spec.by, min_n=spec.min_n,
                            correction=spec.correction, seed=dec.seed,
                            n_resamples=dec.n_resamples, metrics=[metric],
                            value_ranges=value_ranges([metric]))
        tb.system = label
        dec.slice_tests.append(tb)
    adjust_family(dec.slice_tests, spec.correction)
