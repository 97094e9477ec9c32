"""OpenAI-compatible chat completions over HTTP (OpenRouter, vLLM, Ollama, llama.cpp server).

Transport: one ``aiohttp.ClientSession`` per event loop, opened when the first ``aask_many``
of that loop starts and closed when the last one ends, so no connection ever outlives its
loop (the cause of RAGAS's "Event loop is closed" retries). aiohttp rather than httpx: at 64
requests in flight httpcore's connection pool is CPU-bound (quadratic request assignment;
measured 6× the latency bound on 2 cores, aiohttp 1.2×). The API key is read from the
environment at call time and only ever placed in the ``Authorization`` header; credentials
written into a URL (``http://user:pass@host``) become a Basic ``Authorization`` header; every
error detail is redacted. Several base URLs make a :class:`PoolBackend`: one member per
endpoint, each with its own adaptive limit in the engine.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.backend import BackendBase, BackendError, Completion
from ragmeter.judges.config import JudgeConfig, RetryPolicy
from ragmeter.judges.endpoints import Endpoint, mask_url_credentials
from ragmeter.secrets import mask, register_secret

#: the fake server marks its replies with this header; they are never cached for a real judge
MOCK_HEADER = "X-Ragmeter-Mock"


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
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())
        self._users: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
            weakref.WeakKeyDictionary())

    def __repr__(self) -> str:
        return f"OpenAIBackend(url={mask_url_credentials(self.url)!r}, model={self.model!r})"

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
            session = aiohttp.ClientSession(  # room for hedged duplicates of stalled calls
                connector=aiohttp.TCPConnector(limit=2 * cap + 4, ttl_dns_cache=300),
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
            except BackendError as exc:
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
        import aiohttp

        try:
            async with self._session().post(self.url, json=body,
                                            headers=self._headers()) as resp:
                status = resp.status
                raw = await resp.read()
                retry_after = resp.headers.get("retry-after")
                mock = resp.headers.get(MOCK_HEADER) == "1"
        except asyncio.TimeoutError:
            raise BackendError("timeout", f"no reply from {self.url}", retryable=True) from None
        except aiohttp.ClientError as exc:
            raise BackendError("connection_error",
                               mask(f"{type(exc).__name__}: {exc} ({self.url})"),
                               retryable=True,
                               unreachable=isinstance(exc, aiohttp.ClientConnectorError)) \
                from None
        text_all = raw.decode("utf-8", errors="replace")
        if status != 200:
            raise status_error(status, text_all, schema_sent=schema is not None,
                               retry_after=retry_after)
        try:
            payload = json.loads(text_all)
        except ValueError:
            payload = None
        return read_completion(payload, self.model, mock=mock, text=text_all)


def status_error(status: int, text: str, *, schema_sent: bool,
                 retry_after: str | None = None) -> BackendError:
    """The :class:`BackendError` of a non-200 chat completion reply (``text``: its body)."""
    text = mask(text[:500])
    if status == 429:
        return BackendError("rate_limited", f"HTTP 429: {text[:200]}", retryable=True,
                            retry_after=parse_retry_after(retry_after), status=status)
    if status >= 500:
        return BackendError("http_5xx", f"HTTP {status}: {text[:200]}", retryable=True,
                            status=status)
    if status == 408:
        return BackendError("timeout", f"HTTP 408: {text[:200]}", retryable=True,
                            status=status)
    if (schema_sent and status in (400, 422)
            and any(h in text.lower() for h in _SCHEMA_REJECTION_HINTS)):
        return BackendError("schema_unsupported", f"HTTP {status}: {text[:200]}",
                            status=status)
    hint = " (check the API key variable)" if status in (401, 403) else ""
    return BackendError("http_4xx", f"HTTP {status}{hint}: {text[:200]}", status=status)


def read_completion(payload: Any, model: str, *, mock: bool = False,
                    text: str | None = None) -> Completion:
    """The :class:`Completion` in a chat completion reply's decoded JSON ``payload`` (a
    :class:`BackendError` ``backend_error`` when it has no first choice); ``model``: the
    model asked, when the reply names none; ``text``: the raw body, quoted in the error."""
    try:
        choice = payload["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        shown = text if text is not None else json.dumps(payload, ensure_ascii=False,
                                                         default=str)
        raise BackendError("backend_error",
                           f"malformed completion envelope: {mask(shown[:200])}",
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



class HTTPFailure(Exception):
    """A JSON POST that failed after the retry policy: ``detail`` is redacted."""

    def __init__(self, detail: str, status: int | None = None, attempts: int = 1):
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.attempts = attempts


async def post_json(url: str, body: Mapping[str, Any], headers: Mapping[str, str], *,
                    policy: RetryPolicy, timeout_s: float,
                    secrets: Sequence[str | None] = ()) -> Any:
    """POST JSON and return the decoded reply, with the judge engine's retry policy:
    429, 408, 409, 5xx, timeouts and connection errors are retried up to
    ``policy.max_retries`` times, waiting the server's ``Retry-After`` when it sends one
    (:func:`~ragmeter.judges.retry.retry_delay`), else the exponential backoff; any other
    status fails at once. Used by clients outside the judge engine (the embedder)."""
    import aiohttp

    from ragmeter.judges.retry import retry_delay

    for secret in secrets:
        register_secret(secret)
    last, status = "", None
    timeout = aiohttp.ClientTimeout(total=timeout_s, connect=min(10.0, timeout_s))
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for attempt in range(policy.max_retries + 1):
            retry_after = None
            try:
                async with session.post(url, json=dict(body), headers=dict(headers)) as resp:
                    status = resp.status
                    raw = await resp.read()
                    retry_after = parse_retry_after(resp.headers.get("retry-after"))
                if status == 200:
                    try:
                        return json.loads(raw)
                    except ValueError:
                        last = f"reply is not JSON: {raw[:200]!r}"
                        break
                last = f"HTTP {status}: {raw.decode('utf-8', 'replace')[:300]}"
                if status not in (408, 409, 429) and status < 500:
                    break
            except asyncio.TimeoutError:
                last, status = f"no reply within {timeout_s:g} s", None
            except aiohttp.ClientError as exc:
                last, status = f"{type(exc).__name__}: {exc}", None
            if attempt < policy.max_retries:
                await asyncio.sleep(retry_delay(policy, attempt + 1, retry_after))
    raise HTTPFailure(mask(last), status, attempt + 1)
