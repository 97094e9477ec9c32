"""One attempt of one call: a pool slot, the send gate, a timeout, and hedging.

:class:`Dispatcher` is generic over what is sent: ``send(idx, payload)`` is any coroutine
that delivers ``payload`` to endpoint ``idx`` of the pool and returns its result, or raises
:class:`~ragmeter.calls.errors.CallError` (:class:`~ragmeter.calls.seam.Send`). A call that runs past the hedge delay
(``hedge_after_p90`` × the p90 of recent successful latencies) gives its slot back and races a
duplicate on the next free slot; the first success wins.

The send gate (``before_send``/``after_send``) sees every payload that goes out: first tries,
retries and hedged duplicates. An exception from ``before_send`` (a budget's stop) sends
nothing more: it is kept in :attr:`Dispatcher.stop` and every later attempt raises
:class:`SendStopped` at once, so in-flight calls finish and the caller re-raises the stop.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from ragmeter.calls.errors import CallError
from ragmeter.calls.pool import EndpointPool
from ragmeter.calls.record import CallRecord
from ragmeter.calls.seam import Gate, Send

R = TypeVar("R")

#: a stalled call is hedged only after this many successful latencies were seen
HEDGE_MIN_SAMPLES = 8
#: and never earlier than this (seconds)
HEDGE_MIN_S = 0.25
#: a stalled duplicate may itself be duplicated once more
MAX_HEDGES = 2


class SendStopped(Exception):
    """The send gate refused a send; the batch stops sending (``Dispatcher.stop`` says why)."""


@dataclass
class Attempt(Generic[R]):
    """One attempt's outcome: a result or an error, on which endpoint, how long, and when it
    was sent (``time.perf_counter()``)."""

    result: R | None
    err: CallError | None
    latency: float
    idx: int = 0
    started: float = 0.0


class HedgeClock:
    """Recent successful latencies and the delay after which a call counts as stalled."""

    def __init__(self, factor: float | None, timeout_s: float):
        self.factor = factor
        self.timeout_s = timeout_s
        self.latencies: deque[float] = deque(maxlen=128)
        self.seen = 0
        self._at = -1
        self._after: float | None = None

    def record(self, latency: float) -> None:
        self.latencies.append(latency)
        self.seen += 1

    def after(self) -> float | None:
        """``factor`` × p90 of recent latencies (None until enough were seen, or when it
        would not come before the timeout); recomputed every 8 new latencies."""
        if self.factor is None or len(self.latencies) < HEDGE_MIN_SAMPLES:
            return None
        if self._at != self.seen // 8:
            self._at = self.seen // 8
            lat = sorted(self.latencies)
            p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))]
            after = max(HEDGE_MIN_S, self.factor * p90)
            self._after = after if after < 0.8 * self.timeout_s else None
        return self._after


class Dispatcher(Generic[R]):
    """Sends one payload on the pool member with spare capacity (see the module doc).

    ``hedgeable[idx]`` says whether member ``idx`` may be raced by a duplicate;
    ``measure(result)`` gives ``(cost, tokens_in, tokens_out)`` for the gate's ``after_send``.
    """

    def __init__(self, pool: EndpointPool, send: Send[R], *,
                 timeout_s: float, clock: HedgeClock, hedgeable: Sequence[bool],
                 gate: Gate | None = None,
                 measure: Callable[[R], tuple[float, int, int]] | None = None,
                 totals: CallRecord | None = None):
        self.pool = pool
        self.send = send
        self.timeout_s = timeout_s
        self.clock = clock
        self.hedgeable = list(hedgeable)
        self.gate = gate
        self.measure = measure
        self.stop: BaseException | None = None
        self._bg: asyncio.Future[None] | None = None
        #: called once when the gate stops the batch (the runner ends its backoffs)
        self.on_stop: Callable[[], None] | None = None
        #: every payload sent (a caller's totals when it passed them, else this batch's)
        self.totals = totals if totals is not None else CallRecord()
        self.decisions: Counter[str] = Counter()

    async def _raw(self, idx: int, payload: Any, request: Any,
                   deadline: _Deadline) -> tuple[R | None, CallError | None]:
        """The send itself, ended by ``deadline`` (a timer on this task, not another task);
        ``after_send`` follows every send, also one cancelled or timed out."""
        out: R | None = None
        err: CallError | None = None
        try:
            out = await self.send(idx, payload)
        except asyncio.CancelledError:
            if not deadline.expired:
                raise
            err = CallError("timeout", f"no reply within {self.timeout_s:g} s",
                               retryable=True)
        except CallError as exc:
            err = exc
        except Exception as exc:  # a backend bug or library error: unscored, not raised
            err = CallError("backend_error", f"{type(exc).__name__}: {exc}", fault=False)
        finally:
            if self.gate is not None:
                cost, t_in, t_out = (self.measure(out) if out is not None and self.measure
                                     else (0.0, 0, 0))
                self.gate.after_send(request, cost, t_in, t_out)
        return out, err

    def _open_gate(self, request: Any) -> None:
        """The gate's ``before_send``; a refusal stops every later send of this batch."""
        if self.stop is not None:
            raise SendStopped(str(self.stop))
        if self.gate is not None:
            try:
                self.gate.before_send(request)
            except BaseException as exc:  # a budget stop may be a KeyboardInterrupt subclass
                self.stop = exc
                self._bg = asyncio.ensure_future(self.pool.wake_all())  # abandon the queue
                if self.on_stop is not None:
                    self.on_stop()
                raise SendStopped(str(exc)) from None
        self.totals.sent += 1

    async def attempt(self, payload: Callable[[], Any], request: Any = None, *,
                      depth: int = 0,
                      skip: Callable[[], bool] | None = None) -> Attempt[R] | None:
        """One attempt; ``payload()`` is built once a slot is taken. None: ``skip()`` said,
        once a slot was free, that the call is no longer wanted (an open circuit)."""
        pool = self.pool
        if self.stop is not None:
            raise SendStopped(str(self.stop))
        got = await pool.acquire_unless(lambda: self.stop is not None, priority=depth > 0)
        if got is None:
            raise SendStopped(str(self.stop))
        idx, slot = got
        task: asyncio.Future[tuple[R | None, CallError | None]] | None = None
        try:
            if skip is not None and skip():
                return None
            self._open_gate(request)
            t0 = time.perf_counter()
            deadline = _Deadline()
            task = asyncio.ensure_future(self._raw(idx, payload(), request, deadline))
            deadline.start(task, self.timeout_s)
            if depth < MAX_HEDGES and self.hedgeable[idx] and await self._stalled(task, t0):
                await pool.release(idx, slot, "stalled")
                return await self._race(task, t0, idx, payload, request, depth, skip)
            result, err = await task
            latency = time.perf_counter() - t0
            outcome, retry_after = "ok", None
            if err is not None:
                outcome = "rate_limited" if err.rate_limited else "error"
                retry_after = err.retry_after
            else:
                self.clock.record(latency)
            # a reply's health is known once the caller read it (Exchange.usable)
            await pool.release(idx, slot, outcome, retry_after,
                               failure=err is not None and err.fault, health=err is not None)
            return Attempt(result, err, latency, idx, t0)
        finally:
            if not slot.released:   # cancelled or stopped: give the slot back
                pool.release_nowait(idx, slot)
            if task is not None and not task.done():
                task.cancel()
                deadline.stop()

    async def _stalled(self, task: asyncio.Future[Any], t0: float) -> bool:
        """Wait for ``task`` while it may still be hedged; True once it counts as stalled."""
        while self.clock.factor is not None and not task.done():
            after = self.clock.after()   # None while too few latencies were seen
            elapsed = time.perf_counter() - t0
            if after is not None and elapsed >= after:
                return True
            if elapsed >= 0.8 * self.timeout_s:
                return False
            await asyncio.wait({task}, timeout=HEDGE_MIN_S if after is None else after - elapsed)
        return False

    async def _race(self, task: asyncio.Future[tuple[R | None, CallError | None]], t0: float,
                    idx: int, payload: Callable[[], Any], request: Any, depth: int,
                    skip: Callable[[], bool] | None) -> Attempt[R]:
        """A stalled call against its duplicate: the first success wins."""
        self.decisions["hedged"] += 1
        twin = asyncio.ensure_future(self.attempt(payload, request, depth=depth + 1,
                                                  skip=skip))
        try:
            both: set[asyncio.Future[Any]] = {task, twin}
            done, _ = await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            twin_failed = twin in done and (twin.exception() is not None
                                            or _failed(twin.result()))
            won = twin.result() if twin in done and not twin_failed else None
            if won is not None:    # the call took from its first send to the twin's reply
                self.decisions["hedge_won"] += 1
                return replace(won, started=t0, latency=time.perf_counter() - t0)
            result, err = await task   # the duplicate failed, or the first call finished
            first = Attempt(result, err, time.perf_counter() - t0, idx, t0)
            if err is None:
                return first
            try:
                second = await twin
            except SendStopped:        # the gate refused the duplicate
                return first
            return first if second is None else second
        finally:
            if not twin.done():
                twin.cancel()


class _Deadline:
    """Cancels a send task when its time is up, marked so the task reports a timeout."""

    expired = False
    handle: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Future[Any], timeout_s: float) -> None:
        def expire() -> None:
            if not task.done():
                self.expired = True
                task.cancel()

        self.handle = asyncio.get_running_loop().call_later(timeout_s, expire)
        task.add_done_callback(lambda _: self.stop())

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


def _failed(got: Attempt[Any] | None) -> bool:
    return got is None or got.err is not None


__all__ = ["HEDGE_MIN_S", "HEDGE_MIN_SAMPLES", "MAX_HEDGES", "Attempt", "Dispatcher",
           "HedgeClock", "SendStopped"]
