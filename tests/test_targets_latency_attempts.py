"""Latency is the call's, every attempt kept: a call that hung until its timeout and then
succeeded on a retry shows in the high percentiles with its whole span (first send -> final
reply), each attempt's duration is kept on the sample, and the caller's first call (a cold
service woken) is kept out of the percentiles and reported apart. A real service on a socket:
its first request is slow, two questions hang on their first try."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from ragmeter.data.sample import Sample
from ragmeter.serving import BackgroundServer
from ragmeter.targets import TargetSession

TIMEOUT_S = 1.0
COLD_S = 0.6
N = 24


class _Flaky(BackgroundServer):
    """20 ms per answer; the very first request waits :data:`COLD_S` (a cold start); a
    question starting with ``hang`` hangs for 10 s on its first try and answers on the next."""

    what = "flaky target"

    def __init__(self) -> None:
        super().__init__()
        self.tries: dict[str, int] = {}
        self.requests = 0

    def app(self) -> Any:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            question = (await request.json())["question"]
            self.requests += 1
            tries = self.tries[question] = self.tries.get(question, 0) + 1
            if self.requests == 1:
                await asyncio.sleep(COLD_S)
            elif question.startswith("hang") and tries == 1:
                await asyncio.sleep(10)
            else:
                await asyncio.sleep(0.02)
            return web.json_response({"answer": "Плата — 950 рублей."})

        app = web.Application()
        app.router.add_post("/answer", handle)
        return app


@pytest.fixture()
def flaky() -> Iterator[_Flaky]:
    with _Flaky() as srv:
        yield srv


def _questions() -> list[str]:
    return [("hang" if i in (5, 17) else "ask") + f" вопрос {i}" for i in range(N)]


def _cfg(srv: _Flaky) -> dict[str, Any]:
    return {"kind": "http", "url": f"http://127.0.0.1:{srv.port}/answer",
            "timeout_s": TIMEOUT_S, "max_retries": 2, "retry_initial_s": 0.1,
            "max_concurrency": 4}


def test_every_attempt_is_kept_and_the_span_is_the_calls_latency(flaky: _Flaky,
                                                                 tmp_path: Path) -> None:
    out = TargetSession(_cfg(flaky), store=tmp_path / "r.sqlite").answer(
        [Sample(f"q{i}", q) for i, q in enumerate(_questions())])
    assert all(s.response for s in out)
    calls = [s.metadata["target_call"] for s in out]
    for i in (5, 17):
        call = calls[i]
        assert call["attempts"] == 2 and len(call["attempt_s"]) == 2, call
        first, second = call["attempt_s"]
        assert TIMEOUT_S * 0.9 <= first < TIMEOUT_S + 1.0 and second < first, call
        # the call's latency: both attempts and the wait between them
        assert call["latency_s"] >= first + second, call
    fast = [c for i, c in enumerate(calls) if i not in (5, 17)]
    assert all(c["attempts"] == 1 and len(c["attempt_s"]) == 1 for c in fast)
    warm = [c for c in calls if c.get("warmup")]
    assert len(warm) == 1 and warm[0]["latency_s"] >= COLD_S * 0.9


def test_hung_then_retried_calls_show_in_p99_and_the_warmup_apart(
        flaky: _Flaky, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "target.json"
    target.write_text(json.dumps(_cfg(flaky)))
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"id": f"q{i}", "user_input": q,
                                           "reference": "Плата — 950 рублей."},
                                          ensure_ascii=False) + "\n"
                               for i, q in enumerate(_questions())), encoding="utf-8")
    code, out, err = run_cli(capsys, "generation", "--samples", str(samples), "--metrics",
                             "rouge_l", "--target", str(target), "--json")
    assert code == 0, err
    doc = json.loads(out[out.find("{"):])
    lat = _latency(doc)
    p99 = lat["results"]["latency_p99"]["aggregate"]
    p50 = lat["results"]["latency_p50"]["aggregate"]
    # 2 of 23 calls hung a whole timeout: the 99th percentile is theirs, the median is not
    assert p99["mean"] >= TIMEOUT_S, p99
    assert p50["mean"] < 0.5, p50
    assert p99["n"] == N - 1 and p99["unscored_by_reason"] == {"not_applicable:warmup": 1}
    warmup = lat["meta"]["latency_warmup"]
    assert warmup["sample_id"] == "q0" and warmup["latency_s"] >= COLD_S * 0.9, warmup


def _latency(doc: Any) -> dict[str, Any]:
    """The result that holds the latency metrics, wherever the command's JSON puts it."""
    if isinstance(doc, dict):
        if "latency_p99" in (doc.get("results") or {}):
            return doc
        items: Any = doc.values()
    elif isinstance(doc, list):
        items = doc
    else:
        raise KeyError("latency_p99")
    for v in items:
        if isinstance(v, (dict, list)):
            try:
                return _latency(v)
            except KeyError:
                pass
    raise KeyError("latency_p99")
