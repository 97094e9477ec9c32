"""The circuit breaker of a batch: opens only when every endpoint keeps refusing."""

from __future__ import annotations

import asyncio
import time

from ragmeter.calls.breaker import Breaker
from ragmeter.calls.errors import CallError

REFUSED = CallError("connection_error", "refused", retryable=True, unreachable=True)
SERVER = CallError("http_5xx", "HTTP 500", retryable=True)


def test_opens_after_every_endpoint_refused_in_a_row() -> None:
    br = Breaker(2, after=2)
    for _ in range(3):
        br.record(0, REFUSED)
    assert not br.tripped               # endpoint 1 was never refused
    br.record(1, REFUSED)
    br.record(1, REFUSED)
    assert br.tripped and br.detail is not None and "endpoint unreachable" in br.detail


def test_other_errors_reset_and_one_success_keeps_it_closed() -> None:
    br = Breaker(1, after=2)
    br.record(0, REFUSED)
    br.record(0, SERVER)                # an answer, even an error: the endpoint is up
    br.record(0, REFUSED)
    assert not br.tripped
    br.record(0, None)                  # a success in this batch
    for _ in range(5):
        br.record(0, REFUSED)
    assert not br.tripped


def test_sleep_ends_when_the_breaker_opens() -> None:
    async def scenario() -> float:
        br = Breaker(1, after=1)
        t0 = time.perf_counter()
        sleeper = asyncio.ensure_future(br.sleep(5.0))
        await asyncio.sleep(0.05)
        br.record(0, REFUSED)
        await sleeper
        return time.perf_counter() - t0

    assert asyncio.run(scenario()) < 1.0
