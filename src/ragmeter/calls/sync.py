"""Run a coroutine from synchronous code, also when an event loop is already running (the
sync bridge of every caller: ``judge.ask_many``, a target caller's ``call_many``, the
embeddings client)."""

from __future__ import annotations

import asyncio
import threading
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


__all__ = ["run_sync"]
