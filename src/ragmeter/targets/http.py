"""The ``http`` target kind: a JSON request template in, declared paths out.

::

    target:
      kind: http
      url: http://127.0.0.1:8000/ask
      headers: {Authorization: "Bearer ${env:BOT_KEY}"}
      request: {query: "{question}", history: "{history}", top_k: "{k}", mode: fast}
      response: {answer: data.answer, contexts: "data.sources[*].text",
                 doc_ids: "data.sources[*].url"}
      entries:
        retrieve: {url: http://127.0.0.1:8000/search, response: {doc_ids: "hits[*].id"}}

Placeholders: ``{question}``, ``{history}`` (a list of ``{"role", "content"}``),
``{session_id}``, ``{k}``, ``{contexts}`` (``generate``), ``{id}`` (the sample id).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ragmeter.calls.http import LoopSessions, status_error, transport_error, transport_exceptions
from ragmeter.secrets import mask_url, split_url_credentials
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import EntryConfig, TargetConfig
from ragmeter.targets.mapping import expand_env, render
from ragmeter.targets.reading import parse_json, read_mapped

#: the request sent when a config declares no template
DEFAULT_REQUEST = {"question": "{question}", "history": "{history}",
                   "session_id": "{session_id}", "k": "{k}", "contexts": "{contexts}"}


def request_values(req: TargetRequest) -> dict[str, Any]:
    return {"question": req.question, "history": [dict(h) for h in req.history],
            "session_id": req.session_id, "k": req.k, "contexts": list(req.contexts),
            "id": req.sample_id}


def http_sessions(config: TargetConfig) -> LoopSessions:
    """One aiohttp session per event loop with the config's headers (secrets from the
    environment, registered for masking)."""
    headers = {h: expand_env(v, f"target.headers.{h}") for h, v in config.headers.items()}
    return LoopSessions(timeout_s=config.timeout_s, headers=headers)


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The URL without ``user:password@`` and the Authorization header it implies."""
    clean, auth = split_url_credentials(url)
    return clean, ({"Authorization": auth} if auth else {})


async def send(session: Any, method: str, url: str, body: Any,
               headers: Mapping[str, str]) -> tuple[str, float, Mapping[str, str]]:
    """One request -> ``(body text, seconds to the first body byte, headers)``; network
    failures and non-2xx replies as :class:`~ragmeter.calls.errors.CallError`."""
    t0 = time.perf_counter()
    try:
        async with session.request(method, url, json=body if method != "GET" else None,
                                   params=_params(body) if method == "GET" else None,
                                   headers=headers) as resp:
            first = await resp.content.read(1)
            ttft = time.perf_counter() - t0
            text = (first + await resp.content.read()).decode("utf-8", errors="replace")
            status, got = resp.status, resp.headers
    except transport_exceptions() as exc:
        raise transport_error(exc, mask_url(url)) from None
    if status >= 300:
        raise status_error(status, text, got)
    return text, ttft, got


def _params(body: Any) -> dict[str, str] | None:
    if not isinstance(body, Mapping):
        return None
    return {str(k): str(v) for k, v in body.items() if v is not None}


class HttpTarget:
    """A JSON-over-HTTP service (see the module doc)."""

    kind = "http"

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.max_concurrency = config.max_concurrency
        self.timeout_s = config.timeout_s
        self.http = http_sessions(config)
        self._urls: dict[str, tuple[str, dict[str, str]]] = {
            e: split_url(c.url or "") for e, c in config.entries.items()}
        self.signature = TargetSignature("http", mask_url(self._urls["answer"][0]),
                                         config.config_hash())

    def entries(self) -> list[str]:
        return list(self.config.entries)

    def entry(self, name: str) -> EntryConfig:
        return self.config.entries[name]

    async def call(self, request: TargetRequest) -> TargetReply:
        ec = self.entry(request.entry)
        url, auth = self._urls[request.entry]
        body = render(ec.request if ec.request is not None else DEFAULT_REQUEST,
                      request_values(request))
        t0 = time.perf_counter()
        text, ttft, headers = await send(self.http.get(), ec.method, url, body, auth)
        latency = time.perf_counter() - t0
        rep = read_mapped(parse_json(text), ec.response, request.entry, text)
        rep.ttft_s, rep.latency_s = ttft, latency
        if self.config.version_header:
            rep.version = headers.get(self.config.version_header)
        return rep

    async def aclose(self) -> None:
        await self.http.aclose()


KINDS.register("http", HttpTarget)

__all__ = ["DEFAULT_REQUEST", "HttpTarget", "http_sessions", "request_values", "send",
           "split_url"]
