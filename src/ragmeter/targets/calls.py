"""Every call to a target goes through here, on the judge engine's request runner
(:class:`~ragmeter.judges.runner.RequestRunner`): bounded adaptive concurrency
(:class:`~ragmeter.judges.limiter.AdaptiveLimiter` in an
:class:`~ragmeter.judges.pool.EndpointPool`), retries with ``Retry-After`` and the run's retry
budget, the circuit breaker, a send gate for the call budget, and the recorded replies as its
cache. A target is limited, retried and cut off exactly like a judge endpoint. Hedging is off:
a duplicate request would load the user's system and distort its latency.

The one interface the rest of ragmeter uses is :class:`TargetCaller`
(``call_many(requests) -> replies`` and its async twin).

Modes: ``live`` calls the target for every request and records each final reply; ``replay``
calls nothing and serves recorded replies (a missing one is ``target_not_recorded``);
``resume`` serves recorded successful replies and calls the target for the rest.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragmeter.errors import WorkFailedError
from ragmeter.judges._sync import run_sync
from ragmeter.judges.backend import BackendError
from ragmeter.judges.config import RetryPolicy
from ragmeter.judges.dispatch import Dispatcher, HedgeClock
from ragmeter.judges.limiter import AdaptiveLimiter, LimiterMemory
from ragmeter.judges.pool import EndpointPool
from ragmeter.judges.runner import CallRecord, RequestRunner
from ragmeter.targets.base import Target, TargetCallError, TargetReply, TargetRequest
from ragmeter.targets.recorded import ReplyStore, masked

MODES = ("live", "replay", "resume")
#: target reasons -> the engine's reasons (429 bound per call, pool health, breaker)
_TO_ENGINE = {"target_rate_limited": "rate_limited", "target_http_5xx": "http_5xx",
              "target_timeout": "timeout", "target_unreachable": "connection_error"}
_FROM_ENGINE = {"timeout": "target_timeout", "backend_error": "target_error"}
#: outcomes that are not the target's answer to this request (never recorded)
_NOT_RECORDED = ("target_unreachable", "target_not_recorded")


class TargetBudgetSpent(WorkFailedError):
    """The call budget (``max_calls``) is spent: the run stops; replies so far are recorded,
    so ``--resume`` goes on from there."""


class _Failure(BackendError):
    """A target's error in the engine's terms, keeping the target's own reason and raw reply."""

    def __init__(self, err: TargetCallError):
        super().__init__(_TO_ENGINE.get(err.reason, err.reason), err.detail,
                         retryable=err.retryable, retry_after=err.retry_after,
                         status=err.status, unreachable=err.unreachable)
        self.target_error = err


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


class _CallBudget:
    """The send gate of a target: at most ``max_calls`` requests sent (retries included)."""

    def __init__(self, caller: TargetCaller):
        self.caller = caller

    def before_send(self, request: Any) -> None:
        c = self.caller
        if c.max_calls is not None and c.counts.sent >= c.max_calls:
            raise TargetBudgetSpent(f"the target's call budget ({c.max_calls} calls) is spent; "
                                    "the replies so far are recorded: run again with --resume")
        c.counts.sent += 1

    def after_send(self, request: Any, reply_cost: float, tokens_in: int,
                   tokens_out: int) -> None:
        return None


class _Exchange:
    """One request's conversation with the target (the runner's ``Exchange``)."""

    def __init__(self, request: TargetRequest, batch: _Batch):
        self.request = request
        self.batch = batch
        self.started: float | None = None

    def payload(self) -> TargetRequest:
        self.started = round(time.perf_counter() - self.batch.t0, 6)
        return self.request

    def resend(self, err: BackendError) -> bool:
        return False

    def outcome(self, result: TargetReply, rec: CallRecord) -> TargetReply:
        self.batch.caller.counts.retries += rec.retries
        return replace(result, attempts=rec.attempts, started_s=self.started)

    def usable(self) -> bool:
        """A reply is read by the kind itself: one that cannot be read already came back
        as an error (``target_bad_reply`` / ``target_unmapped``)."""
        return True

    def failed(self, err: BackendError, detail: str, rec: CallRecord) -> TargetReply:
        self.batch.caller.counts.retries += rec.retries
        te = getattr(err, "target_error", None)
        reason = te.reason if te is not None else _FROM_ENGINE.get(err.reason,
                                                                   f"target_{err.reason}")
        return TargetReply(reason=reason, detail=detail, raw=te.raw if te is not None else None,
                           attempts=rec.attempts)

    def skipped(self, detail: str, rec: CallRecord) -> TargetReply:
        return TargetReply(reason="target_unreachable", detail=detail, attempts=rec.attempts)


class _Batch:
    """The runner's batch hooks for one ``acall_many``: keys, recorded replies, marking."""

    def __init__(self, caller: TargetCaller):
        self.caller = caller
        self.id = uuid.uuid4().hex[:12]
        self.t0 = time.perf_counter()
        self.lookup = self._lookup if caller.mode == "resume" and caller.store else None
        self.store = self._store if caller.store is not None else None

    def key(self, item: TargetRequest) -> str:
        return item.key(self.caller.target.signature)

    def exchange(self, item: TargetRequest, key: str) -> _Exchange:
        return _Exchange(item, self)

    async def _lookup(self, keys: list[str]) -> dict[str, TargetReply]:
        store = self.caller.store
        assert store is not None
        got = {k: store.get(k) for k in keys}
        return {k: r for k, r in got.items() if r is not None and r.ok}

    async def _store(self, key: str, out: TargetReply) -> None:
        if self.caller.store is not None and out.reason not in _NOT_RECORDED:
            self.caller.store.put(key, self.caller.target.signature.identity(), out)

    def hit(self, item: TargetRequest, key: str, out: TargetReply) -> TargetReply:
        self.caller.counts.recorded += 1
        return out

    def duplicate(self, out: TargetReply) -> TargetReply:
        return replace(out)

    def finished(self, item: TargetRequest, key: str, out: TargetReply) -> TargetReply:
        out.batch = self.id
        return masked(out)

    def delivered(self, i: int, item: TargetRequest, out: TargetReply) -> list[TargetRequest]:
        return []


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

    def call_many(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        return run_sync(lambda: self.acall_many(requests), "ragmeter-target")

    async def acall_many(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        t0 = time.perf_counter()
        try:
            if self.mode == "replay":
                replies = [self._replayed(r) for r in requests]
            else:
                replies = await self._run(requests)
        finally:
            await self.target.aclose()
        self.counts.wall_s += time.perf_counter() - t0
        for rep in replies:
            if rep.reason:
                self.counts.errors[rep.reason] += 1
            if rep.version:
                self.versions[rep.version] += 1
        return replies

    def _replayed(self, req: TargetRequest) -> TargetReply:
        rec = self.store.get(req.key(self.target.signature)) if self.store else None
        if rec is None:
            return TargetReply(reason="target_not_recorded",
                               detail="no recorded reply for this request of this target")
        self.counts.recorded += 1
        return rec

    async def _run(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        pool = EndpointPool([AdaptiveLimiter(self.memory.cap, self.memory)])
        target = self.target

        async def send(idx: int, req: TargetRequest) -> TargetReply:
            try:
                return await target.call(req)
            except TargetCallError as exc:
                raise _Failure(exc) from None

        dispatcher: Dispatcher[TargetReply] = Dispatcher(
            pool, send, timeout_s=target.timeout_s, clock=HedgeClock(None, target.timeout_s),
            hedgeable=[False], gate=_CallBudget(self))
        runner = RequestRunner(dispatcher, self.policy, calls=len(requests))
        return list(await runner.run(list(requests), _Batch(self)))  # type: ignore[arg-type]


def make_caller(target: Target, config: Any, *, mode: str = "live",
                store: ReplyStore | None = None) -> TargetCaller:
    """A caller with the limits of a :class:`~ragmeter.targets.config.TargetConfig`."""
    return TargetCaller(target, mode=mode, store=store, max_calls=config.max_calls,
                        max_retries=config.max_retries, retry_initial_s=config.retry_initial_s)




__all__ = ["MODES", "CallCounts", "TargetBudgetSpent", "TargetCaller", "make_caller"]
