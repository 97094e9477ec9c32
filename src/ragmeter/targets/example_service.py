"""A reference RAG service on 127.0.0.1: the demo knowledge base behind the endpoints a real
system exposes, so every target kind can be tried (and tested) over real sockets.

* ``POST /answer`` ``{"question", "k", "history", "session_id"}`` ->
  ``{"answer", "contexts", "context_ids", "doc_ids", "scores", "metadata"}``
* ``POST /retrieve`` ``{"question", "k"}`` -> ``{"context_ids", "doc_ids", "scores",
  "contexts"}``
* ``POST /generate`` ``{"question", "contexts"}`` -> ``{"answer"}``
* ``POST /v1/chat/completions``: OpenAI-compatible, streamed (SSE) when ``stream`` is true;
  the sources ride in a top-level ``sources`` field of the first chunk.
* ``GET /`` and ``GET /health``; ``GET /stats`` (requests, faults).

Retrieval is the built-in BM25 retriever when its extra is installed, else a small lexical
overlap retriever; the answer is extractive (the first sentences of the top context). Faults
for tests and benchmarks: ``latency_s`` before the reply (before the first token when
streaming), ``fault_rate`` of 429 (with ``Retry-After``) or 500 replies, ``malformed_rate`` of
replies that are not JSON or lack the answer field. Behaviours to measure against:
``memory`` (a conversation memory per session id, so turns sent out of order change the
answers), ``cache`` (repeated questions answered from a cache, reported as
``"cache": {"hit": true}``), ``source_text=False`` (chat sources with ids and no text). Every
reply has ``X-RAG-Version``.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.serving import BackgroundServer

VERSION = "example-1"
DATA = Path(__file__).resolve().parent.parent / "demo" / "data"


@dataclass
class ServiceConfig:
    """How the reference service behaves (see the module doc)."""

    latency_s: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = ("429", "500")
    retry_after_s: float = 0.0
    malformed_rate: float = 0.0
    k: int = 5
    sentences: int = 2
    seed: int = 0
    corpus: str | None = None
    retriever: str = "auto"          # auto (BM25 when installed), bm25, overlap
    #: a conversation memory per session id: a follow-up is retrieved with the question the
    #: session asked before it (as it arrived), the turn reported in metadata.session_turn
    memory: bool = False
    #: an answer cache keyed by the normalised question: a repeat is answered from it at
    #: once (no latency_s), with "cache": {"hit": true}
    cache: bool = False
    #: the chat endpoint's sources carry their text (False: ids and URLs only)
    source_text: bool = True


class OverlapRetriever:
    """Chunks ranked by the share of the question's words they contain (no extra needed)."""

    name = "overlap"

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        self.words: list[set[str]] = []

    def index(self, chunks: list[Any]) -> None:
        from ragmeter.text import make_tokenizer

        tok = make_tokenizer("unicode", "none")
        self.chunks = list(chunks)
        self.words = [set(tok(c.text)) for c in self.chunks]
        self._tok = tok

    def search(self, questions: list[str], k: int) -> list[list[Any]]:
        from ragmeter.retrieval.base import Hit

        out = []
        for q in questions:
            qw = set(self._tok(q))
            scored = [(len(qw & w) / (len(qw) or 1), i) for i, w in enumerate(self.words)]
            scored.sort(key=lambda x: (-x[0], x[1]))
            out.append([Hit(self.chunks[i].chunk_id, self.chunks[i].doc_id, float(s))
                        for s, i in scored[:k]])
        return out


class KnowledgeBase:
    """The demo corpus, chunked and indexed once."""

    def __init__(self, config: ServiceConfig):
        from ragmeter.retrieval.chunking import chunk_documents
        from ragmeter.retrieval.corpus import load_corpus

        docs = load_corpus(config.corpus or DATA / "corpus.jsonl")
        self.chunks = list(chunk_documents(docs, chunk_size_chars=800, overlap_chars=120))
        self.by_id = {c.chunk_id: c for c in self.chunks}
        self.urls = {d.doc_id: d.url or d.doc_id for d in docs}
        self.retriever: Any = self._retriever(config.retriever)
        self.retriever.index(self.chunks)
        self.sentences = config.sentences

    @staticmethod
    def _retriever(kind: str) -> Any:
        if kind in ("auto", "bm25"):
            try:
                import bm25s  # noqa: F401  (the optional extra)

                from ragmeter.retrieval.retrievers import make_retriever

                return make_retriever("bm25")
            except ImportError:
                if kind == "bm25":
                    raise
        return OverlapRetriever()

    def retrieve(self, question: str, k: int) -> dict[str, Any]:
        hits = self.retriever.search([question], k)[0]
        chunks = [self.by_id[h.chunk_id] for h in hits]
        return {"context_ids": [c.chunk_id for c in chunks],
                "doc_ids": [self.urls.get(c.doc_id, c.doc_id) for c in chunks],
                "scores": [round(float(h.score), 6) for h in hits],
                "contexts": [c.text for c in chunks]}

    def generate(self, question: str, contexts: list[str]) -> str:
        """Extractive: the first sentences of the top context (an honest 'not found' when
        there is none)."""
        if not contexts:
            return "В базе знаний нет ответа на этот вопрос."
        from ragmeter.text import split_sentences

        return " ".join(split_sentences(contexts[0])[: self.sentences])


class ExampleService(BackgroundServer):
    """The service on its own event loop in a background thread (``with`` starts/stops it)."""

    what = "example service"

    def __init__(self, config: ServiceConfig | None = None, host: str = "127.0.0.1",
                 port: int = 0, kb: KnowledgeBase | None = None):
        super().__init__(host, port)
        self.config = config or ServiceConfig()
        self.kb = kb or KnowledgeBase(self.config)
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(self.config.seed)
        self._lock = threading.Lock()
        self.sessions: dict[str, list[str]] = {}
        self.cached: dict[str, dict[str, Any]] = {}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def app(self) -> Any:
        from aiohttp import web

        @web.middleware
        async def faults(request: Any, handler: Any) -> Any:
            return await self._faults(request, handler)

        async def health(request: Any) -> Any:
            return web.json_response({"ok": True})

        async def stats(request: Any) -> Any:
            return web.json_response(dict(self.counts))

        app = web.Application(middlewares=[faults])
        app.router.add_post("/answer", self._answer)
        app.router.add_post("/retrieve", self._retrieve)
        app.router.add_post("/generate", self._generate)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/", health)
        app.router.add_get("/health", health)
        app.router.add_get("/stats", stats)
        return app

    # ------------------------------------------------------------------ behaviour
    def _draw(self, rate: float) -> bool:
        with self._lock:
            return rate > 0 and self._rng.random() < rate

    def _pick(self, kinds: tuple[str, ...]) -> str:
        with self._lock:
            return self._rng.choice(kinds)

    @staticmethod
    def _version(resp: Any) -> Any:
        resp.headers["X-RAG-Version"] = VERSION
        return resp

    async def _faults(self, request: Any, handler: Any) -> Any:
        from aiohttp import web

        if request.method != "POST":
            return await handler(request)
        self.counts["requests"] += 1
        if self._draw(self.config.fault_rate):
            kind = self._pick(self.config.fault_kinds)
            self.counts[f"fault_{kind}"] += 1
            status = 429 if kind == "429" else 500
            headers = {"Retry-After": str(self.config.retry_after_s)} if status == 429 else {}
            return self._version(web.json_response({"error": kind}, status=status,
                                                   headers=headers))
        return await handler(request)

    async def _body(self, request: Any) -> dict[str, Any]:
        from aiohttp import web

        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text='{"error": "the body is not JSON"}') from None
        if not isinstance(body, dict) or not isinstance(body.get("question"), str):
            raise web.HTTPBadRequest(text='{"error": "a question is required"}')
        return body

    async def _reply(self, data: dict[str, Any], drop: str, *, hit: bool = False) -> Any:
        from aiohttp import web

        if self.config.latency_s and not hit:
            await asyncio.sleep(self.config.latency_s)
        if self._draw(self.config.malformed_rate):
            self.counts["malformed"] += 1
            if self._pick(("text", "field")) == "text":
                return self._version(web.Response(text="<html>upstream error</html>",
                                                  content_type="text/html"))
            data = {k: v for k, v in data.items() if k != drop}
        self.counts["ok"] += 1
        return self._version(web.json_response(data))

    async def _answer(self, request: Any) -> Any:
        body = await self._body(request)
        k = int(body.get("k") or self.config.k)
        question = body["question"]
        key = " ".join(question.casefold().split())
        if self.config.cache and body.get("session_id") is not None:
            self.counts["with_session"] += 1
        if self.config.cache:
            with self._lock:
                got = self.cached.get(key)
            if got is not None:
                self.counts["cache_hits"] += 1
                return await self._reply({**got, "cache": {"hit": True}}, "answer", hit=True)
        query, turn = question, 0
        sid = body.get("session_id")
        if sid is not None and not self.config.cache:
            self.counts["with_session"] += 1
        if self.config.memory and sid is not None:
            with self._lock:
                seen = self.sessions.setdefault(str(sid), [])
                if seen:
                    query = f"{seen[-1]} {question}"
                seen.append(question)
                turn = len(seen)
        found = self.kb.retrieve(query, k)
        answer = self.kb.generate(question, found["contexts"])
        meta: dict[str, Any] = {"session_id": sid, "turns": len(body.get("history") or [])}
        if self.config.memory:
            meta["session_turn"] = turn
        data: dict[str, Any] = {"answer": answer, **found, "metadata": meta}
        if self.config.cache:
            with self._lock:
                self.cached[key] = data
            data = {**data, "cache": {"hit": False}}
        return await self._reply(data, "answer")

    async def _retrieve(self, request: Any) -> Any:
        body = await self._body(request)
        found = self.kb.retrieve(body["question"], int(body.get("k") or self.config.k))
        return await self._reply(found, "context_ids")

    async def _generate(self, request: Any) -> Any:
        body = await self._body(request)
        ctx = [str(c) for c in body.get("contexts") or []]
        return await self._reply({"answer": self.kb.generate(body["question"], ctx)},
                                 "answer")

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        msgs = body.get("messages") or []
        question = next((str(m.get("content", "")) for m in reversed(msgs)
                         if m.get("role") == "user"), "")
        found = self.kb.retrieve(question, self.config.k)
        answer = self.kb.generate(question, found["contexts"])
        sources = [{"id": i, "url": u, **({"text": t} if self.config.source_text else {})}
                   for i, u, t in zip(found["context_ids"], found["doc_ids"],
                                      found["contexts"], strict=True)]
        if not body.get("stream"):
            return await self._reply({"id": "ex", "object": "chat.completion",
                                      "choices": [{"index": 0, "message": {
                                          "role": "assistant", "content": answer}}],
                                      "sources": sources}, "choices")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "X-RAG-Version": VERSION})
        await resp.prepare(request)
        if self.config.latency_s:
            await asyncio.sleep(self.config.latency_s)
        if self._draw(self.config.malformed_rate):
            self.counts["malformed"] += 1
            await resp.write(b"data: {not json\n\n")
            return resp
        words = answer.split(" ")
        for i, word in enumerate(words):
            chunk: dict[str, Any] = {"id": "ex", "object": "chat.completion.chunk",
                                     "choices": [{"index": 0, "delta": {
                                         "content": word if i == 0 else " " + word}}]}
            if i == 0:
                chunk["sources"] = sources
            await resp.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        usage = {"choices": [], "usage": {"prompt_tokens": len(question.split()),
                                          "completion_tokens": len(words)}}
        await resp.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        self.counts["ok"] += 1
        return resp


def wait_until_stopped(service: ExampleService) -> None:
    """Block the calling thread until Ctrl-C (the CLI's foreground mode)."""
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        service.stop()


__all__ = ["DATA", "VERSION", "ExampleService", "KnowledgeBase", "OverlapRetriever",
           "ServiceConfig", "wait_until_stopped"]
