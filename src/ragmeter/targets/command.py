"""The ``command`` target kind: any program that reads a JSON request and writes a JSON reply.

One-shot (default): the program is started per question, reads one JSON object on stdin
(``{"entry", "question", "history", "session_id", "k", "contexts", "id"}``) and prints one
JSON reply on stdout (``answer``, ``contexts``, ``context_ids``, ``doc_ids``, ... or paths
declared under ``response``). A non-zero exit is the sample's error with the end of stderr.

``jsonl: true``: the program is started once and speaks JSON Lines — one request per line in,
one reply per line out, each reply carrying the request's ``"call"`` number (replies may come
in any order).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig
from ragmeter.targets.reading import parse_json, read_mapped

_LINE_LIMIT = 64 * 1024 * 1024


def _payload(req: TargetRequest) -> dict[str, Any]:
    return {**req.canonical(), "id": req.sample_id}


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

    async def call(self, request: TargetRequest) -> TargetReply:
        t0 = time.perf_counter()
        if self.config.jsonl:
            proc = self._procs.get(request.entry)
            if proc is None or proc.dead:
                proc = self._procs[request.entry] = _LineProcess(
                    self.commands[request.entry], self.config.cwd)
            text = await asyncio.wait_for(proc.ask(_payload(request)), self.timeout_s)
        else:
            text = await self._once(request)
        latency = time.perf_counter() - t0
        rep = read_mapped(parse_json(text), self.config.entries[request.entry].response,
                          request.entry, text)
        rep.ttft_s = rep.latency_s = latency
        return rep

    async def _once(self, request: TargetRequest) -> str:
        cmd = self.commands[request.entry]
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.config.cwd)
        except OSError as exc:
            raise CallError("connection_error", f"cannot start {cmd[0]!r}: {exc}",
                            unreachable=True) from None
        data = json.dumps(_payload(request), ensure_ascii=False).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), self.timeout_s)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise CallError("timeout", f"{cmd[0]!r} did not finish within "
                            f"{self.timeout_s} s", retryable=True) from None
        if proc.returncode != 0:
            tail = err.decode("utf-8", errors="replace").strip()[-300:]
            raise CallError("error", f"{cmd[0]!r} exited with code "
                            f"{proc.returncode}: {tail}")
        return out.decode("utf-8", errors="replace")

    async def aclose(self) -> None:
        for proc in self._procs.values():
            await proc.close()
        self._procs.clear()


class _LineProcess:
    """A long-lived JSON Lines program: requests numbered ``call``, replies matched back."""

    def __init__(self, cmd: tuple[str, ...], cwd: str | None):
        self.cmd = cmd
        self.cwd = cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.waiting: dict[int, asyncio.Future[str]] = {}
        self.numbers = itertools.count(1)
        self.reader: asyncio.Task[None] | None = None
        self.dead = False
        self._start = asyncio.Lock()

    async def _ensure(self) -> asyncio.subprocess.Process:
        async with self._start:
            if self.proc is None:
                try:
                    self.proc = await asyncio.create_subprocess_exec(
                        *self.cmd, stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE, cwd=self.cwd, limit=_LINE_LIMIT)
                except OSError as exc:
                    self.dead = True
                    raise CallError("connection_error", f"cannot start "
                                    f"{self.cmd[0]!r}: {exc}", unreachable=True) from None
                self.reader = asyncio.get_running_loop().create_task(self._read())
            return self.proc

    async def ask(self, payload: dict[str, Any]) -> str:
        proc = await self._ensure()
        n = next(self.numbers)
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiting[n] = fut
        assert proc.stdin is not None
        try:
            proc.stdin.write((json.dumps({**payload, "call": n}, ensure_ascii=False)
                              + "\n").encode())
            await proc.stdin.drain()
            return await fut
        except (BrokenPipeError, ConnectionResetError):
            self.dead = True
            raise CallError("error", f"{self.cmd[0]!r} closed its input",
                            retryable=True) from None
        finally:
            self.waiting.pop(n, None)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", errors="replace")
            try:
                n = json.loads(text).get("call")
            except (ValueError, AttributeError):
                n = None
            fut = self.waiting.get(n) if isinstance(n, int) else None
            if fut is None and len(self.waiting) == 1:   # a reply without its number
                fut = next(iter(self.waiting.values()))
            if fut is not None and not fut.done():
                fut.set_result(text)
        self.dead = True
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(CallError(
                    "error", f"{self.cmd[0]!r} exited", retryable=True))

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 2.0)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self.reader is not None:
            self.reader.cancel()


KINDS.register("command", CommandTarget)

__all__ = ["CommandTarget"]
