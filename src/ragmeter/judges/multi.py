"""Several judges side by side: :class:`MultiJudge` (a jury), votes, score aggregation and
inter-judge agreement.

A jury votes where the judgement is made: the judged metrics read every member's reply to the
same call and combine the parsed answers item by item (a claim's verdict, a context's grade)
with :func:`vote_items` / :func:`combine_grades` before any score is computed
(:mod:`ragmeter.metrics.judged.jury`). A yes/no tie is flagged and counts as *no* (a claim is
supported only when a majority says so); a split (a non-unanimous vote) is flagged too.

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

from ragmeter.calls.sync import run_sync
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.stats import JudgeStats
from ragmeter.stats import Level, krippendorff_alpha

Combine = Literal["majority", "mean", "median", "trimmed_mean", "weighted_mean"]
COMBINE_METHODS: tuple[str, ...] = ("majority", "mean", "median", "trimmed_mean",
                                    "weighted_mean")


def trimmed_mean(values: Sequence[float], trim: float = 0.2) -> float:
    """Mean after dropping ``floor(trim * n)`` values at each end (at least one value kept).

    With three judges and ``trim=0.2`` nothing is dropped; with five, the lowest and highest.
    """
    if not values:
        raise ValueError("trimmed_mean of no values")
    if not 0.0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim}")
    v = sorted(float(x) for x in values)
    k = int(trim * len(v))
    return float(statistics.fmean(v[k:len(v) - k]))


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted mean; weights must be non-negative with a positive sum."""
    if len(values) != len(weights) or not values:
        raise ValueError("weighted_mean needs one weight per value")
    w = np.asarray(weights, dtype=float)
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be >= 0 with a positive sum, got {list(weights)}")
    return float(np.dot(np.asarray(values, dtype=float), w) / w.sum())


def vote_items(lists: Sequence[Sequence[int]]) -> tuple[list[int], list[int], list[int]]:
    """Per-item majority of several members' yes/no (1/0) lists of one length.

    Returns ``(votes, ties, splits)``: the majority per item (a tie counts as 0, *no*), the
    indices of tied items, and the indices of items where the members disagreed.
    """
    if not lists:
        return [], [], []
    n = len(lists[0])
    if any(len(x) != n for x in lists):
        raise ValueError("members' verdict lists differ in length")
    votes: list[int] = []
    ties: list[int] = []
    splits: list[int] = []
    for i in range(n):
        yes = sum(1 for x in lists if x[i])
        no = len(lists) - yes
        votes.append(1 if yes > no else 0)
        if yes == no:
            ties.append(i)
        if yes and no:
            splits.append(i)
    return votes, ties, splits


def combine_grades(values: Sequence[float], method: Combine = "majority",
                   weights: Sequence[float] | None = None, trim: float = 0.2
                   ) -> tuple[float, bool]:
    """One grade from several members' grades, and whether the vote was tied.

    ``majority``: the most frequent grade; a tie takes the lower median of the tied grades
    (flagged). ``mean``, ``median``, ``trimmed_mean``, ``weighted_mean`` (``weights`` per
    member, default equal): as named, never tied.
    """
    if not values:
        raise ValueError("no grades to combine")
    if method == "majority":
        counts = Counter(values)
        best = max(counts.values())
        top = sorted(v for v in counts if counts[v] == best)
        return float(top[(len(top) - 1) // 2]), len(top) > 1
    if method == "mean":
        return float(statistics.fmean(values)), False
    if method == "median":
        return float(statistics.median(values)), False
    if method == "trimmed_mean":
        return trimmed_mean(values, trim), False
    if method == "weighted_mean":
        return weighted_mean(values, weights or [1.0] * len(values)), False
    raise ValueError(f"unknown method {method!r} ({', '.join(COMBINE_METHODS)})")


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
    if numeric and method in ("median", "trimmed_mean", "weighted_mean"):
        return combine_grades(values, method)[0]
    if all(isinstance(v, (bool, int, float, str)) for v in values):
        return _majority(values)
    if all(isinstance(v, dict) for v in values):
        return combine_data(values, method)
    if all(isinstance(v, list) and len(v) == len(values[0]) for v in values):
        return [combine_values([v[i] for v in values], method) for i in range(len(values[0]))]
    return values[0]  # lists of different lengths: no item-by-item vote is possible


def combine_data(datas: Sequence[Any], method: Combine = "majority") -> Any:
    """Field-wise combination of scored replies' ``data`` (objects), lists item by item;
    other shapes (or lists of different lengths): the first one. The judged metrics do not
    use it: they vote on each member's parsed answers (ties counted as no, and flagged)."""
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
    """A jury: asks every judge every request (concurrently) and combines the scored replies.

    The combined reply keeps each judge's reply in ``extra["per_judge"]`` (by judge name); the
    judged metrics vote on those per claim / per context (see the module doc), so
    ``combine`` applies to grades (``majority``, ``mean``, ``median``, ``trimmed_mean`` with
    ``trim``, ``weighted_mean`` with ``weights`` per judge). A reply is unscored only when
    fewer than ``min_judges`` judges scored the item.
    """

    def __init__(self, judges: Sequence[Judge], *, combine: Combine = "majority",
                 min_judges: int = 1, name: str | None = None,
                 weights: Sequence[float] | None = None, trim: float = 0.2):
        if not judges:
            raise ValueError("MultiJudge needs at least one judge")
        names = [j.name for j in judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names must be distinct, got {names}")
        if combine not in COMBINE_METHODS:
            raise ValueError(f"unknown combine {combine!r} ({', '.join(COMBINE_METHODS)})")
        if weights is not None:
            if len(weights) != len(judges):
                raise ValueError(f"{len(weights)} weights for {len(judges)} judges")
            weighted_mean([0.0] * len(weights), weights)  # validates the weights
        self.judges = list(judges)
        self.combine = combine
        self.min_judges = min_judges
        self.weights = {n: float(w) for n, w in zip(names, weights or [1.0] * len(names),
                                                     strict=True)}
        self.trim = trim
        self.name = name or "jury(" + ",".join(names) + ")"
        self.model = "+".join(j.model for j in judges)
        self.demo = any(getattr(j, "demo", False) for j in judges)

    @property
    def members(self) -> list[str]:
        return [j.name for j in self.judges]

    def jury_signature(self) -> dict[str, str]:
        """Signature fields of a jury's scores: its members and how it votes."""
        how: str = self.combine
        if self.combine == "trimmed_mean":
            how += f"~{self.trim:g}"
        if self.combine == "weighted_mean":
            how += "~" + "/".join(f"{w:g}" for w in self.weights.values())
        return {"jury": "+".join(self.members), "vote": how, "ties": "no",
                "min_judges": str(self.min_judges)}

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
                                 "combine": self.combine, "weights": self.weights,
                                 "trim": self.trim, "min_judges": self.min_judges}
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
