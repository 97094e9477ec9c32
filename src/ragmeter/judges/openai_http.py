"""OpenAI-compatible chat completions over HTTP (OpenRouter, vLLM, Ollama, llama.cpp server).

Transport: one ``aiohttp.ClientSession`` per event loop, opened when the first ``aask_many``
of that loop starts and closed when the last one ends, so no connection ever outlives its
loop (the cause of RAGAS's "Event loop is closed" retries). aiohttp rather than httpx: at 64
requests in flight httpcore's connection pool is CPU-bound (quadratic request assignment;
measured 6× the latency bound on 2 cores, aiohttp 1.2×). The API key is read from the
environment at call time and only ever placed in the ``Authorization`` header; every error
detail is redacted.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.engine import BackendError, Completion
from ragmeter.secrets import split_url_credentials


def redact(text: str, secrets: Sequence[str | None]) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


log = logging.getLogger("ragmeter.judges")

_SCHEMA_REJECTION_HINTS = ("response_format", "json_schema", "structured output", "grammar")


class OpenAIBackend:
    """Chat completions at ``{base_url}/chat/completions`` with optional JSON-schema output."""

    kind = "openai"

    def __init__(self, config: JudgeConfig, *, extra_body: Mapping[str, Any] | None = None):
        base = (config.base_url or "").rstrip("/")
        if base.endswith("/chat/completions"):
            base = base[: -len("/chat/completions")]
        # credentials in the URL go to the Authorization header, never into the URL
        base, self._url_auth = split_url_credentials(base)
        self.url = base + "/chat/completions"
        self.model = config.model
        self.supports_schema = config.structured_output
        self._config = config
        self._extra_body = dict(extra_body or {})
        self._use_max_completion_tokens = False
        self._send_seed = True
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())
        self._users: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
            weakref.WeakKeyDictionary())

    def __repr__(self) -> str:
        return f"OpenAIBackend(url={self.url!r}, model={self.model!r})"

    async def enter(self) -> None:
        """Called by the engine when an ``aask_many`` starts on the running loop."""
        loop = asyncio.get_running_loop()
        self._users[loop] = self._users.get(loop, 0) + 1

    async def exit(self) -> None:
        """Called when it ends; the last user of a loop closes that loop's session."""
        loop = asyncio.get_running_loop()
        n = self._users.get(loop, 1) - 1
        self._users[loop] = n
        if n <= 0:
            await self.aclose()

    def _session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            cap = self._config.max_concurrency
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=cap + 4, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self._config.timeout_s,
                                              connect=min(10.0, self._config.timeout_s)),
            )
            self._sessions[loop] = session
        return session

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover
            return
        session = self._sessions.pop(loop, None)
        if session is not None and not session.closed:
            await session.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self._config.headers()}
        key = self._config.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self._url_auth:
            headers["Authorization"] = self._url_auth
        return headers

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        """One completion; adapts once per model to rejected parameters (see ``_adapt``)."""
        for _ in range(4):
            try:
                return await self._complete(messages, schema, max_tokens=max_tokens,
                                            temperature=temperature, seed=seed)
            except BackendError as exc:
                if not (exc.status == 400 and self._adapt(exc.detail)):
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

    async def _complete(self, messages: Sequence[dict[str, str]],
                        schema: dict[str, Any] | None, *, max_tokens: int, temperature: float,
                        seed: int | None) -> Completion:
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
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judge_reply", "strict": False, "schema": schema},
            }
        secrets = [self._config.api_key()]
        import aiohttp

        try:
            async with self._session().post(self.url, json=body,
                                            headers=self._headers()) as resp:
                status = resp.status
                raw = await resp.read()
                retry_after = resp.headers.get("retry-after")
        except asyncio.TimeoutError:
            raise BackendError("timeout", f"no reply from {self.url}", retryable=True) from None
        except aiohttp.ClientError as exc:
            raise BackendError("connection_error",
                               redact(f"{type(exc).__name__}: {exc} ({self.url})", secrets),
                               retryable=True) from None
        text_all = raw.decode("utf-8", errors="replace")
        if status != 200:
            text = redact(text_all[:500], secrets)
            if status == 429:
                raise BackendError("rate_limited", f"HTTP 429: {text[:200]}", retryable=True,
                                   retry_after=parse_retry_after(retry_after), status=status)
            if status >= 500:
                raise BackendError("http_5xx", f"HTTP {status}: {text[:200]}", retryable=True,
                                   status=status)
            if status == 408:
                raise BackendError("timeout", f"HTTP 408: {text[:200]}", retryable=True,
                                   status=status)
            if (schema is not None and status in (400, 422)
                    and any(h in text.lower() for h in _SCHEMA_REJECTION_HINTS)):
                raise BackendError("schema_unsupported", f"HTTP {status}: {text[:200]}",
                                   status=status)
            hint = " (check the API key variable)" if status in (401, 403) else ""
            raise BackendError("http_4xx", f"HTTP {status}{hint}: {text[:200]}", status=status)
        try:
            payload = json.loads(text_all)
            choice = payload["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise BackendError("backend_error",
                               f"malformed completion envelope: {redact(text_all[:200], secrets)}",
                               retryable=True) from None
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
            model=str(payload.get("model") or self.model),
        )

