"""The ``python`` target kind: ``module:function`` (or any callable), sync or async.

The question is passed as the first argument; ``history``, ``session_id``, ``k`` and
``contexts`` are passed by keyword to a function that has parameters of those names (or
``**kwargs``); otherwise a second positional parameter gets the history (``answer``) or the
contexts (``generate``). The function returns a string (the answer), a list (ids for
``retrieve``), a mapping or an object with ``answer`` / ``contexts`` / ``context_ids`` /
``doc_ids`` attributes (a LangChain-style ``{"result", "source_documents"}`` works too). A
synchronous function runs in a worker thread, so calls still overlap.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig, resolve_function
from ragmeter.targets.reading import read_plain

_KEYWORDS = ("history", "session_id", "k", "contexts")


def _describe(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


class _Fn:
    """A resolved function and how to call it."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        call = fn if inspect.isroutine(fn) else getattr(fn, "__call__", fn)  # noqa: B004
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        self.var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
        self.names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)}
        self.positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                              for p in params) + (99 if any(
                                  p.kind is p.VAR_POSITIONAL for p in params) else 0)

    def args(self, req: TargetRequest) -> tuple[list[Any], dict[str, Any]]:
        values = {"history": [dict(h) for h in req.history], "session_id": req.session_id,
                  "k": req.k, "contexts": list(req.contexts)}
        kwargs = {k: v for k, v in values.items()
                  if (k in self.names or self.var_kw) and not (k == "contexts" and
                                                               req.entry != "generate")}
        args: list[Any] = [req.question]
        second = "contexts" if req.entry == "generate" else "history"
        if second not in kwargs and self.positional >= 2:
            args.append(values[second])
        return args, kwargs


class PythonTarget:
    """A Python function as the target (see the module doc)."""

    kind = "python"

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.max_concurrency = config.max_concurrency
        self.timeout_s = config.timeout_s
        self.fns = {e: _Fn(resolve_function(c.function, f"target.entries.{e}.function"
                                            if e != "answer" else "target.function"))
                    for e, c in config.entries.items()}
        self.signature = TargetSignature("python", _describe(self.fns["answer"].fn),
                                         config.config_hash())

    def entries(self) -> list[str]:
        return list(self.fns)

    async def call(self, request: TargetRequest) -> TargetReply:
        f = self.fns[request.entry]
        args, kwargs = f.args(request)
        t0 = time.perf_counter()
        try:
            if f.is_async:
                out = await asyncio.wait_for(f.fn(*args, **kwargs), self.timeout_s)
            else:
                out = await asyncio.wait_for(asyncio.to_thread(f.fn, *args, **kwargs),
                                             self.timeout_s)
                if inspect.isawaitable(out):
                    out = await out
        except asyncio.TimeoutError:
            raise CallError("timeout", f"no return within {self.timeout_s} s",
                            retryable=True) from None
        except Exception as exc:
            raise CallError("error", f"{type(exc).__name__}: {exc}") from None
        latency = time.perf_counter() - t0
        raw = json.dumps(out, ensure_ascii=False, default=_plain, sort_keys=True)
        rep = read_plain(out, request.entry, raw)
        rep.ttft_s = rep.latency_s = latency
        return rep

    async def aclose(self) -> None:
        return None


def _plain(obj: Any) -> Any:
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return str(obj)


KINDS.register("python", PythonTarget)

__all__ = ["PythonTarget"]
