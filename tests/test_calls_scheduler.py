"""The request runner used by a caller that is not an LLM judge: any ``send(idx, payload)``
through the same limiter, pool, retries, breaker, deduplication, cache and send gate."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from ragmeter.calls.errors import CallError
from ragmeter.calls.retry import RetryPolicy
from ragmeter.calls.scheduler import Hooks, PlainExchange, RequestRunner

FAST = RetryPolicy(initial=0.001, max=0.01, max_retries=3)


@dataclass
class Answer:
    text: str | None
    reason: str | None = None
    detail: str = ""


def failed(err: CallError, detail: str) -> Answer:
    return Answer(None, err.reason, detail)


class Calls(Hooks[dict, Answer]):
    def __init__(self, cache: dict[str, Answer] | None = None):
        self.cache = cache
        if cache is not None:
            self.lookup = self._lookup
            self.store = self._store

    def key(self, item: dict) -> str:
        return str(item["q"])

    def exchange(self, item: dict, key: str) -> PlainExchange[dict, Answer]:
        return PlainExchange(item, item, read=lambda r: Answer(r["a"]), fail=failed)

    async def _lookup(self, keys: list[str]) -> dict[str, Answer]:
        assert self.cache is not None
        return {k: self.cache[k] for k in keys if k in self.cache}

    async def _store(self, key: str, out: Answer) -> None:
        assert self.cache is not None
        if out.text is not None:
            self.cache[key] = out


class Flaky:
    """A system under test: fails every ``fail_every``-th call with a retryable error."""

    def __init__(self, fail_every: int = 0, refuse: bool = False, delay: float = 0.0):
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.fail_every = fail_every
        self.refuse = refuse
        self.delay = delay

    async def __call__(self, idx: int, payload: dict) -> dict[str, Any]:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if self.refuse:
                raise CallError("connection_error", "refused", retryable=True,
                                   unreachable=True)
            if self.fail_every and self.calls % self.fail_every == 0:
                raise CallError("http_5xx", "HTTP 503", retryable=True)
            return {"a": f"answer to {payload['q']}"}
        finally:
            self.in_flight -= 1


def run(send: Flaky, items: list[dict], hooks: Calls | None = None,
        **kw: Any) -> list[Answer]:
    async def main() -> list[Answer]:
        runner = RequestRunner.create(send, policy=FAST, timeout_s=2.0, calls=len(items), **kw)
        return await runner.run(items, hooks or Calls())

    return asyncio.run(main())


def test_retries_bound_concurrency_and_keep_order() -> None:
    send = Flaky(fail_every=4, delay=0.005)
    items = [{"q": i} for i in range(30)]
    out = run(send, items, max_in_flight=3)
    assert [a.text for a in out] == [f"answer to {i}" for i in range(30)]
    assert send.calls > 30 and send.peak <= 3


def test_duplicates_share_one_call_and_the_cache_serves_the_next_batch() -> None:
    cache: dict[str, Answer] = {}
    send = Flaky()
    items = [{"q": 1}, {"q": 2}, {"q": 1}]
    out = run(send, items, Calls(cache))
    assert send.calls == 2 and out[0] == out[2]
    again = Flaky()
    run(again, items, Calls(cache))
    assert again.calls == 0


def test_a_dead_system_fails_fast_with_the_breaker() -> None:
    send = Flaky(refuse=True)
    out = run(send, [{"q": i} for i in range(20)], max_in_flight=2)
    assert all(a.reason == "connection_error" for a in out)
    assert send.calls <= 5            # 3 refusals open the circuit; the rest is not sent
    assert any("endpoint unreachable" in a.detail for a in out)


def test_a_gate_stop_propagates_after_the_calls_in_flight() -> None:
    class Stop(Exception):
        pass

    class Gate:
        sent = 0

        def before_send(self, request: Any) -> None:
            if self.sent >= 5:
                raise Stop("budget")
            self.sent += 1

        def after_send(self, request: Any, reply_cost: float, tokens_in: int,
                       tokens_out: int) -> None:
            return None

    send = Flaky(delay=0.005)
    with pytest.raises(Stop):
        run(send, [{"q": i} for i in range(20)], gate=Gate())
    assert send.calls == 5
