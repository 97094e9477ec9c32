"""The endpoint pool alone: spread by spare capacity, ejection, probes, hedge priority."""

from __future__ import annotations

import asyncio

from ragmeter.calls.limiter import AdaptiveLimiter
from ragmeter.calls.pool import EJECT_AFTER, EndpointPool


def test_calls_go_to_the_member_with_most_spare_capacity() -> None:
    async def scenario() -> list[int]:
        pool = EndpointPool([AdaptiveLimiter(4), AdaptiveLimiter(4)])
        got = [await pool.acquire() for _ in range(6)]
        for idx, slot in got:
            await pool.release(idx, slot, "ok")
        return [idx for idx, _ in got]

    idxs = asyncio.run(scenario())
    assert idxs.count(0) == 3 and idxs.count(1) == 3


def test_failing_member_is_taken_out_then_probed_back() -> None:
    async def scenario() -> tuple[list[int], int, list[int]]:
        pool = EndpointPool([AdaptiveLimiter(4), AdaptiveLimiter(4)])
        for _ in range(EJECT_AFTER):
            slot = pool.members[0].admit()
            await pool.release(0, slot, "error", failure=True)
        during = []
        for _ in range(4):
            idx, slot = await pool.acquire()
            during.append(idx)
            await pool.release(idx, slot, "ok")
        pool.health[0].out_until = 1e-9          # the time out is over
        idx, slot = await pool.acquire()         # the idle member gets a probe
        await pool.release(idx, slot, "ok")
        after = []
        for _ in range(4):
            i, _slot = await pool.acquire()
            after.append(i)
        return during, pool.ejections, after

    during, ejections, after = asyncio.run(scenario())
    assert during == [1, 1, 1, 1] and ejections == 1
    assert 0 in after                           # back in the pool after a good probe


def test_a_pool_of_one_never_ejects_its_member() -> None:
    async def scenario() -> tuple[int, int]:
        pool = EndpointPool([AdaptiveLimiter(2)])
        for _ in range(2 * EJECT_AFTER):
            slot = pool.members[0].admit()
            await pool.release(0, slot, "error", failure=True)
        idx, _ = await asyncio.wait_for(pool.acquire(), 1.0)
        return idx, pool.ejections

    assert asyncio.run(scenario()) == (0, 0)


def test_a_hedge_goes_before_queued_calls() -> None:
    async def scenario() -> list[str]:
        pool = EndpointPool([AdaptiveLimiter(1)])
        idx, slot = await pool.acquire()
        order: list[str] = []

        async def take(name: str, priority: bool) -> None:
            i, s = await pool.acquire(priority=priority)
            order.append(name)
            await pool.release(i, s, "ok")

        queued = asyncio.ensure_future(take("queued", False))
        await asyncio.sleep(0.01)
        hedge = asyncio.ensure_future(take("hedge", True))
        await asyncio.sleep(0.01)
        await pool.release(idx, slot, "ok")
        await asyncio.gather(queued, hedge)
        return order

    assert asyncio.run(scenario()) == ["hedge", "queued"]
