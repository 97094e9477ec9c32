"""One ``EngineJudge.aask_many`` call: the judge's hooks into the generic request runner.

:class:`JudgeBatch` computes each request's digest once (cache key, provenance hash, schema
JSON), serves cache hits, runs the rest through :class:`~ragmeter.calls.scheduler.RequestRunner`
with a :class:`~ragmeter.judges.exchange.JudgeExchange` each, stores scored replies, reports
progress and closes the batch's :class:`~ragmeter.judges.stats.JudgeStats`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragmeter.calls.scheduler import RequestRunner
from ragmeter.judges.backend import Completion
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.cache import CacheWriter, RequestDigest
from ragmeter.judges.exchange import JudgeExchange, Session
from ragmeter.judges.stats import DELIVERED, JudgeStats

if TYPE_CHECKING:
    from ragmeter.judges.llm_judge import EngineJudge, _LoopState


class JudgeBatch:
    """The :class:`~ragmeter.calls.seam.BatchHooks` of one judge batch."""

    def __init__(self, judge: EngineJudge, requests: list[JudgeRequest], state: _LoopState):
        self.judge = judge
        self.requests = requests
        self.state = state
        self.t0 = time.perf_counter()
        self._dig: dict[int, RequestDigest] = {}
        self._settings = judge.key_settings()   # the same for every request of the batch
        digests = [self._digest(r) for r in requests]
        self.stats = JudgeStats()
        self.done = 0
        self.total = len(requests)
        self.dispatcher = judge.dispatcher(state)
        self.decisions: Counter[str] = self.dispatcher.decisions
        self.session = Session(judge._schema_ok, self.decisions,
                               pooled=len(state.backends) > 1,
                               on_schema_rejected=judge.schema_rejected)
        self.cache = judge.cache
        self.writer = (CacheWriter(self.cache, namespace=judge.namespace,
                                   endpoint=judge.endpoint_identity)
                       if self.cache is not None else None)
        self.lookup: Callable[[list[str]], Awaitable[dict[str, JudgeReply]]] | None = (
            self._lookup if self.cache is not None else None)
        self.store: Callable[[str, JudgeReply], Awaitable[None]] | None = (
            self._store if self.writer is not None else None)
        self.runner: RequestRunner[Completion] = RequestRunner(
            self.dispatcher, judge.config.retry, calls=len({d.key for d in digests}))

    async def run(self) -> list[JudgeReply]:
        """Every reply in submission order (see ``EngineJudge.aask_many``)."""
        pool = self.state.pool
        marks = [(lim.cuts, lim.sporadic, lim.ignored, lim.pauses) for lim in pool.members]
        eject0 = pool.ejections
        for lim in pool.members:
            lim.peak = lim.in_flight  # peak of this run
        try:
            replies: list[JudgeReply] = await self.runner.run(self.requests, self)
        finally:
            if self.writer is not None:
                await self.writer.drain()
        self._close(replies, marks, eject0)
        return replies

    # -- BatchHooks ---------------------------------------------------------------------------
    def key(self, item: JudgeRequest) -> str:
        return self._digest(item).key

    def exchange(self, item: JudgeRequest, key: str) -> JudgeExchange:
        return self.judge.exchange(item, self._digest(item), self.session)

    def hit(self, item: JudgeRequest, key: str, out: JudgeReply) -> JudgeReply:
        rep = replace(out, cached=True, extra=dict(out.extra))
        return self.judge.decorate(rep, item, self._digest(item))

    def duplicate(self, out: JudgeReply) -> JudgeReply:
        return replace(out, cached=True, extra={**out.extra, "deduplicated": True})

    def finished(self, item: JudgeRequest, key: str, out: JudgeReply) -> JudgeReply:
        return self.judge.decorate(out, item, self._digest(item))

    def delivered(self, i: int, item: JudgeRequest, out: JudgeReply) -> Sequence[JudgeRequest]:
        self.stats.add(out)
        tap = DELIVERED.get()
        if tap is not None:
            tap(item, out, self.judge.config)
        self.done += 1
        if self.judge.progress is not None:
            self.judge.report(self.stats, self.done, self.total, self.t0)
        if item.then is None:
            return ()
        new = list(item.then(out))
        self.total += len(new)
        return new

    # -- internals ----------------------------------------------------------------------------
    def _digest(self, req: JudgeRequest) -> RequestDigest:
        got = self._dig.get(id(req))
        if got is None:
            got = self._dig[id(req)] = self.judge.digest_of(req, self._settings)
        return got

    async def _lookup(self, keys: list[str]) -> dict[str, JudgeReply]:
        assert self.cache is not None
        return await asyncio.to_thread(self.cache.get_many, keys)

    async def _store(self, key: str, rep: JudgeReply) -> None:
        if not rep.ok or self.writer is None:
            return
        if rep.extra.get("mock") and not self.judge.namespace.startswith("mock:"):
            self.decisions["mock_reply_not_cached"] += 1
            return
        await self.writer.put(key, rep)   # acknowledged only once committed

    def _close(self, replies: list[JudgeReply], marks: list[tuple[int, int, int, int]],
               eject0: int) -> None:
        st, judge, pool, decisions = self.stats, self.judge, self.state.pool, self.decisions
        st.wall_s = time.perf_counter() - self.t0
        st.retries = sum(int(r.extra.get("retries", 0)) for r in replies if not r.cached)
        st.peak_in_flight = max(lim.peak for lim in pool.members)
        st.concurrency_cuts = sum(lim.cuts - m[0] for lim, m in
                                  zip(pool.members, marks, strict=True))
        for lim, (c0, s0, i0, p0) in zip(pool.members, marks, strict=True):
            decisions["limit_cut"] += lim.cuts - c0
            decisions["sporadic_429"] += lim.sporadic - s0
            decisions["same_wave_429"] += lim.ignored - i0
            decisions["hold"] += lim.pauses - p0
        decisions["endpoint_out"] += pool.ejections - eject0
        if self.runner.breaker.tripped:
            decisions["circuit_open"] += 1
        if self.writer is not None:
            decisions["cache_commits"] += self.writer.commits
        st.decisions.update({k: v for k, v in decisions.items() if v})
        judge.last_stats = st
        judge.stats.merge(st)
        if judge.progress is not None:
            judge.report(st, len(replies), len(replies), self.t0)


__all__ = ["JudgeBatch"]
