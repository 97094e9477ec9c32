"""A hostile HTTP target cannot take ragmeter's memory or the run: ``max_reply_bytes`` bounds
an ``http`` / ``openai`` reply on the wire and decoded — a 2 MB gzip body that inflates to
2 GiB, a 1 GB reply (with and without a Content-Length), four 100 MB replies at once, a
streamed reply that never ends — each the sample's ``target_reply_too_large`` with memory
bounded; text that is not valid Unicode is replaced and counted. A real server on a socket;
the client in a process of its own, whose peak RSS is measured."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import resource
import subprocess
import sys
import textwrap
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.serving import BackgroundServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits")

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
#: what the client process may use at most: python, numpy, aiohttp and two 16 MiB bounds
RSS_LIMIT_MB = 300


def _url(server: BackgroundServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def _bomb(members: int = 128, member_mb: int = 16) -> bytes:
    """A gzip body of ``members`` members of ``member_mb`` MiB of zeros each (multi-member
    gzip is valid): about 2 MB that inflates to 2 GiB."""
    one = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    member = one.compress(b"0" * member_mb * MB) + one.flush()
    return member * members


async def _drip(request: Any) -> Any:
    """A reply of one byte every 0.2 s for two minutes."""
    from aiohttp import web

    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    with contextlib.suppress(ConnectionError, RuntimeError):
        for _ in range(600):
            await resp.write(b" ")
            await asyncio.sleep(0.2)
    return resp


async def _sse_bad_text(request: Any) -> Any:
    """A streamed chat reply whose content deltas hold a lone surrogate escape and bytes
    that are not UTF-8."""
    from aiohttp import web

    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for piece in (b'"one \\ud800 "', b'"two \xff\xfe "', b'"three"'):
        await resp.write(b'data: {"choices": [{"index": 0, "delta": {"content": '
                         + piece + b'}}]}\n\n')
    await resp.write(b"data: [DONE]\n\n")
    return resp


class _Hostile(BackgroundServer):
    """The hostile replies, one route each (see the module doc)."""

    what = "hostile target"

    def __init__(self) -> None:
        super().__init__()
        self.bomb = _bomb()

    def app(self) -> Any:
        from aiohttp import web

        async def bomb(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(body=self.bomb, headers={
                "Content-Encoding": "gzip", "Content-Type": "application/json"})

        async def big(request: web.Request) -> web.StreamResponse:
            await request.read()
            size = int(request.query["mb"]) * MB
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            if request.query.get("length") == "1":
                resp.content_length = size
            await resp.prepare(request)
            await resp.write(b'{"answer": "')
            piece = b"x" * MB
            try:
                for _ in range(size // MB):
                    await resp.write(piece)
            except (ConnectionError, RuntimeError):
                pass                       # the client stopped reading: as it should
            return resp

        async def sse(request: web.Request) -> web.StreamResponse:
            await request.read()
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "ж" * 5000}}]})
            line = f"data: {chunk}\n\n".encode()
            try:
                while True:                 # never [DONE]
                    await resp.write(line)
            except (ConnectionError, RuntimeError):
                pass
            return resp

        async def bad_text(request: web.Request) -> web.Response:
            await request.read()
            body = (b'{"answer": "one \\ud800 two \xff\xfe three", '
                    b'"contexts": ["c \\udfff", "d \xc3"]}')
            return web.Response(body=body, content_type="application/json")

        async def mixed(request: web.Request) -> web.StreamResponse:
            """One hostile reply chosen by the question's first word, else a good one."""
            kind = (await request.json())["question"].split()[0]
            if kind == "drip":
                return await _drip(request)
            if kind == "big":
                return web.Response(body=b'{"answer": "' + b"x" * (20 * MB) + b'"}',
                                    content_type="application/json")
            if kind == "bomb":
                return await bomb(request)
            if kind == "bad":
                return await bad_text(request)
            return web.json_response({"answer": "Плата — 950 рублей."})

        app = web.Application()
        app.router.add_post("/mixed", mixed)
        app.router.add_post("/bomb", bomb)
        app.router.add_post("/big", big)
        app.router.add_post("/v1/chat/completions", sse)
        app.router.add_post("/bad/v1/chat/completions", _sse_bad_text)
        app.router.add_post("/bad-text", bad_text)
        return app


@pytest.fixture(scope="module")
def hostile() -> Iterator[_Hostile]:
    with _Hostile() as srv:
        yield srv


_CLIENT = textwrap.dedent("""
    import json, os, resource, sys
    from ragmeter.data.sample import Sample
    from ragmeter.targets import TargetSession

    def peak_mb():
        # VmHWM: this program's own peak (ru_maxrss would keep the forking parent's, since
        # a fork with preexec_fn copies the test process's pages before exec)
        try:
            with open("/proc/self/status") as f:
                return next(int(x.split()[1]) for x in f if x.startswith("VmHWM:")) / 1024
        except (OSError, StopIteration):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    cfg, n, store = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    session = TargetSession(cfg, store=store)
    out = session.answer([Sample(f"q{i}", f"question {i}") for i in range(n)])
    calls = [s.metadata["target_call"] for s in out]
    print(json.dumps({
        "errors": [s.metadata.get("target_error") for s in out],
        "answers": [s.response for s in out],
        "invalid": [c.get("invalid_text", 0) for c in calls],
        "rss_mb": peak_mb(),
        "store_bytes": sum(os.path.getsize(store + x) for x in ("", "-wal")
                           if os.path.exists(store + x))}))
""")


def _limit_memory() -> None:
    # the old unbounded client would inflate 2 GiB: fail it fast instead of the machine
    resource.setrlimit(resource.RLIMIT_AS, (4096 * MB, 4096 * MB))


def _client(cfg: dict[str, Any], tmp_path: Path, n: int = 1,
            timeout: float = 180) -> dict[str, Any]:
    """Ask the target about ``n`` questions in a fresh process; what it saw and its peak RSS."""
    proc = subprocess.run(
        [sys.executable, "-c", _CLIENT, json.dumps(cfg), str(n), str(tmp_path / "r.sqlite")],
        capture_output=True, text=True, timeout=timeout, preexec_fn=_limit_memory,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
             "RAGMETER_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("CLIENT", cfg.get("url"), n, {k: v for k, v in got.items() if k != "answers"})
    return got


def test_the_bomb_is_what_it_claims() -> None:
    body = _bomb(members=2, member_mb=1)
    assert gzip.decompress(body) == b"0" * 2 * MB
    assert len(_bomb()) < 3 * MB


def test_a_gzip_bomb_is_too_large_and_never_inflated(hostile: _Hostile,
                                                     tmp_path: Path) -> None:
    got = _client({"kind": "http", "url": _url(hostile, "/bomb"), "max_retries": 0}, tmp_path)
    assert got["errors"][0].startswith("target_reply_too_large"), got
    assert "decodes to more than 16777216 bytes" in got["errors"][0]
    assert got["rss_mb"] < RSS_LIMIT_MB, got


@pytest.mark.parametrize("length", [0, 1])
def test_a_one_gigabyte_reply_is_too_large_and_not_read(hostile: _Hostile, tmp_path: Path,
                                                        length: int) -> None:
    got = _client({"kind": "http", "url": _url(hostile, f"/big?mb=1024&length={length}"),
                   "max_retries": 0}, tmp_path)
    assert got["errors"][0].startswith("target_reply_too_large"), got
    assert ("Content-Length" in got["errors"][0]) == bool(length)
    assert got["rss_mb"] < RSS_LIMIT_MB, got


def test_four_hundred_megabyte_replies_keep_memory_and_the_store_small(
        hostile: _Hostile, tmp_path: Path) -> None:
    got = _client({"kind": "http", "url": _url(hostile, "/big?mb=100"), "max_retries": 0},
                  tmp_path, n=4)
    assert all(e.startswith("target_reply_too_large") for e in got["errors"]), got
    assert got["rss_mb"] < RSS_LIMIT_MB, got            # before: 1.86 GB
    assert got["store_bytes"] < 5 * MB, got             # before: 840 MB


def test_a_stream_that_never_ends_is_too_large(hostile: _Hostile, tmp_path: Path) -> None:
    got = _client({"kind": "openai", "url": _url(hostile, "/v1"), "timeout_s": 120,
                   "max_retries": 0}, tmp_path)
    assert got["errors"][0].startswith("target_reply_too_large"), got
    assert got["rss_mb"] < RSS_LIMIT_MB, got


def test_a_lower_bound_is_the_targets_own(hostile: _Hostile, tmp_path: Path) -> None:
    got = _client({"kind": "http", "url": _url(hostile, "/big?mb=3"), "max_retries": 0,
                   "max_reply_bytes": 2 * MB}, tmp_path)
    assert "max_reply_bytes (2097152 bytes)" in got["errors"][0], got


def test_invalid_text_in_an_http_reply_is_replaced_and_counted(hostile: _Hostile,
                                                               tmp_path: Path) -> None:
    got = _client({"kind": "http", "url": _url(hostile, "/bad-text"), "max_retries": 0},
                  tmp_path)
    assert got["errors"] == [None], got
    assert got["answers"][0] == "one \ufffd two \ufffd\ufffd three"
    assert got["invalid"] == [5]          # two lone surrogates, three bytes that are not UTF-8


def test_invalid_text_in_a_streamed_openai_reply_is_replaced_and_counted(
        hostile: _Hostile, tmp_path: Path) -> None:
    got = _client({"kind": "openai", "url": _url(hostile, "/bad/v1"), "max_retries": 0},
                  tmp_path)
    assert got["errors"] == [None], got
    assert got["answers"][0] == "one \ufffd two \ufffd\ufffd three"
    assert got["invalid"] == [3]          # a lone surrogate, two bytes that are not UTF-8


def test_a_body_decoded_in_pieces_is_the_body() -> None:
    """The reader's own inflating: gzip of several members, zlib and raw deflate, each read
    whole and identical to the original (against a server on a socket)."""
    text = json.dumps({"answer": "ж" * 70_000, "contexts": ["x" * 300_000]}).encode()
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    bodies = {"gzip": gzip.compress(text[:1000]) + gzip.compress(text[1000:]),
              "deflate": zlib.compress(text), "raw": raw.compress(text) + raw.flush()}

    class Server(BackgroundServer):
        def app(self) -> Any:
            from aiohttp import web

            async def handle(request: web.Request) -> web.Response:
                kind = request.match_info["kind"]
                return web.Response(body=bodies[kind], headers={
                    "Content-Encoding": "deflate" if kind == "raw" else kind})

            app = web.Application()
            app.router.add_get("/{kind}", handle)
            return app

    from ragmeter.calls.http import LoopSessions

    async def read(url: str) -> bytes:
        http = LoopSessions(timeout_s=30)
        try:
            async with http.request("GET", url) as reply:
                return await reply.read()
        finally:
            await http.aclose()

    with Server() as srv:
        for kind in bodies:
            assert asyncio.run(read(_url(srv, f"/{kind}"))) == text, kind


def test_hostile_replies_are_lost_values_counted_toward_max_lost(
        hostile: _Hostile, tmp_path: Path) -> None:
    """``ragmeter generation --target`` on a service whose replies drip a byte at a time,
    run over the bound (on the wire, or inflated from gzip) or hold invalid Unicode: each
    hostile reply is that sample's lost value with its reason — the drip ended by the call's
    total timeout, not waited on for two minutes —, the invalid text is replaced and scored,
    and the losses count toward ``--max-lost`` (exit 3 with the counts per reason; exit 0
    when the limit allows them)."""
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"kind": "http", "url": _url(hostile, "/mixed"),
                                  "timeout_s": 2, "max_retries": 0}))
    kinds = ["good", "drip", "big", "good", "bomb", "bad", "drip", "big"]
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"id": f"q{i}", "user_input": f"{k} вопрос {i}",
                                           "reference": "Плата — 950 рублей."}) + "\n"
                               for i, k in enumerate(kinds)), encoding="utf-8")

    def run(*extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ragmeter", "generation", "--samples", str(samples),
             "--metrics", "rouge_l", "--target", str(target), "--json", *extra],
            capture_output=True, text=True, timeout=150, preexec_fn=_limit_memory,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                 "RAGMETER_CACHE_DIR": str(tmp_path / "cache")})
        return proc, time.perf_counter() - t0

    proc, took = run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-3000:]
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if "rouge_l" in x and "values lost" in x)
    assert "5 of 8 values lost" in line, line
    assert "target_timeout×2" in line and "target_reply_too_large×3" in line, line
    assert took < 100, took                      # the drips last 120 s each
    proc, _ = run("--max-lost", "0.75")   # 5 of 7 latency values: the warm-up is apart
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
