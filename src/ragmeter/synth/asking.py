"""Ask the generator through the judge engine, wave by wave, logging every reply.

There is no second ask loop here: each wave goes to ``judge.ask_many`` — the engine's own
scheduler (adaptive concurrency, retries, 429 handling), cache and accounting, behind the
command's one :class:`~ragmeter.cost.Budget`. Each reply is written to the progress log the
moment the engine has it (through the request's ``then`` hook, which the engine calls as each
reply arrives), not when its wave is back, so a kill loses only the calls in flight; a judge
that does not honour ``then`` has its replies written when the wave returns. A wave is
``2 × max_in_flight`` requests, so the engine is kept busy. Before each wave the budget says how many
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
    logged: dict[str, JudgeReply] = {}   # request hash -> its reply, on disk as it came

    def log_now(h: str, req: JudgeRequest) -> JudgeRequest:
        """``req`` writing its reply to the progress log the moment the engine has it."""
        then = req.then

        def arrived(rep: JudgeReply) -> Sequence[JudgeRequest]:
            for i, key in enumerate(keys[h]):
                log.put(stage, key, h, _shared(rep, i))
            logged[h] = rep
            return then(rep) if then is not None else ()
        return replace(req, then=arrived)

    def take(h: str, rep: JudgeReply) -> None:
        for i, key in enumerate(keys[h]):
            mine = _shared(rep, i)
            stats.add(mine)
            if h not in logged:
                log.put(stage, key, h, mine)
            out[key] = mine
            result.asked += 1
            if on_reply is not None:
                on_reply(key, mine)
        if not rep.ok and rep.reason in _FATAL:
            failed.append(rep.reason or "")
        elif rep.ok:
            failed.clear()   # only failures in a row count

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
            replies = judge.ask_many([log_now(h, r) for h, r in wave[:n]])
        except BudgetExhausted as stop:   # a retry met the limit: the wave's other calls
            for h, _ in wave[:n]:         # are lost; the replies that came are kept
                if h in logged:
                    take(h, logged[h])
            result.stopped = stop.reason
            break
        for (h, _), rep in zip(wave[:n], replies, strict=True):
            take(h, rep)
        pos += n
        if len(failed) >= FAIL_FAST_AFTER:
            result.stopped = (f"the generator keeps failing ({len(failed)} failed replies "
                              f"in a row: {', '.join(sorted(set(failed)))})")
    result.not_asked = sum(len(keys[h]) for h, _ in todo[pos:] if h not in logged)
    return result


def _shared(rep: JudgeReply, i: int) -> JudgeReply:
    """The reply as the ``i``-th item asking the same request gets it: the first made the
    call, the others none of their own."""
    return rep if i == 0 else replace(rep, cached=True, extra={**rep.extra, "deduplicated": True})
