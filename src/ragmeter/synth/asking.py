"""Ask the generator through the judge engine, wave by wave, logging every reply.

There is no second ask loop here: each wave goes to ``judge.ask_many`` — the engine's own
scheduler (adaptive concurrency, retries, 429 handling), cache and accounting, behind the
command's one :class:`~ragmeter.cost.Budget` — and its replies are written to the progress
log as soon as the wave is back. A wave is ``2 × max_in_flight`` requests, so the engine is
kept busy and a crash loses at most one wave. Before each wave the budget says how many
requests fit (near a call limit, waves shrink to half of what is left: retries count too);
a stop of the budget (``--max-calls``, ``--max-cost``) or a generator that keeps failing
ends the stage, and the items not asked say why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.cost import Budget, BudgetExhausted
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.cache import request_hash
from ragmeter.judges.stats import JudgeStats
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


def _prices(judge: Any) -> tuple[float, float]:
    cfg = getattr(judge, "config", None)
    return (float(getattr(cfg, "price_in", 0.0) or 0.0),
            float(getattr(cfg, "price_out", 0.0) or 0.0))


def ask_stage(judge: Judge, stage: str, requests: Sequence[tuple[str, JudgeRequest]],
              log: ProgressLog, budget: Budget | None, stats: JudgeStats,
              on_reply: Callable[[str, JudgeReply], None] | None = None) -> StageResult:
    """Answer ``(key, request)`` pairs; finished ones come from ``log`` without a call."""
    out: dict[str, JudgeReply] = {}
    todo: list[tuple[str, JudgeRequest]] = []     # one per distinct request
    keys: dict[str, list[str]] = {}               # request hash -> the items asking it
    for key, req in requests:
        h = request_hash(req)
        done = log.get(stage, key, h)
        if done is not None:
            out[key] = done
            continue
        if h not in keys:
            keys[h] = []
            todo.append((h, req))
        keys[h].append(key)
    result = StageResult(out, reused=len(out))
    width = max(2, 2 * int(getattr(judge, "max_in_flight", 4) or 4))
    failed: list[str] = []   # fatal failures in a row
    pos = 0
    while pos < len(todo) and result.stopped is None:
        wave = todo[pos:pos + width]
        n = len(wave)
        if budget is not None:
            n, why = budget.admit([r for _, r in wave], *_prices(judge))
            if n == 0:
                result.stopped = budget.stop(why or "max_calls").reason
                break
            left = budget.calls_left()
            if left is not None:   # near the limit, small waves: a stop loses few replies
                n = min(n, max(1, left // 2))
        try:
            replies = judge.ask_many([r for _, r in wave[:n]])
        except BudgetExhausted as stop:   # a retry met the limit: this wave is lost
            result.stopped = stop.reason
            break
        for (h, _), rep in zip(wave[:n], replies, strict=True):
            for i, key in enumerate(keys[h]):
                # the same request for another item made no call of its own
                mine = rep if i == 0 else replace(rep, cached=True,
                                                  extra={**rep.extra, "deduplicated": True})
                stats.add(mine)
                log.put(stage, key, h, mine)
                out[key] = mine
                result.asked += 1
                if on_reply is not None:
                    on_reply(key, mine)
            if not rep.ok and rep.reason in _FATAL:
                failed.append(rep.reason or "")
            elif rep.ok:
                failed.clear()   # only failures in a row count
        pos += n
        if len(failed) >= FAIL_FAST_AFTER:
            result.stopped = (f"the generator keeps failing ({len(failed)} failed replies "
                              f"in a row: {', '.join(sorted(set(failed)))})")
    result.not_asked = sum(len(keys[h]) for h, _ in todo[pos:])
    return result
