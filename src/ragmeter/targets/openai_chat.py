"""The ``openai`` target kind: the system behind an OpenAI-compatible chat endpoint.

The question (after the history's turns) is sent as the user message with ``stream: true``;
the time to first token is the time to the first non-empty content delta of the SSE stream.
Sources are read from a named top-level field of any streamed chunk (or of the whole reply
without streaming), ``sources_field`` (default ``sources``): a list of texts or of objects
with ``text`` / ``id`` / ``doc_id`` / ``url`` (sources with ids and no text keep their ids:
retrieval metrics are scored, context metrics are not). A ``response:`` mapping reads declared
paths from the reply instead, as for ``http`` — from the streamed chunks joined into one
``chat.completion`` object (:func:`~ragmeter.targets.reading.stream_reply`). ``generate``
sends the given contexts in a system message.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.calls.http import Reply
from ragmeter.errors import ConfigError
from ragmeter.secrets import mask_url
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig
from ragmeter.targets.http import decode, http_sessions, split_url
from ragmeter.targets.mapping import extract
from ragmeter.targets.reading import parse_json, read_mapped, read_plain, stream_reply

_CONTEXT_NOTE = "Answer the question from these passages only:\n\n"
_ANSWER_PATH = "choices[0].message.content"


def _endpoint(url: str) -> str:
    """``…/v1`` -> ``…/v1/chat/completions`` (a query string stays at the end)."""
    path, sep, query = url.partition("?")
    path = path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return path + sep + query


class OpenAIChatTarget:
    """An OpenAI-compatible chat endpoint (see the module doc)."""

    kind = "openai"
    #: its connections stay open from one batch to the next (TargetCaller.call_many)
    keeps_connections = True

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.max_concurrency = config.max_concurrency
        self.timeout_s = config.timeout_s
        headers = dict(config.headers)
        if config.api_key_env and os.environ.get(config.api_key_env) is None:
            raise ConfigError("target.api_key_env", f"environment variable "
                              f"{config.api_key_env} is not set")
        if config.api_key_env and "Authorization" not in headers:
            headers["Authorization"] = "Bearer ${env:" + config.api_key_env + "}"
        self.http = http_sessions(config, headers)
        self.url, self.auth = split_url(_endpoint(config.url or ""))
        self.signature = TargetSignature("openai", mask_url(self.url) + f"#{config.model}",
                                         config.config_hash())

    def check(self) -> None:
        """Before calls are made (``ragmeter run`` checks every target before its first
        tier): the HTTP client is loaded here, not inside the first batch's timing."""
        import aiohttp  # noqa: F401

    def entries(self) -> list[str]:
        return ["answer", "generate"]

    def _body(self, req: TargetRequest) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": self.config.system_prompt})
        if req.entry == "generate":
            messages.append({"role": "system", "content": _CONTEXT_NOTE + "\n\n".join(
                f"[{i + 1}] {c}" for i, c in enumerate(req.contexts))})
        messages += [{"role": str(h.get("role", "user")), "content": str(h.get("content", ""))}
                     for h in req.history]
        messages.append({"role": "user", "content": req.question})
        body: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                "stream": self.config.stream}
        if req.session_id:
            body["user"] = req.session_id
        if self.config.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    async def call(self, request: TargetRequest) -> TargetReply:
        t0 = time.perf_counter()
        async with self.http.request("POST", self.url, json=self._body(request),
                                     headers=self.auth) as reply:
            if reply.status >= 300:
                raise await reply.error()
            version = reply.headers.get(self.config.version_header or "") \
                if self.config.version_header else None
            if self.config.stream:
                rep = await self._read_stream(reply, t0, request.entry)
            else:
                text, invalid = decode(await reply.read())
                rep = self._read_whole(text, request.entry)
                rep.invalid_text += invalid
                rep.ttft_s = (reply.first_byte_at or time.perf_counter()) - t0
        rep.latency_s = time.perf_counter() - t0
        rep.version = version
        return rep

    async def _read_stream(self, reply: Reply, t0: float, entry: str) -> TargetReply:
        lines: list[str] = []
        chunks: list[dict[str, Any]] = []
        ttft: float | None = None
        done = False
        invalid = 0
        async for raw_line in reply.lines():
            line, bad = decode(raw_line)
            line = line.strip()
            if not line.startswith("data:"):
                continue
            invalid += bad
            lines.append(line)
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            chunk = _chunk(payload, "\n".join(lines))
            chunks.append(chunk)
            if ttft is None and any(((c or {}).get("delta") or {}).get("content")
                                    for c in chunk.get("choices") or ()
                                    if isinstance(c, dict)):
                ttft = time.perf_counter() - t0
        raw = "\n".join(lines)
        data = stream_reply(chunks)
        if not done and not data["choices"][0]["message"]["content"]:
            raise CallError("bad_reply", "the stream ended without data",
                            raw=raw)
        rep = self._read(data, raw, entry)
        rep.ttft_s = ttft if ttft is not None else time.perf_counter() - t0
        rep.invalid_text += invalid
        return rep

    def _read_whole(self, text: str, entry: str) -> TargetReply:
        return self._read(parse_json(text), text, entry)

    def _read(self, data: Any, raw: str, entry: str) -> TargetReply:
        """A ``chat.completion`` object (a streamed one joined): the declared ``response:``
        paths (the answer at ``choices[0].message.content`` unless declared), else the
        answer and the sources field (sources with ids and no text keep their ids)."""
        mapping = self.config.entries["answer"].response
        if mapping:
            rep = read_mapped(data, {"answer": _ANSWER_PATH, **mapping}, entry, raw)
        else:
            answer = extract(data, _ANSWER_PATH)
            if not isinstance(answer, str):
                raise CallError("unmapped", f"answer: path {_ANSWER_PATH!r} is "
                                "not in the reply", raw=raw)
            field = self.config.sources_field
            sources = data.get(field) if field and isinstance(data, dict) else None
            rep = read_plain({"answer": answer, "contexts": sources}, "answer", raw)
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            rep.tokens_in = rep.tokens_in if rep.tokens_in is not None else \
                usage.get("prompt_tokens")
            rep.tokens_out = rep.tokens_out if rep.tokens_out is not None else \
                usage.get("completion_tokens")
        return rep

    async def aclose(self) -> None:
        await self.http.aclose()


def _chunk(payload: str, raw: str) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except ValueError:
        raise CallError("bad_reply", f"a streamed chunk is not JSON: {payload[:80]!r}",
                        raw=raw) from None
    if not isinstance(chunk, dict):
        raise CallError("bad_reply", "a streamed chunk is not a JSON object", raw=raw)
    return chunk


KINDS.register("openai", OpenAIChatTarget)

__all__ = ["OpenAIChatTarget"]
