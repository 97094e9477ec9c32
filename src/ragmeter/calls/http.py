"""HTTP for every caller: one aiohttp session per event loop and the one way to send a
request on it (:meth:`LoopSessions.request`: redirects answered by
:mod:`~ragmeter.calls.redirects`, the body bounded by :mod:`~ragmeter.calls.body`), the one
map from aiohttp's exceptions to a :class:`~ragmeter.calls.errors.CallError`, the one map
from an HTTP status to one, and the one ``Retry-After`` parser (seconds or an HTTP date).

aiohttp rather than httpx: at 64 requests in flight httpcore's connection pool is CPU-bound
(quadratic request assignment; measured 6x the latency bound on 2 cores, aiohttp 1.2x).
aiohttp is imported on first use only.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ragmeter.calls.body import ACCEPT_ENCODING, DEFAULT_MAX_REPLY_BYTES, Body
from ragmeter.calls.errors import CallError
from ragmeter.calls.redirects import (
    DEFAULT_REDIRECTS,
    REDIRECT_MODES,
    REDIRECT_STATUSES,
    next_hop,
    origin,
)
from ragmeter.secrets import mask

#: characters of a failed reply's body kept in the error's detail
DETAIL_CHARS = 200


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds (``"2"``, ``"0.5"``) or an
    HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``; a date in the past is 0); None when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None   # NaN: unreadable
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:   # an HTTP date is always GMT
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(status: int, body: str, headers: Mapping[str, str] | None = None) -> CallError:
    """The error of a reply with a non-success ``status``: 429 (``rate_limited``), 5xx and
    408 (``timeout``) may be retried and keep the server's ``Retry-After``; any other status
    is ``http_4xx`` and is not retried. The body is masked in the detail and kept as ``raw``."""
    text = mask((body or "")[:4 * DETAIL_CHARS])
    hint = " (check the credentials: the API key variable, the headers)" \
        if status in (401, 403) else ""
    detail = f"HTTP {status}{hint}: {text[:DETAIL_CHARS]}"
    retry_after = parse_retry_after((headers or {}).get("Retry-After"))
    if status == 429:
        return CallError("rate_limited", detail, retryable=True, retry_after=retry_after,
                         status=status, raw=body)
    if status >= 500:
        return CallError("http_5xx", detail, retryable=True, retry_after=retry_after,
                         status=status, raw=body)
    if status == 408:
        return CallError("timeout", detail, retryable=True, retry_after=retry_after,
                         status=status, raw=body)
    return CallError("http_4xx", detail, status=status, raw=body)


def transport_error(exc: BaseException, where: str) -> CallError:
    """The error of a request that got no reply: a timeout, a connection that could not be
    made (``unreachable``), or one that broke; ``where`` (a masked URL) names the endpoint.
    Every one may be retried."""
    import aiohttp

    where = mask(where)
    if isinstance(exc, asyncio.TimeoutError):
        return CallError("timeout", f"no reply within the timeout from {where}",
                         retryable=True)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return CallError("connection_error", mask(f"{where}: {exc.os_error or exc}"),
                         retryable=True, unreachable=True)
    return CallError("connection_error", mask(f"{where}: {type(exc).__name__}: {exc}"),
                     retryable=True)


def transport_exceptions() -> tuple[type[BaseException], ...]:
    """What :func:`transport_error` maps: the exceptions to catch around a request."""
    import aiohttp

    return (asyncio.TimeoutError, aiohttp.ClientError)


def bad_reply(what: str, body: str, *, retryable: bool = False) -> CallError:
    """A success status whose body cannot be read (HTML where JSON was expected, a broken
    stream): counted against the endpoint's health like a server error, so a pool takes an
    endpoint that keeps answering so out."""
    return CallError("bad_reply", mask(f"{what}: {body[:DETAIL_CHARS]!r}"),
                     retryable=retryable, raw=body)


class Reply:
    """One reply of :meth:`LoopSessions.request`: its ``status``, ``headers``, the ``url``
    that answered (after the redirects followed) and its bounded body (``read``, ``chunks``,
    ``lines``, ``prefix``; ``first_byte_at``)."""

    def __init__(self, resp: Any, url: str, max_bytes: int):
        self.status: int = resp.status
        self.headers: Mapping[str, str] = resp.headers
        self.url = url
        self.body = Body(resp, max_bytes)

    @property
    def first_byte_at(self) -> float | None:
        return self.body.first_byte_at

    async def read(self) -> bytes:
        return await self.body.read()

    def chunks(self) -> AsyncIterator[bytes]:
        return self.body.chunks()

    def lines(self) -> AsyncIterator[bytes]:
        return self.body.lines()

    async def prefix(self, n: int) -> bytes:
        return await self.body.prefix(n)

    async def error(self) -> CallError:
        """The :func:`status_error` of this (non-success) reply, from the start of its body."""
        text = (await self.prefix(16 * DETAIL_CHARS)).decode("utf-8", errors="replace")
        return status_error(self.status, text, self.headers)


class LoopSessions:
    """One ``aiohttp.ClientSession`` per event loop, opened on first use in that loop and
    closed when its last user leaves (:meth:`enter` / :meth:`exit`) or on :meth:`aclose`, so
    no connection outlives its loop (the cause of "Event loop is closed" errors).

    ``limit``: connections per session (0: unbounded); ``timeout_s``: the whole request;
    ``connect_s``: the connection alone; ``headers``: sent with every request to its own
    origin (never to another: see :mod:`~ragmeter.calls.redirects`); ``redirects``: one of
    :data:`~ragmeter.calls.redirects.REDIRECT_MODES`; ``max_reply_bytes``: the bound of a
    reply, on the wire and decoded (:mod:`~ragmeter.calls.body`).
    """

    def __init__(self, *, timeout_s: float, limit: int = 0, connect_s: float | None = None,
                 headers: Mapping[str, str] | None = None,
                 redirects: str = DEFAULT_REDIRECTS,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES):
        if redirects not in REDIRECT_MODES:
            raise ValueError(f"redirects must be one of {REDIRECT_MODES}, got {redirects!r}")
        self.timeout_s = timeout_s
        self.limit = limit
        self.connect_s = connect_s
        self.headers = dict(headers or {})
        self.redirects = redirects
        self.max_reply_bytes = max_reply_bytes
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())
        self._users: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
            weakref.WeakKeyDictionary())

    def get(self) -> Any:
        """The running loop's session (opened now if there is none). It decodes nothing,
        follows no redirect and keeps no cookie by itself (a jar would send the cookies one
        origin set to every port of its host name, and tie one call to the next): send with
        :meth:`request`; a cookie the service needs is a configured ``Cookie`` header."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.limit, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s, connect=self.connect_s),
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar())
            self._sessions[loop] = session
        return session

    @contextlib.asynccontextmanager
    async def request(self, method: str, url: str, *, json: Any = None,
                      params: Mapping[str, str] | None = None,
                      headers: Mapping[str, str] | None = None,
                      redirects: str | None = None,
                      max_bytes: int | None = None) -> AsyncIterator[Reply]:
        """Send one request on the running loop's session and hold its :class:`Reply`.

        ``headers`` (with the session's own) go to the origin of ``url`` only; redirects are
        answered under ``redirects`` (default: the session's); the body is bounded by
        ``max_bytes`` (default: the session's ``max_reply_bytes``). Failures are one
        :class:`~ragmeter.calls.errors.CallError`: a transport failure (also while the body
        is read) as :func:`transport_error`, a redirect not followed as ``redirected``, a
        body over the bound as ``reply_too_large``. A non-success status is the caller's to
        read (:meth:`Reply.error`)."""
        mode = redirects or self.redirects
        own = {**self.headers, **(headers or {})}
        session = self.get()
        home, current, hops = origin(url), url, 0
        resp: Any = None
        reply: Reply | None = None
        try:
            while True:
                sent = {"Accept-Encoding": ACCEPT_ENCODING,
                        **(own if origin(current) == home else {})}
                resp = await session.request(method, current, json=json, params=params,
                                             headers=sent, allow_redirects=False)
                location = resp.headers.get("Location")
                if resp.status not in REDIRECT_STATUSES or not location:
                    break
                resp.close()
                hop = next_hop(mode, resp.status, location, current, method, home, hops)
                current, method, hops, params = hop.url, hop.method, hops + 1, None
                json = json if hop.keeps_body else None
            reply = Reply(resp, current, max_bytes or self.max_reply_bytes)
            yield reply
        except transport_exceptions() as exc:
            raise transport_error(exc, current) from None
        finally:
            if resp is not None:
                if reply is not None and reply.body.finished:
                    resp.release()      # read to its end: the connection is reused
                else:
                    resp.close()        # not drained: a bound, an error, a cancel

    async def enter(self) -> None:
        """A batch starts using the running loop's session."""
        loop = asyncio.get_running_loop()
        self._users[loop] = self._users.get(loop, 0) + 1

    async def exit(self) -> None:
        """A batch is done; the last user of a loop closes that loop's session."""
        loop = asyncio.get_running_loop()
        n = self._users.get(loop, 1) - 1
        self._users[loop] = n
        if n <= 0:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the running loop's session."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover
            return
        session = self._sessions.pop(loop, None)
        if session is not None and not session.closed:
            await session.close()


__all__ = ["DETAIL_CHARS", "LoopSessions", "Reply", "bad_reply", "parse_retry_after", "status_error",
           "transport_error", "transport_exceptions"]
