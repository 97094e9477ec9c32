"""A ``command`` target's program as a process group that ragmeter can always end.

Every program starts in a new session (its own process group), so ending it ends what it
started too (``sh -c`` and its ``sleep``). :func:`end` kills the whole group and closes the
pipes without waiting on them: a child that keeps stdout open cannot hold ragmeter. Groups
still alive when the interpreter exits are killed then (an interrupted run leaves nothing
behind). Output is read in bounded pieces: :class:`ReplyTooLarge` past ``limit`` bytes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Any

#: groups started and not yet ended (killed at interpreter exit)
_LIVE: set[int] = set()
_CHUNK = 64 * 1024
#: how much of stderr is kept (its end)
STDERR_TAIL = 64 * 1024


class ReplyTooLarge(Exception):
    """The program wrote more than the reply limit."""


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol plus a future set when the process exits (even while a child
    still holds its pipes open, which ``Process.wait`` would wait for)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop):
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class Program:
    """One started program: ``process``, its pipes, and ``exited`` (a future)."""

    def __init__(self, process: asyncio.subprocess.Process, protocol: _Protocol):
        self.process = process
        self.exited = protocol.exited
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


async def start(cmd: Sequence[str], cwd: str | None, *, pipe_stderr: bool = True) -> Program:
    """Start ``cmd`` in its own process group with piped stdin / stdout, and stderr piped
    (or left to ragmeter's own with ``pipe_stderr=False``)."""
    loop = asyncio.get_running_loop()
    pipe = asyncio.subprocess.PIPE
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(_CHUNK, loop), *cmd, stdin=pipe, stdout=pipe,
        stderr=pipe if pipe_stderr else None, cwd=cwd,
        start_new_session=True)
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    _LIVE.add(proc.pid)
    return Program(proc, protocol)


def end(program: Program) -> None:
    """Kill the program's whole process group and close its pipes; never waits."""
    _kill_group(program.pid)
    _LIVE.discard(program.pid)
    transport: Any = getattr(program.process, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


def _kill_group(pid: int) -> None:
    killpg = getattr(os, "killpg", None)          # POSIX; elsewhere the program alone
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if killpg is not None:
            killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGTERM)


@atexit.register
def _end_all() -> None:
    for pid in list(_LIVE):
        _kill_group(pid)
    _LIVE.clear()


async def read_bounded(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Everything up to EOF; :class:`ReplyTooLarge` as soon as it passes ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise ReplyTooLarge
        parts.append(chunk)


async def read_tail(stream: asyncio.StreamReader, keep: int = STDERR_TAIL) -> bytes:
    """The last ``keep`` bytes up to EOF."""
    tail = b""
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return tail
        tail = (tail + chunk)[-keep:]


class LineTooLong(Exception):
    """A line over the limit; ``head`` / ``tail``: its first and last bytes."""

    def __init__(self, head: bytes, tail: bytes):
        super().__init__("line too long")
        self.head = head
        self.tail = tail


async def lines(stream: asyncio.StreamReader, limit: int) -> Any:
    """The stream's lines (an async iterator of bytes; a line over ``limit`` bytes is a
    :class:`LineTooLong` item, its bytes dropped as they come)."""
    buf = bytearray()
    over = False
    head = b""
    tail = b""
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            if buf and not over:
                yield bytes(buf)
            elif over:
                yield LineTooLong(head, tail)
            return
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl + 1]
            if over:
                tail = (tail + piece)[-4096:]
            else:
                buf += piece
                if len(buf) > limit:
                    over, head, tail = True, bytes(buf[:4096]), bytes(buf[-4096:])
                    buf.clear()
            if nl < 0:
                break
            if over:
                yield LineTooLong(head, tail)
                over, head, tail = False, b"", b""
            else:
                yield bytes(buf)
                buf.clear()
            start = nl + 1


__all__ = ["STDERR_TAIL", "LineTooLong", "Program", "ReplyTooLarge", "end", "lines",
           "read_bounded", "read_tail", "start"]
