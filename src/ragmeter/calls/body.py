"""A reply's body read within a bound: :class:`Body`.

``max_bytes`` bounds what came over the wire *and* what it decodes to. ragmeter asks for
``gzip, deflate`` and inflates the body itself (aiohttp's own decompression is off), in
pieces of at most :data:`PIECE` bytes, so a 2 MB gzip body that would inflate to 2 GiB stops
at the bound having inflated no more than the bound and one piece, a 1 GB reply stops at the
bound having read no more than it, and a stream that never ends stops there too. Past the
bound the read stops with the error ``reply_too_large`` (not retried: the next answer would be
as large), and the connection is closed rather than drained. A ``Content-Length`` above the
bound fails before anything is read.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from ragmeter.calls.errors import CallError

#: the default bound of one reply: 16 MiB
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024
#: the encodings ragmeter accepts (and decodes itself)
ACCEPT_ENCODING = "gzip, deflate"
#: the most a piece of compressed input may inflate to at once
PIECE = 256 * 1024


def too_large(limit: int, what: str) -> CallError:
    """The error of a reply over ``limit`` bytes (``what``: how it was found)."""
    return CallError("reply_too_large", f"the reply is larger than max_reply_bytes ({limit} "
                     f"bytes): {what}; nothing more was read", fault=False)


class _Inflater:
    """gzip (several members too) or deflate (zlib-wrapped or raw), a piece at a time."""

    def __init__(self, encoding: str):
        enc = encoding.strip().lower()
        if enc in ("gzip", "x-gzip"):
            self.wbits: int | None = 16 + zlib.MAX_WBITS
        elif enc == "deflate":
            self.wbits = None          # decided by the first two bytes
        else:
            raise CallError("bad_reply", f"the reply's Content-Encoding {encoding!r} is not "
                            f"one ragmeter asked for ({ACCEPT_ENCODING})")
        self.obj: Any = None

    def _start(self, data: bytes) -> None:
        wbits = self.wbits
        if wbits is None:   # RFC 1950 header (zlib) or a raw deflate stream, as servers vary
            zlib_header = len(data) >= 2 and data[0] & 0x0F == 8 and \
                (data[0] << 8 | data[1]) % 31 == 0
            wbits = zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS
        self.obj = zlib.decompressobj(wbits)

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The pieces ``data`` inflates to, each at most :data:`PIECE` bytes, one at a time:
        a caller that stops asking past its bound leaves the rest never inflated."""
        while data:
            if self.obj is None or (self.obj.eof and self.wbits is not None):
                self._start(data)       # the first member, or the next gzip member
            try:
                piece = self.obj.decompress(data, PIECE)
            except zlib.error as exc:
                raise CallError("bad_reply", f"the reply's compressed body is corrupt: {exc}"
                                ) from None
            if piece:
                yield piece
            if self.obj.eof:
                data = self.obj.unused_data if self.wbits is not None else b""
            else:
                data = self.obj.unconsumed_tail

    def flush(self) -> bytes:
        return self.obj.flush() if self.obj is not None else b""


class Body:
    """The body of one reply (``resp``: an aiohttp response read with decompression off),
    at most ``max_bytes`` on the wire and decoded. ``first_byte_at`` is the
    ``time.perf_counter()`` of the first piece that arrived."""

    def __init__(self, resp: Any, max_bytes: int):
        self.resp = resp
        self.max_bytes = max_bytes
        self.first_byte_at: float | None = None
        self.finished = False
        encoding = resp.headers.get("Content-Encoding", "")
        self._inflater = None if encoding.strip().lower() in ("", "identity") else \
            _Inflater(encoding)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The decoded body in pieces; ``reply_too_large`` past the bound."""
        limit = self.max_bytes
        declared = self.resp.content_length
        if declared is not None and declared > limit:
            raise too_large(limit, f"its Content-Length is {declared} bytes")
        wire = decoded = 0
        async for data in self.resp.content.iter_any():
            if self.first_byte_at is None:
                self.first_byte_at = time.perf_counter()
            wire += len(data)
            if wire > limit:
                raise too_large(limit, f"more than {limit} bytes received")
            pieces: Iterable[bytes] = [data] if self._inflater is None else self._inflater.pieces(data)
            for piece in pieces:
                decoded += len(piece)
                if decoded > limit:
                    raise too_large(limit, f"it decodes to more than {limit} bytes "
                                    f"({wire} bytes received)")
                yield piece
        if self._inflater is not None:
            tail = self._inflater.flush()
            if decoded + len(tail) > limit:
                raise too_large(limit, f"it decodes to more than {limit} bytes")
            if tail:
                yield tail
        self.finished = True

    async def read(self) -> bytes:
        """The whole decoded body (at most ``max_bytes``)."""
        buf = bytearray()
        async for piece in self.chunks():
            buf += piece
        return bytes(buf)

    async def prefix(self, n: int) -> bytes:
        """At most the first ``n`` decoded bytes (an error page's start: never an error for
        its size, the rest is not read)."""
        buf = bytearray()
        try:
            async for piece in self.chunks():
                buf += piece
                if len(buf) >= n:
                    break
        except CallError as exc:
            if exc.reason != "reply_too_large":
                raise
        return bytes(buf[:n])

    async def lines(self) -> AsyncIterator[bytes]:
        """The decoded body line by line (``\\n``-separated, the ending kept off): a
        streamed reply (server-sent events) read as it arrives, within the same bound."""
        pending = bytearray()
        async for piece in self.chunks():
            pending += piece
            start = 0
            while True:
                end = pending.find(b"\n", start)
                if end < 0:
                    break
                yield bytes(pending[start:end])
                start = end + 1
            del pending[:start]
        if pending:
            yield bytes(pending)


__all__ = ["ACCEPT_ENCODING", "DEFAULT_MAX_REPLY_BYTES", "PIECE", "Body", "too_large"]
