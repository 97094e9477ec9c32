"""Run a coroutine from synchronous code, also when an event loop is already running (the
sync bridge of every caller: ``judge.ask_many``, a target caller's ``call_many``, the
embeddings client).

:func:`run_sync` runs each coroutine on a loop of its own. :class:`LoopThread` keeps one loop,
in a thread of its own, for a caller's successive batches: what lives on it — an aiohttp
session's open connections — serves the next batch too instead of being opened again, and a
batch submitted ahead is sent while the caller scores the one before (a benchmark run asks
its target batch after batch).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(factory: Callable[[], Awaitable[T]], thread_name: str = "ragmeter-calls") -> T:
    """``asyncio.run(factory())``; inside a running loop (a notebook, an async app) the
    coroutine runs on a fresh loop in a worker thread instead, and its result or exception is
    handed back."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(factory))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(_await(factory))
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=worker, name=thread_name, daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


class LoopThread:
    """One event loop kept in a daemon thread of its own, for a caller's successive batches
    (see the module doc): :meth:`submit` starts a coroutine there and returns at once (a
    batch read ahead runs while the caller does other work), :meth:`run` waits for one.

    Waiting is interruptible: a ``KeyboardInterrupt`` while :meth:`wait` blocks cancels the
    coroutine, gives it a moment to clean up, and propagates. :meth:`close` runs
    ``cleanup()`` on the loop and stops the thread (a later :meth:`submit` starts a new
    one); a loop still running when its owner is collected, or at exit, is closed then.
    """

    def __init__(self, cleanup: Callable[[], Awaitable[Any]] | None = None,
                 name: str = "ragmeter-calls"):
        self._held = _Held(cleanup, name)
        self._finalizer = weakref.finalize(self, self._held.close)

    def submit(self, factory: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Start ``factory()`` on the kept loop; its future."""
        return asyncio.run_coroutine_threadsafe(_await(factory), self._held.start())

    def run(self, factory: Callable[[], Awaitable[T]]) -> T:
        """``factory()`` run to its end on the kept loop."""
        return self.wait(self.submit(factory))

    @staticmethod
    def wait(future: concurrent.futures.Future[T]) -> T:
        """The result of a submitted coroutine (see the class doc for interrupts)."""
        try:
            return future.result()
        except BaseException:
            if not future.done():      # interrupted: the coroutine cleans up first
                future.cancel()
                with contextlib.suppress(BaseException):
                    concurrent.futures.wait([future], timeout=_CLEANUP_S)
            raise

    def close(self) -> None:
        self._held.close()


#: the most a cancelled coroutine, or the cleanup at close, is waited for (seconds)
_CLEANUP_S = 5.0


async def _shutdown(cleanup: Callable[[], Awaitable[Any]] | None) -> None:
    """Every other task of the loop cancelled and awaited, then ``cleanup()``."""
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if cleanup is not None:
        await cleanup()


class _Held:
    """What a :class:`LoopThread` holds (apart from it, so its finalizer can close it)."""

    def __init__(self, cleanup: Callable[[], Awaitable[Any]] | None, name: str):
        self.cleanup = cleanup
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def start(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self.name,
                                          daemon=True)
                thread.start()
                self.loop, self.thread = loop, thread
            return self.loop

    def close(self) -> None:
        with self.lock:
            loop, thread = self.loop, self.thread
            self.loop = self.thread = None
        if loop is None or thread is None:
            return
        if threading.current_thread() is not thread:
            with contextlib.suppress(BaseException):   # closing: nothing left to tell
                asyncio.run_coroutine_threadsafe(_shutdown(self.cleanup), loop).result(
                    _CLEANUP_S)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_CLEANUP_S)
        if not loop.is_running():
            loop.close()


__all__ = ["LoopThread", "run_sync"]
