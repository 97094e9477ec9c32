"""One failure type, one exception map, one status map and one ``Retry-After`` parser for every
caller of ragmeter.calls (the judge, targets, the embeddings client), checked over real
sockets."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from typing import Any

import pytest

from ragmeter.calls.errors import CallError
from ragmeter.calls.http import parse_retry_after, status_error, transport_error
from ragmeter.data.sample import Sample
from ragmeter.serving import BackgroundServer
from ragmeter.targets import TargetSession
from ragmeter.targets.base import target_reason


class _Scripted(BackgroundServer):
    """Answers each request with the next ``(status, body, headers)`` of a script (the last
    one repeats) and records when each request arrived."""

    what = "scripted test server"

    def __init__(self, script: list[tuple[int, str, dict[str, str]]]):
        super().__init__()
        self.script = script
        self.times: list[float] = []

    def app(self) -> Any:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            await request.read()
            self.times.append(time.perf_counter())
            status, body, headers = self.script[min(len(self.times), len(self.script)) - 1]
            kind = "text/html" if body.startswith("<") else "application/json"
            return web.Response(status=status, text=body, headers=headers, content_type=kind)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app


def _http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(" 3 ") == 3.0
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("") is None
    assert parse_retry_after("soon") is None and parse_retry_after("nan") is None
    assert 25 <= (parse_retry_after(_http_date(30)) or 0) <= 31
    assert parse_retry_after(_http_date(-60)) == 0.0          # a date in the past: now
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00") is None   # no zone: not HTTP


@pytest.mark.parametrize(("status", "reason", "retryable", "fault"), [
    (429, "rate_limited", True, False), (500, "http_5xx", True, True),
    (503, "http_5xx", True, True), (408, "timeout", True, True),
    (400, "http_4xx", False, False), (401, "http_4xx", False, False),
])
def test_status_map(status: int, reason: str, retryable: bool, fault: bool) -> None:
    err = status_error(status, "body sk-abcdefghijklmnopqrstuv", {"Retry-After": _http_date(5)})
    assert (err.reason, err.retryable, err.fault, err.status) == (reason, retryable, fault,
                                                                   status)
    assert err.rate_limited is (status == 429)
    assert "sk-abcdefghijklmnop" not in err.detail               # masked in the detail
    if retryable:
        assert err.retry_after is not None and 3.5 <= err.retry_after <= 5.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_one_exception_map_for_a_refused_connection_and_a_timeout() -> None:
    import aiohttp

    port = _free_port()   # nothing listens there

    async def refused() -> CallError:
        async with aiohttp.ClientSession() as s:
            try:
                await s.get(f"http://u:pw-123@127.0.0.1:{port}/x")
            except aiohttp.ClientError as exc:
                return transport_error(exc, f"http://u:pw-123@127.0.0.1:{port}/x")
        raise AssertionError("the connection was not refused")

    err = asyncio.run(refused())
    assert (err.reason, err.unreachable, err.retryable, err.fault) == (
        "connection_error", True, True, True)
    assert "pw-123" not in err.detail
    late = transport_error(asyncio.TimeoutError(), "http://h/v1")
    assert (late.reason, late.retryable, late.unreachable) == ("timeout", True, False)


def test_target_reasons_are_the_call_reasons_with_the_target_prefix() -> None:
    assert target_reason(CallError("timeout")) == "target_timeout"
    assert target_reason(CallError("http_5xx")) == "target_http_5xx"
    assert target_reason(CallError("unmapped")) == "target_unmapped"
    assert target_reason(CallError("connection_error", unreachable=True)) == \
        "target_unreachable"


def test_a_targets_http_date_retry_after_is_honoured() -> None:
    """The server asks for ~3 s with an HTTP date; the policy's own backoff is 10 ms."""
    srv = _Scripted([(429, '{"error": "busy"}', {"Retry-After": _http_date(3.0)}),
                     (200, '{"answer": "42"}', {})]).start()
    try:
        cfg = {"kind": "http", "url": f"http://127.0.0.1:{srv.port}/ask",
               "response": {"answer": "answer"}, "retry_initial_s": 0.01, "max_retries": 3}
        out = TargetSession(cfg).answer([Sample("q1", "сколько?")], k=1)
    finally:
        srv.stop()
    assert out[0].response == "42"
    assert len(srv.times) == 2
    # an HTTP date has whole seconds: 3 s ahead is 2 to 3 s from when the script was written
    assert srv.times[1] - srv.times[0] >= 1.2


def test_a_targets_bad_reply_keeps_its_body_and_reason() -> None:
    srv = _Scripted([(200, "<html><body>Bad Gateway</body></html>", {})]).start()
    try:
        cfg = {"kind": "http", "url": f"http://127.0.0.1:{srv.port}/ask",
               "response": {"answer": "answer"}, "retry_initial_s": 0.01}
        out = TargetSession(cfg).answer([Sample("q1", "сколько?")], k=1)
    finally:
        srv.stop()
    assert out[0].metadata["target_error"].startswith("target_bad_reply: the reply is not JSON")
    assert len(srv.times) == 1            # an unreadable reply is not retried for a target
