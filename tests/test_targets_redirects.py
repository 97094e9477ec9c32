"""Redirects never carry secrets: a server that answers 301/302/303/307/308 to another origin
(another port, or ``localhost`` for ``127.0.0.1`` on the same port) never receives the
configured headers — of an ``http`` or ``openai`` target, of the LLM judge, of the
embeddings client — and its answers are never scored unless ``follow_redirects: always``
says so (then without the headers). Real servers on two ports record what reaches them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.serving import BackgroundServer
from ragmeter.targets import TargetSession

ROOT = Path(__file__).resolve().parent.parent
KEY = "rm-redirect-secret-7c41d9e2"
BEARER = "rm-bearer-secret-0b5a6f13"
COOKIE = "rm-cookie-secret-5d2e8a90"
REPLY = {"answer": "Плата — 950 рублей.", "contexts": ["Плата составляет 950 рублей."],
         "choices": [{"index": 0, "message": {"role": "assistant",
                                              "content": "Плата — 950 рублей."}}],
         "data": [{"index": 0, "embedding": [0.1, 0.2, 0.3]}]}


class _Recorder(BackgroundServer):
    """Answers every request with :data:`REPLY` and records its method, path and headers;
    a path under ``/r/`` is answered with the redirect ``self.redirect`` (status, Location)
    instead."""

    what = "recording server"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []
        self.redirect: tuple[int, str] = (302, "/")
        self.cookie = ""

    def app(self) -> Any:
        from aiohttp import web

        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.seen.append({"method": request.method, "path": request.path,
                              "headers": {k.lower(): v for k, v in request.headers.items()},
                              "body": body.decode("utf-8", "replace")})
            if request.path.startswith("/r/"):
                status, to = self.redirect
                resp = web.Response(status=status, headers={"Location": to})
                if self.cookie:          # a session cookie, set with the redirect
                    resp.set_cookie("sid", self.cookie, path="/")
                return resp
            return web.json_response(REPLY)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    def secrets_seen(self) -> list[str]:
        return [v for r in self.seen for v in r["headers"].values()
                if KEY in v or BEARER in v or COOKIE in v]


@pytest.fixture()
def servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[_Recorder,
                                                                             _Recorder]]:
    monkeypatch.setenv("RM_REDIRECT_KEY", KEY)
    monkeypatch.setenv("RM_REDIRECT_BEARER", BEARER)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with _Recorder() as home, _Recorder() as other:
        yield home, other


def _go(server: _Recorder, status: int, to: str, path: str = "api") -> str:
    """The URL of ``server`` that answers ``status`` with ``Location: to``."""
    server.redirect = (status, to)
    return f"http://127.0.0.1:{server.port}/r/{path}"


def _http(url: str, tmp_path: Path, **extra: Any) -> TargetSession:
    return TargetSession({"kind": "http", "url": url,
                          "headers": {"X-Api-Key": "${env:RM_REDIRECT_KEY}",
                                      "Authorization": "Bearer ${env:RM_REDIRECT_BEARER}"},
                          "max_retries": 0, **extra}, store=tmp_path / "replies.sqlite")


def _ask(session: TargetSession) -> Sample:
    return session.answer([Sample("q1", "Сколько стоит общежитие?")])[0]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_port_is_not_followed_by_default(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path, status: int) -> None:
    home, other = servers
    where = f"http://127.0.0.1:{other.port}/steal"
    got = _ask(_http(_go(home, status, where), tmp_path))
    assert got.response is None
    assert got.metadata["target_error"].startswith("target_redirected")
    assert f"HTTP {status} to {where}" in got.metadata["target_error"]
    assert other.seen == []                          # the other origin got nothing at all
    assert len(home.seen) == 1 and KEY in home.seen[0]["headers"]["x-api-key"]


def test_localhost_on_the_same_port_is_another_origin(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, _ = servers
    where = f"http://localhost:{home.port}/steal"
    got = _ask(_http(_go(home, 307, where), tmp_path))
    assert got.metadata["target_error"].startswith("target_redirected")
    assert where in got.metadata["target_error"]
    assert [r["path"] for r in home.seen] == ["/r/api"]     # nothing sent to /steal


def test_always_follows_but_never_sends_the_configured_headers_elsewhere(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, other = servers
    for status in (302, 307):
        other.seen.clear()
        got = _ask(_http(_go(home, status, f"http://localhost:{other.port}/elsewhere"),
                         tmp_path, follow_redirects="always"))
        assert got.response == REPLY["answer"]           # followed: the user asked for it
        assert len(other.seen) == 1
        received = other.seen[0]["headers"]
        assert "x-api-key" not in received and "authorization" not in received
        assert other.secrets_seen() == []
        # 307 repeats the method and the body; 302 after a POST continues as a GET
        assert other.seen[0]["method"] == ("POST" if status == 307 else "GET")


def test_cookies_never_reach_another_origin(servers: tuple[_Recorder, _Recorder],
                                           tmp_path: Path) -> None:
    """Neither a configured ``Cookie`` header nor a cookie the configured origin sets goes
    to another origin — not even to another port of the same host name, which a cookie jar
    would count as the same site — and no cookie is carried from one call to the next."""
    home, other = servers
    home.cookie = COOKIE
    home.redirect = (307, f"http://localhost:{other.port}/elsewhere")
    session = TargetSession({"kind": "http", "url": f"http://localhost:{home.port}/r/api",
                             "headers": {"Cookie": "auth=${env:RM_REDIRECT_KEY}"},
                             "follow_redirects": "always", "max_retries": 0,
                             "max_concurrency": 1}, store=tmp_path / "r.sqlite")
    out = session.answer([Sample(f"q{i}", f"вопрос {i}") for i in range(2)])
    assert [s.response for s in out] == [REPLY["answer"]] * 2
    assert len(other.seen) == 2
    assert all("cookie" not in r["headers"] for r in other.seen), other.seen
    assert other.secrets_seen() == []
    # the configured cookie goes to its own origin; the one it set is not sent back
    assert [r["headers"].get("cookie") for r in home.seen] == [f"auth={KEY}"] * 2


def test_same_origin_redirects_are_followed_with_the_headers(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, _ = servers
    got = _ask(_http(_go(home, 307, "/api/answer/"), tmp_path))   # a trailing-slash redirect
    assert got.response == REPLY["answer"], got.metadata.get("target_error")
    assert [r["path"] for r in home.seen] == ["/r/api", "/api/answer/"]
    assert KEY in home.seen[1]["headers"]["x-api-key"] and home.seen[1]["method"] == "POST"
    assert json.loads(home.seen[1]["body"])["question"] == "Сколько стоит общежитие?"


def test_never_follows_even_on_the_same_origin(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, _ = servers
    got = _ask(_http(_go(home, 308, "/api/answer/"), tmp_path, follow_redirects="never"))
    assert got.metadata["target_error"].startswith("target_redirected")
    assert "follow_redirects: never" in got.metadata["target_error"]
    assert len(home.seen) == 1


def test_a_redirect_loop_ends(servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, _ = servers
    got = _ask(_http(_go(home, 302, "/r/again"), tmp_path))
    assert got.metadata["target_error"].startswith("target_redirected: more than 5")
    assert len(home.seen) == 6


def test_an_unknown_redirect_mode_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"follow_redirects.*allowed: never, same-origin, "
                                          "always"):
        TargetSession({"kind": "http", "url": "http://127.0.0.1:9/x",
                       "follow_redirects": "sometimes"}, store=tmp_path / "r.sqlite")


def test_openai_target_redirect_is_not_followed_and_never_carries_the_key(
        servers: tuple[_Recorder, _Recorder], tmp_path: Path) -> None:
    home, other = servers
    to = f"http://127.0.0.1:{other.port}/v1/chat/completions"
    base = {"kind": "openai", "url": _go(home, 307, to, "v1"),
            "api_key_env": "RM_REDIRECT_BEARER", "headers": {"X-Api-Key":
                                                             "${env:RM_REDIRECT_KEY}"},
            "stream": False, "max_retries": 0}
    got = _ask(TargetSession(base, store=tmp_path / "r.sqlite"))
    assert got.metadata["target_error"].startswith("target_redirected") and other.seen == []
    got = _ask(TargetSession({**base, "follow_redirects": "always"},
                             store=tmp_path / "r.sqlite"))
    assert got.response == REPLY["answer"]
    assert len(other.seen) == 1 and other.secrets_seen() == []


def test_the_cli_fails_on_redirected_replies(servers: tuple[_Recorder, _Recorder],
                                             tmp_path: Path) -> None:
    home, other = servers
    target = tmp_path / "target.yaml"
    target.write_text(yaml.safe_dump({
        "kind": "http", "url": _go(home, 302, f"http://localhost:{other.port}/answer"),
        "headers": {"X-Api-Key": "${env:RM_REDIRECT_KEY}"}, "max_retries": 0}))
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"id": f"q{i}", "user_input": f"вопрос {i}",
                                           "reference": "Плата — 950 рублей."}) + "\n"
                               for i in range(4)), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "ragmeter", "generation", "--samples",
                          str(samples), "--metrics", "rouge_l", "--target", str(target)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    out = res.stdout + res.stderr
    assert res.returncode == 3, out
    assert "target_redirected" in out and other.seen == []
    assert KEY not in out


def test_the_judge_and_the_embedder_do_not_follow_a_redirect_elsewhere(
        servers: tuple[_Recorder, _Recorder]) -> None:
    import asyncio

    from ragmeter.calls.errors import CallError
    from ragmeter.errors import RagmeterError
    from ragmeter.judges.config import JudgeConfig
    from ragmeter.judges.openai_http import OpenAIBackend
    from ragmeter.retrieval.embedders import OpenAIEmbedder

    home, other = servers
    to = f"http://localhost:{other.port}/v1/chat/completions"
    judge = OpenAIBackend(JudgeConfig(name="j", backend="openai", model="m",
                                      base_url=_go(home, 307, to, "v1"),
                                      api_key_env="RM_REDIRECT_BEARER"))

    async def ask() -> Any:
        try:
            return await judge.complete([{"role": "user", "content": "q"}], None,
                                        max_tokens=8, temperature=0.0, seed=1)
        finally:
            await judge.aclose()

    with pytest.raises(CallError) as err:
        asyncio.run(ask())
    assert err.value.reason == "redirected" and to in err.value.detail
    emb = OpenAIEmbedder("m", base_url=_go(home, 308, f"http://localhost:{other.port}/v1",
                                           "v1"),
                         api_key_env="RM_REDIRECT_BEARER", max_retries=0, cache=False)
    with pytest.raises(RagmeterError, match=r"HTTP 308 to http://localhost.*another origin"):
        emb.embed(["текст"], "passage")
    assert other.seen == [] and home.secrets_seen()
