"""OpenAI-compatible chat completions over HTTP (OpenRouter, vLLM, Ollama, llama.cpp server).

Transport: :mod:`ragmeter.calls.http` (one ``aiohttp.ClientSession`` per event loop, opened
when the first ``aask_many`` of that loop starts and closed when the last one ends, so no
connection ever outlives its loop; the one map of failures to
:class:`~ragmeter.calls.errors.CallError`). The API key is read from the
environment at call time and only ever placed in the ``Authorization`` header; credentials
written into a URL (``http://user:pass@host``) become a Basic ``Authorization`` header; every
error detail is redacted. Several base URLs make a :class:`PoolBackend`: one member per
endpoint, each with its own adaptive limit in the engine.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.calls.endpoints import Endpoint, mask_url_credentials
from ragmeter.calls.errors import CallError
from ragmeter.calls.http import LoopSessions, status_error
from ragmeter.judges.backend import BackendBase, Completion
from ragmeter.judges.config import JudgeConfig
from ragmeter.secrets import mask, register_secret

#: the fake server marks its replies with this header; they are never cached for a real judge
MOCK_HEADER = "X-Ragmeter-Mock"

log = logging.getLogger("ragmeter.judges")

_SCHEMA_REJECTION_HINTS = ("response_format", "json_schema", "structured output", "grammar")


class OpenAIBackend(BackendBase):
    """Chat completions at ``{base_url}/chat/completions`` with optional JSON-schema output."""

    kind = "openai"
    hedgeable = True   # a duplicate of a stalled HTTP call costs the server little

    def __init__(self, config: JudgeConfig, *, extra_body: Mapping[str, Any] | None = None,
                 endpoint: Endpoint | None = None):
        if endpoint is None:
            eps = config.endpoints()
            if len(eps) != 1:
                raise ValueError("OpenAIBackend serves one endpoint; use make_backend()")
            endpoint = eps[0]
        self.endpoint = endpoint
        base = endpoint.url.rstrip("/")
        if base.endswith("/chat/completions"):
            base = base[: -len("/chat/completions")]
        self.url = base + "/chat/completions"
        self.model = config.model
        self.supports_schema = config.structured_output
        self._config = config
        self._extra_body = dict(extra_body or {})
        self._secrets = endpoint.secrets()   # the endpoint is frozen: decoded once
        self._use_max_completion_tokens = False
        self._send_seed = True
        cap = config.max_concurrency   # room for hedged duplicates of stalled calls
        self._http = LoopSessions(timeout_s=config.timeout_s, limit=2 * cap + 4,
                                  connect_s=min(10.0, config.timeout_s))

    def __repr__(self) -> str:
        return f"OpenAIBackend(url={mask_url_credentials(self.url)!r}, model={self.model!r})"

    async def enter(self) -> None:
        """Called by the judge when an ``aask_many`` starts on the running loop."""
        await self._http.enter()

    async def exit(self) -> None:
        """Called when it ends; the last user of a loop closes that loop's session."""
        await self._http.exit()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _key(self) -> str | None:
        env = self.endpoint.api_key_env
        return (os.environ.get(env) or None) if env else None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self._config.headers()}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self.endpoint.basic_auth:
            headers["Authorization"] = self.endpoint.basic_auth
        return headers

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        """One completion; adapts once per model to rejected parameters (see ``_adapt``). A
        call sent before another call's rejection adapted the client is sent again adapted."""
        for _ in range(4):
            sent = (self._use_max_completion_tokens, self._send_seed)
            try:
                return await self._complete(messages, schema, max_tokens=max_tokens,
                                            temperature=temperature, seed=seed)
            except CallError as exc:
                adapted = sent != (self._use_max_completion_tokens, self._send_seed)
                if not (exc.status == 400 and (self._adapt(exc.detail) or adapted)):
                    raise
        return await self._complete(messages, schema, max_tokens=max_tokens,
                                    temperature=temperature, seed=seed)

    def _adapt(self, detail: str) -> bool:
        """Learn from a 400 naming an unsupported parameter: ``max_tokens`` →
        ``max_completion_tokens`` (newer OpenAI models), drop ``seed``. True if changed."""
        text = detail.lower()
        if "max_completion_tokens" in text and not self._use_max_completion_tokens:
            self._use_max_completion_tokens = True
        elif "seed" in text and ("unsupported" in text or "unrecognized" in text
                                 or "not supported" in text) and self._send_seed:
            self._send_seed = False
        else:
            return False
        log.info("endpoint %s rejected a parameter; adapted (%s)", self.url, detail[:120])
        return True

    def adapt(self, detail: str) -> bool:
        """:meth:`_adapt` for a 400 that came back another way (a batch file's error line)."""
        return self._adapt(detail)

    def chat_body(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                  *, max_tokens: int, temperature: float, seed: int | None) -> dict[str, Any]:
        """The JSON body of one chat completion request, exactly as :meth:`complete` posts it
        (batch files carry the same body: :mod:`ragmeter.judges.batchfiles`)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": temperature,
            **self._extra_body,
        }
        body["max_completion_tokens" if self._use_max_completion_tokens else "max_tokens"] = (
            max_tokens)
        if seed is not None and self._send_seed:
            body["seed"] = seed
        if self._config.top_p is not None:  # only when set: default requests stay as they were
            body["top_p"] = self._config.top_p
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judge_reply", "strict": False, "schema": schema},
            }
        return body

    async def _complete(self, messages: Sequence[dict[str, str]],
                        schema: dict[str, Any] | None, *, max_tokens: int, temperature: float,
                        seed: int | None) -> Completion:
        body = self.chat_body(messages, schema, max_tokens=max_tokens, temperature=temperature,
                              seed=seed)
        for secret in (self._key(), *self._secrets):
            register_secret(secret)  # masked by ragmeter.secrets.mask in every message from now on
        async with self._http.request("POST", self.url, json=body,
                                      headers=self._headers()) as reply:
            status, headers = reply.status, reply.headers
            raw = await (reply.read() if status == 200 else reply.prefix(64 * 1024))
            mock = headers.get(MOCK_HEADER) == "1"
        text_all = raw.decode("utf-8", errors="replace")
        if status != 200:
            raise chat_status_error(status, text_all, headers, schema_sent=schema is not None)
        try:
            payload = json.loads(text_all)
        except ValueError:
            payload = None
        return read_completion(payload, self.model, mock=mock, text=text_all)


def chat_status_error(status: int, text: str, headers: Mapping[str, str] | None = None, *,
                      schema_sent: bool) -> CallError:
    """The :class:`CallError` of a non-200 chat completion reply (``text``: its body): a 400 /
    422 refusing the JSON schema is ``schema_unsupported``, the rest as
    :func:`ragmeter.calls.http.status_error` maps them."""
    if (schema_sent and status in (400, 422)
            and any(h in text[:500].lower() for h in _SCHEMA_REJECTION_HINTS)):
        return CallError("schema_unsupported", f"HTTP {status}: {mask(text[:500])[:200]}",
                         status=status)
    return status_error(status, text, headers)


def read_completion(payload: Any, model: str, *, mock: bool = False,
                    text: str | None = None) -> Completion:
    """The :class:`Completion` in a chat completion reply's decoded JSON ``payload`` (a
    :class:`CallError` ``backend_error`` when it has no first choice); ``model``: the model
    asked, when the reply names none; ``text``: the raw body, quoted in the error."""
    try:
        choice = payload["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        shown = text if text is not None else json.dumps(payload, ensure_ascii=False,
                                                         default=str)
        # an endpoint answering 200 with HTML (a proxy's error page, a login wall): its
        # health drops like a 5xx's, so a pool routes around it
        raise CallError("backend_error", f"malformed completion envelope: {mask(shown[:200])}",
                        retryable=True, fault=True) from None
    usage = payload.get("usage") or {}
    content = message.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return Completion(
        text=content if content is None else str(content),
        finish_reason=choice.get("finish_reason"),
        tokens_in=int(usage.get("prompt_tokens") or 0),
        tokens_out=int(usage.get("completion_tokens") or 0),
        refusal=message.get("refusal") or None,
        model=str(payload.get("model") or model),
        mock=mock,
    )


class PoolBackend(BackendBase):
    """Several endpoints serving one model: the engine gives each its own adaptive limit and
    sends each call to the member with spare capacity (see ``EndpointPool``)."""

    kind = "openai"

    def __init__(self, config: JudgeConfig, members: Sequence[OpenAIBackend]):
        self.endpoints = list(members)
        self.members = self.endpoints
        self.model = config.model
        self.supports_schema = config.structured_output

    def __repr__(self) -> str:
        return f"PoolBackend({[m.endpoint.identity for m in self.endpoints]!r})"

    async def enter(self) -> None:
        for m in self.members:
            await m.enter()

    async def exit(self) -> None:
        for m in self.members:
            await m.exit()

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        return await self.members[0].complete(messages, schema, max_tokens=max_tokens,
                                              temperature=temperature, seed=seed)

    async def aclose(self) -> None:
        for m in self.members:
            await m.aclose()


def make_backend(config: JudgeConfig, **kwargs: Any) -> OpenAIBackend | PoolBackend:
    """One :class:`OpenAIBackend`, or a :class:`PoolBackend` when the config lists several
    base URLs or keys. Raises ConfigError for credentials in a URL plus an API key."""
    eps = config.endpoints()
    if len(eps) == 1:
        return OpenAIBackend(config, endpoint=eps[0], **kwargs)
    return PoolBackend(config, [OpenAIBackend(config, endpoint=e, **kwargs) for e in eps])
