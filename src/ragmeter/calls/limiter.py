"""The adaptive limiter: a bounded number of calls in flight, adapted to HTTP 429.

One :class:`AdaptiveLimiter` per event loop and endpoint; what it learned lives in a
:class:`LimiterMemory` of plain numbers, so a later batch (a fresh event loop) starts from it.
Used by :class:`~ragmeter.calls.pool.EndpointPool`, which holds one limiter per endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass

log = logging.getLogger("ragmeter.calls")


@dataclass
class LimiterMemory:
    """What an :class:`AdaptiveLimiter` has learned, as plain numbers.

    Kept by the caller (the judge, a target's caller), so every batch (each may run on a
    fresh event loop) starts from what the earlier ones learned instead of re-learning from
    the cap.
    """

    cap: int
    limit: int = 0
    ceiling: int = 0
    gen: int = 0              # number of reductions so far; a slot remembers the gen it started in
    since_growth: int = 0     # successes counted toward the next +1
    clean: int = 0            # successes at the ceiling with no 429 (probe after a stretch)
    ok_since_cut: int = 0     # successes since the last reduction
    probe_backoff: int = 1    # the clean stretch is ``4 × limit × probe_backoff`` successes
    probing: bool = False     # the ceiling was raised by a probe not yet confirmed

    def __post_init__(self) -> None:
        self.limit = self.limit or self.cap
        self.ceiling = self.ceiling or self.cap


@dataclass
class Slot:
    """One admitted call: the reduction generation it started in and how many were ahead."""

    gen: int
    before: int   # other calls in flight when this one was admitted
    limit: int    # the limit in force when it was admitted
    seq: int = 0  # admission number (for the 429-rate window)
    released: bool = False


#: successes at the ceiling (× limit) before probing one slot above it
CLEAN_STRETCH = 4
#: with no ``Retry-After``, a hold after repeated 429s lasts at most this long (seconds)
DEFAULT_HOLD_S = 1.0
#: the 429-rate window spans the last ``max(WINDOW_MIN, 2 × limit)`` admitted calls
WINDOW_MIN = 16
#: a lower 429 rate that still means overload when refusals and successes separate by the
#: number of calls in flight
SEPARATED_RATE = 0.15
#: 429s per admitted call in the window at which they mean sustained overload (a server
#: refusing above its slot count refuses about half a window sent at twice its size; random
#: 429s at 20 % reach this in a window of 32 with probability ~5e-4)
OVERLOAD_RATE = 0.45


class AdaptiveLimiter:
    """Bounded in-flight calls, adapted to HTTP 429 (one instance per event loop and endpoint).

    The learned numbers live in a :class:`LimiterMemory` (pass the caller's to share them
    across batches and loops); the lock/condition is this object's own, i.e. per loop (or
    shared by the members of an :class:`EndpointPool`).

    * **Sporadic or sustained.** A 429 only shrinks the window when it signals overload:
      the 429s among the last ``max(WINDOW_MIN, 2 × limit)`` admitted calls reach
      ``OVERLOAD_RATE``; or they reach ``SEPARATED_RATE`` and every recent refusal had more
      calls in flight than every recent success (a slot count, not chance); or it refused
      the slot just probed above the ceiling (then only the probe is undone). Any other 429 is sporadic: the call itself waits its
      ``Retry-After`` and retries; the window stays.
    * **One reaction per overload wave.** Each admitted call remembers the reduction
      generation it started in. A 429 from a call started *before* the last reduction belongs
      to the wave that reduction already answered: it is counted and otherwise ignored.
    * **Cut to the estimate.** The fewest other calls in flight among this wave's refused
      calls (``before``) estimates what the server holds. If it is informative
      (``>= limit // 2``) the limit *and* the ceiling are cut to it; otherwise the limit
      halves and the ceiling is ``limit - 1``.
    * **Hold only when 429s keep coming:** overload again with no success since the previous
      reduction: new calls wait until the next success or ``Retry-After`` (``DEFAULT_HOLD_S``
      without one), whichever is first.
    * **Growth:** +1 per ``limit`` successes of calls that started in the current generation
      with the window full (one round trip), never above the ceiling. After
      ``CLEAN_STRETCH × limit`` such successes at the ceiling with no cut, probe: ceiling and
      limit +1 (never above the cap). A probe refused at once doubles the next stretch (up to
      ×16); one that holds resets it.
    """

    def __init__(self, cap: int, memory: LimiterMemory | None = None,
                 cond: asyncio.Condition | None = None):
        if memory is None or memory.cap != cap:
            memory = LimiterMemory(cap)
        self.mem = memory
        self.cap = cap
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0
        self.cuts = 0
        self.pauses = 0
        self.ignored = 0    # 429s of an already answered wave
        self.sporadic = 0   # 429s that did not signal overload (retried, window kept)
        self._adm = 0
        self._w429: deque[tuple[int, int, int]] = deque()   # (seq, before, gen)
        self._wok: deque[tuple[int, int]] = deque()         # (seq, before)
        self._cond = cond or asyncio.Condition()

    @property
    def limit(self) -> int:
        return self.mem.limit

    @property
    def ceiling(self) -> int:
        return self.mem.ceiling

    def free(self, now: float) -> int:
        """Calls this limiter would admit now."""
        if self.paused_until > now:
            return 0
        return self.mem.limit - self.in_flight

    def admit(self) -> Slot:
        """Take a slot (the caller holds the condition and checked :meth:`free`)."""
        slot = Slot(self.mem.gen, self.in_flight, self.mem.limit, self._adm)
        self._adm += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        return slot

    async def acquire(self) -> Slot:
        loop = asyncio.get_running_loop()
        async with self._cond:
            while True:
                wait = self.paused_until - loop.time()
                if wait > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._cond.wait(), wait)
                    continue
                if self.in_flight < self.mem.limit:
                    break
                await self._cond.wait()
            return self.admit()

    async def release(self, slot: Slot, outcome: str, retry_after: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        async with self._cond:
            self.settle(slot, outcome, retry_after, loop.time())
            # wake only as many waiters as there are free slots (no thundering herd)
            free = self.mem.limit - self.in_flight
            if free > 0:
                self._cond.notify(free)

    def settle(self, slot: Slot, outcome: str, retry_after: float | None, now: float) -> None:
        """Account a finished call (the caller holds the condition). ``outcome`` "stalled"
        frees the slot of a call that is still running (it was hedged)."""
        if slot.released:
            return
        slot.released = True
        self.in_flight -= 1
        if outcome == "stalled":
            return
        m = self.mem
        self._prune()
        if outcome == "rate_limited":
            self._w429.append((slot.seq, slot.before, slot.gen))
            if slot.gen != m.gen:
                self.ignored += 1          # same wave as the last reduction
            elif m.probing and slot.before >= m.ceiling - 1:
                self._refuse_probe()
            elif self._overloaded(slot):
                self._reduce(slot, now, retry_after)
            else:
                self.sporadic += 1
        elif outcome == "ok":
            self._wok.append((slot.seq, slot.before))
            m.ok_since_cut += 1
            if self.paused_until:          # a success ends a hold early
                self.paused_until = 0.0
            if slot.gen == m.gen and slot.before + 1 >= slot.limit:
                self._grow()

    def _window(self) -> int:
        return max(WINDOW_MIN, 2 * self.mem.limit)

    def _prune(self) -> None:
        lo = self._adm - self._window()
        while self._w429 and self._w429[0][0] < lo:
            self._w429.popleft()
        while self._wok and self._wok[0][0] < lo:
            self._wok.popleft()

    def _overloaded(self, slot: Slot) -> bool:
        rate = len(self._w429) / max(1, min(self._adm, self._window()))
        if rate >= OVERLOAD_RATE:
            return True
        # concurrency-bound: every recent refusal had more calls in flight than every recent
        # success (random 429s fall at every level and never separate like this)
        if rate >= SEPARATED_RATE and len(self._w429) >= 3 and len(self._wok) >= 3:
            return min(b for _, b, _ in self._w429) > max(b for _, b in self._wok)
        return False

    def _refuse_probe(self) -> None:
        """The slot probed above the ceiling was refused: back to the old ceiling, and wait
        twice as long before the next probe."""
        m = self.mem
        m.probe_backoff = min(16, m.probe_backoff * 2)
        m.probing = False
        m.limit = m.ceiling = max(1, m.ceiling - 1)
        m.gen += 1
        m.ok_since_cut = m.since_growth = m.clean = 0
        self.cuts += 1

    def _reduce(self, slot: Slot, now: float, retry_after: float | None) -> None:
        m = self.mem
        old = m.limit
        m.probing = False
        estimate = min([b for _, b, g in self._w429 if g == m.gen] or [slot.before])
        if estimate >= max(1, old // 2):
            m.limit = m.ceiling = max(1, min(estimate, old))
        else:
            m.limit = max(1, old // 2)
            m.ceiling = max(m.limit, old - 1)
        if m.gen > 0 and m.ok_since_cut == 0:  # 429s keep coming after a reduction
            hold = retry_after if retry_after is not None else DEFAULT_HOLD_S
            if hold > 0:
                self.paused_until = max(self.paused_until, now + hold)
                self.pauses += 1
        m.gen += 1
        m.ok_since_cut = m.since_growth = m.clean = 0
        self.cuts += 1
        log.debug("429 overload with %d others in flight: limit %d -> %d, ceiling %d%s",
                  slot.before, old, m.limit, m.ceiling,
                  " (hold)" if self.paused_until > now else "")

    def _grow(self) -> None:
        m = self.mem
        if m.limit < m.ceiling:
            m.since_growth += 1
            if m.since_growth >= m.limit:
                m.limit += 1
                m.since_growth = 0
            return
        if m.limit >= self.cap:
            return
        m.clean += 1
        if m.clean >= CLEAN_STRETCH * m.limit * m.probe_backoff:
            if m.probing:                      # the last probe held for a whole stretch
                m.probe_backoff = 1
            m.ceiling = m.limit = min(self.cap, m.limit + 1)
            m.clean = 0
            m.probing = True


__all__ = ["CLEAN_STRETCH", "DEFAULT_HOLD_S", "OVERLOAD_RATE", "SEPARATED_RATE", "WINDOW_MIN",
           "AdaptiveLimiter", "LimiterMemory", "Slot"]
