"""A local aiohttp server on its own event loop in a background thread (``with`` starts it).

The fault-injecting mock judge and the reference RAG service are both such a server: each
builds its ``web.Application`` and this class runs it on ``host:port`` (port 0: a free one,
read back after the bind), until :meth:`stop`. Floor 0: aiohttp is imported when a server
starts, nothing of ragmeter above ``errors``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypeVar

S = TypeVar("S", bound="BackgroundServer")


class BackgroundServer:
    """Subclasses implement :meth:`app` (the aiohttp application) and set ``what`` (a name for
    the thread and for start-up errors); :meth:`serve` runs it on the running loop."""

    what = "server"
    start_timeout_s = 30.0

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    def app(self) -> Any:
        raise NotImplementedError

    def start(self: S) -> S:
        self._thread = threading.Thread(target=self._run, name=f"ragmeter-{self.what}",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(self.start_timeout_s):
            raise RuntimeError(f"{self.what} did not start within {self.start_timeout_s:g} s")
        if self._error is not None:
            raise RuntimeError(f"{self.what} failed to start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self.serve())
        except BaseException as exc:  # reported through start()
            self._error = exc
            self._ready.set()

    async def serve(self, stop: asyncio.Event | None = None) -> None:
        """Serve until ``stop`` is set (the thread's own event by default)."""
        from aiohttp import web

        self._loop = asyncio.get_running_loop()
        self._stop = stop or asyncio.Event()
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False,
                               handler_cancellation=True, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=1024)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()
