"""Several judges side by side: :class:`MultiJudge`, score aggregation and inter-judge agreement.

Score matrices are ``(n_judges, n_items)`` float arrays with NaN where a judge's reply was
unscored; NaNs are excluded (and counted), never turned into 0.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from ragmeter.judges._sync import run_sync
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.stats import JudgeStats
from ragmeter.stats import Level, krippendorff_alpha

Combine = Literal["majority", "mean", "median"]


def _majority(values: Sequence[Any]) -> Any:
    """Most frequent value; ties go to the value given first (judge order)."""
    counts = Counter(values)
    best = max(counts.values())
    return next(v for v in values if counts[v] == best)


def combine_values(values: Sequence[Any], method: Combine = "majority") -> Any:
    """One value from several judges' values of the same field."""
    if not values:
        return None
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if numeric and method == "mean":
        return float(statistics.fmean(values))
    if numeric and method == "median":
        return float(statistics.median(values))
    if all(isinstance(v, (bool, int, float, str)) for v in values):
        return _majority(values)
    return values[0]


def combine_data(datas: Sequence[Any], method: Combine = "majority") -> Any:
    """Field-wise combination of scored replies' ``data`` (objects); other shapes: first one."""
    if not datas:
        return None
    first = datas[0]
    if not all(isinstance(d, dict) for d in datas):
        return first
    out: dict[str, Any] = {}
    for key in first:
        vals = [d[key] for d in datas if key in d]
        out[key] = combine_values(vals, method)
    return out


class MultiJudge:
    """Asks every judge every request (concurrently) and combines the scored replies.

    The combined reply keeps each judge's reply in ``extra["per_judge"]`` (by judge name);
    it is unscored only when fewer than ``min_judges`` judges scored the item.
    """

    def __init__(self, judges: Sequence[Judge], *, combine: Combine = "majority",
                 min_judges: int = 1, name: str | None = None):
        if not judges:
            raise ValueError("MultiJudge needs at least one judge")
        names = [j.name for j in judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names must be distinct, got {names}")
        self.judges = list(judges)
        self.combine = combine
        self.min_judges = min_judges
        self.name = name or "multi(" + ",".join(names) + ")"
        self.model = "+".join(j.model for j in judges)
        self.demo = any(getattr(j, "demo", False) for j in judges)

    def __repr__(self) -> str:
        return f"MultiJudge({[j.name for j in self.judges]}, combine={self.combine!r})"

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return list(run_sync(lambda: self._run_and_close(requests)))

    async def _run_and_close(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        try:
            return await self.aask_many(requests)
        finally:
            for j in self.judges:
                close = getattr(j, "aclose", None)
                if close is not None:
                    await close()

    async def ask_all(self, requests: Sequence[JudgeRequest]) -> dict[str, list[JudgeReply]]:
        """Every judge's replies, by judge name (same order as ``requests``)."""
        results = await asyncio.gather(*(j.aask_many(requests) for j in self.judges))
        return {j.name: list(r) for j, r in zip(self.judges, results, strict=False)}

    @property
    def last_stats(self) -> JudgeStats:
        """The member judges' last-run stats, summed (calls of every judge)."""
        total = JudgeStats()
        for j in self.judges:
            st = getattr(j, "last_stats", None)
            if isinstance(st, JudgeStats):
                total.merge(st)
        return total

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        per = await self.ask_all(requests)
        out = []
        for i in range(len(requests)):
            replies = {name: per[name][i] for name in per}
            out.append(self._combine(replies))
        return out

    def _combine(self, replies: dict[str, JudgeReply]) -> JudgeReply:
        oks = [r for r in replies.values() if r.ok]
        tokens_in = sum(r.tokens_in for r in replies.values())
        tokens_out = sum(r.tokens_out for r in replies.values())
        cost = sum(r.cost for r in replies.values())
        latency = max((r.latency_s for r in replies.values()), default=0.0)
        extra: dict[str, Any] = {"per_judge": replies, "n_scored": len(oks),
                                 "combine": self.combine}
        common = dict(model=self.model, latency_s=latency, tokens_in=tokens_in,
                      tokens_out=tokens_out, cost=cost,
                      cached=all(r.cached for r in replies.values()),
                      attempts=sum(r.attempts for r in replies.values()), extra=extra)
        if len(oks) < self.min_judges:
            reasons = Counter(r.reason or "unknown" for r in replies.values() if not r.ok)
            reason = reasons.most_common(1)[0][0] if reasons else "backend_error"
            detail = "; ".join(f"{n}: {r.reason}" for n, r in replies.items() if not r.ok)
            return JudgeReply(data=None, reason=reason,
                              detail=f"{len(oks)} of {len(replies)} judges scored ({detail})",
                              **common)  # type: ignore[arg-type]
        return JudgeReply(data=combine_data([r.data for r in oks], self.combine),
                          **common)  # type: ignore[arg-type]


def score_matrix(per_judge: dict[str, Sequence[JudgeReply]],
                 value: Callable[[Any], float | None]) -> tuple[list[str], np.ndarray]:
    """``(judge_names, matrix)``: ``value(reply.data)`` per judge and item, NaN if unscored."""
    names = list(per_judge)
    n = len(next(iter(per_judge.values()))) if per_judge else 0
    mat = np.full((len(names), n), np.nan)
    for a, name in enumerate(names):
        for i, rep in enumerate(per_judge[name]):
            if rep.ok:
                v = value(rep.data)
                if v is not None:
                    mat[a, i] = float(v)
    return names, mat


def aggregate_scores(matrix: np.ndarray, method: Combine = "mean") -> np.ndarray:
    """Per-item combination over judges (rows), ignoring NaN; NaN where no judge scored."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"expected a (judges, items) matrix, got shape {m.shape}")
    out = np.full(m.shape[1], np.nan)
    for i in range(m.shape[1]):
        col = m[:, i]
        col = col[~np.isnan(col)]
        if col.size == 0:
            continue
        if method == "mean":
            out[i] = col.mean()
        elif method == "median":
            out[i] = float(np.median(col))
        elif method == "majority":
            out[i] = _majority(list(col))
        else:
            raise ValueError(f"unknown method {method!r} (mean, median, majority)")
    return out


def pairwise_agreement(matrix: np.ndarray, names: Sequence[str] | None = None,
                       tolerance: float = 0.0) -> dict[str, Any]:
    """Exact agreement (``|a-b| <= tolerance``) for every judge pair, over items both scored."""
    m = np.asarray(matrix, dtype=float)
    k = m.shape[0]
    names = list(names) if names is not None else [f"j{i}" for i in range(k)]
    pairs: dict[str, dict[str, float | int]] = {}
    rates = []
    for a in range(k):
        for b in range(a + 1, k):
            both = ~np.isnan(m[a]) & ~np.isnan(m[b])
            n = int(both.sum())
            agree = float((np.abs(m[a][both] - m[b][both]) <= tolerance).mean()) if n else np.nan
            pairs[f"{names[a]}~{names[b]}"] = {"agreement": agree, "n": n}
            if n:
                rates.append(agree)
    return {"pairs": pairs, "mean": float(np.mean(rates)) if rates else float("nan")}


def agreement(per_judge: dict[str, Sequence[JudgeReply]], value: Callable[[Any], float | None],
              level: Level = "nominal", tolerance: float = 0.0) -> dict[str, Any]:
    """Inter-judge agreement of one field: pairwise exact agreement, Krippendorff's alpha,
    and how many items each judge left unscored (counted, not hidden)."""
    names, mat = score_matrix(per_judge, value)
    pairs = pairwise_agreement(mat, names, tolerance)
    return {
        "judges": names,
        "n_items": int(mat.shape[1]),
        "unscored": {n: int(np.isnan(mat[i]).sum()) for i, n in enumerate(names)},
        "pairwise": pairs["pairs"],
        "mean_pairwise": pairs["mean"],
        "krippendorff_alpha": krippendorff_alpha(mat, level) if len(names) > 1 else float("nan"),
        "level": level,
    }
