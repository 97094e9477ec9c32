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

import asyncio
import concurrent.futures
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.calls.limiter import LimiterMemory
from ragmeter.calls.pool import EndpointPool
from ragmeter.calls.record import CallRecord
from ragmeter.calls.retry import RetryPolicy
from ragmeter.calls.scheduler import RequestRunner, make_pool
from ragmeter.calls.sync import LoopThread, run_sync
from ragmeter.errors import WorkFailedError
from ragmeter.targets.base import Target, TargetReply, TargetRequest, target_reason
from ragmeter.targets.reading import clean_text
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
        self.warmup = False

    def payload(self) -> TargetRequest:
        caller = self.batch.caller
        if not caller.warmed:      # the first send of this caller's life: its warm-up
            caller.warmed = self.warmup = True
        return self.request

    def resend(self, err: CallError) -> bool:
        return False

    def _timing(self, rec: CallRecord) -> dict[str, Any]:
        """The call's timing from its record: first send -> final reply (retries and the
        waits between them included), when it started in its batch, every attempt."""
        if rec.first_sent is None:
            return {"warmup": self.warmup}
        return {"latency_s": rec.span, "started_s": round(rec.first_sent - self.batch.t0, 6),
                "attempt_s": [round(d, 6) for d in rec.durations], "warmup": self.warmup}

    def outcome(self, result: TargetReply, rec: CallRecord) -> TargetReply:
        timing = self._timing(rec)
        if result.ttft_s is not None and rec.first_sent is not None and \
                rec.last_sent is not None:    # the final attempt's, from the first send
            timing["ttft_s"] = rec.last_sent - rec.first_sent + result.ttft_s
        return replace(result, attempts=rec.attempts, **timing)

    def usable(self) -> bool:
        """A reply is read by the kind itself: one that cannot be read already came back
        as an error (``target_bad_reply`` / ``target_unmapped``)."""
        return True

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> TargetReply:
        raw = clean_text(err.raw)[0] if err.raw else None
        return TargetReply(reason=target_reason(err), detail=detail, raw=raw,
                           attempts=rec.attempts, **self._timing(rec))

    def skipped(self, detail: str, rec: CallRecord) -> TargetReply:
        return TargetReply(reason="target_unreachable", detail=detail, attempts=rec.attempts,
                           **self._timing(rec))


class _Batch:
    """The runner's batch hooks for one ``acall_many``: keys, recorded replies, marking.
    Its calls' start times count from the caller's own start (``id``, ``t0``), so batches
    that overlap (one read ahead) measure one wall time."""

    def __init__(self, caller: TargetCaller):
        self.caller = caller
        self.id, self.t0 = caller.epoch
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
            self.caller.store.put(key, self.caller.target.signature.identity(), out,
                                  is_masked=True)      # by finished()

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
        #: whether a call was sent yet (the first one is the warm-up)
        self.warmed = False
        #: what the calls' start times count from: an id and a ``time.perf_counter()``
        self.epoch = (uuid.uuid4().hex[:12], time.perf_counter())
        self.versions: Counter[str] = Counter()
        #: kinds that keep their connections run on a loop of their own, kept between
        #: batches (a batch may be sent ahead: :meth:`start`); the others on one per batch
        self._thread = LoopThread(target.aclose, "ragmeter-target") if getattr(
            target, "keeps_connections", False) else None
        self._pool: tuple[Any, EndpointPool] | None = None

    def start(self, requests: Sequence[TargetRequest]
              ) -> concurrent.futures.Future[list[TargetReply]] | None:
        """Send ``requests`` in the background and return at once (their future, for
        :meth:`wait`); None for a kind that cannot (its calls are made by
        :meth:`call_many`) and in a replay. Batches in flight at once share the target's
        concurrency limit, the earlier batch first."""
        if self._thread is None or self.mode == "replay":
            return None
        return self._thread.submit(lambda: self.acall_many(requests, close=False))

    @staticmethod
    def wait(future: concurrent.futures.Future[list[TargetReply]]) -> list[TargetReply]:
        """The replies of a batch sent by :meth:`start` (an interrupt cancels it)."""
        return LoopThread.wait(future)

    def call_many(self, requests: Sequence[TargetRequest]) -> list[TargetReply]:
        """The replies to ``requests``, in order. An HTTP target's connections stay open
        for its next batch (closed by :meth:`close`, or at exit)."""
        future = self.start(requests)
        if future is not None:
            return self.wait(future)
        return run_sync(lambda: self.acall_many(requests), "ragmeter-target")

    def close(self) -> None:
        """Stop what the calls keep open (an HTTP target's connections, a batch sent
        ahead and not asked for)."""
        if self._thread is not None:
            self._thread.close()

    async def acall_many(self, requests: Sequence[TargetRequest], *,
                         close: bool = True) -> list[TargetReply]:
        """The replies to ``requests``; ``close``: the target's client is closed after
        them (its connections, its programs)."""
        t0 = time.perf_counter()
        try:
            if self.mode == "replay":
                replies = [self._replayed(r) for r in requests]
            else:
                replies = await self._run(requests)
        finally:
            if close:
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
            totals=self.counts, pool=self._shared_pool())
        return list(await runner.run(list(requests), _Batch(self)))

    def _shared_pool(self) -> EndpointPool | None:
        """The pool the batches on the kept loop share (one per loop); None: a batch on a
        loop of its own gets a pool of its own."""
        if self._thread is None:
            return None
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop:
            self._pool = (loop, make_pool(self.memory.cap, [self.memory]))
        return self._pool[1]


def make_caller(target: Target, config: Any, *, mode: str = "live",
                store: ReplyStore | None = None) -> TargetCaller:
    """A caller with the limits of a :class:`~ragmeter.targets.config.TargetConfig`."""
    return TargetCaller(target, mode=mode, store=store, max_calls=config.max_calls,
                        max_retries=config.max_retries, retry_initial_s=config.retry_initial_s)


__all__ = ["MODES", "TargetBudgetSpent", "TargetCaller", "make_caller"]
