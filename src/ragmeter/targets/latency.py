"""Latency of a target as metrics with confidence intervals.

From the replies of one run: ``ttft_p50`` / ``ttft_p95`` / ``ttft_p99`` (seconds to the first
token, or to the reply for kinds that do not stream), ``latency_p50`` / ``latency_p95`` /
``latency_p99`` (seconds per call from its first send to its final reply — a call that hung
until its timeout and then succeeded counts with its retries and the waits between them —,
excluding the wait for a first concurrency slot),
``throughput`` (answered requests per second of wall time; higher is better) and
``error_rate`` (share of calls that ended without a usable reply). The per-sample values are
the calls' seconds; a percentile's or the throughput's aggregate is that statistic over the
calls, never a mean of means, with its seeded percentile-bootstrap CI
(:mod:`ragmeter.results.statistic`, so merged batches and stored runs keep it). The runner
keeps each batch's per-call values and computes the statistics and their CIs once, over the
merged batches. The error rate is a mean with its bootstrap CI. Failed calls are unscored in
the latency metrics, with the call's reason. The result is marked as the latency block
(``meta["block"]``): reports show it apart from the quality metrics.

The caller's first call (``TargetReply.warmup``: a connection opened, a cold service woken)
is kept out of the percentiles — unscored there as ``not_applicable:warmup`` when the result
has other calls — and reported apart in ``meta["warmup"]`` (its sample, latency and time to
first token); it stays in the throughput and the error rate, which it is part of.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.statistic import LATENCY_BLOCK, LATENCY_METRICS, PERCENTILES, WALL_MS
from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_SEED
from ragmeter.targets.base import TargetReply, TargetSignature


def wall_time(replies: Sequence[TargetReply]) -> float | None:
    """The wall time of the calls: the time some call was in flight (the union of the
    calls' [start, end] intervals; intervals of different time bases, ``batch``, add up)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for r in replies:
        if r.batch is None or r.started_s is None or r.latency_s is None:
            continue
        spans.setdefault(r.batch, []).append((r.started_s, r.started_s + r.latency_s))
    total = 0.0
    for intervals in spans.values():
        intervals.sort()
        lo, hi = intervals[0]
        for a, b in intervals[1:]:
            if a > hi:
                total += hi - lo
                lo, hi = a, b
            else:
                hi = max(hi, b)
        total += hi - lo
    return total if total > 0 else None


def _seconds(replies: Sequence[TargetReply], attr: str) -> tuple[np.ndarray, dict[int, str]]:
    values = np.array([np.nan if r.reason or getattr(r, attr) is None else getattr(r, attr)
                       for r in replies], dtype=np.float64)
    reasons = {int(i): str(replies[int(i)].reason or "target_no_timing")
               for i in np.flatnonzero(np.isnan(values))}
    return values, reasons


#: the unscored reason of the warm-up call in the percentiles
WARMUP_REASON = "not_applicable:warmup"


def _without_warmup(ids: Sequence[str], replies: Sequence[TargetReply], lat: np.ndarray,
                    ttft: np.ndarray, lat_reasons: dict[int, str],
                    ttft_reasons: dict[int, str]) -> dict[str, Any] | None:
    """Take the warm-up call out of the percentile values (in place); what it was."""
    warm = [i for i, r in enumerate(replies) if r.warmup and not np.isnan(lat[i])]
    if not warm or int(np.count_nonzero(~np.isnan(lat))) <= len(warm):
        return None
    i = warm[0]
    out = {"sample_id": ids[i], "latency_s": float(lat[i]),
           "ttft_s": None if np.isnan(ttft[i]) else float(ttft[i])}
    for j in warm:
        lat[j] = ttft[j] = np.nan
        lat_reasons[j] = ttft_reasons[j] = WARMUP_REASON
    return out


def latency_result(ids: Sequence[str], replies: Sequence[TargetReply],
                   signature: TargetSignature, *, wall_s: float | None = None,
                   seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
                   name: str = "latency", entry: str = "answer") -> EvalResult:
    """One :class:`EvalResult` with the metrics of :data:`LATENCY_METRICS` (see the module
    doc). ``wall_s``: the run's wall time (default: :func:`wall_time` of the replies, else the
    sum of call latencies, i.e. calls one at a time)."""
    sig = Signature.make(entry=entry, **signature.fields())
    lat, lat_reasons = _seconds(replies, "latency_s")
    ttft, ttft_reasons = _seconds(replies, "ttft_s")
    wall = wall_s or wall_time(replies) or float(np.nansum(lat)) or None
    out = EvalResult(name, meta={"n_calls": len(replies), "entry": entry,
                                 "target": signature.fields(), "wall_s": wall,
                                 "block": LATENCY_BLOCK})
    kw = {"seed": seed, "n_boot": n_boot, "higher_is_better": False}
    p_lat, p_ttft = lat.copy(), ttft.copy()
    p_lat_reasons, p_ttft_reasons = dict(lat_reasons), dict(ttft_reasons)
    warmup = _without_warmup(ids, replies, p_lat, p_ttft, p_lat_reasons, p_ttft_reasons)
    if warmup is not None:
        out.meta["warmup"] = warmup
    for key, arr, reasons in (("latency", p_lat, p_lat_reasons),
                              ("ttft", p_ttft, p_ttft_reasons)):
        for p in PERCENTILES:
            out.add(MetricResult(f"{key}_p{p}", list(ids), arr.copy(),
                                 sig.with_fields(metric=f"{key}_p{p}", unit="s"),
                                 reasons=dict(reasons), **kw))  # type: ignore[arg-type]
    if wall:
        out.add(MetricResult("throughput", list(ids), lat.copy(),
                             sig.with_fields(metric="throughput", unit="requests/s"),
                             reasons=dict(lat_reasons), counts={WALL_MS: round(wall * 1000)},
                             higher_is_better=True, seed=seed, n_boot=n_boot))
    errors = np.array([1.0 if r.reason else 0.0 for r in replies])
    out.add(MetricResult("error_rate", list(ids), errors, sig.with_fields(metric="error_rate"),
                         **kw))  # type: ignore[arg-type]
    return out


__all__ = ["LATENCY_METRICS", "PERCENTILES", "WARMUP_REASON", "latency_result", "wall_time"]
