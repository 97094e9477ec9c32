"""A target is kept busy while ragmeter scores and saves a batch: the runner's next batches
are sent ahead (two of them), their replies waiting when they are asked for; samples that
are not the ones sent ahead are asked afresh and what was sent ahead is dropped. A real
service on a socket counts what reaches it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.serving import BackgroundServer
from ragmeter.targets import TargetSession

LATENCY_S = 0.15
SIZE = 4


class _Counting(BackgroundServer):
    """Answers each question with itself after :data:`LATENCY_S`; records what it got."""

    what = "counting target"

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[str] = []

    def app(self) -> Any:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            question = (await request.json())["question"]
            self.questions.append(question)
            await asyncio.sleep(LATENCY_S)
            return web.json_response({"answer": f"re: {question}"})

        app = web.Application()
        app.router.add_post("/answer", handle)
        return app


@pytest.fixture()
def server() -> Iterator[_Counting]:
    with _Counting() as srv:
        yield srv


def _batches(n: int) -> list[list[Sample]]:
    return [[Sample(f"q{b}-{i}", f"вопрос {b}-{i}") for i in range(SIZE)] for b in range(n)]


def _session(srv: _Counting, tmp_path: Path) -> TargetSession:
    return TargetSession({"kind": "http", "url": f"http://127.0.0.1:{srv.port}/answer",
                          "max_concurrency": SIZE, "max_retries": 0},
                         store=tmp_path / "r.sqlite")


def test_two_batches_are_sent_ahead_while_one_is_scored(server: _Counting,
                                                        tmp_path: Path) -> None:
    b = _batches(4)
    session = _session(server, tmp_path)
    try:
        out = session.call(b[0], "answer", final=False, ahead=b[1] + b[2])
        assert [s.response for s in out] == [f"re: {s.user_input}" for s in b[0]]
        time.sleep(2 * LATENCY_S + 0.6)      # a slow scoring and save of batch 0
        # both batches sent ahead reached the service while batch 0 was "scored"
        assert len(server.questions) == 3 * SIZE, server.questions
        t0 = time.perf_counter()
        out1 = session.call(b[1], "answer", final=False, ahead=b[2] + b[3])
        took = time.perf_counter() - t0
        assert took < LATENCY_S, took                  # its replies were waiting
        assert [s.response for s in out1] == [f"re: {s.user_input}" for s in b[1]]
        out2 = session.call(b[2], "answer", final=False, ahead=b[3])
        out3 = session.call(b[3], "answer", final=True)
        assert [s.response for s in out2 + out3] == [f"re: {s.user_input}"
                                                     for s in b[2] + b[3]]
        # every question was asked once: nothing sent twice, nothing sent ahead and lost
        assert sorted(server.questions) == sorted(s.user_input for x in b for s in x)
    finally:
        session.close()


def test_other_samples_than_those_sent_ahead_are_asked_afresh(server: _Counting,
                                                               tmp_path: Path) -> None:
    b = _batches(4)
    session = _session(server, tmp_path)
    try:
        session.call(b[0], "answer", final=False, ahead=b[1] + b[2])
        out = session.call(b[3], "answer", final=True)     # not what was sent ahead
        assert [s.response for s in out] == [f"re: {s.user_input}" for s in b[3]]
        assert session._ahead == {}                         # dropped, not kept waiting
    finally:
        session.close()
