"""Every call to a target goes through here, on the request runner of :mod:`ragmeter.calls`
(:class:`~ragmeter.calls.scheduler.RequestRunner`): bounded adaptive concurrency (the
:class:`~ragmeter.calls.limiter.AdaptiveLimiter` of an
:class:`~ragmeter.calls.pool.EndpointPool`), retries with ``Retry-After`` and the run's retry
budget, the circuit breaker, a send gate for the call budget, and the recorded replies as its
cache. A target is limited, retried and cut off exactly like a judge endpoint. Hedging is off:
a duplicate request would load the user's system and distort its latency.

A target kind raises :class:`~ragmeter.calls.errors.CallError`; a call that fails for good is
reported as ``target_<reason>`` (:func:`~ragmeter.targets.base.target_reason`).

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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.calls.limiter import LimiterMemory
from ragmeter.calls.record import CallRecord
from ragmeter.calls.retry import RetryPolicy
from ragmeter.calls.scheduler import RequestRunner
from ragmeter.calls.sync import run_sync
from ragmeter.errors import WorkFailedError
from ragmeter.targets.base import Target, TargetReply, TargetRequest, target_reason
from ragmeter.targets.recorded import ReplyStore, masked

MODES = ("live", "replay", "resume")
#: outcomes that are not the target's answer to this request (never recorded)
_NOT_RECORDED = ("target_unreachable", "target_not_recorded")


class TargetBudgetSpent(WorkFailedError):
    """The call budget (``max_calls``) is spent: the run stops; replies so far are recorded,
    so ``--resume`` goes on from there."""


class _CallBudget:
    """The send gate of a target: at most ``max_calls`` requests sent (retries included)."""

    def __init__(self, caller: TargetCaller):
        self.caller = caller

    def before_send(self, request: Any) -> None:
        c = self.caller
        if c.max_calls is not None and c.counts.sent >= c.max_calls:
            raise TargetBudgetSpent(f"the target's call budget ({c.max_calls} calls) is spent; "
                                    "the replies so far are recorded: run again with --resume")

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

    def resend(self, err: CallError) -> bool:
        return False

    def outcome(self, result: TargetReply, rec: CallRecord) -> TargetReply:
        return replace(result, attempts=rec.attempts, started_s=self.started)

    def usable(self) -> bool:
        """A reply is read by the kind itself: one that cannot be read already came back
        as an error (``target_bad_reply`` / ``target_unmapped``)."""
        return True

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> TargetReply:
        return TargetReply(reason=target_reason(err), detail=detail, raw=err.raw,
                           attempts=rec.attempts)

    def skipped(self, detail: str, rec: CallRecord) -> TargetReply:
        return TargetReply(reason="target_unreachable", detail=detail, attempts=rec.attempts)


class _Batch:
    """The runner's batch hooks for one ``acall_many``: keys, recorded replies, marking."""

    def __init__(self, caller: TargetCaller):
        self.caller = caller
        self.id = uuid.uuid4().hex[:12]
        self.t0 = time.perf_counter()
        self.lookup: Callable[[list[str]], Awaitable[dict[str, TargetReply]]] | None = (
            self._lookup if caller.mode == "resume" and caller.store else None)
        self.store: Callable[[str, TargetReply], Awaitable[None]] | None = (
            self._store if caller.store is not None else None)

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
        self.caller.counts.cached += 1
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
        #: what this caller's calls did over its life (sent, retries, served from the
        #: recorded replies, failures by reason, wall time)
        self.counts = CallRecord()
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
                self.counts.failures[rep.reason] += 1
            if rep.version:
                self.versions[rep.version] += 1
        return replies

    def _replayed(self, req: TargetRequest) -> TargetReply:
        rec = self.store.get(req.key(self.target.signature)) if self.store else None
        if rec is None:
            return TargetReply(reason="target_not_recorded",
                               detail="no recorded reply for this request of this target")
        self.counts.cached += 1
        return rec

    async def _run(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        target = self.target

        async def send(idx: int, req: TargetRequest) -> TargetReply:
            return await target.call(req)

        runner: RequestRunner[TargetReply] = RequestRunner.create(
            send, max_in_flight=self.memory.cap, memory=[self.memory], policy=self.policy,
            timeout_s=target.timeout_s, gate=_CallBudget(self), calls=len(requests),
            totals=self.counts)
        return list(await runner.run(list(requests), _Batch(self)))


def make_caller(target: Target, config: Any, *, mode: str = "live",
                store: ReplyStore | None = None) -> TargetCaller:
    """A caller with the limits of a :class:`~ragmeter.targets.config.TargetConfig`."""
    return TargetCaller(target, mode=mode, store=store, max_calls=config.max_calls,
                        max_retries=config.max_retries, retry_initial_s=config.retry_initial_s)


__all__ = ["MODES", "TargetBudgetSpent", "TargetCaller", "make_caller"]
