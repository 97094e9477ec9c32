"""Metrics whose value is a statistic of per-call values, not their mean: percentiles of
seconds (``latency_p95``) and the throughput of a target's calls.

Their per-sample values are each call's duration (seconds); the value a report shows is the
statistic over all calls (the 95th percentile of the durations, never a mean of means), with a
seeded percentile-bootstrap CI computed once per result over the calls. Two results are
compared on the statistic (B − A): the samples pair when both results scored the same sample
ids (resampled jointly), otherwise each result is resampled on its own; the p-value comes from
the bootstrap distribution of the difference, centred on zero.

A target's latency result (``<target>:latency``: ``ttft_p*``, ``latency_p*``, ``throughput``,
``error_rate``) is marked ``meta["block"] = "latency"`` (:func:`is_latency`), so reports,
the dashboard and comparisons show it in a block of its own instead of beside the quality
metrics or once per sample. Latency is lower-is-better; throughput (requests per second)
higher-is-better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_SEED, PairedComparison

#: counts key of a ``throughput`` metric: the run's wall time in milliseconds (summed over
#: batches when results are merged)
WALL_MS = "wall_ms"
#: ``EvalResult.meta["block"]`` of a target's latency result
LATENCY_BLOCK = "latency"
PERCENTILES = (50, 95, 99)
#: the metrics of a target's latency result, in the order they are shown
#: (the system's cost per answer rides in the same block when the target has a price:
#: ``ragmeter.cost.pricing``)
LATENCY_METRICS = (*(f"latency_p{p}" for p in PERCENTILES),
                   *(f"ttft_p{p}" for p in PERCENTILES), "throughput", "error_rate",
                   "cost_per_answer")
#: the cost metrics (declared in ragmeter.metrics.cost, computed by ragmeter.cost.pricing):
#: a target's cost per answer rides in its latency block, the evaluation's judge cost per
#: sample in a result of its own marked ``meta["block"] = COST_BLOCK``
COST_METRICS = ("cost_per_answer", "judge_cost_per_sample")
COST_BLOCK = "cost"
#: the reason of a call (or a sample) whose token usage is not known: never priced at 0
USAGE_UNKNOWN = "usage_unknown"
#: the unit of each latency metric as shown
UNITS = {**{m: "s" for m in LATENCY_METRICS if m.startswith(("latency_", "ttft_"))},
         "throughput": "requests/s", "error_rate": "share", "cost_per_answer": "price/answer",
         "judge_cost_per_sample": "price/sample"}
#: bootstrap cells gathered at a time (bounded memory at any number of calls)
_CHUNK_CELLS = 2_000_000


def percentile_of(metric: str) -> float | None:
    """``latency_p95`` → 0.95; ``None`` for a metric that is not a percentile."""
    stem, sep, q = metric.rpartition("_p")
    if sep and stem and q.isdigit() and 0 < int(q) < 100:
        return int(q) / 100.0
    return None


@dataclass(frozen=True)
class Statistic:
    """A statistic of one result's scored values, on any rows of resampled indices.

    Called with a vector of indices it gives one number (the older ``stat(idx)`` form);
    :meth:`rows` gives one number per row of an index matrix (vectorised)."""

    kind: str                  # "percentile" | "rate"
    values: np.ndarray
    q: float = 0.5
    in_flight: float = 1.0     # throughput: mean calls in flight (Σ seconds / wall time)

    def of(self, x: np.ndarray) -> np.ndarray:
        """The statistic of each row of gathered values ``x`` (2-D)."""
        if self.kind == "percentile":
            return np.asarray(np.quantile(x, self.q, axis=1), dtype=np.float64)
        total = x.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total > 0, x.shape[1] * self.in_flight / total, np.nan)

    def rows(self, idx: np.ndarray) -> np.ndarray:
        return self.of(self.values[np.atleast_2d(idx)])

    def __call__(self, idx: np.ndarray) -> float | None:
        v = float(self.rows(np.asarray(idx))[0])
        return None if math.isnan(v) else v


def statistic_of(metric: str, counts: Mapping[str, int], scored: np.ndarray
                 ) -> Statistic | None:
    """The statistic a metric's aggregate reports when it is not the mean, over the scored
    values: ``<name>_p<q>`` (``latency_p95``) is the q-th percentile; ``throughput`` (per-call
    seconds, with the wall time in ``counts["wall_ms"]``) is requests per second,
    ``n × (mean calls in flight) / Σ seconds``. None: the mean."""
    values = np.asarray(scored, dtype=np.float64)
    q = percentile_of(metric)
    if q is not None:
        return Statistic("percentile", values, q=q)
    if metric == "throughput" and counts.get(WALL_MS):
        return Statistic("rate", values,
                         in_flight=float(values.sum()) / (counts[WALL_MS] / 1000.0))
    return None


def is_statistic(metric: str, counts: Mapping[str, int]) -> bool:
    """Whether the metric's value is a statistic of per-call values (not a mean)."""
    return percentile_of(metric) is not None or (metric == "throughput"
                                                 and bool(counts.get(WALL_MS)))


def _resampled(stats: list[Statistic], n: int, n_boot: int, seed: int,
               joint: bool = True) -> list[np.ndarray]:
    """Each statistic on ``n_boot`` resamples of ``n`` item indices, drawn in row chunks from
    one seeded stream (the same indices as drawing the whole ``(n_boot, n)`` matrix)."""
    rng = np.random.default_rng(seed)
    outs = [np.empty(n_boot) for _ in stats]
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        for st, out in zip(stats, outs, strict=True):
            out[start:stop] = st.rows(idx)
    return outs


def estimate(stat: Statistic, *, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT,
             level: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """The statistic over every value and its percentile-bootstrap CI (``None`` parts when
    undefined) — the same numbers as ``stats.bootstrap_stat`` over the same indices, in
    bounded memory and vectorised."""
    n = int(stat.values.size)
    if n == 0:
        return None, None, None
    value = stat(np.arange(n))
    if value is None:
        return None, None, None
    boots = _resampled([stat], n, n_boot, seed)[0]
    good = boots[np.isfinite(boots)]
    if good.size < 0.5 * n_boot or good.size == 0:
        return value, None, None
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(good, [alpha, 1.0 - alpha])
    return value, float(lo), float(hi)


def compare_statistic(a: Any, b: Any, *, n_resamples: int = DEFAULT_N_BOOT,
                      seed: int | None = None, level: float = 0.95) -> PairedComparison:
    """B − A on the metric's statistic (``a``, ``b``: :class:`MetricResult`).

    Paired when both scored the same sample ids (at least two): the pairs are resampled
    jointly and the statistic of each side taken over the resampled pairs; otherwise each side
    is resampled on its own (``method`` says which). The CI is the percentile interval of the
    bootstrap differences and p the share of centred differences at least as far from zero as
    the observed one."""
    seed = a.seed if seed is None else seed
    n_boot = max(100, min(int(n_resamples), DEFAULT_N_BOOT))
    pos_b = {sid: i for i, sid in enumerate(b.sample_ids)}
    ia, ib = [], []
    for i, sid in enumerate(a.sample_ids):
        j = pos_b.get(sid)
        if j is not None and not (np.isnan(a.values[i]) or np.isnan(b.values[j])):
            ia.append(i)
            ib.append(j)
    all_a = a.values[~np.isnan(a.values)]
    all_b = b.values[~np.isnan(b.values)]
    paired = len(ia) >= 2
    xa, xb = (a.values[ia], b.values[ib]) if paired else (all_a, all_b)
    sa = statistic_of(a.metric, a.counts, xa)
    sb = statistic_of(b.metric, b.counts, xb)
    nan = float("nan")
    method = "bootstrap of the statistic (paired)" if paired else \
        "bootstrap of the statistic (unpaired)"
    dropped = len(set(a.sample_ids) | set(b.sample_ids)) - (len(ia) if paired else 0)
    if sa is None or sb is None or xa.size == 0 or xb.size == 0:
        return PairedComparison(a.metric, 0, nan, nan, nan, nan, nan, 1.0, method, n_boot,
                                seed, dropped, a.higher_is_better)
    if a.metric == "throughput":  # each side's own calls in flight over its whole run
        sa = Statistic("rate", xa, in_flight=_in_flight(a, all_a))
        sb = Statistic("rate", xb, in_flight=_in_flight(b, all_b))
    va, vb = sa(np.arange(xa.size)), sb(np.arange(xb.size))
    if va is None or vb is None:
        return PairedComparison(a.metric, 0, nan, nan, nan, nan, nan, 1.0, method, n_boot,
                                seed, dropped, a.higher_is_better)
    obs = vb - va
    if paired:
        ba, bb = _resampled([sa, sb], xa.size, n_boot, seed + 1)
    else:
        ba = _resampled([sa], xa.size, n_boot, seed + 1)[0]
        bb = _resampled([sb], xb.size, n_boot, seed + 2)[0]
    d = bb - ba
    d = d[np.isfinite(d)]
    alpha = (1.0 - level) / 2.0
    if d.size:
        lo, hi = (float(x) for x in np.quantile(d, [alpha, 1.0 - alpha]))
        extreme = int(np.count_nonzero(np.abs(d - obs) >= abs(obs) - 1e-12))
        p = (1 + extreme) / (1 + d.size)
    else:
        lo = hi = nan
        p = 1.0
    if obs == 0.0:
        p = 1.0
    return PairedComparison(
        metric=a.metric, n=int(xa.size) if paired else int(xa.size + xb.size),
        mean_a=float(va), mean_b=float(vb), diff=float(obs), ci_low=lo, ci_high=hi,
        p_value=float(min(1.0, p)), method=method, n_resamples=n_boot, seed=seed,
        n_dropped=dropped, higher_is_better=a.higher_is_better)


def _in_flight(mr: Any, scored: np.ndarray) -> float:
    wall = mr.counts.get(WALL_MS)
    return float(scored.sum()) / (wall / 1000.0) if wall else 1.0


def is_latency(result: Any) -> bool:
    """Whether an :class:`EvalResult` is a target's latency result (its own block): marked
    ``meta["block"] = "latency"``, or — stored by an older ragmeter — every metric one of
    :data:`LATENCY_METRICS`."""
    meta = getattr(result, "meta", None) or {}
    if meta.get("block") == LATENCY_BLOCK:
        return True
    keys = list(getattr(result, "results", {}) or {})
    return bool(keys) and all(k in LATENCY_METRICS for k in keys)


def is_cost_block(result: Any) -> bool:
    """Whether an :class:`EvalResult` is the evaluation's judge cost (not a system)."""
    return (getattr(result, "meta", None) or {}).get("block") == COST_BLOCK


def unknown_count(mr: Any) -> int:
    """How many calls (or samples) of a cost metric had no known usage."""
    agg = getattr(mr, "aggregate", None)
    return int((getattr(agg, "unscored_by_reason", None) or {}).get(USAGE_UNKNOWN, 0))


def is_latency_metric(metric: str) -> bool:
    return metric in LATENCY_METRICS


#: what one call's value is called on a sample's own page (each percentile metric holds the
#: same per-call seconds; a sample shows them once)
PER_CALL = {"latency_p50": "latency_s", "ttft_p50": "ttft_s", "cost_per_answer": "cost_per_answer"}


def per_call_name(metric: str) -> str | None:
    """The name a latency metric's per-sample value is shown under (``latency_p50`` →
    ``latency_s``), None for the metrics not shown per sample (the other percentiles,
    throughput, the error rate)."""
    return PER_CALL.get(metric)


def latency_order(metrics: list[str]) -> list[str]:
    """Latency metrics in the order shown (percentiles of latency, of ttft, throughput, error
    rate), others after them."""
    def rank(m: str) -> int:
        return LATENCY_METRICS.index(m) if m in LATENCY_METRICS else len(LATENCY_METRICS)
    return sorted(metrics, key=rank)


__all__ = [
    "COST_BLOCK",
    "COST_METRICS",
    "LATENCY_BLOCK",
    "LATENCY_METRICS",
    "PERCENTILES",
    "PER_CALL",
    "UNITS",
    "USAGE_UNKNOWN",
    "WALL_MS",
    "Statistic",
    "compare_statistic",
    "estimate",
    "is_latency",
    "is_latency_metric",
    "is_statistic",
    "latency_order",
    "per_call_name",
    "percentile_of",
    "statistic_of",
]
