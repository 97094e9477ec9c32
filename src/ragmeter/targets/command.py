"""The ``command`` target kind: any program that reads a JSON request and writes a JSON reply.

One-shot (default): the program is started per question, reads one JSON object on stdin
(``{"entry", "question", "history", "session_id", "k", "contexts", "id"}``) and prints one
JSON reply on stdout (``answer``, ``contexts``, ``context_ids``, ``doc_ids``, ... or paths
declared under ``response``). A non-zero exit is the sample's error with the end of stderr.

``jsonl: true``: the program is started once and speaks JSON Lines — one request per line in,
one reply per line out, each reply carrying the request's ``"call"`` number (replies may come
in any order).

Every program runs in its own process group (:mod:`ragmeter.targets.processes`): a call that
passes ``timeout_s`` kills the group (a JSON Lines program is restarted), and so does the end
of the run, an interrupt or the interpreter's exit — nothing is left running. Replies are read
in bounded pieces: more than ``max_reply_bytes`` is the sample's ``target_reply_too_large``;
bytes that are not UTF-8 are replaced by U+FFFD and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.targets import processes
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig
from ragmeter.targets.reading import clean_text, parse_json, read_mapped

#: after the program exits, how long a child that keeps its stdout open may go on writing
_EXIT_GRACE_S = 0.2
_CALL = re.compile(rb'"call"\s*:\s*(\d+)')


def _payload(req: TargetRequest) -> dict[str, Any]:
    return {**req.canonical(), "id": req.sample_id}


def _text(data: bytes) -> tuple[str, int]:
    """Output as text: undecodable bytes replaced by U+FFFD and counted."""
    return clean_text(data.decode("utf-8", errors="surrogateescape"))


class CommandTarget:
    """A program as the target (see the module doc)."""

    kind = "command"

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.max_concurrency = config.max_concurrency
        self.timeout_s = config.timeout_s
        self.commands = {e: c.command for e, c in config.entries.items()}
        self.signature = TargetSignature("command", " ".join(self.commands["answer"]),
                                         config.config_hash())
        self._procs: dict[str, _LineProcess] = {}

    def entries(self) -> list[str]:
        return list(self.commands)

    def check(self) -> None:
        """Before calls are made: a program that is not installed is a config error (exit 2),
        not a run of failed calls (a replay calls nothing and does not check)."""
        for e, cmd in self.commands.items():
            _check_program(cmd, self.config.cwd, "target.command" if e == "answer"
                           else f"target.entries.{e}.command")

    async def call(self, request: TargetRequest) -> TargetReply:
        t0 = time.perf_counter()
        if self.config.jsonl:
            proc = self._procs.get(request.entry)
            if proc is None or proc.dead:
                proc = self._procs[request.entry] = _LineProcess(
                    self.commands[request.entry], self.config.cwd,
                    self.config.max_reply_bytes)
            try:
                async with asyncio.timeout(self.timeout_s):
                    text, invalid = await proc.ask(_payload(request))
            except TimeoutError:
                raise CallError("timeout", f"{proc.cmd[0]!r} did not answer within "
                                f"{self.timeout_s:g} s (the program was restarted)",
                                retryable=True) from None
        else:
            text, invalid = await self._once(request)
        latency = time.perf_counter() - t0
        rep = read_mapped(parse_json(text), self.config.entries[request.entry].response,
                          request.entry, text)
        rep.invalid_text += invalid
        rep.ttft_s = rep.latency_s = latency
        return rep

    async def _once(self, request: TargetRequest) -> tuple[str, int]:
        cmd = self.commands[request.entry]
        limit = self.config.max_reply_bytes
        try:
            prog = await processes.start(cmd, self.config.cwd)
        except OSError as exc:
            raise CallError("connection_error", f"cannot start {cmd[0]!r}: {exc}",
                            unreachable=True) from None
        data = json.dumps(_payload(request), ensure_ascii=False).encode()
        stderr = _Tail()
        try:
            async with asyncio.timeout(self.timeout_s):
                out = await _exchange(prog, data, limit, stderr)
        except TimeoutError:
            raise CallError("timeout", f"{cmd[0]!r} did not finish within "
                            f"{self.timeout_s:g} s (its process group was killed)",
                            retryable=True) from None
        except processes.ReplyTooLarge:
            raise CallError("reply_too_large", f"{cmd[0]!r} wrote more than "
                            f"max_reply_bytes ({limit} bytes)") from None
        finally:
            processes.end(prog)      # the group: children it left running too
        if prog.returncode != 0:
            tail = _text(stderr.data)[0].strip()[-300:]
            raise CallError("error", f"{cmd[0]!r} exited with code "
                            f"{prog.returncode}: {tail}")
        return _text(out)

    async def aclose(self) -> None:
        for proc in self._procs.values():
            await proc.close()
        self._procs.clear()


def _check_program(cmd: tuple[str, ...], cwd: str | None, key: str) -> None:
    """A program that is not installed is a config error (exit 2), not 100 failed calls."""
    import os
    import shutil
    from pathlib import Path

    from ragmeter.errors import ConfigError

    prog = cmd[0]
    if os.sep in prog or (os.altsep and os.altsep in prog):
        path = Path(prog)
        if not path.is_absolute() and cwd:
            path = Path(cwd) / path
        if not path.is_file():
            raise ConfigError(key, f"program {prog!r} not found ({path})")
        return
    if shutil.which(prog) is None:
        raise ConfigError(key, f"program {prog!r} is not on the PATH")


class _Tail:
    """The end of a stream read so far (stderr: kept for the error message)."""

    def __init__(self) -> None:
        self.data = b""

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(64 * 1024):
            self.data = (self.data + chunk)[-processes.STDERR_TAIL:]


async def _exchange(prog: processes.Program, data: bytes, limit: int, stderr: _Tail) -> bytes:
    """Write the request, read the reply (bounded) until EOF — or, once the program has
    exited while a child keeps its stdout open, what it wrote until a short grace later —
    and wait for the program's exit."""
    p = prog.process
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None

    async def feed() -> None:
        assert p.stdin is not None
        try:
            p.stdin.write(data)
            await p.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with contextlib.suppress(Exception):
                p.stdin.close()

    tasks = [asyncio.ensure_future(feed()), asyncio.ensure_future(stderr.read(p.stderr))]
    reading = asyncio.ensure_future(processes.read_bounded(p.stdout, limit))
    try:
        either: list[asyncio.Future[Any]] = [reading, prog.exited]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():   # exited: a child may hold stdout open
            await asyncio.wait([reading], timeout=_EXIT_GRACE_S)
            if not reading.done():
                processes.end(prog)
        out = await reading
        await prog.exited
        await asyncio.wait(tasks, timeout=_EXIT_GRACE_S)
        return out
    finally:
        for t in (*tasks, reading):
            t.cancel()


class _LineProcess:
    """A long-lived JSON Lines program: requests numbered ``call``, replies matched back.
    A call that is cancelled or passes its deadline restarts the program (the calls in
    flight on it fail and are retried on the new one); a line over the reply limit is that
    call's ``target_reply_too_large``."""

    def __init__(self, cmd: tuple[str, ...], cwd: str | None, limit: int):
        self.cmd = cmd
        self.cwd = cwd
        self.limit = limit
        self.prog: processes.Program | None = None
        self.waiting: dict[int, asyncio.Future[tuple[str, int]]] = {}
        self.numbers = itertools.count(1)
        self.reader: asyncio.Task[None] | None = None
        self.dead = False
        self._start = asyncio.Lock()

    async def _ensure(self) -> processes.Program:
        async with self._start:
            if self.dead:
                raise CallError("error", f"{self.cmd[0]!r} was stopped",
                                retryable=True)
            if self.prog is None:
                try:
                    self.prog = await processes.start(self.cmd, self.cwd, pipe_stderr=False)
                except OSError as exc:
                    self.dead = True
                    raise CallError("connection_error", f"cannot start "
                                    f"{self.cmd[0]!r}: {exc}", unreachable=True) from None
                self.reader = asyncio.get_running_loop().create_task(self._read())
            return self.prog

    async def ask(self, payload: dict[str, Any]) -> tuple[str, int]:
        prog = await self._ensure()
        n = next(self.numbers)
        fut: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
        self.waiting[n] = fut
        stdin = prog.process.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps({**payload, "call": n}, ensure_ascii=False)
                         + "\n").encode())
            await stdin.drain()
            return await fut
        except (BrokenPipeError, ConnectionResetError):
            self.stop("it closed its input")
            raise CallError("error", f"{self.cmd[0]!r} closed its input",
                            retryable=True) from None
        except asyncio.CancelledError:   # the deadline: the program stopped answering
            self.waiting.pop(n, None)
            self.stop("a call passed its deadline")
            raise
        finally:
            self.waiting.pop(n, None)

    def stop(self, why: str) -> None:
        """End the program (its group) and fail the calls waiting on it (retried)."""
        self.dead = True
        if self.prog is not None:
            processes.end(self.prog)
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(CallError(
                    "error", f"{self.cmd[0]!r} was restarted: {why}", retryable=True))
        if self.reader is not None and self.reader is not asyncio.current_task():
            self.reader.cancel()

    def _owner(self, head: bytes, tail: bytes) -> asyncio.Future[tuple[str, int]] | None:
        for part in (head, tail):
            m = _CALL.search(part)
            if m and int(m.group(1)) in self.waiting:
                return self.waiting[int(m.group(1))]
        return next(iter(self.waiting.values())) if len(self.waiting) == 1 else None

    async def _read(self) -> None:
        assert self.prog is not None and self.prog.process.stdout is not None
        async for line in processes.lines(self.prog.process.stdout, self.limit):
            if isinstance(line, processes.LineTooLong):
                fut = self._owner(line.head, line.tail)
                if fut is not None and not fut.done():
                    fut.set_exception(CallError(
                        "reply_too_large", f"{self.cmd[0]!r} wrote a reply line over "
                        f"max_reply_bytes ({self.limit} bytes)"))
                continue
            text, invalid = _text(line)
            try:
                n = json.loads(text).get("call")
            except (ValueError, AttributeError):
                n = None
            fut = self.waiting.get(n) if isinstance(n, int) else None
            if fut is None and len(self.waiting) == 1:   # a reply without its number
                fut = next(iter(self.waiting.values()))
            if fut is not None and not fut.done():
                fut.set_result((text, invalid))
        self.dead = True
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(CallError(
                    "error", f"{self.cmd[0]!r} exited", retryable=True))

    async def close(self) -> None:
        prog = self.prog
        if prog is not None:
            stdin = prog.process.stdin
            if prog.returncode is None and stdin is not None:
                with contextlib.suppress(Exception):
                    stdin.close()
                await asyncio.wait([prog.exited], timeout=2.0)
            processes.end(prog)      # the group, and any child still holding its stdout
        if self.reader is not None:
            self.reader.cancel()
        self.dead = True


KINDS.register("command", CommandTarget)

__all__ = ["CommandTarget"]
