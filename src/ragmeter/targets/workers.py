"""Where a ``python`` target's function runs, so that a call's deadline really ends it.

A synchronous function runs in a daemon thread of its own, one per call; an ``async`` one on
a background event loop of its target, in a daemon thread too. A call that passes its
deadline is abandoned: ragmeter goes on with the next sample, and the thread, which Python
cannot stop, neither keeps the process alive at exit nor blocks the caller's event loop (a
coroutine that blocks its loop blocks only the background one). Whatever the function raises
— ``SystemExit`` and ``KeyboardInterrupt`` included — comes back as :class:`Raised`, that
call's error, never the run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any


class Raised(Exception):
    """What a user's function raised (any ``BaseException``), carried back as a value."""

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc


def _settle(fut: asyncio.Future[tuple[bool, Any]], box: tuple[bool, Any]) -> None:
    if not fut.done():
        fut.set_result(box)


class FunctionRunner:
    """Runs one target's functions (see the module doc). ``max_abandoned``: how many
    abandoned calls may still be running before new calls are refused."""

    def __init__(self, name: str, max_abandoned: int):
        self.name = name
        self.max_abandoned = max_abandoned
        self._abandoned: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def abandoned(self) -> int:
        """Calls abandoned at their deadline whose thread is still running."""
        self._abandoned = [t for t in self._abandoned if t.is_alive()]
        return len(self._abandoned)

    async def run_sync(self, fn: Callable[..., Any], args: Sequence[Any],
                       kwargs: Mapping[str, Any]) -> Any:
        """``fn(*args, **kwargs)`` in a daemon thread; its return value, or :class:`Raised`."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[bool, Any]] = loop.create_future()

        def work() -> None:
            box: tuple[bool, Any]
            try:
                box = (True, fn(*args, **kwargs))
            except BaseException as exc:  # SystemExit too: this call's error
                box = (False, exc)
            # a closed loop (RuntimeError): the caller is gone, nobody waits for this call
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, fut, box)

        thread = threading.Thread(target=work, name=f"ragmeter-target-{self.name}",
                                  daemon=True)
        thread.start()
        try:
            ok, value = await fut
        except asyncio.CancelledError:   # the deadline (or the run) ended the call
            self._abandoned.append(thread)
            raise
        if not ok:
            raise Raised(value)
        return value

    async def run_async(self, factory: Callable[[], Awaitable[Any]]) -> Any:
        """``await factory()`` on the background loop; its result, or :class:`Raised`."""

        async def guarded() -> tuple[bool, Any]:
            try:
                return True, await factory()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # SystemExit too: this call's error
                return False, exc

        done = asyncio.run_coroutine_threadsafe(guarded(), self._background())
        ok, value = await asyncio.wrap_future(done)
        if not ok:
            raise Raised(value)
        return value

    def _background(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True,
                                 name=f"ragmeter-target-{self.name}-loop").start()
                self._loop = loop
            return self._loop


__all__ = ["FunctionRunner", "Raised"]
