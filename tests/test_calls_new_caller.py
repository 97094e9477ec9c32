"""The new caller of docs/calls.md (an HTTP reranker, tests/fixtures/calls/reranker.py) runs as
written against a real server: its calls are limited, retried on 429 with ``Retry-After``,
deduplicated, and a failed one is its reason, never a score. The docs show this exact code."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ragmeter.calls import RetryPolicy
from ragmeter.serving import BackgroundServer

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "calls"))
from reranker import Reranker

ROOT = Path(__file__).resolve().parents[1]


class _RerankService(BackgroundServer):
    """``POST /rerank``: the share of the query's words in each document; 429 (Retry-After
    0.2 s) to the first request; 500 for a query that says "boom"."""

    what = "rerank test service"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[float, str]] = []
        self.in_flight = self.peak = 0

    def app(self) -> Any:
        from aiohttp import web

        async def rerank(request: web.Request) -> web.Response:
            body = await request.json()
            self.requests.append((time.perf_counter(), body["query"]))
            if len(self.requests) == 1:
                return web.json_response({"error": "busy"}, status=429,
                                         headers={"Retry-After": "0.2"})
            if "boom" in body["query"]:
                return web.json_response({"error": "internal"}, status=500)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            await asyncio.sleep(0.05)
            self.in_flight -= 1
            words = set(body["query"].split())
            return web.json_response({"results": [
                {"index": i, "score": len(words & set(d.split())) / len(words)}
                for i, d in enumerate(body["documents"])]})

        app = web.Application()
        app.router.add_post("/rerank", rerank)
        return app


def test_the_reranker_of_the_docs_calls_through_ragmeter_calls() -> None:
    pairs = [(f"red apple {i}", ("a red apple", f"green pear {i}")) for i in range(12)]
    pairs.append(pairs[0])                                  # a duplicate: no second call
    pairs.append(("boom now", ("x",)))                      # a server error, retried, then given up
    with _RerankService() as srv:
        rerank = Reranker(f"http://127.0.0.1:{srv.port}", max_in_flight=4,
                          policy=RetryPolicy(initial=0.01, max=0.05, max_retries=4))
        out = rerank(pairs)
    assert out[0] == [2 / 3, 1 / 3] and out[1] == [2 / 3, 1 / 3] and out[12] == out[0]
    assert all(isinstance(o, list) for o in out[:13])
    assert isinstance(out[13], str) and out[13].startswith("http_5xx: HTTP 500")
    asked = [q for _, q in srv.requests]
    assert asked.count("red apple 0") == 2                  # the 429'd first try, then once
    assert asked.count("boom now") == 5                     # 4 retries of a 5xx
    assert srv.peak <= 4
    first, again = [t for t, q in srv.requests if q == "red apple 0"]
    assert again - first >= 0.19                            # waited the server's Retry-After


def test_the_reranker_names_an_endpoint_that_cannot_be_reached() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = Reranker(f"http://127.0.0.1:{port}")([("q", ("d",))] * 1 + [("p", ("e",))])
    assert all(o.startswith("connection_error: ") for o in out)


def test_docs_show_the_tested_code() -> None:
    code = (ROOT / "tests" / "fixtures" / "calls" / "reranker.py").read_text(encoding="utf-8")
    docs = (ROOT / "docs" / "calls.md").read_text(encoding="utf-8")
    body = code[code.index("class Reranker"):].strip()
    assert body in docs
