"""The endpoint pool: the endpoints of one caller, each with its own adaptive limiter.

A call takes a slot on the member with the most spare capacity; a member that keeps failing
is taken out for a while and comes back through one probe call at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragmeter.calls.limiter import AdaptiveLimiter, Slot

log = logging.getLogger("ragmeter.calls")


#: consecutive failures (connection errors, 5xx, timeouts) that take a pool member out
EJECT_AFTER = 3
#: first time out of the pool (seconds); doubles on each failed return, up to EJECT_MAX_S
EJECT_S = 2.0
EJECT_MAX_S = 60.0


@dataclass
class _Health:
    fails: int = 0
    out_until: float = 0.0    # > 0: taken out; after it passes, one probe call at a time
    backoff: float = EJECT_S
    ejections: int = 0


class EndpointPool:
    """The endpoints of one caller (replicas of one model, say), each with its own
    :class:`AdaptiveLimiter`.

    A call goes to the member with the most spare capacity; a member that fails
    ``EJECT_AFTER`` times in a row is taken out for ``EJECT_S`` (doubling up to
    ``EJECT_MAX_S``), then gets one probe call at a time until one succeeds. A pool of one
    never takes its only member out (its calls' own retries and backoff apply).
    """

    def __init__(self, limiters: Sequence[AdaptiveLimiter]):
        lock = asyncio.Lock()
        self._cond = asyncio.Condition(lock)
        # waiting hedges: woken through their own condition, before any ordinary waiter
        self._urgent = asyncio.Condition(lock)
        self._priority = 0
        self._bg: set[asyncio.Task[None]] = set()
        self.members = list(limiters)
        for lim in self.members:
            lim._cond = self._cond
        self.health = [_Health() for _ in self.members]

    @property
    def in_flight(self) -> int:
        return sum(m.in_flight for m in self.members)

    def _pick(self, now: float) -> tuple[int | None, float | None]:
        best, best_free, wake = None, 0.0, None
        single = len(self.members) == 1
        for i, lim in enumerate(self.members):
            h = self.health[i]
            if not single and h.out_until:
                if h.out_until > now:
                    wake = h.out_until if wake is None else min(wake, h.out_until)
                    continue
                if lim.in_flight > 0:          # returning: one probe at a time
                    continue
            if lim.paused_until > now:
                wake = lim.paused_until if wake is None else min(wake, lim.paused_until)
                continue
            free = lim.free(now)
            if free <= 0:
                continue
            share = free / max(1, lim.limit)
            if best is None or share > best_free:
                best, best_free = i, share
        return best, wake

    async def acquire(self, *, priority: bool = False) -> tuple[int, Slot]:
        """A slot on the member with the most spare capacity; ``priority`` (a hedge of a
        stalled call) goes before every queued ordinary call."""
        got = await self.acquire_unless(lambda: False, priority=priority)
        assert got is not None
        return got

    async def acquire_unless(self, abandon: Callable[[], bool], *,
                             priority: bool = False) -> tuple[int, Slot] | None:
        """:meth:`acquire`, or None once ``abandon()`` is true (checked at every wake-up;
        see :meth:`wake_all`)."""
        loop = asyncio.get_running_loop()
        async with self._cond:
            if priority:
                self._priority += 1
            try:
                while True:
                    if abandon():
                        return None
                    now = loop.time()
                    idx, wake = self._pick(now)
                    if idx is not None and (priority or not self._priority):
                        slot = self.members[idx].admit()
                        if self._pick(now)[0] is not None:
                            self._wake()       # more room: pass it on to the next waiter
                        return idx, slot
                    if idx is not None:        # free, but a hedge is waiting: let it in
                        self._urgent.notify(1)
                    cond = self._urgent if priority else self._cond
                    try:
                        if wake is not None:
                            with contextlib.suppress(asyncio.TimeoutError):
                                await asyncio.wait_for(cond.wait(), max(0.0, wake - now))
                        else:
                            await cond.wait()
                    except asyncio.CancelledError:
                        self._wake()           # a wake-up this waiter may have taken
                        raise
            finally:
                if priority:
                    self._priority -= 1

    async def release(self, idx: int, slot: Slot | None, outcome: str,
                      retry_after: float | None = None, *, failure: bool = False,
                      health: bool = True) -> None:
        """Account a call on member ``idx``; ``failure`` marks an endpoint fault (connection
        error, 5xx, timeout) for the member's health. ``health=False`` leaves the health to
        a later :meth:`read` (a reply that still has to be read)."""
        loop = asyncio.get_running_loop()
        async with self._cond:
            now = loop.time()
            if slot is not None:
                self.members[idx].settle(slot, outcome, retry_after, now)
            if outcome != "stalled" and health:
                self._health(idx, outcome == "ok", failure, now)
            self._wake()

    async def read(self, idx: int, usable: bool) -> None:
        """The health of member ``idx`` after its reply was read: an unusable reply (HTTP 200
        with nothing parseable in it) counts like a server error."""
        h = self.health[idx]
        was_out = bool(h.out_until)
        self._health(idx, usable, not usable, asyncio.get_running_loop().time())
        if was_out and not h.out_until:        # back in the pool: its room is free
            async with self._cond:
                self._wake()

    async def wake_all(self) -> None:
        """Wake every waiter to re-check (a batch that stopped abandons its waiting calls)."""
        async with self._cond:
            self._cond.notify_all()
            self._urgent.notify_all()

    def release_nowait(self, idx: int, slot: Slot) -> None:
        """Free the slot of a cancelled call (from a ``finally``) and wake waiters soon."""
        self.members[idx].settle(slot, "stalled", None, 0.0)

        async def wake() -> None:
            async with self._cond:
                self._wake()

        with contextlib.suppress(RuntimeError):   # no loop any more: nobody is waiting
            task = asyncio.get_running_loop().create_task(wake())
            self._bg.add(task)
            task.add_done_callback(self._bg.discard)

    def _wake(self) -> None:
        """Wake one waiter, a hedge first (lock held). A waiter that takes a slot and still
        sees room wakes the next one, so each freed slot costs one wake-up, not a herd."""
        if self._priority:
            self._urgent.notify(1)
        else:
            self._cond.notify(1)

    def _health(self, idx: int, ok: bool, failure: bool, now: float) -> None:
        h = self.health[idx]
        if ok:
            if h.out_until:
                log.info("endpoint %d is back in the pool", idx)
            h.fails, h.out_until, h.backoff = 0, 0.0, EJECT_S
            return
        if not failure or len(self.members) == 1:
            return
        h.fails += 1
        if h.out_until or h.fails >= EJECT_AFTER:   # a failed probe goes straight back out
            h.out_until = now + h.backoff
            h.backoff = min(EJECT_MAX_S, h.backoff * 2)
            h.fails = 0
            h.ejections += 1
            log.info("endpoint %d taken out of the pool for %.1f s", idx,
                     h.out_until - now)

    @property
    def ejections(self) -> int:
        return sum(h.ejections for h in self.health)


__all__ = ["EJECT_AFTER", "EJECT_MAX_S", "EJECT_S", "EndpointPool"]
