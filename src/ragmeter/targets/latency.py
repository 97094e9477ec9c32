"""Latency of a target as metrics with confidence intervals.

From the replies of one run: ``ttft_p50`` / ``ttft_p95`` / ``ttft_p99`` (seconds to the first
token, or to the reply for kinds that do not stream), ``latency_p50`` / ``latency_p95`` /
``latency_p99`` (seconds per call, excluding time waiting for a concurrency slot),
``throughput`` (answered calls per second of wall time) and ``error_rate`` (share of calls that
ended without a usable reply). Percentiles and throughput carry seeded percentile-bootstrap
CIs over the calls (:func:`ragmeter.stats.bootstrap_stat`); the error rate is a mean with its
bootstrap CI. Failed calls are unscored in the latency metrics, with the call's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ragmeter.results.records import Aggregate, EvalResult, MetricResult, Signature
from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_stat
from ragmeter.targets.base import TargetReply, TargetSignature

PERCENTILES = (50, 95, 99)
LATENCY_METRICS = (*(f"ttft_p{p}" for p in PERCENTILES),
                   *(f"latency_p{p}" for p in PERCENTILES), "throughput", "error_rate")


@dataclass
class StatisticResult(MetricResult):
    """A metric whose aggregate is a statistic of the per-call values other than the mean
    (a percentile, a rate per second), with its bootstrap CI. ``statistic(values, idx)``
    computes it on the scored values selected by ``idx``."""

    statistic: Any = None

    @cached_property
    def aggregate(self) -> Aggregate:
        scored = self.values[self.scored_mask]
        base = super().aggregate
        if scored.size == 0 or self.statistic is None:
            return base
        stat = self.statistic
        est = bootstrap_stat(lambda idx: stat(scored, idx), int(scored.size), seed=self.seed,
                             n_boot=self.n_boot)
        return Aggregate(mean=est.value, n=base.n, n_unscored=base.n_unscored,
                         ci_low=est.ci_low, ci_high=est.ci_high, std=base.std,
                         seed=self.seed, n_boot=self.n_boot,
                         unscored_by_reason=base.unscored_by_reason)


def _quantile(q: float) -> Any:
    return lambda x, idx: float(np.quantile(x[idx], q / 100.0))


def _throughput(wall_s: float) -> Any:
    def stat(x: np.ndarray, idx: np.ndarray) -> float | None:
        # the run's mean number of calls in flight, times calls per second of call time
        in_flight = float(x.sum()) / wall_s
        total = float(x[idx].sum())
        return None if total <= 0 else idx.size * in_flight / total
    return stat


def wall_time(replies: Sequence[TargetReply]) -> float | None:
    """The wall time of the calls: per batch, from the first start to the last end."""
    spans: dict[str, tuple[float, float]] = {}
    for r in replies:
        if r.batch is None or r.started_s is None or r.latency_s is None:
            continue
        lo, hi = spans.get(r.batch, (r.started_s, r.started_s + r.latency_s))
        spans[r.batch] = (min(lo, r.started_s), max(hi, r.started_s + r.latency_s))
    total = sum(hi - lo for lo, hi in spans.values())
    return total if total > 0 else None


def latency_result(ids: Sequence[str], replies: Sequence[TargetReply],
                   signature: TargetSignature, *, wall_s: float | None = None,
                   seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
                   name: str = "latency", entry: str = "answer") -> EvalResult:
    """One :class:`EvalResult` with the metrics of :data:`LATENCY_METRICS` (see the module
    doc). ``wall_s``: the run's wall time (default: the sum of call latencies, i.e. calls
    one at a time)."""
    n = len(replies)
    reasons = {i: str(r.reason) for i, r in enumerate(replies) if r.reason}
    lat = np.array([np.nan if r.reason or r.latency_s is None else r.latency_s
                    for r in replies], dtype=np.float64)
    ttft = np.array([np.nan if r.reason or r.ttft_s is None else r.ttft_s
                     for r in replies], dtype=np.float64)
    for arr in (lat, ttft):
        for i in np.flatnonzero(np.isnan(arr)):
            reasons.setdefault(int(i), "target_no_timing")
    sig = Signature.make(entry=entry, **signature.fields())
    out = EvalResult(name, meta={"n_calls": n, "entry": entry, "target": signature.fields(),
                                 "wall_s": wall_s or wall_time(replies)})
    for key, arr in (("ttft", ttft), ("latency", lat)):
        for p in PERCENTILES:
            out.add(StatisticResult(f"{key}_p{p}", list(ids), arr.copy(),
                                    sig.with_fields(metric=f"{key}_p{p}", unit="s"),
                                    reasons={i: reasons[i] for i in np.flatnonzero(
                                        np.isnan(arr)).tolist()},
                                    statistic=_quantile(p), seed=seed, n_boot=n_boot,
                                    higher_is_better=False))
    scored = lat[~np.isnan(lat)]
    wall = wall_s or wall_time(replies) or float(scored.sum()) or None
    if wall:
        out.add(StatisticResult("throughput", list(ids), lat.copy(),
                                sig.with_fields(metric="throughput", unit="calls/s"),
                                reasons={i: reasons[i] for i in np.flatnonzero(
                                    np.isnan(lat)).tolist()},
                                statistic=_throughput(wall), seed=seed, n_boot=n_boot))
    errors = np.array([1.0 if r.reason else 0.0 for r in replies])
    out.add(MetricResult("error_rate", list(ids), errors,
                         sig.with_fields(metric="error_rate"), seed=seed, n_boot=n_boot,
                         higher_is_better=False))
    return out


__all__ = ["LATENCY_METRICS", "PERCENTILES", "StatisticResult", "latency_result"]
