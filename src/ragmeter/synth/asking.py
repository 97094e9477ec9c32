"""Ask the generator through the judge engine, one logged reply at a time.

Requests go to ``judge.aask_many`` one by one on a single event loop, so the engine's
scheduler (adaptive concurrency, retries, 429 handling), cache and accounting apply as for
any judge call, while every reply is written to the progress file the moment it arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragmeter.judges._sync import run_sync
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.cache import request_hash
from ragmeter.judges.stats import JudgeStats
from ragmeter.synth.cost import Budget
from ragmeter.synth.progress import ProgressLog

#: failed replies in a row (after the engine's own retries) before a stage stops early
FAIL_FAST_AFTER = 8
_FATAL = frozenset({"http_4xx", "http_5xx", "connection_error", "timeout", "rate_limited",
                    "backend_error"})


@dataclass
class StageResult:
    """Replies by key (missing keys were not asked: the budget stopped the run)."""

    replies: dict[str, JudgeReply]
    asked: int = 0
    reused: int = 0
    not_asked: int = 0
    stopped: str | None = None


def ask_stage(judge: Judge, stage: str, requests: Sequence[tuple[str, JudgeRequest]],
              log: ProgressLog, budget: Budget, stats: JudgeStats,
              on_reply: Callable[[str, JudgeReply], None] | None = None) -> StageResult:
    """Answer ``(key, request)`` pairs; finished ones come from ``log`` without a call."""
    out: dict[str, JudgeReply] = {}
    todo: list[tuple[str, str, JudgeRequest]] = []
    for key, req in requests:
        h = request_hash(req)
        done = log.get(stage, key, h)
        if done is not None:
            out[key] = done
        else:
            todo.append((key, h, req))
    result = StageResult(out, reused=len(out))
    if not todo:
        return result
    width = max(2, 2 * int(getattr(judge, "max_in_flight", 4) or 4))

    async def run() -> None:
        gate = asyncio.Semaphore(width)
        fatal: list[str] = []

        async def one(key: str, h: str, req: JudgeRequest) -> None:
            async with gate:
                if result.stopped is None and len(fatal) >= FAIL_FAST_AFTER:
                    result.stopped = (f"the generator keeps failing ({len(fatal)} failed "
                                      f"replies in a row: {', '.join(sorted(set(fatal)))})")
                # a stop is final: no call is sent after it, even if a limit frees up again
                if result.stopped is not None or not budget.admit():
                    result.not_asked += 1
                    result.stopped = result.stopped or budget.stopped
                    return
                try:
                    rep = (await judge.aask_many([req]))[0]
                except BaseException:
                    budget.settle(0, 0.0)
                    raise
                budget.settle(0 if rep.cached else rep.attempts, 0.0 if rep.cached else rep.cost)
                stats.add(rep)
                log.put(stage, key, h, rep)
                out[key] = rep
                result.asked += 1
                if not rep.ok and rep.reason in _FATAL:
                    fatal.append(rep.reason or "")
                elif rep.ok:
                    fatal.clear()   # only failures in a row count
                if on_reply is not None:
                    on_reply(key, rep)

        try:
            await asyncio.gather(*(one(k, h, r) for k, h, r in todo))
        finally:
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()

    run_sync(run, thread_name="ragmeter-synth")
    return result
