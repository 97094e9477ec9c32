"""Result records: per-sample values, aggregates with CIs, and a signature on every result.

Per-sample values are the source of truth; aggregates, confidence intervals and paired tests
are computed from them. An *unscored* sample (judge reply unparseable, timeout, ...) has no
value but a reason: it is counted in ``n_unscored`` and excluded from the mean — never 0.
An *excluded* sample (e.g. a query with no relevant documents, a negative question) is not
part of this metric's population at all and is only counted in ``counts``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragmeter._version import __version__
from ragmeter.results.names import METRIC_NAMES
from ragmeter.results.statistic import (  # noqa: F401 (WALL_MS: importable from here too)
    WALL_MS,
    compare_statistic,
    estimate,
    is_statistic,
    statistic_of,
)
from ragmeter.stats import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    PairedComparison,
    mean_interval,
    paired_test,
)


@dataclass(frozen=True)
class Signature:
    """Everything needed to compare two numbers honestly, as ``key:value|key:value``.

    Always carries the ragmeter version; callers add metric, k, tie policy, dataset hash, seed,
    tokenizer, model names, prompt version, chunking — whatever changed the number.
    """

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def make(cls, **fields: Any) -> Signature:
        items = {"ragmeter": __version__}
        for key, value in fields.items():
            if value is None:
                continue
            items[key] = _sig_value(value)
        return cls(tuple(items.items()))

    def with_fields(self, **fields: Any) -> Signature:
        items = dict(self.fields)
        for key, value in fields.items():
            if value is not None:
                items[key] = _sig_value(value)
        return Signature(tuple(items.items()))

    def as_dict(self) -> dict[str, str]:
        return dict(self.fields)

    def get(self, key: str) -> str | None:
        return self.as_dict().get(key)

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self.fields)

    @classmethod
    def parse(cls, text: str) -> Signature:
        items = []
        for part in text.split("|"):
            key, _, value = part.partition(":")
            items.append((key, value))
        return cls(tuple(items))


def _sig_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value).replace("|", "/")


@dataclass(frozen=True)
class Aggregate:
    """Mean over scored samples with its CI; ``ci_method`` says which interval
    (:mod:`ragmeter.stats.intervals`: ``cp`` for 0/1 values, ``cp-eff`` for other values in
    0–1, ``t`` otherwise; ``bootstrap`` for a percentile or rate statistic)."""

    mean: float | None
    n: int
    n_unscored: int
    ci_low: float | None
    ci_high: float | None
    std: float | None
    ci_level: float = 0.95
    n_boot: int = DEFAULT_N_BOOT
    seed: int = DEFAULT_SEED
    unscored_by_reason: Mapping[str, int] = field(default_factory=dict)
    ci_method: str = "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean, "n": self.n, "n_unscored": self.n_unscored,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "std": self.std,
            "ci_level": self.ci_level, "ci_method": self.ci_method, "n_boot": self.n_boot,
            "seed": self.seed, "unscored_by_reason": dict(self.unscored_by_reason),
        }


@dataclass(frozen=True)
class SampleScore:
    """One sample's value for one metric (``value is None`` ⇔ unscored, with ``reason``)."""

    sample_id: str
    value: float | None
    reason: str | None = None
    details: Mapping[str, Any] | None = None


#: a key of ``MetricResult.counts``: the metric was added by ragmeter (e.g. the negatives'
#: top score when the data has negative questions), not asked for; a run does not fail
#: because such a metric scored no sample
IMPLICIT_COUNT = "implicit"


@dataclass
class MetricResult:
    """All per-sample values of one metric over one dataset, plus counts and a signature.

    ``values`` is float64 aligned with ``sample_ids``; a NaN marks an unscored sample and
    ``reasons`` must give its reason (enforced). ``counts`` holds documented policy counters
    (``missing_from_run``, ``no_relevant``, ``negative``, ...).
    """

    metric: str
    sample_ids: list[str]
    values: np.ndarray
    signature: Signature
    reasons: dict[int, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    details: list[dict[str, Any] | None] | None = None
    higher_is_better: bool = True
    seed: int = DEFAULT_SEED
    n_boot: int = DEFAULT_N_BOOT
    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=np.float64)
        if self.values.shape != (len(self.sample_ids),):
            raise ValueError(
                f"{self.metric}: {self.values.shape[0]} values for {len(self.sample_ids)} samples"
            )
        reasons = self.reasons
        nan_idx = np.flatnonzero(np.isnan(self.values)).tolist()
        missing = [i for i in nan_idx if i not in reasons]
        if missing:
            raise ValueError(
                f"{self.metric}: unscored samples need a reason (indices {missing[:5]}...)"
            )
        if reasons:
            self.values[np.fromiter(reasons, dtype=np.intp, count=len(reasons))] = np.nan

    @classmethod
    def from_scores(
        cls,
        metric: str,
        scores: Iterable[SampleScore],
        signature: Signature,
        **kwargs: Any,
    ) -> MetricResult:
        ids: list[str] = []
        vals: list[float] = []
        reasons: dict[int, str] = {}
        details: list[dict[str, Any] | None] = []
        for i, s in enumerate(scores):
            ids.append(s.sample_id)
            if s.value is None or (isinstance(s.value, float) and math.isnan(s.value)):
                vals.append(float("nan"))
                reasons[i] = s.reason or "unscored"
            else:
                vals.append(float(s.value))
            details.append(dict(s.details) if s.details else None)
        has_details = any(d is not None for d in details)
        return cls(metric, ids, np.asarray(vals), signature, reasons=reasons,
                   details=details if has_details else None, **kwargs)

    @classmethod
    def unscored(cls, metric: str, sample_ids: Sequence[str], reason: str,
                 signature: Signature, **kwargs: Any) -> MetricResult:
        """Every sample unscored for one ``reason`` (``from_scores`` of such scores)."""
        n = len(sample_ids)
        return cls(metric, list(sample_ids), np.full(n, np.nan), signature,
                   reasons=dict.fromkeys(range(n), reason), **kwargs)

    @classmethod
    def concat(cls, metric: str, parts: Sequence[MetricResult], signature: Signature,
               **kwargs: Any) -> MetricResult:
        """One result of the parts' samples in order: ``from_scores`` over their records,
        without making them."""
        ids: list[str] = []
        reasons: dict[int, str] = {}
        details: list[dict[str, Any] | None] = []
        for part in parts:
            base = len(ids)
            ids += part.sample_ids
            reasons.update((base + i, why or "unscored") for i, why in part.reasons.items())
            details += ([dict(d) if d else None for d in part.details] if part.details
                        else [None] * len(part.sample_ids))
        values = (np.concatenate([p.values for p in parts]) if parts
                  else np.zeros(0, dtype=np.float64))
        has_details = any(d is not None for d in details)
        return cls(metric, ids, values, signature, reasons=reasons,
                   details=details if has_details else None, **kwargs)

    @property
    def scored_mask(self) -> np.ndarray:
        return ~np.isnan(self.values)

    @cached_property
    def aggregate(self) -> Aggregate:
        """Mean, std and CI over the scored samples (computed once). The CI of a mean is
        :func:`ragmeter.stats.mean_interval` (exact for 0/1 values, never zero width at 0 or
        1); a percentile or rate statistic (target latency) keeps its seeded bootstrap."""
        mine = self.values[self.scored_mask]
        stat = statistic_of(self.metric, self.counts, mine) if mine.size else None
        if stat is not None:  # a percentile or a rate (target latency): its own bootstrap CI
            return self._stat_aggregate(mine, stat)
        n = int(mine.size)
        by_reason = dict(Counter(self.reasons.values()))
        if n == 0:
            return Aggregate(None, 0, len(self.reasons), None, None, None, seed=self.seed,
                             n_boot=self.n_boot, unscored_by_reason=by_reason)
        ci = mean_interval(mine)
        return Aggregate(
            mean=float(mine.mean()), n=n, n_unscored=len(self.reasons), ci_low=ci.low,
            ci_high=ci.high, std=float(mine.std(ddof=1)) if n > 1 else 0.0, seed=self.seed,
            n_boot=self.n_boot, unscored_by_reason=by_reason, ci_method=ci.method)

    def _stat_aggregate(self, scored: np.ndarray, stat: Any) -> Aggregate:
        n = int(scored.size)
        value, lo, hi = estimate(stat, seed=self.seed, n_boot=self.n_boot)
        return Aggregate(
            mean=value, n=n, n_unscored=len(self.reasons), ci_low=lo,
            ci_high=hi, std=float(scored.std(ddof=1)) if n > 1 else 0.0,
            seed=self.seed, n_boot=self.n_boot,
            unscored_by_reason=dict(Counter(self.reasons.values())), ci_method="bootstrap")

    @property
    def mean(self) -> float | None:
        scored = self.values[self.scored_mask]
        return float(scored.mean()) if scored.size else None

    def records(self) -> list[SampleScore]:
        out = []
        details = self.details
        for i, (sid, v) in enumerate(zip(self.sample_ids, self.values.tolist(), strict=True)):
            det = details[i] if details else None
            if v != v:  # NaN: unscored
                out.append(SampleScore(sid, None, self.reasons.get(i, "unscored"), det))
            else:
                out.append(SampleScore(sid, v, None, det))
        return out

    def by_id(self) -> dict[str, float | None]:
        return {sid: None if v != v else v
                for sid, v in zip(self.sample_ids, self.values.tolist(), strict=True)}

    def to_dict(self, per_sample: bool = True, aggregate: bool = True) -> dict[str, Any]:
        """The result as plain data; ``aggregate=False`` leaves the aggregate out (only its
        seed and resamples are kept): a runner's batch record, whose aggregate is computed
        once over the merged batches, never per batch."""
        d: dict[str, Any] = {
            "metric": self.metric,
            "aggregate": self.aggregate.to_dict() if aggregate else
            {"seed": self.seed, "n_boot": self.n_boot},
            "counts": dict(self.counts),
            "higher_is_better": self.higher_is_better,
            "signature": str(self.signature),
        }
        if per_sample:
            d["per_sample"] = [
                {"sample_id": r.sample_id, "value": r.value, "reason": r.reason,
                 **({"details": dict(r.details)} if r.details else {})}
                for r in self.records()
            ]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricResult:
        rows = d.get("per_sample", [])
        scores = [SampleScore(r["sample_id"], r.get("value"), r.get("reason"), r.get("details"))
                  for r in rows]
        agg = d.get("aggregate", {})
        return cls.from_scores(
            d["metric"], scores, Signature.parse(d["signature"]),
            counts=dict(d.get("counts", {})), higher_is_better=bool(d.get("higher_is_better", True)),
            seed=int(agg.get("seed", DEFAULT_SEED)), n_boot=int(agg.get("n_boot", DEFAULT_N_BOOT)),
        )


@dataclass
class EvalResult:
    """A set of metric results for one system (run) on one dataset."""

    name: str
    results: dict[str, MetricResult] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: the scored samples by id (question, answer, contexts) for :meth:`to_pandas` and gate
    #: messages; kept in memory only (not saved, not compared)
    samples: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def attach_samples(self, samples: Iterable[Any]) -> EvalResult:
        """Keep the samples' text with the result (what :meth:`to_pandas` shows); returns
        the result."""
        for s in samples:
            self.samples[str(getattr(s, "id", None) or s.get("id"))] = s
        return self

    def to_pandas(self, shape: str = "wide", samples: Iterable[Any] | None = None) -> Any:
        """Per-sample pandas DataFrame with the question, answer and contexts of each sample.

        ``shape="wide"``: one row per sample, a value column and a ``<metric>:reason`` column
        per metric; ``"long"``: one row per (sample, metric) with ``value`` and ``reason``
        (why it is unscored, else the judge's reason). ``samples``: the samples' text when the
        result does not hold it (:meth:`attach_samples`; :func:`ragmeter.evaluate_generation`
        attaches its samples)."""
        from ragmeter.results.frames import result_frame

        return result_frame(self, shape, samples)

    def add(self, result: MetricResult) -> None:
        self.results[result.metric] = result

    def __getitem__(self, metric: str) -> MetricResult:
        if metric in self.results:
            return self.results[metric]
        canonical = METRIC_NAMES.get("canonical")
        return self.results[canonical(metric)]

    def __contains__(self, metric: object) -> bool:
        return metric in self.results

    def __iter__(self) -> Iterator[MetricResult]:
        return iter(self.results.values())

    def means(self) -> dict[str, float | None]:
        return {k: r.aggregate.mean for k, r in self.results.items()}

    def by(self, fields: str | Sequence[str], samples: Sequence[Any] | None = None,
           **options: Any) -> Any:
        """Per-slice mean, CI and n (:func:`ragmeter.results.slices.slice_results`): slices
        from ``samples``' fields, else those kept with the result by a sliced run."""
        from ragmeter.results.slices import slice_results, stored_slices

        if samples is None:
            stored = stored_slices(self)
            if stored is None:
                raise ValueError(f"{self.name}: pass the samples to slice by {fields!r} "
                                 "(the result was not made with slices)")
            spec, keys = stored
            options.setdefault("min_n", spec.min_n)
            from ragmeter.results.slices import parse_by

            want = parse_by(fields)
            missing = [f for f in want if f not in spec.by]
            if missing:
                raise ValueError(f"{self.name}: kept slices are by {', '.join(spec.by)}, not "
                                 f"{', '.join(missing)}; pass the samples")
            pos = [spec.by.index(f) for f in want]
            return slice_results(self, {k: tuple(v[i] for i in pos) for k, v in keys.items()},
                                 want, **options)
        return slice_results(self, samples, fields, **options)

    def summary_rows(self) -> list[dict[str, Any]]:
        rows = []
        for key, r in self.results.items():
            a = r.aggregate
            rows.append({"metric": key, "mean": a.mean, "ci_low": a.ci_low, "ci_high": a.ci_high,
                         "n": a.n, "n_unscored": a.n_unscored, **{f"count_{c}": v for c, v in r.counts.items()}})
        return rows

    def to_dict(self, per_sample: bool = True, aggregate: bool = True) -> dict[str, Any]:
        return {"name": self.name, "meta": self.meta,
                "results": {k: r.to_dict(per_sample, aggregate)
                            for k, r in self.results.items()}}

    def to_json(self, per_sample: bool = True, indent: int | None = 2) -> str:
        from ragmeter.results.jsonout import dumps
        from ragmeter.secrets import mask

        return mask(dumps(self.to_dict(per_sample), indent=indent))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvalResult:
        res = cls(d["name"], meta=dict(d.get("meta", {})))
        for r in d.get("results", {}).values():
            res.add(MetricResult.from_dict(r))
        return res

    def to_frame(self, per_sample: bool = False) -> Any:
        """pandas DataFrame: one row per metric, or per (metric, sample) with ``per_sample``."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover
            from ragmeter.errors import MissingExtraError

            raise MissingExtraError("pandas", "pandas", "DataFrame export") from exc
        if not per_sample:
            return pd.DataFrame(self.summary_rows())
        rows = []
        for key, r in self.results.items():
            for s in r.records():
                rows.append({"metric": key, "sample_id": s.sample_id, "value": s.value,
                             "reason": s.reason})
        return pd.DataFrame(rows)


def compare_metric(
    a: MetricResult,
    b: MetricResult,
    *,
    method: str = "randomization",
    n_resamples: int = 10000,
    seed: int | None = None,
) -> PairedComparison:
    """Paired test of B against A over the samples both scored (aligned by sample id); a
    metric whose value is a statistic of per-call values (``latency_p95``, ``throughput``) is
    compared on that statistic (:func:`ragmeter.results.statistic.compare_statistic`)."""
    if is_statistic(a.metric, a.counts):
        return compare_statistic(a, b, n_resamples=n_resamples, seed=seed)
    pos_b = {sid: i for i, sid in enumerate(b.sample_ids)}
    ia, ib = [], []
    for i, sid in enumerate(a.sample_ids):
        j = pos_b.get(sid)
        if j is not None:
            ia.append(i)
            ib.append(j)
    va, vb = a.values[ia], b.values[ib]
    both = ~np.isnan(va) & ~np.isnan(vb)
    union = len(set(a.sample_ids) | set(b.sample_ids))
    return paired_test(
        va, vb, metric=a.metric, method=method, n_resamples=n_resamples,
        seed=a.seed if seed is None else seed, higher_is_better=a.higher_is_better,
        n_dropped=union - int(both.sum()), keep=both,
    )


def compare_results(
    a: EvalResult, b: EvalResult, *, method: str = "randomization", n_resamples: int = 10000,
    seed: int | None = None,
) -> list[PairedComparison]:
    """Paired comparison for every metric the two results share."""
    return [compare_metric(a.results[m], b.results[m], method=method, n_resamples=n_resamples,
                           seed=seed)
            for m in a.results if m in b.results]
