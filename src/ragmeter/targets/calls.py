"""Every call to a target goes through here: bounded adaptive concurrency, retries with
``Retry-After`` and a retry budget, the circuit breaker, the call budget and the recorded
replies. The mechanisms are the judge engine's own (:mod:`ragmeter.judges.engine`), so a
target is limited, retried and cut off exactly like a judge endpoint.

The one interface the rest of ragmeter uses is :class:`TargetCaller`
(``call_many(requests) -> replies`` and its async twin); how the mechanisms are assembled stays
inside this module.

Modes: ``live`` calls the target for every request and records each final reply; ``replay``
calls nothing and serves recorded replies (a missing one is ``target_not_recorded``);
``resume`` serves recorded successful replies and calls the target for the rest.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.judges._sync import run_sync
from ragmeter.judges.config import RetryPolicy
from ragmeter.judges.engine import AdaptiveLimiter, Breaker, LimiterMemory, RetryBudget, retry_delay
from ragmeter.targets.base import Target, TargetCallError, TargetReply, TargetRequest
from ragmeter.targets.recorded import ReplyStore, masked

log = logging.getLogger("ragmeter.targets")

MODES = ("live", "replay", "resume")
#: outcomes that are the target's answer to this request (recorded for replay)
_NOT_RECORDED = ("target_unreachable", "target_circuit_open", "target_budget",
                 "target_not_recorded")


@dataclass
class CallCounts:
    """What a caller did: calls sent, replies served from the records, retries, errors."""

    sent: int = 0
    recorded: int = 0
    retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "recorded": self.recorded, "retries": self.retries,
                "errors": dict(self.errors), "wall_s": round(self.wall_s, 4)}


class TargetCaller:
    """Runs requests against one target (see the module doc)."""

    def __init__(self, target: Target, *, mode: str = "live", store: ReplyStore | None = None,
                 max_calls: int | None = None, max_retries: int = 4,
                 retry_initial_s: float = 0.5, retry_max_s: float = 10.0,
                 retry_budget: int | None = None):
        if mode not in MODES:
            from ragmeter.errors import ConfigError

            raise ConfigError("target mode", f"unknown mode {mode!r}", list(MODES))
        self.target = target
        self.mode = mode
        self.store = store
        self.max_calls = max_calls
        self.policy = RetryPolicy(initial=retry_initial_s, max=retry_max_s,
                                  max_retries=max_retries, budget=retry_budget)
        self.memory = LimiterMemory(max(1, target.max_concurrency))
        self.counts = CallCounts()
        self.versions: Counter[str] = Counter()

    # ------------------------------------------------------------------ public
    def call_many(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        return run_sync(lambda: self.acall_many(requests), "ragmeter-target")

    async def acall_many(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        run = _Run(self, len(requests))
        try:
            replies = await asyncio.gather(*(run.one(r) for r in requests))
        finally:
            await self.target.aclose()
        self.counts.wall_s += loop.time() - t0
        for rep in replies:
            if rep.reason:
                self.counts.errors[rep.reason] += 1
            if rep.version:
                self.versions[rep.version] += 1
        return list(replies)

    def take_call(self) -> bool:
        """One call from the budget (``max_calls``); False when it is spent."""
        if self.max_calls is not None and self.counts.sent >= self.max_calls:
            return False
        self.counts.sent += 1
        return True


class _Run:
    """The shared state of one ``acall_many``: limiter, breaker, retry budget."""

    def __init__(self, caller: TargetCaller, n: int):
        self.c = caller
        self.limiter = AdaptiveLimiter(caller.memory.cap, caller.memory)
        self.breaker = Breaker(1)
        pol = caller.policy
        self.budget = RetryBudget(pol.budget if pol.budget is not None else max(20, n))
        self.id = uuid.uuid4().hex[:12]
        self.t0 = time.perf_counter()

    async def one(self, req: TargetRequest) -> TargetReply:
        c = self.c
        key = req.key(c.target.signature)
        if c.store is not None and c.mode != "live":
            rec = c.store.get(key)
            if rec is not None and (c.mode == "replay" or rec.ok):
                c.counts.recorded += 1
                return rec
        if c.mode == "replay":
            return TargetReply(reason="target_not_recorded",
                               detail="no recorded reply for this request of this target")
        rep = await self._ask(req)
        rep.batch = self.id
        masked(rep)
        if c.store is not None and rep.reason not in _NOT_RECORDED:
            c.store.put(key, c.target.signature.identity(), rep)
        return rep

    async def _ask(self, req: TargetRequest) -> TargetReply:
        c = self.c
        attempt = 0
        while True:
            if self.breaker.tripped:
                return TargetReply(reason="target_unreachable", detail=self.breaker.detail,
                                   attempts=attempt)
            if not c.take_call():
                return TargetReply(reason="target_budget", attempts=attempt,
                                   detail=f"the call budget ({c.max_calls}) is spent")
            attempt += 1
            slot = await self.limiter.acquire()
            err: TargetCallError | None = None
            outcome = "error"
            started = round(time.perf_counter() - self.t0, 6)
            try:
                rep = await asyncio.wait_for(c.target.call(req), c.target.timeout_s)
                rep.started_s = started
                outcome = "ok"
            except asyncio.TimeoutError:
                err = TargetCallError("target_timeout", f"no reply within "
                                      f"{c.target.timeout_s} s", retryable=True)
            except TargetCallError as exc:
                err = exc
                outcome = "rate_limited" if exc.reason == "target_rate_limited" else "error"
            finally:
                await self.limiter.release(slot, outcome,
                                           err.retry_after if err is not None else None)
            self.breaker.record(0, err)  # type: ignore[arg-type]  # duck-typed error
            if err is None:
                rep.attempts = attempt
                return rep
            if self._retry(err, attempt):
                c.counts.retries += 1
                await self.breaker.sleep(retry_delay(c.policy, attempt, err.retry_after))
                continue
            return TargetReply(reason=err.reason, detail=err.detail, raw=err.raw,
                               attempts=attempt)

    def _retry(self, err: TargetCallError, attempt: int) -> bool:
        if not err.retryable or attempt > self.c.policy.max_retries or self.breaker.tripped:
            return False
        # 429s are bounded per call only; other failures also draw on the run's budget
        return err.reason == "target_rate_limited" or self.budget.take()


def make_caller(target: Target, config: Any, *, mode: str = "live",
                store: ReplyStore | None = None) -> TargetCaller:
    """A caller with the limits of a :class:`~ragmeter.targets.config.TargetConfig`."""
    return TargetCaller(target, mode=mode, store=store, max_calls=config.max_calls,
                        max_retries=config.max_retries, retry_initial_s=config.retry_initial_s)


__all__ = ["MODES", "CallCounts", "TargetCaller", "make_caller"]
