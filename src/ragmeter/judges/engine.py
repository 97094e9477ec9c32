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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ragmeter.judges._sync import run_sync
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.cache import JudgeCache, cache_key, reply_to_json, request_hash
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


class BackendError(Exception):
    """A failed backend call: ``reason`` is an unscored reason; ``retryable`` drives retries.

    ``reason == "schema_unsupported"`` asks the engine to resend without ``response_format``.
    """

    def __init__(self, reason: str, detail: str = "", *, retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


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


#: successes at the ceiling (× limit) before probing one slot above it
CLEAN_STRETCH = 4
#: with no ``Retry-After``, a hold after repeated 429s lasts at most this long (seconds)
DEFAULT_HOLD_S = 1.0


class AdaptiveLimiter:
    """Bounded in-flight calls, adapted to HTTP 429 (one instance per event loop).

    The learned numbers live in a :class:`LimiterMemory` (pass the judge's to share them
    across batches and loops); the lock/condition is this object's own, i.e. per loop.

    * **One reaction per overload wave.** Each admitted call remembers the reduction
      generation it started in. A 429 from a call started *before* the last reduction belongs
      to the wave that reduction already answered: it is counted and otherwise ignored.
    * **Fresh 429** (a call started after the last reduction): the number of other calls that
      were in flight when the rejected one was admitted (``before``) is an estimate of what
      the server holds — its slots were full when the request arrived, and every call in
      them was sent earlier by us. It is at most ``limit - 1``. If it is informative
      (``>= limit // 2``) the limit *and* the ceiling are cut to it; otherwise (a rate-based
      429 that came with few calls in flight) the limit halves and the ceiling is ``limit - 1``.
    * **Hold only when 429s keep coming:** a fresh 429 when no call has succeeded since the
      previous reduction means the cut did not help (rate-based limits, or a server still
      full): new calls wait until the next success or ``Retry-After`` (``DEFAULT_HOLD_S``
      without one), whichever is first. A lone 429 only delays its own retry.
    * **Growth:** +1 per ``limit`` successes of calls that started in the current generation
      with the window full (one round trip), never above the ceiling. After
      ``CLEAN_STRETCH × limit`` such successes at the ceiling with no 429, probe: ceiling and
      limit +1 (never above the cap). A probe refused at once doubles the next stretch (up to
      ×16); one that holds resets it.
    """

    def __init__(self, cap: int, memory: LimiterMemory | None = None):
        if memory is None or memory.cap != cap:
            memory = LimiterMemory(cap)
        self.mem = memory
        self.cap = cap
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0
        self.cuts = 0
        self.pauses = 0
        self.ignored = 0   # 429s of an already answered wave
        self._cond = asyncio.Condition()

    @property
    def limit(self) -> int:
        return self.mem.limit

    @property
    def ceiling(self) -> int:
        return self.mem.ceiling

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
            slot = Slot(self.mem.gen, self.in_flight, self.mem.limit)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return slot

    async def release(self, slot: Slot, outcome: str, retry_after: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        async with self._cond:
            self.in_flight -= 1
            m = self.mem
            if outcome == "rate_limited":
                if slot.gen != m.gen:
                    self.ignored += 1          # same wave as the last reduction
                else:
                    self._reduce(slot, loop.time(), retry_after)
            elif outcome == "ok":
                m.ok_since_cut += 1
                if self.paused_until:          # a success ends a hold early
                    self.paused_until = 0.0
                if slot.gen == m.gen and slot.before + 1 >= slot.limit:
                    self._grow()
            # wake only as many waiters as there are free slots (no thundering herd)
            free = m.limit - self.in_flight
            if free > 0:
                self._cond.notify(free)

    def _reduce(self, slot: Slot, now: float, retry_after: float | None) -> None:
        m = self.mem
        old = m.limit
        if m.probing and slot.before >= m.ceiling - 1:
            m.probe_backoff = min(16, m.probe_backoff * 2)   # the probed slot was refused
        m.probing = False
        estimate = slot.before
        if estimate >= max(1, old // 2):
            m.limit = m.ceiling = max(1, estimate)
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
        log.debug("429 with %d others in flight: limit %d -> %d, ceiling %d%s", slot.before,
                  old, m.limit, m.ceiling, " (hold)" if self.paused_until > now else "")

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
    limiter: AdaptiveLimiter
    schema_ok: bool = True
    counters: dict[str, int] = field(default_factory=dict)


def cost_of(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    """Cost of one call with prices per 1M tokens."""
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000.0


class EngineJudge:
    """A :class:`~ragmeter.judges.base.Judge` over one :class:`Backend`.

    ``progress`` (optional) is called with a :class:`ProgressInfo` after every finished item.
    ``keep_prompts`` stores the rendered messages in ``reply.extra["messages"]``.
    """

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
        # what the 429 reaction learned (plain numbers): shared by every batch and loop
        self._limits: LimiterMemory | None = None
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

    # -- cache -----------------------------------------------------------------------------
    @property
    def cache(self) -> JudgeCache | None:
        if self.config.no_cache:
            return None
        if not self._cache_opened:
            self._cache = JudgeCache(self.config.resolved_cache_dir())
            self._cache_opened = True
        return self._cache

    def key_for(self, request: JudgeRequest) -> str:
        return cache_key(request, backend=self.backend.kind, model=self.model,
                         temperature=self.config.temperature, seed=self.config.seed,
                         max_tokens=self.config.max_tokens)

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

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """Answer every request (order kept). Failures come back unscored, never raised."""
        requests = list(requests)
        t_start = time.perf_counter()
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        cap = self.max_in_flight
        if self._limits is None or self._limits.cap != cap:
            self._limits = LimiterMemory(cap)
        if state is None or state.limiter.cap != cap or state.limiter.mem is not self._limits:
            state = _LoopState(AdaptiveLimiter(cap, self._limits))
            self._states[loop] = state
        cuts0 = state.limiter.cuts
        state.limiter.peak = state.limiter.in_flight  # peak of this run
        state.schema_ok = self._schema_ok
        keys = [self.key_for(r) for r in requests]
        replies: list[JudgeReply | None] = [None] * len(requests)
        cache = self.cache
        if cache is not None and requests:
            hits = await asyncio.to_thread(cache.get_many, keys)
            for i, k in enumerate(keys):
                if k in hits:
                    rep = replace(hits[k], cached=True, extra=dict(hits[k].extra))
                    self._decorate(rep, requests[i], k)
                    replies[i] = rep
        # one call per distinct uncached key
        todo: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            if replies[i] is None:
                todo.setdefault(k, []).append(i)
        policy = self.config.retry
        budget = RetryBudget(policy.budget if policy.budget is not None
                             else max(20, len(todo)))
        run_stats = JudgeStats()
        for hit in replies:
            if hit is not None:
                run_stats.add(hit)
        done = [sum(r is not None for r in replies)]
        pending_cache: list[tuple[str, JudgeReply]] = []

        async def flush() -> None:
            if cache is not None and pending_cache:
                batch = pending_cache[:]
                pending_cache.clear()
                await asyncio.to_thread(cache.put_many, batch)

        async def one(key: str, idxs: list[int]) -> None:
            req = requests[idxs[0]]
            rep = await self._call(req, state, budget, policy)
            self._decorate(rep, req, key)
            for j, i in enumerate(idxs):
                # a duplicate of a request in the same batch made no call of its own
                this = rep if j == 0 else replace(rep, cached=True,
                                                  extra={**rep.extra, "deduplicated": True})
                replies[i] = this
                run_stats.add(this)
            done[0] += len(idxs)
            if rep.ok:
                pending_cache.append((key, rep))
                if len(pending_cache) >= 64:
                    await flush()
            if self.progress is not None:
                self._report(run_stats, done[0], len(requests), t_start)

        enter = getattr(self.backend, "enter", None)
        leave = getattr(self.backend, "exit", None)
        if enter is not None:
            await enter()
        tasks = [asyncio.ensure_future(one(k, idxs)) for k, idxs in todo.items()]
        try:
            if tasks:
                await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            if leave is not None:
                await leave()
            await flush()
        run_stats.wall_s = time.perf_counter() - t_start
        run_stats.retries = sum(int(r.extra.get("retries", 0)) for r in replies
                                if r is not None and not r.cached)
        run_stats.peak_in_flight = state.limiter.peak
        run_stats.concurrency_cuts = state.limiter.cuts - cuts0
        self.last_stats = run_stats
        self.stats.merge(run_stats)
        if self.progress is not None:
            self._report(run_stats, len(requests), len(requests), t_start)
        out = [r for r in replies if r is not None]
        assert len(out) == len(requests)  # internal invariant, not user input
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

    async def _call(self, req: JudgeRequest, state: _LoopState, budget: RetryBudget,
                    policy: RetryPolicy) -> JudgeReply:
        cfg = self.config
        max_tokens = req.max_tokens if req.max_tokens is not None else cfg.max_tokens
        temperature = req.temperature if req.temperature is not None else cfg.temperature
        lang = self._language(req)
        messages = [dict(m) for m in req.messages]
        text_mode = req.schema.get("type") == "string"
        schema_in_prompt = text_mode  # nothing to constrain: never send response_format
        attempts = retries = 0
        repaired = False
        tokens_in = tokens_out = 0
        latency = 0.0
        raw: str | None = None
        model = self.model

        def finish(data: Any, reason: str | None, detail: str | None) -> JudgeReply:
            return JudgeReply(
                data=data, reason=reason, detail=detail, raw=raw, model=model,
                latency_s=latency, tokens_in=tokens_in, tokens_out=tokens_out,
                cost=cost_of(tokens_in, tokens_out, cfg.price_in, cfg.price_out),
                attempts=attempts,
                extra={"retries": retries, "repaired": repaired,
                       "structured": not schema_in_prompt and not text_mode})

        while True:
            attempts += 1
            slot = await state.limiter.acquire()
            if not state.schema_ok and not schema_in_prompt:  # checked after waiting for a slot
                messages = _with_schema_instruction(messages, req.schema, lang)
                schema_in_prompt = True
            t0 = time.perf_counter()
            outcome, retry_after = "error", None
            err: BackendError | None = None
            comp: Completion | None = None
            try:
                comp = await asyncio.wait_for(
                    self.backend.complete(messages, None if schema_in_prompt else req.schema,
                                          max_tokens=max_tokens, temperature=temperature,
                                          seed=cfg.seed),
                    timeout=cfg.timeout_s)
                outcome = "ok"
            except asyncio.TimeoutError:
                err = BackendError("timeout", f"no reply within {cfg.timeout_s:g} s",
                                   retryable=True)
            except BackendError as exc:
                err = exc
                if exc.reason == "rate_limited":
                    outcome, retry_after = "rate_limited", exc.retry_after
            except Exception as exc:  # a backend bug or library error: unscored, not raised
                err = BackendError("backend_error", f"{type(exc).__name__}: {exc}")
            finally:
                latency += time.perf_counter() - t0
                await state.limiter.release(slot, outcome, retry_after)
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
                    log.debug("judge %s: %s, retry %d in %.2f s", self.name, err.reason,
                              retries, delay)
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
            if comp.model:
                model = comp.model
            if comp.refusal:
                return finish(None, "refused", comp.refusal[:300])
            if comp.finish_reason == "length":
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
           "EngineJudge", "LimiterMemory", "RetryBudget", "Slot", "cost_of", "reply_to_json",
           "retry_delay"]
