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

from ragmeter.calls.http import LoopSessions
from ragmeter.secrets import mask_url, split_url_credentials
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import EntryConfig, TargetConfig
from ragmeter.targets.mapping import expand_env, render
from ragmeter.targets.reading import clean_text, parse_json, read_mapped

#: the request sent when a config declares no template
DEFAULT_REQUEST = {"question": "{question}", "history": "{history}",
                   "session_id": "{session_id}", "k": "{k}", "contexts": "{contexts}"}


def request_values(req: TargetRequest) -> dict[str, Any]:
    return {"question": req.question, "history": [dict(h) for h in req.history],
            "session_id": req.session_id, "k": req.k, "contexts": list(req.contexts),
            "id": req.sample_id}


def http_sessions(config: TargetConfig, headers: Mapping[str, str] | None = None
                  ) -> LoopSessions:
    """One aiohttp session per event loop with the config's headers (secrets from the
    environment, registered for masking; sent to the configured origin only), its redirect
    mode and its reply bound."""
    given = config.headers if headers is None else headers
    expanded = {h: expand_env(v, f"target.headers.{h}") for h, v in given.items()}
    return LoopSessions(timeout_s=config.timeout_s, headers=expanded,
                        redirects=config.follow_redirects,
                        max_reply_bytes=config.max_reply_bytes)


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The URL without ``user:password@`` and the Authorization header it implies."""
    clean, auth = split_url_credentials(url)
    return clean, ({"Authorization": auth} if auth else {})


def decode(data: bytes) -> tuple[str, int]:
    """A reply body as text: bytes that are not UTF-8 replaced by U+FFFD, and counted."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        return clean_text(data.decode("utf-8", errors="surrogateescape"))


async def send(http: LoopSessions, method: str, url: str, body: Any,
               headers: Mapping[str, str]) -> tuple[str, float | None, Mapping[str, str], int]:
    """One request -> ``(body text, time of its first byte, headers, invalid bytes)``;
    network failures, redirects not followed, replies over the bound and non-2xx replies as
    :class:`~ragmeter.calls.errors.CallError`."""
    async with http.request(method, url, json=body if method != "GET" else None,
                            params=_params(body) if method == "GET" else None,
                            headers=headers) as reply:
        if reply.status >= 300:
            raise await reply.error()
        data = await reply.read()
        first, got = reply.first_byte_at, reply.headers
    text, invalid = decode(data)
    return text, first, got, invalid


def _params(body: Any) -> dict[str, str] | None:
    if not isinstance(body, Mapping):
        return None
    return {str(k): str(v) for k, v in body.items() if v is not None}


class HttpTarget:
    """A JSON-over-HTTP service (see the module doc)."""

    kind = "http"
    #: its connections stay open from one batch to the next (TargetCaller.call_many)
    keeps_connections = True

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

    def check(self) -> None:
        """Before calls are made (``ragmeter run`` checks every target before its first
        tier): the HTTP client is loaded here, not inside the first batch's timing."""
        import aiohttp  # noqa: F401

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
        text, first, headers, invalid = await send(self.http, ec.method, url, body, auth)
        end = time.perf_counter()
        rep = read_mapped(parse_json(text), ec.response, request.entry, text)
        rep.ttft_s, rep.latency_s = (first or end) - t0, end - t0
        rep.invalid_text += invalid
        if self.config.version_header:
            rep.version = headers.get(self.config.version_header)
        return rep

    async def aclose(self) -> None:
        await self.http.aclose()


KINDS.register("http", HttpTarget)

__all__ = ["DEFAULT_REQUEST", "HttpTarget", "decode", "http_sessions", "request_values",
           "send", "split_url"]
