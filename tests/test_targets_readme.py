"""The README's target config, as a new user would run it: a FastAPI-style service with its
own retriever (``POST /ask`` -> ``{"answer", "sources"}``), measured end to end by
``ragmeter run`` from the config block of the README alone; and the call budget."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.cli.app import run as cli_run
from ragmeter.data.sample import Sample
from ragmeter.targets import TargetSession
from ragmeter.targets.calls import TargetBudgetSpent
from ragmeter.targets.example_service import DATA, KnowledgeBase, ServiceConfig

ROOT = Path(__file__).resolve().parent.parent


class AskService:
    """A service shaped like a user's FastAPI app (not ragmeter's reference endpoints)."""

    def __init__(self) -> None:
        self.kb = KnowledgeBase(ServiceConfig())
        self.port = 0
        self.calls = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _ask(self, request: Any) -> Any:
        from aiohttp import web

        self.calls += 1
        body = await request.json()
        found = self.kb.retrieve(body["query"], int(body["top_k"] or 5))
        docs = [cid.rsplit("#", 1)[0] for cid in found["context_ids"]]
        return web.json_response({
            "answer": self.kb.generate(body["query"], found["contexts"]),
            "sources": [{"text": t, "doc_id": d, "score": s} for t, d, s in
                        zip(found["contexts"], docs, found["scores"], strict=True)]})

    async def _serve(self) -> None:
        from aiohttp import web

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        app = web.Application()
        app.router.add_post("/ask", self._ask)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> AskService:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture(scope="module")
def ask_service() -> Iterator[AskService]:
    with AskService() as srv:
        yield srv


def _readme_config() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Measure your own RAG system", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    return block.group(1)


def test_readme_config_measures_a_fastapi_style_app(ask_service: AskService, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _readme_config()
    assert len(cfg.strip().splitlines()) <= 15
    (tmp_path / "evalset.jsonl").write_bytes((DATA / "evalset.jsonl").read_bytes())
    (tmp_path / "bench.yaml").write_text(
        cfg.replace("127.0.0.1:8000", f"127.0.0.1:{ask_service.port}"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    code = cli_run(["run", "bench.yaml", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    assert ask_service.calls == 2 * 110           # retrieval + e2e, every question once
    text = out.out
    for key in ("hit_rate@5(level=doc)", "rouge_l", "latency_p95", "ttft_p50", "throughput"):
        assert key in text


def test_call_budget_stops_the_run_and_keeps_replies(ask_service: AskService,
                                                     tmp_path: Path) -> None:
    cfg = {"kind": "http", "url": f"http://127.0.0.1:{ask_service.port}/ask",
           "request": {"query": "{question}", "top_k": "{k}"},
           "response": {"answer": "answer"}, "max_calls": 3, "max_concurrency": 1}
    s = TargetSession(cfg, store=tmp_path / "r.sqlite")
    with pytest.raises(TargetBudgetSpent, match="budget") as err:
        s.answer([Sample(f"q{i}", f"вопрос {i}") for i in range(6)], k=2)
    assert err.value.exit_code == 3
    assert s.store is not None and s.store.count() == 3
    resumed = TargetSession({**cfg, "max_calls": None}, mode="resume",
                            store=tmp_path / "r.sqlite")
    out = resumed.answer([Sample(f"q{i}", f"вопрос {i}") for i in range(6)], k=2)
    assert all(x.response for x in out)
    assert resumed.caller.counts.cached == 3 and resumed.caller.counts.sent == 3
