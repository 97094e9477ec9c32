"""The LLM judge: :class:`EngineJudge` asks one backend (or a pool of them) for judge replies.

Everything that is not about judging is the call machinery's (:mod:`ragmeter.calls`: the
adaptive limiter, the endpoint pool, the breaker, retries, dispatch and the request runner);
the backend seam is :mod:`~ragmeter.judges.backend`, the reply cache
:mod:`~ragmeter.judges.cache`.

What is about judging: :mod:`~ragmeter.judges.exchange` (messages, repair, truncation,
schema fallback, the reply), :mod:`~ragmeter.judges.batch` (one ``aask_many`` on the request
runner) and this module (cache keys, provenance, stats, progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ragmeter.calls.dispatch import Dispatcher, HedgeClock
from ragmeter.calls.limiter import AdaptiveLimiter, LimiterMemory
from ragmeter.calls.pool import EndpointPool
from ragmeter.calls.sync import run_sync
from ragmeter.judges.backend import Backend, Completion, as_backend
from ragmeter.judges.base import JudgeReply, JudgeRequest, SendGate
from ragmeter.judges.cache import JudgeCache, RequestDigest, digest
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.exchange import JudgeExchange, Session, cost_of
from ragmeter.judges.stats import JudgeStats, ProgressInfo

#: Declare this schema for a plain-text call: ``reply.data`` is the stripped text, no JSON.
TEXT_SCHEMA: dict[str, Any] = {"type": "string"}


@dataclass
class _LoopState:
    """What one event loop keeps between batches: the pool (its limiters) and the backends."""

    pool: EndpointPool
    backends: list[Backend]

    @property
    def limiter(self) -> AdaptiveLimiter:
        """The first member's limiter (the only one unless the judge has an endpoint pool)."""
        return self.pool.members[0]


class EngineJudge:
    """A :class:`~ragmeter.judges.base.Judge` over one :class:`Backend` (or a pool of them).

    ``progress`` (optional) is called with a :class:`ProgressInfo` after every finished item.
    ``keep_prompts`` stores the rendered messages in ``reply.extra["messages"]``.
    Requests with a ``then`` callback get their follow-ups run in the same batch (per-sample
    chains: no phase waits for the slowest call of another sample). ``send_gate`` (optional,
    settable) is called before every request sent to a backend and after its reply (see
    :class:`~ragmeter.judges.base.SendGate`); its ``before_send`` may stop the batch.
    """

    #: honours ``JudgeRequest.then`` (see :func:`ask_chained` for other judges)
    chains = True

    def __init__(self, config: JudgeConfig, backend: Any, *, demo: bool = False,
                 progress: Callable[[ProgressInfo], None] | None = None,
                 keep_prompts: bool = True, cache: JudgeCache | None = None,
                 send_gate: SendGate | None = None):
        self.config = config
        self.backend: Backend = as_backend(backend)
        self.name = config.name
        self.model = self.backend.model
        self.demo = demo
        self.progress = progress
        self.keep_prompts = keep_prompts
        self.send_gate = send_gate
        self._cache = cache
        self._cache_opened = cache is not None
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary())
        # what the 429 reaction learned (plain numbers), per endpoint: kept across batches
        self._limits: list[LimiterMemory] | None = None
        self._clock = HedgeClock(config.hedge_after_p90, config.timeout_s)
        self.stats = JudgeStats()
        self.last_stats = JudgeStats()
        # structured output is used until the server rejects it once; then never again
        self._schema_ok = config.structured_output and self.backend.supports_schema

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, backend={self.backend.kind!r}, "
                f"model={self.model!r}, demo={self.demo})")

    @property
    def max_in_flight(self) -> int:
        """The config's cap, lowered to what the backend can serve (1 for a local model)."""
        own = self.backend.max_in_flight
        cap = self.config.max_concurrency
        return min(cap, own) if isinstance(own, int) and own > 0 else cap

    @property
    def members(self) -> list[Backend]:
        """The backends calls go to: the pool's members, else the one backend."""
        return [as_backend(m) for m in self.backend.members] or [self.backend]

    # -- cache -----------------------------------------------------------------------------
    @property
    def cache(self) -> JudgeCache | None:
        if self.config.no_cache:
            return None
        if not self._cache_opened:
            self._cache = JudgeCache(self.config.resolved_cache_dir())
            self._cache_opened = True
        return self._cache

    @property
    def namespace(self) -> str:
        """The cache namespace: the config's, in a separate space for the fake server."""
        ns = self.config.cache_namespace
        return f"mock:{ns}" if self.backend.kind == "mock" else ns

    @property
    def endpoint_identity(self) -> str:
        """Where replies come from, for the cache key. Every fake server is one source (its
        replies depend on the request only), whatever port it was started on."""
        if self.backend.kind == "mock":
            return "mock"
        own = self.backend.identity
        return str(own) if own else self.config.endpoint_identity()

    def key_settings(self) -> dict[str, Any]:
        """What this judge adds to every cache key (see :func:`~ragmeter.judges.cache.digest`)."""
        cfg = self.config
        return {"backend": self.backend.kind, "model": self.model,
                "temperature": cfg.temperature, "seed": cfg.seed, "max_tokens": cfg.max_tokens,
                "endpoint": self.endpoint_identity, "namespace": self.namespace,
                **({"top_p": cfg.top_p} if cfg.top_p is not None else {}),
                **({"logprobs": True} if cfg.logprobs else {})}

    def digest_of(self, request: JudgeRequest,
                  settings: dict[str, Any] | None = None) -> RequestDigest:
        """The request's cache key and provenance hash, from one serialisation."""
        return digest(request, **(settings or self.key_settings()))

    def key_for(self, request: JudgeRequest) -> str:
        return self.digest_of(request).key

    # -- public API --------------------------------------------------------------------------
    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """Synchronous :meth:`aask_many`; safe to call from inside a running event loop."""
        async def run() -> list[JudgeReply]:
            try:
                return await self.aask_many(requests)
            finally:
                await self.backend.aclose()

        return list(run_sync(run, "ragmeter-judge"))

    def ask(self, request: JudgeRequest) -> JudgeReply:
        return self.ask_many([request])[0]

    async def aask(self, request: JudgeRequest) -> JudgeReply:
        return (await self.aask_many([request]))[0]

    async def aclose(self) -> None:
        await self.backend.aclose()

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        cap = self.max_in_flight
        members = self.members
        if (self._limits is None or len(self._limits) != len(members)
                or any(m.cap != cap for m in self._limits)):
            self._limits = [LimiterMemory(cap) for _ in members]
        if (state is None or len(state.pool.members) != len(members)
                or any(lim.cap != cap or lim.mem is not mem
                       for lim, mem in zip(state.pool.members, self._limits, strict=True))):
            state = _LoopState(EndpointPool([AdaptiveLimiter(cap, mem) for mem in self._limits]),
                               members)
            self._states[loop] = state
        return state

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """Answer every request (order kept; follow-ups of ``then`` callbacks after them, in
        submission order). Failures come back unscored, never raised; a ``send_gate`` stop
        is raised once the calls in flight finished (their replies are cached)."""
        from ragmeter.judges.batch import JudgeBatch

        batch = JudgeBatch(self, list(requests), self._state())
        await self.backend.enter()
        try:
            return await batch.run()
        finally:
            await self.backend.exit()

    # -- used by the batch -------------------------------------------------------------------
    def dispatcher(self, state: _LoopState) -> Dispatcher[Completion]:
        cfg = self.config
        self._clock.factor, self._clock.timeout_s = cfg.hedge_after_p90, cfg.timeout_s
        backends = state.backends

        async def send(idx: int, args: dict[str, Any]) -> Completion:
            return await backends[idx].complete(**args)

        def measure(comp: Completion) -> tuple[float, int, int]:
            return (cost_of(comp.tokens_in, comp.tokens_out, cfg.price_in, cfg.price_out),
                    comp.tokens_in, comp.tokens_out)

        return Dispatcher(state.pool, send, timeout_s=cfg.timeout_s, clock=self._clock,
                          hedgeable=[b.hedgeable for b in backends], gate=self.send_gate,
                          measure=measure)

    def exchange(self, req: JudgeRequest, dig: RequestDigest, session: Session) -> JudgeExchange:
        return JudgeExchange(req, self.config, self.model, session, dig.schema_json, self.name)

    def schema_rejected(self) -> None:
        self._schema_ok = False

    def report(self, st: JudgeStats, done: int, total: int, t0: float) -> None:
        elapsed = time.perf_counter() - t0
        eta = (elapsed / done * (total - done)) if done else None
        assert self.progress is not None
        self.progress(ProgressInfo(
            judge=self.name, done=done, total=total, calls=st.calls, cached=st.cached,
            tokens_in=st.tokens_in, tokens_out=st.tokens_out, cost=st.cost,
            errors=st.unscored, elapsed_s=elapsed, eta_s=eta))

    def decorate(self, rep: JudgeReply, req: JudgeRequest, dig: RequestDigest) -> JudgeReply:
        extra = rep.extra
        extra["judge"] = self.name
        extra["cache_key"] = dig.key
        extra["request_hash"] = dig.hash
        extra["prompt_version"] = req.prompt_version
        if self.demo:
            extra["demo"] = True
        if self.keep_prompts and "messages" not in extra:
            extra["messages"] = [dict(m) for m in req.messages]
        return rep


#: the round of dependent calls a judge is asked in (see :func:`judge_round`)
_ROUND: ContextVar[int] = ContextVar("ragmeter_judge_round", default=1)


def judge_round() -> int:
    """The round of the calls a judge is being asked: 1 for calls that need no earlier reply,
    2 for the calls made from round 1's replies (claims, then their verification), ... Set by
    :func:`ask_chained` while it asks a judge phase by phase (``--estimate`` counts rounds,
    batch files are written round by round)."""
    return _ROUND.get()


@contextlib.contextmanager
def _in_round(n: int) -> Iterator[None]:
    token = _ROUND.set(n)
    try:
        yield
    finally:
        _ROUND.reset(token)


async def aask_chained(judge: Any, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
    """``judge.aask_many(requests)`` with ``then`` follow-ups for any judge: an engine judge
    runs each chain as soon as its own reply arrives; another judge is asked phase by phase
    (the replies come back in the same order: initial ones, then follow-ups as submitted)."""
    if getattr(judge, "chains", False):
        return list(await judge.aask_many(requests))
    out: list[JudgeReply] = []
    wave, n = list(requests), judge_round()
    while wave:
        with _in_round(n):
            got = list(await judge.aask_many([r.but(then=None) for r in wave]))
        out += got
        wave, n = _followups(wave, got), n + 1
    return out


def ask_chained(judge: Any, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
    """Synchronous :func:`aask_chained` (see there)."""
    if getattr(judge, "chains", False):
        return list(judge.ask_many(requests))
    out: list[JudgeReply] = []
    wave, n = list(requests), judge_round()
    while wave:
        with _in_round(n):
            got = list(judge.ask_many([r.but(then=None) for r in wave]))
        out += got
        wave, n = _followups(wave, got), n + 1
    return out


def _followups(wave: Sequence[JudgeRequest], got: Sequence[JudgeReply]) -> list[JudgeRequest]:
    return [f for r, rep in zip(wave, got, strict=True) if r.then is not None
            for f in r.then(rep)]


__all__ = ["TEXT_SCHEMA", "EngineJudge", "aask_chained", "ask_chained", "judge_round"]
