"""The request runner: any caller's requests through one set of concurrency, retry, endpoint
pool, circuit breaker, hedging, send gate, deduplication and cache mechanisms.

The runner knows nothing about its callers (the LLM judge, targets, the embeddings client). A
caller supplies (:mod:`ragmeter.calls.seam`):

* ``send(idx, payload) -> result``: an async callable that delivers one payload to endpoint
  ``idx`` of the pool and returns its result, or raises
  :class:`~ragmeter.calls.errors.CallError` (``retryable``, ``retry_after``, ``status``,
  ``unreachable`` and ``fault`` drive retries, the limiter, the pool and the breaker);
* per request an :class:`~ragmeter.calls.seam.Exchange`: what to send for each attempt and
  how to read what came back (final outcome, or send again: a repair, a larger token budget);
* optionally a cache as two async callables ``lookup(keys) -> {key: outcome}`` and
  ``store(key, outcome)``.

:meth:`RequestRunner.call` runs one exchange to its outcome (retries with the run's
:class:`~ragmeter.calls.retry.RetryBudget` and :func:`~ragmeter.calls.retry.retry_delay`,
the batch's :class:`~ragmeter.calls.breaker.Breaker`); :meth:`RequestRunner.run` runs a
batch: cache hits first, one call per distinct key (duplicates share it), follow-ups as soon
as their own outcome arrives, outcomes in submission order. A send gate stop
(:class:`~ragmeter.calls.dispatch.SendStopped`) ends the batch after the calls in flight and
re-raises the gate's exception; outcomes received so far were stored by then.

A caller with one fixed payload per request needs only :class:`PlainExchange` and
:class:`Hooks`::

    async def send(idx: int, body: dict) -> dict:      # POST body to endpoint idx
        ...

    class Calls(Hooks[dict, Answer]):
        def key(self, item): return item["id"]
        def exchange(self, item, key):
            return PlainExchange(item, item, read=Answer.from_reply,
                                 fail=lambda err, detail: Answer.failed(err.reason, detail))

    runner = RequestRunner.create(send, max_in_flight=8, policy=RetryPolicy(max_retries=3),
                                  timeout_s=30.0, gate=budget_gate, calls=len(items))
    answers = await runner.run(items, Calls())
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from ragmeter.calls.breaker import Breaker
from ragmeter.calls.dispatch import Dispatcher, HedgeClock, SendStopped
from ragmeter.calls.errors import CallError
from ragmeter.calls.limiter import AdaptiveLimiter, LimiterMemory
from ragmeter.calls.pool import EndpointPool
from ragmeter.calls.record import CallRecord
from ragmeter.calls.retry import RetryBudget, RetryPolicy, retry_delay
from ragmeter.calls.seam import BatchHooks, Exchange, Gate, Send

log = logging.getLogger("ragmeter.calls")

Q = TypeVar("Q")
O = TypeVar("O")  # noqa: E741  (an outcome)
R = TypeVar("R")


class RequestRunner(Generic[R]):
    """Retries, breaker and batch scheduling over a :class:`Dispatcher` (see module doc)."""

    def __init__(self, dispatcher: Dispatcher[R], policy: RetryPolicy, *, calls: int):
        self.dispatcher = dispatcher
        #: what the calls did, summed (the dispatcher's totals: a caller's, when it passed
        #: its own to the dispatcher)
        self.totals = dispatcher.totals
        self.policy = policy
        self.budget = RetryBudget(policy.budget if policy.budget is not None
                                  else max(20, calls))
        self.breaker = Breaker(len(dispatcher.pool.members))
        self.decisions = dispatcher.decisions
        dispatcher.on_stop = self.breaker.wake   # a stopped batch does not sit out backoffs

    @classmethod
    def create(cls, send: Send[R], *, endpoints: int = 1, max_in_flight: int = 4,
               policy: RetryPolicy | None = None, timeout_s: float = 60.0,
               hedge_after_p90: float | None = None, gate: Gate | None = None,
               measure: Callable[[R], tuple[float, int, int]] | None = None,
               calls: int = 0, memory: Sequence[LimiterMemory] | None = None,
               totals: CallRecord | None = None,
               pool: EndpointPool | None = None) -> RequestRunner[R]:
        """A runner over a fresh pool of ``endpoints`` members (``max_in_flight`` each).
        ``memory`` (one :class:`~ragmeter.calls.limiter.LimiterMemory` per endpoint) carries
        what the 429 reaction learned from one batch to the next; ``totals`` sums what the
        calls did over the caller's life. ``pool``: a pool shared with other runners on the
        same event loop instead (batches in flight at once stay within one limit; see
        :func:`make_pool`)."""
        mems: Sequence[LimiterMemory | None] = (
            memory if memory is not None else [None] * endpoints)
        if pool is None:
            pool = make_pool(max_in_flight, mems)
        clock = HedgeClock(hedge_after_p90, timeout_s)
        dispatcher: Dispatcher[R] = Dispatcher(
            pool, send, timeout_s=timeout_s, clock=clock,
            hedgeable=[hedge_after_p90 is not None] * len(mems), gate=gate, measure=measure,
            totals=totals)
        return cls(dispatcher, policy or RetryPolicy(), calls=calls)

    def add_call(self) -> None:
        """One more call joined the batch (a follow-up): the default budget grows with it."""
        if self.policy.budget is None:
            self.budget.total += 1

    async def call(self, ex: Exchange[R, O]) -> O:
        """Run ``ex`` until it has an outcome."""
        rec = CallRecord(calls=1)
        try:
            return await self._call(ex, rec)
        finally:
            self.totals.add(rec)

    async def _call(self, ex: Exchange[R, O], rec: CallRecord) -> O:
        breaker, policy = self.breaker, self.policy
        while True:
            if breaker.tripped:
                self.decisions["circuit_skipped"] += 1
                return ex.skipped(breaker.detail or "", rec)
            got = await self.dispatcher.attempt(ex.payload, ex.request,
                                                skip=lambda: breaker.tripped)
            if got is None:            # the circuit opened while this call waited
                continue
            rec.attempted(got.started, got.latency, got.idx)
            breaker.record(got.idx, got.err)
            err = got.err
            if err is None:
                assert got.result is not None
                out = ex.outcome(got.result, rec)
                await self.dispatcher.pool.read(got.idx, ex.usable())
                if out is not None:
                    return out
                continue
            if ex.resend(err):
                continue
            # 429s are the server asking us to wait: bounded per call, not by the budget
            if (err.retryable and rec.retries < policy.max_retries
                    and (err.rate_limited or self.budget.take())):
                rec.retries += 1
                self.decisions[f"retry:{err.reason}"] += 1
                delay = retry_delay(policy, rec.retries, err.retry_after)
                log.debug("%s, retry %d in %.2f s", err.reason, rec.retries, delay)
                await breaker.sleep(delay)
                continue
            detail = err.detail
            if err.retryable:
                why = ("retry budget spent" if rec.retries < policy.max_retries
                       else f"after {rec.retries} retries")
                detail = f"{detail} ({why})"
            return ex.failed(err, detail, rec)

    async def run(self, items: Sequence[Q], batch: BatchHooks[Q, O]) -> list[O]:
        """Outcomes of ``items`` (then of their follow-ups, in submission order)."""
        return await _Batch(self, batch).run(list(items))


def make_pool(max_in_flight: int, memory: Sequence[LimiterMemory | None]) -> EndpointPool:
    """A pool of one member per ``memory`` entry, each with an adaptive limiter of
    ``max_in_flight``; to be used on one event loop."""
    return EndpointPool([AdaptiveLimiter(max_in_flight, m) for m in memory])


class PlainExchange(Generic[R, O]):
    """An :class:`Exchange` that sends one fixed payload: ``read(result)`` is the outcome,
    ``fail(err, detail)`` the outcome of a failure (an open circuit is a
    ``connection_error``)."""

    def __init__(self, request: Any, payload: Any, read: Callable[[R], O],
                 fail: Callable[[CallError, str], O]):
        self.request = request
        self._payload = payload
        self._read = read
        self._fail = fail

    def payload(self) -> Any:
        return self._payload

    def resend(self, err: CallError) -> bool:
        return False

    def outcome(self, result: R, rec: CallRecord) -> O | None:
        return self._read(result)

    def usable(self) -> bool:
        return True

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> O:
        return self._fail(err, detail)

    def skipped(self, detail: str, rec: CallRecord) -> O:
        return self._fail(CallError("connection_error", detail, unreachable=True), detail)


class Hooks(Generic[Q, O]):
    """:class:`BatchHooks` defaults: no cache, no follow-ups, outcomes delivered as they are.
    A caller overrides :meth:`key` and :meth:`exchange` (and what else it needs)."""

    lookup: Callable[[list[str]], Awaitable[dict[str, O]]] | None = None
    store: Callable[[str, O], Awaitable[None]] | None = None

    def key(self, item: Q) -> str:
        raise NotImplementedError

    def exchange(self, item: Q, key: str) -> Exchange[Any, O]:
        raise NotImplementedError

    def hit(self, item: Q, key: str, out: O) -> O:
        return out

    def duplicate(self, out: O) -> O:
        return out

    def finished(self, item: Q, key: str, out: O) -> O:
        return out

    def delivered(self, i: int, item: Q, out: O) -> Sequence[Q]:
        return ()


class _Batch(Generic[Q, O]):
    """One :meth:`RequestRunner.run`: its outcomes, in-flight keys and tasks."""

    def __init__(self, runner: RequestRunner[Any], hooks: BatchHooks[Q, O]):
        self.runner = runner
        self.hooks = hooks
        self.items: list[Q] = []
        self.out: list[O | None] = []
        self.inflight: dict[str, asyncio.Future[O]] = {}
        self.tasks: set[asyncio.Future[None]] = set()
        self.finished: list[asyncio.Future[None]] = []
        self.wake = asyncio.Event()
        self.stop: BaseException | None = None

    async def run(self, items: list[Q]) -> list[O]:
        h = self.hooks
        self.items, self.out = list(items), [None] * len(items)
        keys = [h.key(q) for q in items]
        hits = await h.lookup(keys) if h.lookup is not None and keys else {}
        todo: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            if k in hits:
                self._deliver(i, h.hit(items[i], k, hits[k]))
            else:
                todo.setdefault(k, []).append(i)
        for k, idxs in todo.items():
            self._spawn(self._first(k, idxs))
        try:
            await self._wait()
        finally:
            for t in self.tasks:
                t.cancel()
            if self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.stop is not None:
            raise self.stop
        assert all(o is not None for o in self.out)  # internal invariant
        return [o for o in self.out if o is not None]

    async def _wait(self) -> None:
        while self.tasks:
            if not self.finished:
                self.wake.clear()
                await self.wake.wait()
            while self.finished:
                t = self.finished.pop()
                self.tasks.discard(t)
                try:
                    t.result()  # a bug in a follow-up callback surfaces here
                except SendStopped:
                    self.stop = self.runner.dispatcher.stop

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._on_done)

    def _on_done(self, task: asyncio.Future[None]) -> None:
        self.finished.append(task)
        self.wake.set()

    def _deliver(self, i: int, out: O) -> None:
        self.out[i] = out
        for q in self.hooks.delivered(i, self.items[i], out):
            self.items.append(q)
            self.out.append(None)
            self.runner.add_call()
            self._spawn(self._followup(len(self.items) - 1, q))

    async def _call(self, key: str, item: Q) -> O:
        fut: asyncio.Future[O] = asyncio.get_running_loop().create_future()
        self.inflight[key] = fut
        try:
            out = self.hooks.finished(item, key,
                                      await self.runner.call(self.hooks.exchange(item, key)))
            if self.hooks.store is not None:
                await self.hooks.store(key, out)   # acknowledged only once stored
            fut.set_result(out)
            return out
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # retrieved: a waiting duplicate re-raises it
            raise
        finally:
            self.inflight.pop(key, None)

    async def _first(self, key: str, idxs: list[int]) -> None:
        out = await self._call(key, self.items[idxs[0]])
        for j, i in enumerate(idxs):
            # a duplicate of a request in the same batch made no call of its own
            self._deliver(i, out if j == 0 else self.hooks.duplicate(out))

    async def _followup(self, i: int, item: Q) -> None:
        h = self.hooks
        key = h.key(item)
        if key not in self.inflight and h.lookup is not None:
            got = (await h.lookup([key])).get(key)
            if got is not None:
                self._deliver(i, h.hit(item, key, got))
                return
        if key in self.inflight:
            self._deliver(i, h.duplicate(await self.inflight[key]))
            return
        self._deliver(i, await self._call(key, item))


__all__ = ["Hooks", "PlainExchange", "RequestRunner", "make_pool"]
