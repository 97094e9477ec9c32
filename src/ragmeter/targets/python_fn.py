"""The ``python`` target kind: ``module:function`` (or any callable), sync or async.

The question is passed as the first argument; ``history``, ``session_id``, ``k`` and
``contexts`` are passed by keyword to a function that has parameters of those names (or
``**kwargs``); otherwise a second positional parameter gets the history (``answer``) or the
contexts (``generate``). The function returns a string (the answer), a list (ids for
``retrieve``), a mapping or an object with ``answer`` / ``contexts`` / ``context_ids`` /
``doc_ids`` attributes (a LangChain-style ``{"result", "source_documents"}`` works too). A
synchronous function runs in a daemon thread per call (calls overlap), an ``async`` one on
the target's background loop (:mod:`ragmeter.targets.workers`): a call that passes
``timeout_s`` is abandoned as ``target_timeout`` and cannot keep ragmeter alive; anything the
function raises (``SystemExit`` too) is that sample's ``target_error``; a reply larger than
``max_reply_bytes`` is ``target_reply_too_large``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.targets.base import (
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig, resolve_function
from ragmeter.targets.reading import clean_text, read_plain
from ragmeter.targets.workers import FunctionRunner, Raised

_KEYWORDS = ("history", "session_id", "k", "contexts")


def _describe(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


class _Fn:
    """A resolved function and how to call it: the question first (by keyword when the
    function takes ``question`` keyword-only), every parameter named like a request field by
    keyword, and — only when the second positional parameter has another name — the history
    (``answer``) or the contexts (``generate``) as the second positional argument."""

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
        self.question_kw = any(p.name == "question" and p.kind is p.KEYWORD_ONLY
                               for p in params)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
        var_pos = any(p.kind is p.VAR_POSITIONAL for p in params)
        # the parameter a second positional argument would fill (None: there is none)
        self.second: str | None = positional[1].name if len(positional) >= 2 else (
            "*" if var_pos and positional else None)

    def args(self, req: TargetRequest) -> tuple[list[Any], dict[str, Any]]:
        values = {"history": [dict(h) for h in req.history], "session_id": req.session_id,
                  "k": req.k, "contexts": list(req.contexts)}
        kwargs = {k: v for k, v in values.items() if k in self.names or (
            self.var_kw and not (k == "contexts" and req.entry != "generate"))}
        if self.question_kw:
            return [], {"question": req.question, **kwargs}
        args: list[Any] = [req.question]
        second = "contexts" if req.entry == "generate" else "history"
        if self.second is not None and self.second not in _KEYWORDS \
                and second not in kwargs:
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
        self.runner = FunctionRunner(config.name, max(8, 2 * config.max_concurrency))

    def entries(self) -> list[str]:
        return list(self.fns)

    async def call(self, request: TargetRequest) -> TargetReply:
        f = self.fns[request.entry]
        args, kwargs = f.args(request)
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout_s):
                out = await self._invoke(f, args, kwargs)
        except TimeoutError:
            raise CallError("timeout", f"{_describe(f.fn)} did not return within "
                            f"{self.timeout_s:g} s (the call was abandoned)",
                            retryable=True) from None
        except Raised as raised:
            raise CallError("error", clean_text(str(raised))[0]) from None
        latency = time.perf_counter() - t0
        rep = self._read(out, request.entry)
        rep.ttft_s = rep.latency_s = latency
        return rep

    async def _invoke(self, f: _Fn, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if f.is_async:
            return await self.runner.run_async(lambda: f.fn(*args, **kwargs))
        stuck = self.runner.abandoned()
        if stuck >= self.runner.max_abandoned:
            raise CallError("timeout", f"{stuck} earlier calls of "
                            f"{_describe(f.fn)} never returned and still run; no more "
                            "calls are started")
        out = await self.runner.run_sync(f.fn, args, kwargs)
        if inspect.isawaitable(out):   # a callable that returns a coroutine
            return await self.runner.run_async(lambda: out)
        return out

    def _read(self, out: Any, entry: str) -> TargetReply:
        """The returned value as a reply: bounded by ``max_reply_bytes``, invalid characters
        replaced (and counted), anything unreadable the sample's ``target_bad_reply``."""
        limit = self.config.max_reply_bytes
        too_large = CallError("reply_too_large", f"the function returned more "
                              f"than max_reply_bytes ({limit} bytes)")
        if _larger_than(out, limit):
            raise too_large
        try:
            raw = json.dumps(out, ensure_ascii=False, default=_plain, sort_keys=True)
        except (TypeError, ValueError, RecursionError) as exc:
            raw = f"<not JSON: {type(exc).__name__}: {exc}>"
        if len(raw) > limit or len(raw.encode("utf-8", "surrogatepass")) > limit:
            raise too_large
        try:
            return read_plain(out, entry, raw)
        except CallError:
            raise
        except Exception as exc:   # an object whose attributes cannot be read
            raise CallError("bad_reply", clean_text(
                f"cannot read the returned {type(out).__name__}: {type(exc).__name__}: "
                f"{exc}")[0], raw=clean_text(raw)[0]) from None

    async def aclose(self) -> None:
        return None


def _larger_than(obj: Any, limit: int) -> bool:
    """Whether the texts in ``obj`` alone add up to more than ``limit`` characters (a cheap
    bound before serialising a huge reply; at most a million items are looked at)."""
    total = 0
    stack = [obj]
    seen = 0
    while stack and seen < 1_000_000:
        x = stack.pop()
        seen += 1
        if isinstance(x, (str, bytes)):
            total += len(x)
            if total > limit:
                return True
        elif isinstance(x, Mapping):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif hasattr(x, "__dict__") and not isinstance(x, type):
            stack.extend(vars(x).values())
    return False


def _plain(obj: Any) -> Any:
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return str(obj)


KINDS.register("python", PythonTarget)

__all__ = ["PythonTarget"]
