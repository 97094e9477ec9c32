"""The judge engine: cache lookup, bounded adaptive concurrency, retries, repair, accounting.

A :class:`Backend` only turns messages into one :class:`Completion` (or raises
:class:`BackendError`). :class:`EngineJudge` does everything else, identically for every
backend (HTTP, GGUF, scripted), so tests of the scripted judge exercise the real pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ragmeter.judges._sync import run_sync
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.cache import (
    CacheWriter,
    JudgeCache,
    cache_key,
    reply_to_json,
    request_hash,
)
from ragmeter.judges.config import JudgeConfig, RetryPolicy
from ragmeter.judges.parsing import parse_reply, validate
from ragmeter.judges.prompts import schema_instruction
from ragmeter.judges.stats import JudgeStats, ProgressInfo
from ragmeter.text import detect_language

log = logging.getLogger("ragmeter.judges")

#: Declare this schema for a plain-text call: ``reply.data`` is the stripped text, no JSON.
TEXT_SCHEMA: dict[str, Any] = {"type": "string"}

REPAIR_PROMPT = {
    "en": ("Your previous reply could not be used: {problem}. Reply again with only one JSON "
           "value that matches the schema, nothing else."),
    "ru": ("Твой предыдущий ответ нельзя использовать: {problem}. Ответь ещё раз только одним "
           "JSON-значением по схеме, без другого текста."),
}


@dataclass
class Completion:
    """One raw model answer with its accounting."""

    text: str | None
    finish_reason: str | None = "stop"
    tokens_in: int = 0
    tokens_out: int = 0
    refusal: str | None = None
    model: str | None = None
    mock: bool = False   # served by the fake server (never cached for a real judge)


class BackendError(Exception):
    """A failed backend call: ``reason`` is an unscored reason; ``retryable`` drives retries.

    ``reason == "schema_unsupported"`` asks the engine to resend without ``response_format``.
    """

    def __init__(self, reason: str, detail: str = "", *, retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None,
                 unreachable: bool = False):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        #: no connection could be made at all (refused, unknown host, no route): counted by
        #: the batch's circuit breaker (:class:`Breaker`)
        self.unreachable = unreachable


class Backend(Protocol):
    """What a judge backend implements: one chat completion, nothing more."""

    kind: str
    model: str
    supports_schema: bool

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass
class LimiterMemory:
    """What an :class:`AdaptiveLimiter` has learned, as plain numbers.

    Kept on the judge, so every ``ask_many`` batch (each a fresh event loop) and every loop
    starts from what the earlier ones learned instead of re-learning from the cap.
    """

    cap: int
    limit: int = 0
    ceiling: int = 0
    gen: int = 0              # number of reductions so far; a slot remembers the gen it started in
    since_growth: int = 0     # successes counted toward the next +1
    clean: int = 0            # successes at the ceiling with no 429 (probe after a stretch)
    ok_since_cut: int = 0     # successes since the last reduction
    probe_backoff: int = 1    # the clean stretch is ``4 × limit × probe_backoff`` successes
    probing: bool = False     # the ceiling was raised by a probe not yet confirmed

    def __post_init__(self) -> None:
        self.limit = self.limit or self.cap
        self.ceiling = self.ceiling or self.cap


@dataclass
class Slot:
    """One admitted call: the reduction generation it started in and how many were ahead."""

    gen: int
    before: int   # other calls in flight when this one was admitted
    limit: int    # the limit in force when it was admitted
    seq: int = 0  # admission number (for the 429-rate window)
    released: bool = False


#: successes at the ceiling (× limit) before probing one slot above it
CLEAN_STRETCH = 4
#: with no ``Retry-After``, a hold after repeated 429s lasts at most this long (seconds)
DEFAULT_HOLD_S = 1.0
#: the 429-rate window spans the last ``max(WINDOW_MIN, 2 × limit)`` admitted calls
WINDOW_MIN = 16
#: a lower 429 rate that still means overload when refusals and successes separate by the
#: number of calls in flight
SEPARATED_RATE = 0.15
#: 429s per admitted call in the window at which they mean sustained overload (a server
#: refusing above its slot count refuses about half a window sent at twice its size; random
#: 429s at 20 % reach this in a window of 32 with probability ~5e-4)
OVERLOAD_RATE = 0.45


class AdaptiveLimiter:
    """Bounded in-flight calls, adapted to HTTP 429 (one instance per event loop and endpoint).

    The learned numbers live in a :class:`LimiterMemory` (pass the judge's to share them
    across batches and loops); the lock/condition is this object's own, i.e. per loop (or
    shared by the members of an :class:`EndpointPool`).

    * **Sporadic or sustained.** A 429 only shrinks the window when it signals overload:
      the 429s among the last ``max(WINDOW_MIN, 2 × limit)`` admitted calls reach
      ``OVERLOAD_RATE``; or they reach ``SEPARATED_RATE`` and every recent refusal had more
      calls in flight than every recent success (a slot count, not chance); or it refused
      the slot just probed above the ceiling (then only the probe is undone). Any other 429 is sporadic: the call itself waits its
      ``Retry-After`` and retries; the window stays.
    * **One reaction per overload wave.** Each admitted call remembers the reduction
      generation it started in. A 429 from a call started *before* the last reduction belongs
      to the wave that reduction already answered: it is counted and otherwise ignored.
    * **Cut to the estimate.** The fewest other calls in flight among this wave's refused
      calls (``before``) estimates what the server holds. If it is informative
      (``>= limit // 2``) the limit *and* the ceiling are cut to it; otherwise the limit
      halves and the ceiling is ``limit - 1``.
    * **Hold only when 429s keep coming:** overload again with no success since the previous
      reduction: new calls wait until the next success or ``Retry-After`` (``DEFAULT_HOLD_S``
      without one), whichever is first.
    * **Growth:** +1 per ``limit`` successes of calls that started in the current generation
      with the window full (one round trip), never above the ceiling. After
      ``CLEAN_STRETCH × limit`` such successes at the ceiling with no cut, probe: ceiling and
      limit +1 (never above the cap). A probe refused at once doubles the next stretch (up to
      ×16); one that holds resets it.
    """

    def __init__(self, cap: int, memory: LimiterMemory | None = None,
                 cond: asyncio.Condition | None = None):
        if memory is None or memory.cap != cap:
            memory = LimiterMemory(cap)
        self.mem = memory
        self.cap = cap
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0
        self.cuts = 0
        self.pauses = 0
        self.ignored = 0    # 429s of an already answered wave
        self.sporadic = 0   # 429s that did not signal overload (retried, window kept)
        self._adm = 0
        self._w429: deque[tuple[int, int, int]] = deque()   # (seq, before, gen)
        self._wok: deque[tuple[int, int]] = deque()         # (seq, before)
        self._cond = cond or asyncio.Condition()

    @property
    def limit(self) -> int:
        return self.mem.limit

    @property
    def ceiling(self) -> int:
        return self.mem.ceiling

    def free(self, now: float) -> int:
        """Calls this limiter would admit now."""
        if self.paused_until > now:
            return 0
        return self.mem.limit - self.in_flight

    def admit(self) -> Slot:
        """Take a slot (the caller holds the condition and checked :meth:`free`)."""
        slot = Slot(self.mem.gen, self.in_flight, self.mem.limit, self._adm)
        self._adm += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        return slot

    async def acquire(self) -> Slot:
        loop = asyncio.get_running_loop()
        async with self._cond:
            while True:
                wait = self.paused_until - loop.time()
                if wait > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._cond.wait(), wait)
                    continue
                if self.in_flight < self.mem.limit:
                    break
                await self._cond.wait()
            return self.admit()

    async def release(self, slot: Slot, outcome: str, retry_after: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        async with self._cond:
            self.settle(slot, outcome, retry_after, loop.time())
            # wake only as many waiters as there are free slots (no thundering herd)
            free = self.mem.limit - self.in_flight
            if free > 0:
                self._cond.notify(free)

    def settle(self, slot: Slot, outcome: str, retry_after: float | None, now: float) -> None:
        """Account a finished call (the caller holds the condition). ``outcome`` "stalled"
        frees the slot of a call that is still running (it was hedged)."""
        if slot.released:
            return
        slot.released = True
        self.in_flight -= 1
        if outcome == "stalled":
            return
        m = self.mem
        self._prune()
        if outcome == "rate_limited":
            self._w429.append((slot.seq, slot.before, slot.gen))
            if slot.gen != m.gen:
                self.ignored += 1          # same wave as the last reduction
            elif m.probing and slot.before >= m.ceiling - 1:
                self._refuse_probe()
            elif self._overloaded(slot):
                self._reduce(slot, now, retry_after)
            else:
                self.sporadic += 1
        elif outcome == "ok":
            self._wok.append((slot.seq, slot.before))
            m.ok_since_cut += 1
            if self.paused_until:          # a success ends a hold early
                self.paused_until = 0.0
            if slot.gen == m.gen and slot.before + 1 >= slot.limit:
                self._grow()

    def _window(self) -> int:
        return max(WINDOW_MIN, 2 * self.mem.limit)

    def _prune(self) -> None:
        lo = self._adm - self._window()
        while self._w429 and self._w429[0][0] < lo:
            self._w429.popleft()
        while self._wok and self._wok[0][0] < lo:
            self._wok.popleft()

    def _overloaded(self, slot: Slot) -> bool:
        rate = len(self._w429) / max(1, min(self._adm, self._window()))
        if rate >= OVERLOAD_RATE:
            return True
        # concurrency-bound: every recent refusal had more calls in flight than every recent
        # success (random 429s fall at every level and never separate like this)
        if rate >= SEPARATED_RATE and len(self._w429) >= 3 and len(self._wok) >= 3:
            return min(b for _, b, _ in self._w429) > max(b for _, b in self._wok)
        return False

    def _refuse_probe(self) -> None:
        """The slot probed above the ceiling was refused: back to the old ceiling, and wait
        twice as long before the next probe."""
        m = self.mem
        m.probe_backoff = min(16, m.probe_backoff * 2)
        m.probing = False
        m.limit = m.ceiling = max(1, m.ceiling - 1)
        m.gen += 1
        m.ok_since_cut = m.since_growth = m.clean = 0
        self.cuts += 1

    def _reduce(self, slot: Slot, now: float, retry_after: float | None) -> None:
        m = self.mem
        old = m.limit
        m.probing = False
        estimate = min([b for _, b, g in self._w429 if g == m.gen] or [slot.before])
        if estimate >= max(1, old // 2):
            m.limit = m.ceiling = max(1, min(estimate, old))
        else:
            m.limit = max(1, old // 2)
            m.ceiling = max(m.limit, old - 1)
        if m.gen > 0 and m.ok_since_cut == 0:  # 429s keep coming after a reduction
            hold = retry_after if retry_after is not None else DEFAULT_HOLD_S
            if hold > 0:
                self.paused_until = max(self.paused_until, now + hold)
                self.pauses += 1
        m.gen += 1
        m.ok_since_cut = m.since_growth = m.clean = 0
        self.cuts += 1
        log.debug("429 overload with %d others in flight: limit %d -> %d, ceiling %d%s",
                  slot.before, old, m.limit, m.ceiling,
                  " (hold)" if self.paused_until > now else "")

    def _grow(self) -> None:
        m = self.mem
        if m.limit < m.ceiling:
            m.since_growth += 1
            if m.since_growth >= m.limit:
                m.limit += 1
                m.since_growth = 0
            return
        if m.limit >= self.cap:
            return
        m.clean += 1
        if m.clean >= CLEAN_STRETCH * m.limit * m.probe_backoff:
            if m.probing:                      # the last probe held for a whole stretch
                m.probe_backoff = 1
            m.ceiling = m.limit = min(self.cap, m.limit + 1)
            m.clean = 0
            m.probing = True


#: consecutive failures (connection errors, 5xx, timeouts) that take a pool member out
EJECT_AFTER = 3
#: first time out of the pool (seconds); doubles on each failed return, up to EJECT_MAX_S
EJECT_S = 2.0
EJECT_MAX_S = 60.0


@dataclass
class _Health:
    fails: int = 0
    out_until: float = 0.0    # > 0: taken out; after it passes, one probe call at a time
    backoff: float = EJECT_S
    ejections: int = 0


class EndpointPool:
    """The endpoints of one judge, each with its own :class:`AdaptiveLimiter`.

    A call goes to the member with the most spare capacity; a member that fails
    ``EJECT_AFTER`` times in a row is taken out for ``EJECT_S`` (doubling up to
    ``EJECT_MAX_S``), then gets one probe call at a time until one succeeds. A pool of one
    never takes its only member out (its calls' own retries and backoff apply).
    """

    def __init__(self, limiters: Sequence[AdaptiveLimiter]):
        lock = asyncio.Lock()
        self._cond = asyncio.Condition(lock)
        # waiting hedges: woken through their own condition, before any ordinary waiter
        self._urgent = asyncio.Condition(lock)
        self._priority = 0
        self._bg: set[asyncio.Task[None]] = set()
        self.members = list(limiters)
        for lim in self.members:
            lim._cond = self._cond
        self.health = [_Health() for _ in self.members]

    @property
    def in_flight(self) -> int:
        return sum(m.in_flight for m in self.members)

    def _pick(self, now: float) -> tuple[int | None, float | None]:
        best, best_free, wake = None, 0.0, None
        single = len(self.members) == 1
        for i, lim in enumerate(self.members):
            h = self.health[i]
            if not single and h.out_until:
                if h.out_until > now:
                    wake = h.out_until if wake is None else min(wake, h.out_until)
                    continue
                if lim.in_flight > 0:          # returning: one probe at a time
                    continue
            if lim.paused_until > now:
                wake = lim.paused_until if wake is None else min(wake, lim.paused_until)
                continue
            free = lim.free(now)
            if free <= 0:
                continue
            share = free / max(1, lim.limit)
            if best is None or share > best_free:
                best, best_free = i, share
        return best, wake

    async def acquire(self, *, priority: bool = False) -> tuple[int, Slot]:
        """A slot on the member with the most spare capacity; ``priority`` (a hedge of a
        stalled call) goes before every queued ordinary call."""
        loop = asyncio.get_running_loop()
        async with self._cond:
            if priority:
                self._priority += 1
            try:
                while True:
                    now = loop.time()
                    idx, wake = self._pick(now)
                    if idx is not None and (priority or not self._priority):
                        return idx, self.members[idx].admit()
                    if idx is not None:        # free, but a hedge is waiting: let it in
                        self._urgent.notify(1)
                    cond = self._urgent if priority else self._cond
                    if wake is not None:
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(cond.wait(), max(0.0, wake - now))
                    else:
                        await cond.wait()
            finally:
                if priority:
                    self._priority -= 1

    async def release(self, idx: int, slot: Slot | None, outcome: str,
                      retry_after: float | None = None, *, failure: bool = False) -> None:
        """Account a call on member ``idx``; ``failure`` marks an endpoint fault (connection
        error, 5xx, timeout) for the member's health."""
        loop = asyncio.get_running_loop()
        async with self._cond:
            now = loop.time()
            if slot is not None:
                self.members[idx].settle(slot, outcome, retry_after, now)
            if outcome != "stalled":
                self._health(idx, outcome == "ok", failure, now)
            self._wake()

    def release_nowait(self, idx: int, slot: Slot) -> None:
        """Free the slot of a cancelled call (from a ``finally``) and wake waiters soon."""
        self.members[idx].settle(slot, "stalled", None, 0.0)

        async def wake() -> None:
            async with self._cond:
                self._wake()

        with contextlib.suppress(RuntimeError):   # no loop any more: nobody is waiting
            task = asyncio.get_running_loop().create_task(wake())
            self._bg.add(task)
            task.add_done_callback(self._bg.discard)

    def _wake(self) -> None:
        """Notify as many waiters as there are free slots, hedges first (lock held)."""
        free = max(1, sum(max(0, m.limit - m.in_flight) for m in self.members))
        if self._priority:
            self._urgent.notify(free)
            free = max(0, free - self._priority)
        if free:
            self._cond.notify(free)

    def _health(self, idx: int, ok: bool, failure: bool, now: float) -> None:
        h = self.health[idx]
        if ok:
            if h.out_until:
                log.info("judge endpoint %d is back in the pool", idx)
            h.fails, h.out_until, h.backoff = 0, 0.0, EJECT_S
            return
        if not failure or len(self.members) == 1:
            return
        h.fails += 1
        if h.out_until or h.fails >= EJECT_AFTER:   # a failed probe goes straight back out
            h.out_until = now + h.backoff
            h.backoff = min(EJECT_MAX_S, h.backoff * 2)
            h.fails = 0
            h.ejections += 1
            log.info("judge endpoint %d taken out of the pool for %.1f s", idx,
                     h.out_until - now)

    @property
    def ejections(self) -> int:
        return sum(h.ejections for h in self.health)


#: refused connections in a row on every endpoint (with no success in the batch) that open the
#: circuit: the rest of the batch fails at once instead of sleeping through its retries
BREAKER_AFTER = 3


class Breaker:
    """Circuit breaker of one ``aask_many`` batch.

    When every endpoint of the judge has refused ``after`` connections in a row and no call of
    the batch has succeeded, the endpoint is taken as down: every remaining call (and every
    retry sleeping in backoff) ends at once as ``connection_error`` with the detail
    "endpoint unreachable: ...". Any other outcome on an endpoint resets its count, and a
    single success keeps the breaker closed for the rest of the batch (a flaky server is
    retried, a dead one is not waited for)."""

    def __init__(self, n_endpoints: int, after: int = BREAKER_AFTER):
        self.after = after
        self.refused = [0] * max(1, n_endpoints)
        self.succeeded = False
        self.detail: str | None = None
        self._open = asyncio.Event()

    @property
    def tripped(self) -> bool:
        return self.detail is not None

    def record(self, idx: int, err: BackendError | None) -> None:
        if self.tripped:
            return
        if err is None:
            self.succeeded = True
            return
        if not err.unreachable:
            self.refused[idx] = 0
            return
        self.refused[idx] += 1
        if not self.succeeded and min(self.refused) >= self.after:
            self.detail = (f"endpoint unreachable: {err.detail} (every endpoint refused "
                           f"{self.after} connections in a row; the remaining calls were not "
                           "sent)")
            self._open.set()
            log.info("judge circuit open: %s", self.detail)

    async def sleep(self, delay: float) -> None:
        """Back off ``delay`` seconds, or less if the breaker opens meanwhile."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._open.wait(), delay)


class RetryBudget:
    """Retries left for a whole run; shared by every call of one ``aask_many``."""

    def __init__(self, total: int):
        self.total = total
        self.used = 0

    def take(self) -> bool:
        if self.used >= self.total:
            return False
        self.used += 1
        return True


@dataclass
class _LoopState:
    pool: EndpointPool
    backends: list[Any]
    schema_ok: bool = True
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def limiter(self) -> AdaptiveLimiter:
        """The first member's limiter (the only one unless the judge has an endpoint pool)."""
        return self.pool.members[0]


@dataclass
class _Try:
    """One attempt's result: a completion or an error, on which endpoint, how long."""

    comp: Completion | None
    err: BackendError | None
    latency: float
    idx: int = 0


#: a stalled call is hedged only after this many successful latencies were seen
HEDGE_MIN_SAMPLES = 8
#: and never earlier than this (seconds)
HEDGE_MIN_S = 0.25
#: a stalled duplicate may itself be duplicated once more
MAX_HEDGES = 2

_FAILURES = ("connection_error", "http_5xx", "timeout")


def cost_of(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    """Cost of one call with prices per 1M tokens."""
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000.0


class EngineJudge:
    """A :class:`~ragmeter.judges.base.Judge` over one :class:`Backend` (or a pool of them).

    ``progress`` (optional) is called with a :class:`ProgressInfo` after every finished item.
    ``keep_prompts`` stores the rendered messages in ``reply.extra["messages"]``.
    Requests with a ``then`` callback get their follow-ups run in the same batch (per-sample
    chains: no phase waits for the slowest call of another sample).
    """

    #: honours ``JudgeRequest.then`` (see :func:`ask_chained` for other judges)
    chains = True

    def __init__(self, config: JudgeConfig, backend: Backend, *, demo: bool = False,
                 progress: Callable[[ProgressInfo], None] | None = None,
                 keep_prompts: bool = True, cache: JudgeCache | None = None):
        self.config = config
        self.backend = backend
        self.name = config.name
        self.model = backend.model
        self.demo = demo
        self.progress = progress
        self.keep_prompts = keep_prompts
        self._cache = cache
        self._cache_opened = cache is not None
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary())
        # what the 429 reaction learned (plain numbers), per endpoint: kept across batches
        self._limits: list[LimiterMemory] | None = None
        self._latencies: deque[float] = deque(maxlen=128)
        self._n_latencies = 0
        self._hedge_at = -1
        self._hedge_s: float | None = None
        self.stats = JudgeStats()
        self.last_stats = JudgeStats()
        # structured output is used until the server rejects it once; then never again
        self._schema_ok = config.structured_output and backend.supports_schema

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, backend={self.backend.kind!r}, "
                f"model={self.model!r}, demo={self.demo})")

    @property
    def max_in_flight(self) -> int:
        """The config's cap, lowered to what the backend can serve (1 for a local model)."""
        own = getattr(self.backend, "max_in_flight", None)
        cap = self.config.max_concurrency
        return min(cap, own) if isinstance(own, int) and own > 0 else cap

    @property
    def members(self) -> list[Any]:
        """The backends calls go to: the pool's members, else the one backend."""
        return list(getattr(self.backend, "members", None) or [self.backend])

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
        own = getattr(self.backend, "identity", None)
        return str(own) if own else self.config.endpoint_identity()

    def key_for(self, request: JudgeRequest) -> str:
        return cache_key(request, backend=self.backend.kind, model=self.model,
                         temperature=self.config.temperature, seed=self.config.seed,
                         max_tokens=self.config.max_tokens, endpoint=self.endpoint_identity,
                         namespace=self.namespace)

    # -- public API --------------------------------------------------------------------------
    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """Synchronous :meth:`aask_many`; safe to call from inside a running event loop."""
        async def run() -> list[JudgeReply]:
            try:
                return await self.aask_many(requests)
            finally:
                await self.backend.aclose()

        return list(run_sync(run))

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
        submission order). Failures come back unscored, never raised."""
        requests = list(requests)
        t_start = time.perf_counter()
        state = self._state()
        pool = state.pool
        marks = [(lim.cuts, lim.sporadic, lim.ignored, lim.pauses) for lim in pool.members]
        eject0 = pool.ejections
        for lim in pool.members:
            lim.peak = lim.in_flight  # peak of this run
        state.schema_ok = self._schema_ok
        decisions: Counter[str] = Counter()
        all_reqs: list[JudgeRequest] = list(requests)
        replies: list[JudgeReply | None] = [None] * len(requests)
        keys = [self.key_for(r) for r in requests]
        cache = self.cache
        if cache is not None and requests:
            hits = await asyncio.to_thread(cache.get_many, keys)
            for i, k in enumerate(keys):
                if k in hits:
                    rep = replace(hits[k], cached=True, extra=dict(hits[k].extra))
                    self._decorate(rep, requests[i], k)
                    replies[i] = rep
        writer = (CacheWriter(cache, namespace=self.namespace,
                              endpoint=self.endpoint_identity) if cache is not None else None)
        policy = self.config.retry
        breaker = Breaker(len(pool.members))
        n_calls = len({k for k, r in zip(keys, replies, strict=True) if r is None})
        budget = RetryBudget(policy.budget if policy.budget is not None else max(20, n_calls))
        run_stats = JudgeStats()
        for hit in replies:
            if hit is not None:
                run_stats.add(hit)
        done = [sum(r is not None for r in replies)]
        inflight: dict[str, asyncio.Future[JudgeReply]] = {}
        tasks: set[asyncio.Future[None]] = set()
        finished: list[asyncio.Future[None]] = []
        wake = asyncio.Event()

        def on_done(task: asyncio.Future[None]) -> None:
            finished.append(task)
            wake.set()

        def spawn(coro: Any) -> None:
            task = asyncio.ensure_future(coro)
            tasks.add(task)
            task.add_done_callback(on_done)

        def deliver(i: int, rep: JudgeReply) -> None:
            replies[i] = rep
            run_stats.add(rep)
            done[0] += 1
            if self.progress is not None:
                self._report(run_stats, done[0], len(replies), t_start)
            req = all_reqs[i]
            if req.then is not None:
                follow(req.then(rep))

        def follow(new: Sequence[JudgeRequest]) -> None:
            for req in new:
                all_reqs.append(req)
                replies.append(None)
                if policy.budget is None:
                    budget.total += 1
                spawn(one_followup(len(all_reqs) - 1, req))

        async def call(key: str, req: JudgeRequest) -> JudgeReply:
            fut: asyncio.Future[JudgeReply] = asyncio.get_running_loop().create_future()
            inflight[key] = fut
            try:
                rep = await self._call(req, state, budget, policy, decisions, breaker)
                self._decorate(rep, req, key)
                if rep.ok and writer is not None:
                    if rep.extra.get("mock") and not self.namespace.startswith("mock:"):
                        decisions["mock_reply_not_cached"] += 1
                    else:
                        await writer.put(key, rep)   # acknowledged only once committed
                fut.set_result(rep)
                return rep
            except BaseException as exc:
                if not fut.done():
                    fut.set_exception(exc)
                    fut.exception()  # retrieved: a waiting duplicate re-raises it
                raise
            finally:
                inflight.pop(key, None)

        def duplicate(rep: JudgeReply) -> JudgeReply:
            return replace(rep, cached=True, extra={**rep.extra, "deduplicated": True})

        async def one(key: str, idxs: list[int]) -> None:
            rep = await call(key, all_reqs[idxs[0]])
            for j, i in enumerate(idxs):
                # a duplicate of a request in the same batch made no call of its own
                deliver(i, rep if j == 0 else duplicate(rep))

        async def one_followup(i: int, req: JudgeRequest) -> None:
            key = self.key_for(req)
            if key in inflight:
                deliver(i, duplicate(await inflight[key]))
                return
            if cache is not None:
                hit = (await asyncio.to_thread(cache.get_many, [key])).get(key)
                if hit is not None:
                    rep = replace(hit, cached=True, extra=dict(hit.extra))
                    self._decorate(rep, req, key)
                    deliver(i, rep)
                    return
            if key in inflight:
                deliver(i, duplicate(await inflight[key]))
                return
            deliver(i, await call(key, req))

        enter = getattr(self.backend, "enter", None)
        leave = getattr(self.backend, "exit", None)
        if enter is not None:
            await enter()
        try:
            # cache hits with follow-ups start their chains at once
            for i, hit in enumerate(list(replies)):
                chain = all_reqs[i].then
                if hit is not None and chain is not None:
                    follow(chain(hit))
            todo: dict[str, list[int]] = {}
            for i, k in enumerate(keys):
                if replies[i] is None:
                    todo.setdefault(k, []).append(i)
            for k, idxs in todo.items():
                spawn(one(k, idxs))
            while tasks:
                if not finished:
                    wake.clear()
                    await wake.wait()
                while finished:
                    t = finished.pop()
                    tasks.discard(t)
                    t.result()  # a bug in a ``then`` callback surfaces here
        finally:
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            if writer is not None:
                await writer.drain()
            if leave is not None:
                await leave()
        run_stats.wall_s = time.perf_counter() - t_start
        run_stats.retries = sum(int(r.extra.get("retries", 0)) for r in replies
                                if r is not None and not r.cached)
        run_stats.peak_in_flight = max(lim.peak for lim in pool.members)
        run_stats.concurrency_cuts = sum(lim.cuts - m[0] for lim, m in
                                         zip(pool.members, marks, strict=True))
        for lim, (c0, s0, i0, p0) in zip(pool.members, marks, strict=True):
            decisions["limit_cut"] += lim.cuts - c0
            decisions["sporadic_429"] += lim.sporadic - s0
            decisions["same_wave_429"] += lim.ignored - i0
            decisions["hold"] += lim.pauses - p0
        decisions["endpoint_out"] += pool.ejections - eject0
        if breaker.tripped:
            decisions["circuit_open"] += 1
        if writer is not None:
            decisions["cache_commits"] += writer.commits
        run_stats.decisions.update({k: v for k, v in decisions.items() if v})
        self.last_stats = run_stats
        self.stats.merge(run_stats)
        if self.progress is not None:
            self._report(run_stats, len(replies), len(replies), t_start)
        out = [r for r in replies if r is not None]
        assert len(out) == len(replies)  # internal invariant, not user input
        return out

    # -- internals ---------------------------------------------------------------------------
    def _report(self, st: JudgeStats, done: int, total: int, t0: float) -> None:
        elapsed = time.perf_counter() - t0
        eta = (elapsed / done * (total - done)) if done else None
        assert self.progress is not None
        self.progress(ProgressInfo(
            judge=self.name, done=done, total=total, calls=st.calls, cached=st.cached,
            tokens_in=st.tokens_in, tokens_out=st.tokens_out, cost=st.cost,
            errors=st.unscored, elapsed_s=elapsed, eta_s=eta))

    def _decorate(self, rep: JudgeReply, req: JudgeRequest, key: str) -> None:
        rep.extra["judge"] = self.name
        rep.extra["cache_key"] = key
        rep.extra["request_hash"] = request_hash(req)
        rep.extra["prompt_version"] = req.prompt_version
        if self.demo:
            rep.extra["demo"] = True
        if self.keep_prompts:
            rep.extra.setdefault("messages", [dict(m) for m in req.messages])

    def _language(self, req: JudgeRequest) -> str:
        if self.config.language != "auto":
            return self.config.language
        return detect_language([m.get("content", "") for m in req.messages])

    def _hedge_after(self) -> float | None:
        """Seconds after which a call counts as stalled: ``hedge_after_p90`` × the p90 of
        recent successful latencies (None until enough were seen, or when it would not come
        before the timeout)."""
        factor = self.config.hedge_after_p90
        if factor is None or len(self._latencies) < HEDGE_MIN_SAMPLES:
            return None
        if self._hedge_at != self._n_latencies // 8:   # recomputed every 8 new latencies
            self._hedge_at = self._n_latencies // 8
            lat = sorted(self._latencies)
            p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))]
            after = max(HEDGE_MIN_S, factor * p90)
            self._hedge_s = after if after < 0.8 * self.config.timeout_s else None
        return self._hedge_s

    async def _raw(self, backend: Any, args: dict[str, Any]) -> tuple[Completion | None,
                                                                      BackendError | None]:
        cfg = self.config
        try:
            comp = await asyncio.wait_for(backend.complete(**args), timeout=cfg.timeout_s)
            return comp, None
        except asyncio.TimeoutError:
            return None, BackendError("timeout", f"no reply within {cfg.timeout_s:g} s",
                                      retryable=True)
        except BackendError as exc:
            return None, exc
        except Exception as exc:  # a backend bug or library error: unscored, not raised
            return None, BackendError("backend_error", f"{type(exc).__name__}: {exc}")

    async def _attempt(self, state: _LoopState, make_args: Callable[[], dict[str, Any]],
                       decisions: Counter[str], *, depth: int = 0) -> _Try:
        """One call on the endpoint with spare capacity. A call running ``_hedge_after``
        seconds gives its slot back and races a duplicate (which takes the next free slot
        before any queued call, and may itself be duplicated once); the first success
        wins."""
        pool = state.pool
        idx, slot = await pool.acquire(priority=depth > 0)
        hedge = depth < MAX_HEDGES
        args = make_args()
        t0 = time.perf_counter()
        task = asyncio.ensure_future(self._raw(state.backends[idx], args))
        twin: asyncio.Future[_Try] | None = None
        try:
            stalled = False
            hedge = hedge and bool(getattr(state.backends[idx], "hedgeable", False))
            while hedge and self.config.hedge_after_p90 is not None and not task.done():
                after = self._hedge_after()   # None while too few latencies were seen
                elapsed = time.perf_counter() - t0
                if after is not None and elapsed >= after:
                    stalled = True
                    break
                if elapsed >= 0.8 * self.config.timeout_s:
                    break
                await asyncio.wait({task}, timeout=HEDGE_MIN_S if after is None
                                   else after - elapsed)
            if stalled:
                await pool.release(idx, slot, "stalled")
                decisions["hedged"] += 1
                twin = asyncio.ensure_future(self._attempt(state, make_args, decisions,
                                                           depth=depth + 1))
                finished, _ = await asyncio.wait({task, twin},
                                                 return_when=asyncio.FIRST_COMPLETED)
                if twin in finished and twin.result().err is None:
                    decisions["hedge_won"] += 1
                    return twin.result()
                if task in finished:
                    comp, err = task.result()
                    first = _Try(comp, err, time.perf_counter() - t0, idx)
                    if err is None:
                        return first
                    return await twin
                comp, err = await task          # the duplicate failed: wait for the first
                first = _Try(comp, err, time.perf_counter() - t0, idx)
                return first if err is None else twin.result()
            comp, err = await task
            latency = time.perf_counter() - t0
            outcome, retry_after = "ok", None
            if err is not None:
                outcome = "rate_limited" if err.reason == "rate_limited" else "error"
                retry_after = err.retry_after
            else:
                self._latencies.append(latency)
                self._n_latencies += 1
            await pool.release(idx, slot, outcome, retry_after,
                               failure=err is not None and err.reason in _FAILURES)
            return _Try(comp, err, latency, idx)
        finally:
            if not slot.released:   # cancelled: give the slot back
                pool.release_nowait(idx, slot)
            for t in (task, twin):
                if t is not None and not t.done():
                    t.cancel()

    async def _call(self, req: JudgeRequest, state: _LoopState, budget: RetryBudget,
                    policy: RetryPolicy, decisions: Counter[str],
                    breaker: Breaker | None = None) -> JudgeReply:
        cfg = self.config
        max_tokens = req.max_tokens if req.max_tokens is not None else cfg.max_tokens
        temperature = req.temperature if req.temperature is not None else cfg.temperature
        lang = self._language(req)
        messages = [dict(m) for m in req.messages]
        text_mode = req.schema.get("type") == "string"
        schema_in_prompt = text_mode  # nothing to constrain: never send response_format
        attempts = retries = 0
        repaired = widened = mock = False
        tokens_in = tokens_out = 0
        latency = 0.0
        raw: str | None = None
        model = self.model
        endpoints: list[int] = []

        def finish(data: Any, reason: str | None, detail: str | None) -> JudgeReply:
            extra: dict[str, Any] = {"retries": retries, "repaired": repaired,
                                     "structured": not schema_in_prompt and not text_mode}
            if widened:
                extra["truncation_retry"] = True
            if mock:
                extra["mock"] = True
            if len(state.backends) > 1:
                extra["endpoints"] = endpoints
            return JudgeReply(
                data=data, reason=reason, detail=detail, raw=raw, model=model,
                latency_s=latency, tokens_in=tokens_in, tokens_out=tokens_out,
                cost=cost_of(tokens_in, tokens_out, cfg.price_in, cfg.price_out),
                attempts=attempts, extra=extra)

        def make_args() -> dict[str, Any]:
            nonlocal messages, schema_in_prompt
            if not state.schema_ok and not schema_in_prompt:  # checked after taking a slot
                messages = _with_schema_instruction(messages, req.schema, lang)
                schema_in_prompt = True
            return {"messages": messages,
                    "schema": None if schema_in_prompt else req.schema,
                    "max_tokens": max_tokens, "temperature": temperature, "seed": cfg.seed}

        while True:
            if breaker is not None and breaker.tripped:
                decisions["circuit_skipped"] += 1
                return finish(None, "connection_error", breaker.detail)
            attempts += 1
            got = await self._attempt(state, make_args, decisions)
            latency += got.latency
            endpoints.append(got.idx)
            err, comp = got.err, got.comp
            if breaker is not None:
                breaker.record(got.idx, err)
            if err is not None:
                if err.reason == "schema_unsupported" and not schema_in_prompt:
                    state.schema_ok = self._schema_ok = False
                    log.info("judge %s: server rejected response_format; using schema in "
                             "prompt", self.name)
                    continue
                # 429s are the server asking us to wait: bounded per call, not by the budget
                if (err.retryable and retries < policy.max_retries
                        and (err.reason == "rate_limited" or budget.take())):
                    retries += 1
                    delay = retry_delay(policy, retries, err.retry_after)
                    decisions[f"retry:{err.reason}"] += 1
                    log.debug("judge %s: %s, retry %d in %.2f s", self.name, err.reason,
                              retries, delay)
                    if breaker is not None:
                        await breaker.sleep(delay)
                    else:
                        await asyncio.sleep(delay)
                    continue
                reason = err.reason if err.reason != "schema_unsupported" else "http_4xx"
                detail = err.detail
                if err.retryable:
                    why = ("retry budget spent" if retries < policy.max_retries
                           else f"after {retries} retries")
                    detail = f"{detail} ({why})"
                return finish(None, reason, detail)
            assert comp is not None
            tokens_in += comp.tokens_in
            tokens_out += comp.tokens_out
            raw = comp.text
            mock = mock or comp.mock
            if comp.model:
                model = comp.model
            if comp.refusal:
                return finish(None, "refused", comp.refusal[:300])
            if comp.finish_reason == "length":
                if not widened and cfg.truncation_retry_factor > 1.0:
                    widened = True
                    old = max_tokens
                    max_tokens = max(old + 1, int(old * cfg.truncation_retry_factor))
                    decisions["truncation_retry"] += 1
                    log.debug("judge %s: truncated at max_tokens=%d, retry with %d", self.name,
                              old, max_tokens)
                    continue
                return finish(None, "truncated",
                              f"finish_reason=length at max_tokens={max_tokens}")
            if text_mode:
                text = (comp.text or "").strip()
                problems = validate(text, req.schema)
                if text and not problems:
                    return finish(text, None, None)
                return finish(None, "parse_error", "empty reply" if not text
                              else "; ".join(problems))
            parsed = parse_reply(comp.text, req.schema)
            if parsed.ok:
                return finish(parsed.data, None, None)
            if repaired:
                return finish(None, parsed.reason, f"{parsed.detail} (after one repair)")
            repaired = True
            problem = parsed.detail or parsed.reason or "invalid"
            messages = [*messages, {"role": "assistant", "content": comp.text or ""},
                        {"role": "user", "content": REPAIR_PROMPT.get(lang, REPAIR_PROMPT["en"])
                         .format(problem=problem[:300])}]


async def aask_chained(judge: Any, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
    """``judge.aask_many(requests)`` with ``then`` follow-ups for any judge: an engine judge
    runs each chain as soon as its own reply arrives; another judge is asked phase by phase
    (the replies come back in the same order: initial ones, then follow-ups as submitted)."""
    if getattr(judge, "chains", False):
        return list(await judge.aask_many(requests))
    out: list[JudgeReply] = []
    wave = list(requests)
    while wave:
        got = list(await judge.aask_many([replace(r, then=None) for r in wave]))
        out += got
        wave = [f for r, rep in zip(wave, got, strict=True) if r.then is not None
                for f in r.then(rep)]
    return out


def ask_chained(judge: Any, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
    """Synchronous :func:`aask_chained` (see there)."""
    if getattr(judge, "chains", False):
        return list(judge.ask_many(requests))
    out: list[JudgeReply] = []
    wave = list(requests)
    while wave:
        got = list(judge.ask_many([replace(r, then=None) for r in wave]))
        out += got
        wave = [f for r, rep in zip(wave, got, strict=True) if r.then is not None
                for f in r.then(rep)]
    return out


def retry_delay(policy: RetryPolicy, retry: int, retry_after: float | None) -> float:
    """Seconds before retry number ``retry``: the server's ``Retry-After`` when it sent one
    (plus up to 10 % jitter so retries do not return in lockstep), else the policy's
    exponential backoff. ``Retry-After`` is capped at ``max(policy.max, 60 s)``: a policy
    with a small ``max`` (tests, fast local servers) still waits what the server asked, since
    coming back earlier only earns another 429."""
    if retry_after is None:
        return policy.delay(retry)
    base = min(max(0.0, retry_after), max(policy.max, 60.0))
    return base * (1.0 + 0.1 * random.random())


def _with_schema_instruction(messages: list[dict[str, str]], schema: dict[str, Any],
                             lang: str) -> list[dict[str, str]]:
    note = schema_instruction(schema, lang)
    if any(note in m.get("content", "") for m in messages):
        return messages
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = out[0]["content"] + "\n\n" + note
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


__all__ = ["TEXT_SCHEMA", "AdaptiveLimiter", "Backend", "BackendError", "Completion",
           "EndpointPool", "EngineJudge", "LimiterMemory", "RetryBudget", "Slot", "aask_chained",
           "ask_chained", "cost_of", "reply_to_json", "retry_delay"]
