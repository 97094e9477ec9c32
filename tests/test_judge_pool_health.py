"""An endpoint of a pool that answers HTTP 200 with nothing parseable is as unhealthy as one
answering 5xx: it is taken out and the work finishes on the healthy endpoints."""

from __future__ import annotations

from typing import Any

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, make_judge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.serving import BackgroundServer

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def prose(body: dict[str, Any], schema: dict[str, Any] | None) -> str:
    return "I am sorry, I cannot produce JSON today."


def test_endpoint_with_unparseable_200_replies_is_taken_out_and_nothing_is_lost() -> None:
    good = MockJudgeServer(MockConfig(latency_ms=10)).start()
    bad = MockJudgeServer(MockConfig(latency_ms=10, reply_fn=prose)).start()
    try:
        judge = make_judge(JudgeConfig(
            name="p", backend="openai", base_url=(good.base_url, bad.base_url), model="m",
            api_key_env=None, no_cache=True, timeout_s=5.0, max_concurrency=4,
            retry=RetryPolicy(initial=0.01, max=0.05, max_retries=4)))
        replies = judge.ask_many([
            JudgeRequest(messages=({"role": "user", "content": f"q {i}"},), schema=SCHEMA,
                         prompt_version="h@1") for i in range(60)])
        stats = judge.last_stats  # type: ignore[attr-defined]
        lost = [r for r in replies if not r.ok]
        assert not lost, {r.reason for r in lost}
        assert stats.decisions["endpoint_out"] >= 1
        # a few unparseable replies, then out (and the odd probe), far below an even share
        assert bad.stats()["requests"] <= 15
    finally:
        good.stop()
        bad.stop()


class _HtmlPages(BackgroundServer):
    """An endpoint behind a broken proxy: every request gets HTTP 200 with an HTML page."""

    what = "html pages"
    requests = 0

    def app(self) -> Any:
        from aiohttp import web

        async def page(request: web.Request) -> web.Response:
            await request.read()
            self.requests += 1
            return web.Response(text="<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>"
                                     "</body></html>", content_type="text/html")

        app = web.Application()
        app.router.add_post("/v1/chat/completions", page)
        return app


def test_endpoint_answering_200_with_html_is_taken_out_like_one_answering_5xx() -> None:
    good = MockJudgeServer(MockConfig(latency_ms=10)).start()
    bad = _HtmlPages().start()
    try:
        judge = make_judge(JudgeConfig(
            name="p", backend="openai",
            base_url=(good.base_url, f"http://127.0.0.1:{bad.port}/v1"), model="m",
            api_key_env=None, no_cache=True, timeout_s=5.0, max_concurrency=4,
            retry=RetryPolicy(initial=0.01, max=0.05, max_retries=4)))
        replies = judge.ask_many([
            JudgeRequest(messages=({"role": "user", "content": f"q {i}"},), schema=SCHEMA,
                         prompt_version="h@1") for i in range(60)])
        stats = judge.last_stats  # type: ignore[attr-defined]
    finally:
        good.stop()
        bad.stop()
    lost = [r for r in replies if not r.ok]
    assert not lost, {r.reason for r in lost}
    assert stats.decisions["endpoint_out"] >= 1
    # a few pages, then out (and the odd probe): far below an even share of 60 and retries
    assert bad.requests <= 15
