"""The OpenAI-compatible embedder calls through ragmeter.calls: its batches go out
concurrently, a server's 429s lower the in-flight limit, and an endpoint that refuses every
connection stops the rest at once (the circuit breaker), over real sockets."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import numpy as np
import pytest

from ragmeter.calls import RetryPolicy
from ragmeter.errors import RagmeterError
from ragmeter.retrieval.embedders import OpenAIEmbedder
from ragmeter.serving import BackgroundServer


class _Embeddings(BackgroundServer):
    """``/v1/embeddings`` after ``latency_s``; above ``cap`` requests in flight it answers
    429 with ``Retry-After``. Records the peak of requests in flight."""

    what = "embeddings test server"

    def __init__(self, latency_s: float, cap: int | None = None):
        super().__init__()
        self.latency_s = latency_s
        self.cap = cap
        self.in_flight = self.peak = self.refused = self.served = 0

    def app(self) -> Any:
        from aiohttp import web

        async def embed(request: web.Request) -> web.Response:
            body = await request.json()
            if self.cap is not None and self.in_flight >= self.cap:
                self.refused += 1
                return web.json_response({"error": "slow down"}, status=429,
                                         headers={"Retry-After": "0.05"})
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                await asyncio.sleep(self.latency_s)
            finally:
                self.in_flight -= 1
            self.served += 1
            return web.json_response({"data": [
                {"index": i, "embedding": [float(len(t)), 1.0]}
                for i, t in enumerate(body["input"])]})

        app = web.Application()
        app.router.add_post("/v1/embeddings", embed)
        return app


def _texts(n: int) -> list[str]:
    return [f"text number {i} " + "x" * (i % 7) for i in range(n)]


def test_batches_go_out_concurrently_in_order() -> None:
    with _Embeddings(latency_s=0.2) as srv:
        emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{srv.port}/v1",
                             api_key_env=None, cache=False, batch_size=2, max_concurrency=4)
        texts = _texts(16)                       # 8 batches of 2
        t0 = time.perf_counter()
        out = emb.embed(texts)
        wall = time.perf_counter() - t0
    assert srv.peak == 4                         # one at a time before
    assert wall < 8 * 0.2 * 0.75                 # 1.6 s one after the other
    want = np.array([[float(len(t)), 1.0] for t in texts])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(out, want, atol=1e-6)     # each vector where its text was
    assert emb.calls.sent == 8 and emb.calls.calls == 8


def test_429s_lower_the_limit_and_every_batch_arrives() -> None:
    with _Embeddings(latency_s=0.05, cap=2) as srv:
        emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{srv.port}/v1",
                             api_key_env=None, cache=False, batch_size=1, max_concurrency=8,
                             max_retries=8, retry=RetryPolicy(initial=0.01, max=0.1))
        out = emb.embed(_texts(24))
    assert out.shape == (24, 2) and srv.served == 24
    assert srv.refused > 0
    assert emb._memory.limit <= 3                # learned: the server holds 2
    assert emb.calls.retries == srv.refused


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_endpoint_that_refuses_every_connection_stops_the_rest_at_once() -> None:
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{_free_port()}/v1",
                         api_key_env=None, cache=False, batch_size=1, max_concurrency=4,
                         max_retries=5, retry=RetryPolicy(initial=0.5, max=4.0))
    t0 = time.perf_counter()
    with pytest.raises(RagmeterError, match="unreachable") as info:
        emb.embed(_texts(40))
    # retrying alone would sleep 0.5 + 1 + 2 + 4 + 4 s before the first batch gave up
    assert time.perf_counter() - t0 < 3.0
    assert emb.calls.sent <= 8                   # not 40 batches x 6 attempts
    assert "embeddings endpoint" in str(info.value)


def test_the_fake_servers_embeddings_have_its_latency_and_faults() -> None:
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    cfg = MockConfig(latency_ms=30, script=["429", "500", "ok"], retry_after_s=0.05)
    with MockJudgeServer(cfg) as srv:
        emb = OpenAIEmbedder("m", base_url=srv.base_url, api_key_env=None, cache=False,
                             batch_size=4, max_concurrency=1,
                             retry=RetryPolicy(initial=0.01, max=0.05))
        t0 = time.perf_counter()
        out = emb.embed(_texts(8))
        wall = time.perf_counter() - t0
        stats = srv.stats()
    assert out.shape == (8, 64)
    assert stats["faults"] == {"429": 1, "500": 1} and stats["embedding_requests"] == 3
    assert emb.calls.retries == 2 and wall >= 2 * 0.03
    with MockJudgeServer(MockConfig(script=["html"])) as srv:
        emb = OpenAIEmbedder("m", base_url=srv.base_url, api_key_env=None, cache=False)
        with pytest.raises(RagmeterError, match="not JSON"):
            emb.embed(["x"])
