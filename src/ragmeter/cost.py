"""Cost control for judge and generator calls: estimate before a run, stop at a budget.

**Estimate** (``--estimate``): the command runs its normal planning with an
:class:`EstimatingJudge` in place of every judge. That judge never sends anything: it renders
each request the pipeline plans, counts its tokens, and answers with a minimal valid reply made
from the request's JSON schema (so calls that depend on earlier replies — e.g. claim checks
after claim splitting — are planned too, with placeholder claims; their size is an estimate).
:func:`summarise` turns the recorded calls into an :class:`Estimate`: calls, input and output
tokens, cost from the judge's price table (``price_in``/``price_out`` per 1M tokens) and the
expected wall time at the configured concurrency.

Token counts: no tokenizer for arbitrary remote models ships offline, so ragmeter counts
characters and divides by a measured characters-per-token rate, separately for Cyrillic and
for other text (:data:`CHARS_PER_TOKEN`, calibrated against the ``prompt_tokens`` that the
bundled Qwen2.5 GGUF judge reported for the benchmark prompts; BPE tokenizers of other
families land within about ±25 %). Each message adds :data:`MESSAGE_OVERHEAD` tokens.
Output tokens are the size of a minimal valid reply plus a one-sentence reason where the
schema has one (:data:`TEXT_REPLY_TOKENS` for free-text replies such as generated answers);
the upper bound is ``max_tokens`` per call.

**Budget** (``--max-cost``, ``--max-calls``): :class:`BudgetJudge` wraps a judge, sends
requests in chunks and stops before the next chunk would pass the limit, raising
:class:`BudgetExhausted` with the amount spent. Replies already received stay in the judge
cache, so running the same command again (``--resume`` for ``ragmeter run``) continues where
it stopped without paying twice.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from ragmeter.judges.base import JudgeReply, JudgeRequest

#: characters per token: (Cyrillic letters, everything else); calibrated, see module doc
CHARS_PER_TOKEN = (2.9, 3.7)
MESSAGE_OVERHEAD = 4
#: a one-sentence reason in a reply, in characters
REASON_CHARS = 90
#: expected length of a free-text reply (a generated answer), in tokens
TEXT_REPLY_TOKENS = 200
#: seconds per call = base + tokens_out / rate (+ tokens_in / prefill for local models)
LATENCY_MODEL: dict[str, dict[str, float]] = {
    "remote": {"base": 0.6, "out_tok_s": 60.0, "in_tok_s": 0.0},
    "local": {"base": 0.2, "out_tok_s": 12.0, "in_tok_s": 120.0},
}
_CYR = re.compile(r"[\u0400-\u04ff]")


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see :data:`CHARS_PER_TOKEN`)."""
    if not text:
        return 0
    cyr = len(_CYR.findall(text))
    rest = len(text) - cyr
    return math.ceil(cyr / CHARS_PER_TOKEN[0] + rest / CHARS_PER_TOKEN[1])


def request_tokens(req: JudgeRequest) -> int:
    return sum(count_tokens(m.get("content", "")) + MESSAGE_OVERHEAD for m in req.messages)


def minimal_instance(schema: Any, *, depth: int = 0) -> Any:
    """A small value valid against ``schema`` (the subset ragmeter's judge prompts use)."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        keys = list(schema.get("required") or props)
        if "reason" in props and "reason" not in keys:
            keys.append("reason")
        out = {}
        for k in keys:
            if k == "reason":
                out[k] = "x" * REASON_CHARS
            else:
                out[k] = minimal_instance(props.get(k, {}), depth=depth + 1)
        return out
    if kind == "array":
        lo = int(schema.get("minItems") or 0)
        hi = schema.get("maxItems")
        n = lo if hi is not None and hi == lo else max(lo, 3)
        items = [minimal_instance(schema.get("items", {}), depth=depth + 1) for _ in range(n)]
        for i, it in enumerate(items, 1):
            if isinstance(it, dict) and "id" in it:
                it["id"] = i
        return items
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return True
    if kind == "string":
        return "placeholder claim text of typical length for an estimate"
    return None


@dataclass
class PlannedCall:
    prompt_version: str
    metric: str
    tokens_in: int
    tokens_out: int
    max_tokens: int


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        priced = self.price_in or self.price_out
        out = [f"judge {self.judge} ({self.model or 'model not set'}): {self.calls} planned "
               f"calls" + (f", {self.cached} already cached" if self.cached else ""),
               f"  input tokens  ~{self.tokens_in:,}   output tokens ~{self.tokens_out:,} "
               f"(at most {self.tokens_out_max:,} with max_tokens)",
               ("  cost ~" + _money(self.cost) + f" (at most {_money(self.cost_max)}) at "
                f"{self.price_in:g}/{self.price_out:g} per 1M tokens in/out") if priced else
               "  cost: no price set for this model (price_in/price_out or a 'prices' table)",
               f"  wall time ~{_dur(self.wall_s)} at concurrency {self.concurrency}",
               f"  tokens: {self.method}"]
        for pv, d in sorted(self.by_prompt.items()):
            out.append(f"    {pv}: {d['calls']} calls, ~{d['tokens_in']:,} in, "
                       f"~{d['tokens_out']:,} out")
        return out


def _money(x: float) -> str:
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


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
        self.calls.append(PlannedCall(req.prompt_version, req.metric, request_tokens(req),
                                      t_out, max_tokens))
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


def summarise(judge: EstimatingJudge, config: Any | None = None) -> Estimate:
    """The :class:`Estimate` of everything ``judge`` was asked."""
    cfg = config if config is not None else judge.config
    price_in = float(getattr(cfg, "price_in", 0.0) or 0.0)
    price_out = float(getattr(cfg, "price_out", 0.0) or 0.0)
    backend = str(getattr(cfg, "backend", "openai"))
    local = backend in ("gguf", "local-demo")
    conc = 1 if local else int(getattr(cfg, "max_concurrency", 16) or 16)
    lat = LATENCY_MODEL["local" if local else "remote"]
    t_in = sum(c.tokens_in for c in judge.calls)
    t_out = sum(c.tokens_out for c in judge.calls)
    t_max = sum(c.max_tokens for c in judge.calls)
    per_call = [lat["base"] + c.tokens_out / lat["out_tok_s"]
                + (c.tokens_in / lat["in_tok_s"] if lat["in_tok_s"] else 0.0)
                for c in judge.calls]
    wall = sum(per_call) / conc if per_call else 0.0
    by: dict[str, dict[str, int]] = {}
    for c in judge.calls:
        d = by.setdefault(c.prompt_version.split("#")[0], Counter())
        d["calls"] += 1
        d["tokens_in"] += c.tokens_in
        d["tokens_out"] += c.tokens_out
    return Estimate(judge.name, judge.model, len(judge.calls), t_in, t_out, t_max,
                    (t_in * price_in + t_out * price_out) / 1e6,
                    (t_in * price_in + t_max * price_out) / 1e6, wall, conc, price_in,
                    price_out, judge.cached, {k: dict(v) for k, v in by.items()})


def estimate_requests(requests: Sequence[JudgeRequest], config: Any | None = None,
                      **kwargs: Any) -> Estimate:
    """Estimate a known list of requests (no dependent calls)."""
    j = EstimatingJudge(config, **kwargs)
    j.ask_many(requests)
    return summarise(j, config)


# --------------------------------------------------------------------------- budget
class BudgetExhausted(KeyboardInterrupt):
    """A budget was reached: the run stops like an interruption (partial results kept,
    resumable), not like a failure that per-tier error handling would swallow.

    ``spent`` (money, from the price table), ``calls`` (calls made), ``limit`` (which one).
    """

    def __init__(self, limit: str, spent: float, calls: int, max_cost: float | None,
                 max_calls: int | None):
        self.limit = limit
        self.spent = spent
        self.calls = calls
        self.max_cost = max_cost
        self.max_calls = max_calls
        super().__init__(self.message())

    def message(self) -> str:
        what = (f"--max-cost {self.max_cost:g}" if self.limit == "max_cost"
                else f"--max-calls {self.max_calls}")
        return (f"stopped by {what}: {self.calls} calls made, {_money(self.spent)} spent; "
                "replies so far stay in the judge cache (when it is on), so running again "
                "continues from here")

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "spent": self.spent, "calls": self.calls,
                "max_cost": self.max_cost, "max_calls": self.max_calls}


@dataclass
class Budget:
    """Shared limits for every judge of one command (``None`` = no limit)."""

    max_cost: float | None = None
    max_calls: int | None = None
    spent: float = 0.0
    calls: int = 0

    def __post_init__(self) -> None:
        from ragmeter.errors import ConfigError

        if self.max_cost is not None and not self.max_cost > 0:
            raise ConfigError("--max-cost", f"must be > 0, got {self.max_cost}")
        if self.max_calls is not None and self.max_calls < 1:
            raise ConfigError("--max-calls", f"must be >= 1, got {self.max_calls}")

    @property
    def active(self) -> bool:
        return self.max_cost is not None or self.max_calls is not None

    def stop(self, limit: str) -> BudgetExhausted:
        return BudgetExhausted(limit, self.spent, self.calls, self.max_cost, self.max_calls)


class BudgetJudge:
    """Wraps a judge; sends requests in chunks and raises :class:`BudgetExhausted` before a
    chunk would pass ``budget``. Cached replies cost nothing and are not counted as calls."""

    #: chained follow-ups (``JudgeRequest.then``) are sent wave by wave through this wrapper,
    #: never inside the inner engine, so every call passes the budget check
    chains = False

    def __init__(self, inner: Any, budget: Budget, *, chunk: int | None = None):
        self.inner = inner
        self.budget = budget
        conc = int(getattr(getattr(inner, "config", None), "max_concurrency", 4) or 4)
        self.chunk = chunk or max(1, 2 * conc)
        self._cfg = getattr(inner, "config", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _allowed(self, reqs: Sequence[JudgeRequest]) -> tuple[int, str | None]:
        b = self.budget
        n = len(reqs)
        why = None
        if b.max_calls is not None and b.calls + n > b.max_calls:
            n, why = max(0, b.max_calls - b.calls), "max_calls"
        if b.max_cost is not None and self._cfg is not None:
            price_in = float(getattr(self._cfg, "price_in", 0.0) or 0.0)
            price_out = float(getattr(self._cfg, "price_out", 0.0) or 0.0)
            total = b.spent
            for i, r in enumerate(reqs[:n]):
                est = (request_tokens(r) * price_in + 40 * price_out) / 1e6
                if total + est > b.max_cost:
                    n, why = i, "max_cost"
                    break
                total += est
        return n, why

    def _account(self, replies: Sequence[JudgeReply]) -> None:
        for rep in replies:
            if not rep.cached and rep.attempts > 0:
                self.budget.calls += 1
                self.budget.spent += float(rep.cost or 0.0)

    def _next(self, reqs: list[JudgeRequest], done: int) -> list[JudgeRequest]:
        """The next chunk the budget admits (raises :class:`BudgetExhausted` for none)."""
        part = reqs[done:done + self.chunk]
        n, why = self._allowed(part)
        if n == 0:
            raise self.budget.stop(why or "max_calls")
        return part[:n]

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        out: list[JudgeReply] = []
        reqs = list(requests)
        while len(out) < len(reqs):
            got = self.inner.ask_many(self._next(reqs, len(out)))
            self._account(got)  # cached replies cost nothing: the loop goes on
            out.extend(got)
        return out

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        out: list[JudgeReply] = []
        reqs = list(requests)
        while len(out) < len(reqs):
            got = await self.inner.aask_many(self._next(reqs, len(out)))
            self._account(got)
            out.extend(got)
        return out


_ACTIVE: ContextVar[Budget | None] = ContextVar("ragmeter_budget", default=None)
_ESTIMATING: ContextVar[list[EstimatingJudge] | None] = ContextVar("ragmeter_estimating",
                                                                    default=None)


@contextlib.contextmanager
def budget_scope(budget: Budget | None) -> Iterator[Budget | None]:
    """Every judge built by :func:`ragmeter.judges.make_judge` inside is budgeted."""
    token = _ACTIVE.set(budget if budget is not None and budget.active else None)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


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


def budgeted(judge: Any) -> Any:
    """``judge`` wrapped in :class:`BudgetJudge` inside an active :func:`budget_scope`."""
    b = _ACTIVE.get()
    if b is None or isinstance(judge, (BudgetJudge, EstimatingJudge)):
        return judge
    return BudgetJudge(judge, b)


def print_estimates(estimates: Sequence[Estimate], echo: Any = print) -> None:
    """Print every estimate and a total."""
    if not estimates:
        echo("no judge calls planned")
        return
    for e in estimates:
        for line in e.lines():
            echo(line)
    if len(estimates) > 1:
        echo(f"total: {sum(e.calls for e in estimates)} calls, ~"
             f"{sum(e.tokens_in for e in estimates):,} in / ~"
             f"{sum(e.tokens_out for e in estimates):,} out tokens, ~"
             f"{_money(sum(e.cost for e in estimates))}")


def run_with_cost_control(work: Any, *, estimate: bool = False, max_cost: float | None = None,
                          max_calls: int | None = None, title: str = "",
                          echo: Any = None) -> Any:
    """Run ``work()`` for a CLI command with ``--estimate`` / ``--max-cost`` / ``--max-calls``.

    With ``estimate`` the work runs against planning stand-ins, the estimate is printed and
    ``None`` returned. With a budget, a :class:`BudgetExhausted` stop is printed and turned
    into exit code 3 (the judge cache keeps what was paid for; run again to continue).
    """
    import typer

    if echo is None:
        from rich.console import Console

        echo = Console().print
    if estimate:
        with estimate_scope() as planned:
            work()
        if title:
            echo(title)
        print_estimates([summarise(j) for j in planned], echo)
        return None
    budget = Budget(max_cost, max_calls)
    try:
        with budget_scope(budget):
            return work()
    except BudgetExhausted as stop:
        echo(stop.message())
        raise typer.Exit(3) from None


def estimate_run(config: Any, *, tiers: Sequence[str] | None = None, limit: int | None = None,
                 echo: Any = None) -> list[Estimate]:
    """``ragmeter run --estimate``: plan a benchmark config with planning stand-ins for every
    judge (progress log in a temporary directory, nothing stored) and print the estimate."""
    import dataclasses
    import tempfile
    from pathlib import Path

    from ragmeter.runner.engine import run_benchmark

    if echo is None:
        from rich.console import Console

        echo = Console().print
    from ragmeter.targets.tier_hooks import plan_lines, planned_target_calls

    with tempfile.TemporaryDirectory(prefix="ragmeter-estimate-") as tmp:
        cfg = dataclasses.replace(config, run_dir=Path(tmp))
        with estimate_scope() as planned, planned_target_calls() as target_calls:
            run_benchmark(cfg, tiers=tiers, limit=limit, save=False)
    estimates = [summarise(j) for j in planned]
    echo(f"estimate for {getattr(config, 'name', 'run')}: nothing was sent or stored")
    print_estimates(estimates, echo)
    for line in plan_lines(target_calls):   # the user's own systems (targets)
        echo(line)
    return estimates


def record_stop(store_url: str | None, run_id: str, stop: BudgetExhausted) -> None:
    """Record a budget stop on a stored (interrupted) run: ``meta["budget_stop"]``."""
    from ragmeter.results.store import ResultStore

    store = ResultStore(store_url)
    if not store.has_run(run_id):
        return
    run = store.load_run(run_id)
    run.meta["budget_stop"] = stop.to_dict()
    store.save_run(run)


__all__ = [
    "CHARS_PER_TOKEN",
    "LATENCY_MODEL",
    "MESSAGE_OVERHEAD",
    "Budget",
    "BudgetExhausted",
    "BudgetJudge",
    "Estimate",
    "EstimatingJudge",
    "PlannedCall",
    "budget_scope",
    "budgeted",
    "count_tokens",
    "estimate_requests",
    "estimate_run",
    "estimate_scope",
    "minimal_instance",
    "planned_judge",
    "print_estimates",
    "record_stop",
    "request_tokens",
    "run_with_cost_control",
    "summarise",
]
