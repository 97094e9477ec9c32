"""A fake OpenAI-compatible chat server on 127.0.0.1 for tests, benchmarks and dry runs.

Replies are scripted (``reply_fn``) or derived from the request's JSON schema (a valid
instance). Latency, an in-flight cap (queue or HTTP 429 over it) and faults (429 with
Retry-After, 500, timeout, invalid JSON, truncated output, schema-violating JSON, refusal, an
HTML page with status 200), chosen by rate (seeded) or by a script, are configurable.
A request with ``"logprobs": true`` gets token log-probabilities back (text cut into word and
punctuation tokens; a verdict token's probability seeded from the reply, or scripted with
``token_prob_fn``). ``GET /stats`` returns counters, ``POST /reset`` clears them. ``POST /v1/embeddings`` answers
like an OpenAI-compatible embeddings endpoint with deterministic test vectors
(:func:`mock_embedding`: hashed words and character trigrams, so texts sharing words get
closer vectors; not a language model), with the same latency, cap and faults (429, 500,
timeout, html) as the chat endpoint. The files and
batches endpoints of an OpenAI-compatible Batch API, and an offline ``vllm run-batch``-shaped
runner, are in :mod:`ragmeter.judges.mock_batches`.

    with MockJudgeServer(MockConfig(latency_ms=50, fault_rate=0.2)) as srv:
        cfg = JudgeConfig(backend="openai", base_url=srv.base_url, model="mock", ...)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.judges.logprobs import VERDICT_TOKENS, bare, split_tokens
from ragmeter.judges.parsing import JSONExtractError, example_instance, extract_json
from ragmeter.serving import BackgroundServer

FAULT_KINDS = ("429", "500", "timeout", "invalid_json", "truncated", "schema_error", "refusal",
               "no_response_format", "html")
#: what the ``html`` fault answers with status 200 (a proxy's error page, a login wall)
HTML_PAGE = ("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>"
             "<h1>Bad Gateway</h1><p>The upstream server did not answer.</p></body></html>")
DEFAULT_FAULTS = ("429", "500", "timeout", "invalid_json", "truncated")


@dataclass
class MockConfig:
    """Behaviour of :class:`MockJudgeServer`.

    ``script`` is a list of actions ("ok" or a fault kind) applied to successive requests
    (then ``fault_rate`` applies). ``reply_fn(body, schema) -> data|str`` scripts the
    content of "ok" replies. ``supports_response_format=False`` answers 400 to any request
    with ``response_format`` (like servers that lack structured output).
    """

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    max_concurrency: int | None = None
    reject_over_cap: bool = False
    fault_rate: float = 0.0
    fault_kinds: Sequence[str] = DEFAULT_FAULTS
    script: Sequence[str] = ()
    retry_after_s: float | None = 1.0
    hang_s: float = 30.0
    seed: int = 0
    supports_response_format: bool = True
    reply_fn: Callable[[dict[str, Any], dict[str, Any] | None], Any] | None = None
    model: str = "mock-judge"
    require_api_key: str | None = None
    #: the exact ``Authorization`` header to require (e.g. ``Basic ...``), else 401
    require_authorization: str | None = None
    #: mark replies with ``X-Ragmeter-Mock: 1`` (a real judge never caches marked replies);
    #: off to stand in for a real endpoint in tests
    mark_replies: bool = True
    reject_params: Sequence[str] = ()  # e.g. ("max_tokens", "seed"), answered like OpenAI's 400
    #: keep every raw request body in ``MockJudgeServer.received`` (tests of what was sent)
    record_bodies: bool = False
    #: length of the vectors ``/v1/embeddings`` returns (unless the request asks ``dimensions``)
    embedding_dim: int = 64
    #: ``token_prob_fn(body, text)``: the probability of the reply's verdict tokens when the
    #: request asks for ``logprobs`` (default: seeded from the reply text, 0.5-1)
    token_prob_fn: Callable[[dict[str, Any], str], float] | None = None

    def __post_init__(self) -> None:
        bad = [k for k in (*self.fault_kinds, *self.script) if k != "ok" and k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kind {bad[0]!r}; known: {', '.join(FAULT_KINDS)}")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {self.fault_rate}")


@dataclass
class _Counters:
    requests: int = 0
    ok: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    rejected_over_cap: int = 0
    with_response_format: int = 0
    prompt_chars: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    embedding_requests: int = 0
    embedded_texts: int = 0


def find_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of a request: ``response_format`` first, else one named in the prompt."""
    rf = body.get("response_format")
    if isinstance(rf, dict):
        js = rf.get("json_schema")
        if isinstance(js, dict) and isinstance(js.get("schema"), dict):
            return dict(js["schema"])
        if isinstance(rf.get("schema"), dict):
            return dict(rf["schema"])
    for msg in reversed(body.get("messages") or []):
        content = str(msg.get("content") or "")
        for marker in ("JSON schema:", "JSON-схеме:", "JSON Schema:"):
            pos = content.rfind(marker)
            if pos >= 0:
                try:
                    value = extract_json(content[pos + len(marker):])
                except JSONExtractError:
                    continue
                if isinstance(value, dict):
                    return value
    return None


class MockJudgeServer(BackgroundServer):
    """The fake server, run on its own event loop in a background thread."""

    what = "mock judge server"
    start_timeout_s = 15.0

    def __init__(self, config: MockConfig | None = None, host: str = "127.0.0.1", port: int = 0):
        super().__init__(host, port)
        self.config = config or MockConfig()
        self._counters = _Counters()
        self._lock = threading.Lock()
        self._rng = random.Random(self.config.seed)
        self._sem: asyncio.Semaphore | None = None
        #: raw request bodies, in arrival order (with ``MockConfig.record_bodies``)
        self.received: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- lifecycle (BackgroundServer) ------------------------------------------------------------
    def app(self) -> Any:
        from aiohttp import web

        if self.config.max_concurrency:
            self._sem = asyncio.Semaphore(self.config.max_concurrency)
        app = web.Application(client_max_size=64 * 1024 * 1024,
                              middlewares=[_mark_mock] if self.config.mark_replies else [])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_post("/reset", self._reset)
        app.router.add_get("/health", self._health)
        from ragmeter.judges.mock_batches import add_batch_routes

        add_batch_routes(app, self)  # files + batches API (OpenAI Batch)
        return app

    # -- stats -----------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._lock:
            c = self._counters
            return {
                "requests": c.requests, "ok": c.ok, "in_flight": c.in_flight,
                "peak_in_flight": c.peak_in_flight, "rejected_over_cap": c.rejected_over_cap,
                "with_response_format": c.with_response_format, "prompt_chars": c.prompt_chars,
                "faults": dict(c.faults), "embedding_requests": c.embedding_requests,
                "embedded_texts": c.embedded_texts,
            }

    def reset(self) -> None:
        with self._lock:
            self._counters = _Counters()
            self._rng = random.Random(self.config.seed)

    async def _stats(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response(self.stats())

    async def _reset(self, request: Any) -> Any:
        from aiohttp import web

        self.reset()
        return web.json_response({"ok": True})

    async def _health(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"status": "ok"})

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"object": "list",
                                  "data": [{"id": self.config.model, "object": "model"}]})

    def _denied(self, request: Any) -> Any:
        """A 401 reply when the request lacks the configured credentials, else ``None``."""
        from aiohttp import web

        cfg = self.config
        want = (cfg.require_authorization if cfg.require_authorization is not None
                else f"Bearer {cfg.require_api_key}" if cfg.require_api_key is not None
                else None)
        if want is not None and request.headers.get("Authorization") != want:
            with self._lock:
                self._counters.requests += 1
                self._counters.faults["401"] += 1
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        return None

    async def _embeddings(self, request: Any) -> Any:
        from aiohttp import web

        if (denied := self._denied(request)) is not None:
            return denied
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return web.json_response({"error": {"message": "input must be a string or a list "
                                                           "of strings"}}, status=400)
        dim = body.get("dimensions") or self.config.embedding_dim
        if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= 8192:
            return web.json_response({"error": {"message": "dimensions must be an integer "
                                                           "in 1..8192"}}, status=400)
        cfg = self.config
        action = self._next_action() if cfg.script or cfg.fault_rate else "ok"
        return await self._gated(action, lambda: self._embedded(body, texts, dim, action))

    async def _embedded(self, body: dict[str, Any], texts: list[str], dim: int,
                        action: str) -> Any:
        from aiohttp import web

        with self._lock:
            self._counters.embedding_requests += 1
            self._counters.embedded_texts += len(texts)
            self._counters.in_flight += 1
            self._counters.peak_in_flight = max(self._counters.peak_in_flight,
                                                self._counters.in_flight)
            if action != "ok":
                self._counters.faults[action] += 1
        try:
            await self._wait(action)
        finally:
            with self._lock:
                self._counters.in_flight -= 1
        if action == "500":
            return web.json_response({"error": {"message": "internal error"}}, status=500)
        if action == "html":
            return web.Response(text=HTML_PAGE, content_type="text/html")
        data = [{"object": "embedding", "index": i, "embedding": mock_embedding(t, dim)}
                for i, t in enumerate(texts)]
        n_tokens = sum(len(t) for t in texts) // 4 + 1
        return web.json_response({"object": "list", "data": data,
                                  "model": str(body.get("model") or self.config.model),
                                  "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens}})

    # -- chat ------------------------------------------------------------------------------------
    def _next_action(self) -> str:
        with self._lock:
            n = self._counters.requests
            self._counters.requests += 1
            cfg = self.config
            if n < len(cfg.script):
                return cfg.script[n]
            if cfg.fault_rate > 0 and self._rng.random() < cfg.fault_rate:
                return self._rng.choice(list(cfg.fault_kinds))
            return "ok"

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        cfg = self.config
        if (denied := self._denied(request)) is not None:
            return denied
        try:
            if cfg.record_bodies:
                raw = await request.text()
                with self._lock:
                    self.received.append(raw)
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        for param in cfg.reject_params:
            if param in body:
                with self._lock:
                    self._counters.requests += 1
                    self._counters.faults[f"param:{param}"] += 1
                hint = (" Use 'max_completion_tokens' instead." if param == "max_tokens" else "")
                return web.json_response(
                    {"error": {"message": f"Unsupported parameter: '{param}' is not supported "
                                          f"with this model.{hint}",
                               "type": "invalid_request_error", "param": param}}, status=400)
        action = self._next_action()
        with self._lock:
            self._counters.prompt_chars += sum(len(str(m.get("content") or ""))
                                               for m in body.get("messages") or [])
            if body.get("response_format"):
                self._counters.with_response_format += 1
        if body.get("response_format") and (not cfg.supports_response_format
                                            or action == "no_response_format"):
            with self._lock:
                self._counters.faults["no_response_format"] += 1
            return web.json_response(
                {"error": {"message": "response_format json_schema is not supported"}},
                status=400)
        return await self._gated(action, lambda: self._answer(body, action))

    async def _gated(self, action: str, answer: Callable[[], Awaitable[Any]]) -> Any:
        """``answer()`` behind the scripted 429 and the concurrency cap (a 429 when
        ``reject_over_cap`` and every slot is taken, else a wait for a slot)."""
        cfg = self.config
        if action == "429":
            with self._lock:
                self._counters.faults["429"] += 1
            return self._too_many()
        if self._sem is not None:
            if cfg.reject_over_cap and self._sem.locked():
                with self._lock:
                    self._counters.rejected_over_cap += 1
                return self._too_many()
            async with self._sem:
                return await answer()
        return await answer()

    def _too_many(self) -> Any:
        from aiohttp import web

        headers = {}
        if self.config.retry_after_s is not None:
            headers["Retry-After"] = f"{self.config.retry_after_s:g}"
        return web.json_response({"error": {"message": "rate limit exceeded",
                                            "code": "rate_limit_exceeded"}},
                                 status=429, headers=headers)

    async def _answer(self, body: dict[str, Any], action: str) -> Any:
        from aiohttp import web

        cfg = self.config
        with self._lock:
            self._counters.in_flight += 1
            self._counters.peak_in_flight = max(self._counters.peak_in_flight,
                                                self._counters.in_flight)
            if action not in ("ok", "no_response_format"):
                self._counters.faults[action] += 1  # counted now: a hung call may be cancelled
        try:
            await self._wait(action)
            if action == "500":
                return web.json_response({"error": {"message": "internal error"}}, status=500)
            if action == "html":
                return web.Response(text=HTML_PAGE, content_type="text/html")
            schema = find_schema(body)
            finish = "stop"
            refusal = None
            if action == "invalid_json":
                text = '{"verdict": "yes", "reason": "unterminated'
            elif action == "truncated":
                full = json.dumps(self._content(body, schema), ensure_ascii=False)
                text = full[: max(1, len(full) // 2)]
                finish = "length"
            elif action == "schema_error":
                text = json.dumps(["not", "matching", "the", "schema"])
            elif action == "refusal":
                text = None
                refusal = "I can't help with that."
            else:
                content = self._content(body, schema)
                text = content if isinstance(content, str) else json.dumps(content,
                                                                           ensure_ascii=False)
            with self._lock:
                if action in ("ok", "timeout", "no_response_format"):
                    self._counters.ok += 1
            prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish,
                                      "message": {"role": "assistant", "content": text,
                                                  "refusal": refusal}}
            if body.get("logprobs") and text:
                choice["logprobs"] = {"content": self._logprobs(body, text)}
            return web.json_response({
                "id": f"mock-{time.time_ns()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model") or cfg.model),
                "choices": [choice],
                "usage": {"prompt_tokens": prompt_chars // 4 + 1,
                          "completion_tokens": len(text or "") // 4 + 1,
                          "total_tokens": prompt_chars // 4 + len(text or "") // 4 + 2},
            })
        finally:
            with self._lock:
                self._counters.in_flight -= 1

    async def _wait(self, action: str) -> None:
        """The configured latency (with jitter), or the hang of a ``timeout`` fault."""
        cfg = self.config
        delay = cfg.latency_ms / 1000.0
        if cfg.jitter_ms:
            with self._lock:
                delay += self._rng.uniform(0, cfg.jitter_ms / 1000.0)
        if action == "timeout":
            delay = max(delay, cfg.hang_s)
        if delay > 0:
            await asyncio.sleep(delay)

    def _logprobs(self, body: dict[str, Any], text: str) -> list[dict[str, Any]]:
        """Per token of ``text``: its log-probability (verdict tokens at the reply's
        probability, the rest near-certain)."""
        fn = self.config.token_prob_fn
        if fn is not None:
            p = float(fn(body, text))
        else:
            h = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
            p = 0.5 + 0.5 * int.from_bytes(h, "big") / 2 ** 64
        verdict_lp = math.log(min(max(p, 1e-12), 1.0))
        out = []
        for tok in split_tokens(text):
            lp = verdict_lp if bare(tok) in VERDICT_TOKENS else math.log(0.999)
            out.append({"token": tok, "logprob": lp, "bytes": list(tok.encode("utf-8")),
                        "top_logprobs": []})
        return out

    def _content(self, body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
        if self.config.reply_fn is not None:
            return self.config.reply_fn(body, schema)
        if schema is None:
            return "OK"
        seed = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
        return example_instance(schema, seed)


def mock_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit test vector of ``text``: signed hashed counts of its lower-cased
    words and character trigrams (texts sharing words and spellings get closer vectors)."""
    vec = [0.0] * dim
    low = text.lower()
    feats = low.split() + [low[i:i + 3] for i in range(max(0, len(low) - 2))]
    for f in feats:
        h = int.from_bytes(hashlib.blake2b(f.encode("utf-8"), digest_size=8).digest(), "big")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


async def _mark_mock(request: Any, handler: Any) -> Any:
    resp = await handler(request)
    resp.headers["X-Ragmeter-Mock"] = "1"  # a real judge never caches these replies
    return resp


_mark_mock.__middleware_version__ = 1  # type: ignore[attr-defined]


def serve_forever(config: MockConfig, host: str = "127.0.0.1", port: int = 8765,
                  on_ready: Callable[[MockJudgeServer], None] | None = None) -> None:
    """Run the server in the foreground until interrupted (used by ``ragmeter serve mock-judge``)."""
    srv = MockJudgeServer(config, host=host, port=port).start()
    if on_ready is not None:
        on_ready(srv)
    try:
        while srv._thread is not None and srv._thread.is_alive():
            srv._thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
