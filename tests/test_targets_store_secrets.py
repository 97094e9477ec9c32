"""What a target says back is stored safely: a secret the service echoes (in its answer,
contexts, ids, metadata keys and values, raw text) never reaches the recorded replies
(``targets.sqlite``), and numbers that are not finite (``NaN``, ``Infinity``, which Python's
JSON reader accepts) are stored as ``null`` — strict JSON — and read back as NaN, so a replay
scores the same. A real service on a socket; the store's own bytes are read."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.serving import BackgroundServer
from ragmeter.targets import TargetSession

KEY = "rm-echoed-secret-41c7e0b2"


class _Echo(BackgroundServer):
    """Answers with the ``X-Api-Key`` it received written everywhere in its reply, and
    scores that are not finite numbers (bare ``NaN`` / ``Infinity`` tokens)."""

    what = "echoing target"

    def app(self) -> Any:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            await request.read()
            key = request.headers.get("X-Api-Key", "")
            body = ('{"answer": "Плата — 950 рублей (ключ KEY).", '
                    '"contexts": ["Плата составляет 950 рублей. KEY", "Оплата до 10-го."], '
                    '"context_ids": ["dorm#KEY", "pay#1"], '
                    '"scores": [NaN, 0.5], '
                    '"metadata": {"KEY": "token=KEY", "confidence": NaN, "n": 1e999, '
                    '"range": [-Infinity, Infinity]}}').replace("KEY", key)
            return web.Response(text=body, content_type="application/json")

        app = web.Application()
        app.router.add_post("/answer", handle)
        return app


@pytest.fixture()
def echo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_Echo]:
    # a variable whose name does not look secret: masked because ${env:...} named it
    monkeypatch.setenv("RM_ECHO_HEADER_VALUE", KEY)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with _Echo() as srv:
        yield srv


def _cfg(srv: _Echo) -> dict[str, Any]:
    return {"kind": "http", "url": f"http://127.0.0.1:{srv.port}/answer",
            "headers": {"X-Api-Key": "${env:RM_ECHO_HEADER_VALUE}"}, "max_retries": 0}


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"a bare {token} in the store")

    return json.loads(text, parse_constant=refuse)


def test_an_echoed_secret_and_non_finite_numbers_are_stored_safely(echo: _Echo,
                                                                   tmp_path: Path) -> None:
    store = tmp_path / "targets.sqlite"
    out = TargetSession(_cfg(echo), store=store).answer(
        [Sample(f"q{i}", f"Сколько стоит общежитие? {i}") for i in range(3)])
    assert all(s.metadata.get("target_error") is None for s in out), out[0].metadata
    assert out[0].response is not None and "950 рублей" in out[0].response
    assert KEY not in out[0].response and KEY not in json.dumps(out[0].metadata)

    raw = b"".join(p.read_bytes() for p in tmp_path.glob("targets.sqlite*"))
    assert KEY.encode() not in raw                      # not in any page of the file or WAL
    with sqlite3.connect(store) as db:
        rows = [r[0] for r in db.execute("SELECT reply FROM replies")]
    assert len(rows) == 3
    for text in rows:
        reply = _strict(text)                           # strict JSON: no NaN / Infinity
        assert reply["scores"] == [None, 0.5]
        assert KEY not in text and "***" in reply["answer"]
        meta = reply["metadata"]
        assert meta["confidence"] is None and meta["n"] is None
        assert meta["range"] == [None, None]
        assert all(KEY not in k for k in reply["metadata"])

    replay = TargetSession(_cfg(echo), store=store, mode="replay").answer(
        [Sample(f"q{i}", f"Сколько стоит общежитие? {i}") for i in range(3)])
    assert [s.response for s in replay] == [s.response for s in out]
    live_scores, scores = out[0].retrieved_scores, replay[0].retrieved_scores
    assert live_scores is not None and scores is not None
    assert math.isnan(live_scores[0]) and math.isnan(scores[0]) and scores[-1] == 0.5
