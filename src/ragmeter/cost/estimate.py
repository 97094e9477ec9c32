"""``--estimate``: plan a command with stand-in judges that count tokens and send nothing.

The command runs its normal planning with an :class:`EstimatingJudge` in place of every judge
(inside :func:`estimate_scope`, ``make_judge`` returns one). That judge renders each request
the pipeline plans, counts its tokens (:mod:`ragmeter.cost.tokens`) and answers with a
minimal valid reply made from the request's JSON schema, so calls that depend on earlier
replies — e.g. claim checks after claim splitting — are planned too, with placeholder claims
(their size is an estimate). :func:`summarise` turns the recorded calls into an
:class:`Estimate`: calls, input and output tokens, cost from the judge's price table
(``price_in``/``price_out`` per 1M tokens) and the expected wall time at the configured
concurrency. Output tokens are the size of a minimal valid reply plus a one-sentence reason
where the schema has one (``TEXT_REPLY_TOKENS`` for free-text replies such as generated
answers); the upper bound is ``max_tokens`` per call.

Each planned call records its *round* (:func:`ragmeter.judges.llm_judge.judge_round`): 1 for calls
that need no earlier reply, 2 for those made from round 1's replies (claim verification after
claim splitting), ... — the number of batch files written one after the other when the run is
judged through a batch API (``--judge-batch``). The estimate prices those calls at the batch
price too (:class:`~ragmeter.cost.pricing.Price`: ``batch_discount``, 50 % by default).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from ragmeter.cost.pricing import Price
from ragmeter.cost.tokens import (
    TEXT_REPLY_TOKENS,
    count_tokens,
    minimal_instance,
    money,
    request_tokens,
)
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper

#: seconds per call = base + tokens_out / rate (+ tokens_in / prefill for local models)
LATENCY_MODEL: dict[str, dict[str, float]] = {
    "remote": {"base": 0.6, "out_tok_s": 60.0, "in_tok_s": 0.0},
    "local": {"base": 0.2, "out_tok_s": 12.0, "in_tok_s": 120.0},
}


@dataclass
class PlannedCall:
    prompt_version: str
    metric: str
    tokens_in: int
    tokens_out: int
    max_tokens: int
    #: the round the call is made in (1: needs no earlier reply)
    round: int = 1


@dataclass
class Estimate:
    """What a run will cost before any request is sent."""

    judge: str
    model: str
    calls: int
    tokens_in: int
    tokens_out: int
    tokens_out_max: int
    cost: float
    cost_max: float
    wall_s: float
    concurrency: int
    price_in: float
    price_out: float
    cached: int = 0
    by_prompt: dict[str, dict[str, int]] = field(default_factory=dict)
    method: str = "chars/token estimate"
    #: rounds of dependent calls (each round's batch file needs the previous round's results)
    rounds: int = 0
    #: planned calls per round ("1", "2", ...)
    calls_by_round: dict[str, int] = field(default_factory=dict)
    #: the share a batch API takes off the price, and the price of these calls through one
    batch_discount: float = 0.5
    batch_cost: float = 0.0

    @property
    def priced(self) -> bool:
        """Whether the model has prices (else ``cost`` is 0 and says nothing)."""
        return bool(self.price_in or self.price_out)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        priced = self.price_in or self.price_out
        who = "judge" if self.judge in ("", "judge") else f"judge {self.judge}"  # not "judge judge"
        out = [f"{who} ({self.model or 'model not set'}): {self.calls} planned "
               f"calls" + (f", {self.cached} already cached" if self.cached else ""),
               f"  input tokens  ~{self.tokens_in:,}   output tokens ~{self.tokens_out:,} "
               f"(at most {self.tokens_out_max:,} with max_tokens)",
               ("  cost ~" + money(self.cost) + f" (at most {money(self.cost_max)}) at "
                f"{self.price_in:g}/{self.price_out:g} per 1M tokens in/out") if priced else
               "  cost: no price set for this model (price_in/price_out or a 'prices' table)",
               f"  wall time ~{_dur(self.wall_s)} at concurrency {self.concurrency}",
               f"  tokens: {self.method}"]
        if self.rounds:
            per = ", ".join(f"round {r}: {n}" for r, n in sorted(self.calls_by_round.items(),
                                                                  key=lambda x: int(x[0])))
            line = (f"  rounds: {self.rounds} (calls of a round need the previous round's "
                    f"replies; batch files: one per round; {per})")
            out.append(line)
            if priced:
                out.append(f"  batch price ~{money(self.batch_cost)} "
                           f"({self.batch_discount:.0%} off through a batch API, "
                           "e.g. --judge-batch write DIR)")
        for pv, d in sorted(self.by_prompt.items()):
            out.append(f"    {pv}: {d['calls']} calls, ~{d['tokens_in']:,} in, "
                       f"~{d['tokens_out']:,} out")
        return out


def _dur(s: float) -> str:
    if s < 90:
        return f"{s:.0f}s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


class EstimatingJudge:
    """A judge that plans instead of calling: records every request and replies with a
    minimal valid instance of its schema (no network, no model)."""

    def __init__(self, config: Any | None = None, *, name: str = "judge", model: str = "",
                 demo: bool = False, cache: Any = None):
        self.config = config
        self.name = getattr(config, "name", name) if config is not None else name
        self.model = getattr(config, "model", model) if config is not None else model
        self.demo = demo or (config is not None and getattr(config, "backend", "") ==
                             "local-demo")
        self.calls: list[PlannedCall] = []
        self.cached = 0
        self._cache = cache
        self._seen: set[str] = set()

    def _plan(self, req: JudgeRequest) -> JudgeReply:
        from ragmeter.judges.cache import request_hash

        h = request_hash(req)
        data = minimal_instance(req.schema) if req.schema.get("type") != "string" else "x"
        text = json.dumps(data, ensure_ascii=False) if not isinstance(data, str) else data
        max_tokens = int(req.max_tokens or getattr(self.config, "max_tokens", 1000) or 1000)
        if req.schema.get("type") == "string":  # free text: a generated answer
            t_out = min(TEXT_REPLY_TOKENS, max_tokens)
        else:
            t_out = min(count_tokens(text) + 2, max_tokens)
        if h in self._seen:  # the engine sends identical requests once
            return JudgeReply(data=data, raw=text, model=self.model, cached=True)
        self._seen.add(h)
        if self._cache is not None and self._is_cached(req):
            self.cached += 1
            return JudgeReply(data=data, raw=text, model=self.model, cached=True)
        from ragmeter.judges.llm_judge import judge_round

        self.calls.append(PlannedCall(req.prompt_version, req.metric, request_tokens(req),
                                      t_out, max_tokens, judge_round()))
        return JudgeReply(data=data, raw=text, model=self.model, tokens_in=self.calls[-1]
                          .tokens_in, tokens_out=t_out)

    def _is_cached(self, req: JudgeRequest) -> bool:
        try:
            from ragmeter.judges.cache import cache_key

            cfg: Any = self.config
            backend = "gguf" if cfg.backend == "local-demo" else cfg.backend
            key = cache_key(req, backend=backend, model=cfg.model, temperature=cfg.temperature,
                            seed=cfg.seed, max_tokens=cfg.max_tokens)
            return bool(self._cache.get_many([key]))
        except Exception:
            return False

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return [self._plan(r) for r in requests]

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return self.ask_many(requests)

    def ask(self, request: JudgeRequest) -> JudgeReply:
        return self._plan(request)

    async def aask(self, request: JudgeRequest) -> JudgeReply:
        return self._plan(request)

    async def aclose(self) -> None:
        return None


def estimate_of(calls: int, tokens_in: int, tokens_out: int, *, config: Any | None = None,
                tokens_out_max: int | None = None, cost: float | None = None,
                by_prompt: dict[str, dict[str, int]] | None = None, cached: int = 0,
                method: str = "chars/token estimate") -> Estimate:
    """The one :class:`Estimate` of ``calls`` calls with these token totals to the model of
    ``config`` (a JudgeConfig or None): its prices (``price_in`` / ``price_out`` per 1M
    tokens), the expected wall time at its concurrency (:data:`LATENCY_MODEL`). ``cost``
    replaces the priced total when parts of the plan have prices of their own."""
    price = Price.of(config)
    local = str(getattr(config, "backend", "openai")) in ("gguf", "local-demo")
    conc = 1 if local else int(getattr(config, "max_concurrency", 16) or 16)
    lat = LATENCY_MODEL["local" if local else "remote"]
    t_max = tokens_out if tokens_out_max is None else tokens_out_max
    wall = (calls * lat["base"] + tokens_out / lat["out_tok_s"]
            + (tokens_in / lat["in_tok_s"] if lat["in_tok_s"] else 0.0)) / conc if calls else 0.0
    full = price.cost(tokens_in, tokens_out)
    return Estimate(str(getattr(config, "name", "judge") or "judge"),
                    str(getattr(config, "model", "") or ""), calls, tokens_in, tokens_out, t_max,
                    full if cost is None else cost, price.cost(tokens_in, t_max), wall, conc,
                    price.price_in, price.price_out, cached, dict(by_prompt or {}), method,
                    batch_discount=price.batch_discount,
                    batch_cost=price.cost(tokens_in, tokens_out, batch=True) if cost is None
                    else cost * (1.0 - price.batch_discount))


def summarise(judge: EstimatingJudge, config: Any | None = None) -> Estimate:
    """The :class:`Estimate` of everything ``judge`` was asked."""
    cfg = config if config is not None else judge.config
    by: dict[str, dict[str, int]] = {}
    rounds: Counter[str] = Counter()
    for c in judge.calls:
        d = by.setdefault(c.prompt_version.split("#")[0], Counter())
        d["calls"] += 1
        d["tokens_in"] += c.tokens_in
        d["tokens_out"] += c.tokens_out
        rounds[str(c.round)] += 1
    est = estimate_of(len(judge.calls), sum(c.tokens_in for c in judge.calls),
                      sum(c.tokens_out for c in judge.calls), config=cfg,
                      tokens_out_max=sum(c.max_tokens for c in judge.calls),
                      by_prompt={k: dict(v) for k, v in by.items()}, cached=judge.cached)
    est.judge, est.model = judge.name, judge.model
    est.rounds = max((c.round for c in judge.calls), default=0)
    est.calls_by_round = dict(rounds)
    return est


def estimate_requests(requests: Sequence[JudgeRequest], config: Any | None = None,
                      **kwargs: Any) -> Estimate:
    """Estimate a known list of requests (no dependent calls)."""
    j = EstimatingJudge(config, **kwargs)
    j.ask_many(requests)
    return summarise(j, config)


_ESTIMATING: ContextVar[list[EstimatingJudge] | None] = ContextVar("ragmeter_estimating",
                                                                    default=None)


@contextlib.contextmanager
def estimate_scope() -> Iterator[list[EstimatingJudge]]:
    """Every judge built by :func:`ragmeter.judges.make_judge` inside is an
    :class:`EstimatingJudge`; the list collects them for :func:`summarise`."""
    judges: list[EstimatingJudge] = []
    token = _ESTIMATING.set(judges)
    try:
        yield judges
    finally:
        _ESTIMATING.reset(token)


def planned_judge(config: Any) -> Any | None:
    """The :class:`EstimatingJudge` standing in for ``config`` inside :func:`estimate_scope`
    (``None`` outside it). Called by ``make_judge`` before building anything."""
    judges = _ESTIMATING.get()
    if judges is None:
        return None
    cache = None
    if not getattr(config, "no_cache", True):
        with contextlib.suppress(Exception):
            from ragmeter.judges.cache import JudgeCache

            cache = JudgeCache(config.resolved_cache_dir())
    j = EstimatingJudge(config, demo=getattr(config, "backend", "") == "local-demo",
                        cache=cache)
    judges.append(j)
    return j


# make_judge asks it first: inside estimate_scope it builds nothing (judges never import cost)
WRAPPERS.register("estimate", JudgeWrapper(order=0, instead=planned_judge))

__all__ = ["LATENCY_MODEL", "Estimate", "EstimatingJudge", "PlannedCall", "estimate_of",
           "estimate_requests",
           "estimate_scope", "planned_judge", "summarise"]
