"""The adaptive limiter alone: reductions per overload wave, growth, probes, holds."""

from __future__ import annotations

import asyncio
import itertools

from ragmeter.calls.limiter import AdaptiveLimiter, LimiterMemory


async def _full_window(lim: AdaptiveLimiter, successes: int,
                       on_ok: object = None) -> list[int]:
    """Keep the window full (every new call takes the last free slot); return the limit seen
    after each success."""
    slots = [await lim.acquire() for _ in range(lim.limit)]
    seen = []
    for _ in range(successes):
        await lim.release(slots.pop(0), "ok")
        seen.append(lim.limit)
        while lim.in_flight < lim.limit:
            slots.append(await lim.acquire())
    for s in slots:
        await lim.release(s, "ok")
    return seen


def test_same_wave_429s_cause_one_reduction() -> None:
    async def scenario() -> AdaptiveLimiter:
        lim = AdaptiveLimiter(16)
        slots = [await lim.acquire() for _ in range(16)]  # a server with 8 slots takes 0..7
        for s in slots[8:]:                                # and refuses 8..15 at once
            await lim.release(s, "rate_limited", retry_after=1.0)
        return lim

    lim = asyncio.run(scenario())
    # the first few 429s could be sporadic; once they are 40 % of the window they are
    # overload: one cut, and the rest of the wave is ignored
    assert lim.cuts == 1 and lim.sporadic + lim.ignored == 7
    # the fewest in flight among the refused calls was 8: that is the estimate, not 16 // 2
    assert lim.limit == lim.ceiling == 8
    assert lim.paused_until == 0.0  # one wave: no hold, a lone wave only delays its retries


def test_uninformative_429_halves_and_keeps_a_ceiling_below_the_old_limit() -> None:
    async def scenario() -> tuple[int, int, int]:
        lim = AdaptiveLimiter(8)
        s = await lim.acquire()  # nothing else in flight: says nothing about a slot count
        await lim.release(s, "rate_limited", retry_after=0.0)
        return lim.limit, lim.ceiling, lim.cuts

    assert asyncio.run(scenario()) == (4, 7, 1)


def test_growth_never_exceeds_the_ceiling_before_a_clean_stretch() -> None:
    async def scenario() -> list[int]:
        lim = AdaptiveLimiter(16, LimiterMemory(16, limit=4, ceiling=8))
        return await _full_window(lim, 120)

    seen = asyncio.run(scenario())
    # +1 at a time, each step after at least `limit` successes (one round trip)
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(seen))
    for lim in range(4, 8):
        assert seen.count(lim) >= lim
    at_ceiling, first_probe = seen.index(8), seen.index(9)
    assert at_ceiling >= 4 + 5 + 6 + 7 - 1
    # then CLEAN_STRETCH × 8 = 32 clean successes at the ceiling before probing 9
    assert 4 * 8 <= first_probe - at_ceiling <= 4 * 8 + 1
    assert max(seen[:first_probe]) == 8


def test_refused_probe_restores_the_ceiling_and_backs_off() -> None:
    async def scenario() -> tuple[int, int, int]:
        mem = LimiterMemory(16, limit=8, ceiling=8)
        lim = AdaptiveLimiter(16, mem)
        await _full_window(lim, 33)  # 32 clean at 8: probe 9
        assert lim.limit == 9
        slots = [await lim.acquire() for _ in range(9)]
        await lim.release(slots[8], "rate_limited", retry_after=1.0)  # the 9th is refused
        for s in slots[:8]:
            await lim.release(s, "ok")
        return lim.limit, lim.ceiling, mem.probe_backoff

    assert asyncio.run(scenario()) == (8, 8, 2)


def test_429s_after_a_reduction_hold_new_calls_until_success_or_retry_after() -> None:
    async def scenario(success_after: float | None) -> tuple[float, float]:
        lim = AdaptiveLimiter(4)
        loop = asyncio.get_running_loop()
        old = await lim.acquire()
        s = await lim.acquire()
        await lim.release(s, "rate_limited", retry_after=0.3)  # first: cut, no hold
        t0 = loop.time()
        s = await lim.acquire()  # a lone 429 does not stop other calls
        lone = loop.time() - t0
        await lim.release(s, "rate_limited", retry_after=0.3)  # again, no success since: hold
        if success_after is not None:
            async def succeed() -> None:
                await asyncio.sleep(success_after)
                await lim.release(old, "ok")
            task = asyncio.ensure_future(succeed())
        else:
            await lim.release(old, "error")  # frees its slot: only the hold can stop us
        t0 = loop.time()
        await lim.acquire()
        held = loop.time() - t0
        if success_after is not None:
            await task
        return lone, held

    lone, held = asyncio.run(scenario(None))
    assert lone < 0.25 and held >= 0.28
    lone, held = asyncio.run(scenario(0.05))
    assert held < 0.25  # a success ends the hold early: the server has room again


def test_limit_bounds_calls_in_flight_and_wakes_a_waiter_on_release() -> None:
    async def scenario() -> tuple[int, bool, int]:
        lim = AdaptiveLimiter(2)
        a, b = await lim.acquire(), await lim.acquire()
        waiter = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0.01)
        blocked = not waiter.done()
        await lim.release(a, "ok")
        c = await asyncio.wait_for(waiter, 1.0)
        peak = lim.peak
        await lim.release(b, "ok")
        await lim.release(c, "ok")
        return peak, blocked, lim.in_flight

    assert asyncio.run(scenario()) == (2, True, 0)


def test_sporadic_429_keeps_the_window_and_a_stalled_slot_is_only_freed() -> None:
    async def scenario() -> tuple[int, int, int, int]:
        lim = AdaptiveLimiter(8)
        slots = [await lim.acquire() for _ in range(8)]
        for s in slots[:7]:
            await lim.release(s, "ok")
        await lim.release(slots[7], "stalled")   # a hedged call: no outcome counted
        s = await lim.acquire()
        others = [await lim.acquire() for _ in range(3)]
        for o in others:
            await lim.release(o, "ok")
        await lim.release(s, "rate_limited", retry_after=0.1)  # 1 of 12: sporadic
        return lim.limit, lim.cuts, lim.sporadic, lim.in_flight

    assert asyncio.run(scenario()) == (8, 0, 1, 0)


def test_memory_of_another_cap_is_not_reused() -> None:
    mem = LimiterMemory(16, limit=4, ceiling=6)
    assert AdaptiveLimiter(16, mem).mem is mem
    fresh = AdaptiveLimiter(8, mem)
    assert fresh.mem is not mem and fresh.limit == 8 and fresh.ceiling == 8
