"""Accounting of judge calls (tokens, cost, latency percentiles, unscored reasons) and progress."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.judges.base import JudgeReply

#: called with (request, reply, judge config) for every reply the engine delivers, follow-ups
#: included, while set: the hook through which ``ragmeter.cost.pricing`` records judge usage
#: by sample (judges never import cost)
DELIVERED: ContextVar[Callable[[Any, JudgeReply, Any], None] | None] = ContextVar(
    "ragmeter_judge_delivered", default=None)


@dataclass
class JudgeStats:
    """Totals over replies. ``calls`` counts model calls made (retries and repairs included);
    ``cached`` counts replies served from the cache (0 calls)."""

    replies: int = 0
    scored: int = 0
    unscored: int = 0
    cached: int = 0
    calls: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    wall_s: float = 0.0
    peak_in_flight: int = 0
    concurrency_cuts: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    #: what the engine decided and how often: limit_cut, sporadic_429, same_wave_429, hold,
    #: hedged, hedge_won, truncation_retry, retry:<reason>, endpoint_out, cache_commits, ...
    decisions: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    def add(self, reply: JudgeReply) -> None:
        self.replies += 1
        if reply.ok:
            self.scored += 1
        else:
            self.unscored += 1
            self.reasons[reply.reason or "unknown"] += 1
        if reply.cached:
            self.cached += 1
            return
        self.calls += reply.attempts
        self.tokens_in += reply.tokens_in
        self.tokens_out += reply.tokens_out
        self.cost += reply.cost
        self.latencies.append(reply.latency_s)

    def merge(self, other: JudgeStats) -> None:
        for name in ("replies", "scored", "unscored", "cached", "calls", "retries", "tokens_in",
                     "tokens_out", "cost", "wall_s", "concurrency_cuts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.peak_in_flight = max(self.peak_in_flight, other.peak_in_flight)
        self.reasons.update(other.reasons)
        self.decisions.update(other.decisions)
        self.latencies.extend(other.latencies)

    @classmethod
    def from_replies(cls, replies: Iterable[JudgeReply]) -> JudgeStats:
        st = cls()
        for r in replies:
            st.add(r)
        return st

    def latency_percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        return float(np.percentile(np.asarray(self.latencies), q))

    @property
    def p50_s(self) -> float | None:
        return self.latency_percentile(50)

    @property
    def p95_s(self) -> float | None:
        return self.latency_percentile(95)

    def as_dict(self) -> dict[str, Any]:
        return {
            "replies": self.replies, "scored": self.scored, "unscored": self.unscored,
            "cached": self.cached, "calls": self.calls, "retries": self.retries,
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
            "cost": round(self.cost, 6), "wall_s": round(self.wall_s, 3),
            "latency_p50_s": self.p50_s, "latency_p95_s": self.p95_s,
            "peak_in_flight": self.peak_in_flight, "concurrency_cuts": self.concurrency_cuts,
            "unscored_reasons": dict(self.reasons), "decisions": dict(self.decisions),
        }

    def summary(self) -> str:
        p50, p95 = self.p50_s, self.p95_s
        lat = f"p50 {p50:.3f} s, p95 {p95:.3f} s" if p50 is not None and p95 is not None else "-"
        reasons = ", ".join(f"{k} {v}" for k, v in self.reasons.most_common()) or "none"
        return (f"{self.replies} replies ({self.scored} scored, {self.unscored} unscored: "
                f"{reasons}); {self.calls} calls, {self.cached} cached, {self.retries} retries; "
                f"tokens {self.tokens_in} in / {self.tokens_out} out; cost {self.cost:.4f}; "
                f"latency {lat}")


@dataclass(frozen=True)
class ProgressInfo:
    """A progress snapshot passed to the ``progress`` callback."""

    judge: str
    done: int
    total: int
    calls: int
    cached: int
    tokens_in: int
    tokens_out: int
    cost: float
    errors: int
    elapsed_s: float
    eta_s: float | None


@contextmanager
def rich_progress(description: str = "judging",
                  console: Any | None = None) -> Iterator[Callable[[ProgressInfo], None]]:
    """A rich progress bar (ETA, calls, tokens, cost, errors); yields the callback to pass."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeRemainingColumn(), TextColumn("{task.fields[info]}"),
                        console=console or Console(stderr=True), transient=False)
    task = progress.add_task(description, total=None, info="")

    def callback(p: ProgressInfo) -> None:
        info = (f"calls {p.calls} · cached {p.cached} · tok {p.tokens_in}/{p.tokens_out} · "
                f"${p.cost:.4f} · unscored {p.errors}")
        progress.update(task, total=p.total, completed=p.done, info=info)

    with progress:
        yield callback
