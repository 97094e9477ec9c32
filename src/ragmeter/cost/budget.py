"""``--max-cost`` / ``--max-calls``: one budget for every model call of a command.

:class:`Budget` is the judge engine's send gate (``ragmeter.judges.base.SendGate``): the
engine calls :meth:`Budget.before_send` immediately before every request it sends — first
tries, retries, repairs and hedges alike, never for a cache hit — and
:meth:`Budget.after_send` with the reply's cost. So ``--max-calls N`` counts requests sent
and a server never receives more than ``N``; ``--max-cost`` refuses a request whose estimated
cost (input tokens counted, a short reply assumed) would pass the limit with what was spent
and what is in flight. A refusal raises :class:`BudgetRefused` inside the engine, which the
budget wrapper turns into :class:`BudgetExhausted` for the command; a stop is final.

:class:`BudgetJudge` puts one budget in front of a judge: it installs the budget as the send
gate of every engine below it (a :class:`~ragmeter.judges.multi.MultiJudge`'s judges too).
The gate is in place while a request goes through the wrapper, so the engine stays free of
the budget when it is used on its own. A judge without an engine below (a recorded replay)
is budgeted by its replies instead: the wrapper sends requests in chunks, admits only what
fits and counts the attempts each reply reports. Replies already received stay in the judge
cache, so running the same command again (``--resume`` for ``ragmeter run``) continues where
it stopped without paying twice.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ragmeter.cost.tokens import money, request_tokens
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper

#: output tokens assumed for a request before its reply says how many it took
EXPECTED_REPLY_TOKENS = 40


class BudgetExhausted(KeyboardInterrupt):
    """A budget was reached: the run stops like an interruption (partial results kept,
    resumable), not like a failure that per-tier error handling would swallow.

    ``spent`` (money, from the price table), ``calls`` (requests sent), ``limit`` (which one).
    """

    def __init__(self, limit: str, spent: float, calls: int, max_cost: float | None,
                 max_calls: int | None):
        self.limit = limit
        self.spent = spent
        self.calls = calls
        self.max_cost = max_cost
        self.max_calls = max_calls
        super().__init__(self.message())

    @property
    def reason(self) -> str:
        """Which limit stopped the run, as the command line spells it."""
        return (f"--max-cost {self.max_cost:g}" if self.limit == "max_cost"
                else f"--max-calls {self.max_calls}") + " reached"

    def message(self) -> str:
        what = self.reason.removesuffix(" reached")
        return (f"stopped by {what}: {self.calls} calls made, {money(self.spent)} spent; "
                "replies so far stay in the judge cache (when it is on), so running again "
                "continues from here")

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "spent": self.spent, "calls": self.calls,
                "max_cost": self.max_cost, "max_calls": self.max_calls}


class BudgetRefused(Exception):
    """Raised by the send gate inside the engine: a plain exception, so it travels through
    the engine's tasks like any error (a ``KeyboardInterrupt`` raised inside an asyncio task
    corrupts CPython 3.11's recursion counter). :class:`BudgetJudge` turns it into
    :class:`BudgetExhausted` once the engine call has returned; ``stop`` is that stop."""

    def __init__(self, stop: BudgetExhausted):
        self.stop = stop
        super().__init__(stop.message())


def call_cost(request: JudgeRequest, price_in: float, price_out: float) -> float:
    """The cost reserved for ``request`` before it is sent (prices per 1M tokens)."""
    if not (price_in or price_out):
        return 0.0
    return (request_tokens(request) * price_in + EXPECTED_REPLY_TOKENS * price_out) / 1e6


@dataclass(eq=False)
class Budget:
    """Shared limits for every judge of one command (``None`` = no limit).

    ``calls``: requests sent; ``spent``: the cost of the replies received; ``reserved``: the
    estimated cost of requests sent and not answered yet. Implements the engine's send gate
    for a judge without prices; :meth:`gate` gives the gate of a priced judge.
    """

    max_cost: float | None = None
    max_calls: int | None = None
    spent: float = 0.0
    calls: int = 0
    reserved: float = 0.0
    halted: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
        """The stop for ``limit``; from now on every request is refused. What it says was
        spent includes the estimate of the requests still in flight (their replies may never
        be read once the run stops, but the server has them)."""
        self.halted = self.halted or limit
        return BudgetExhausted(limit, self.spent + self.reserved, self.calls, self.max_cost,
                               self.max_calls)

    def refusal(self, cost: float = 0.0) -> str | None:
        """Which limit one more request of estimated ``cost`` would pass (``None``: it fits)."""
        if self.halted is not None:
            return self.halted
        if self.max_calls is not None and self.calls >= self.max_calls:
            return "max_calls"
        if self.max_cost is not None and self.spent + self.reserved + cost > self.max_cost:
            return "max_cost"
        return None

    def calls_left(self) -> int | None:
        """Requests that may still be sent (``None``: no call limit)."""
        return None if self.max_calls is None else max(0, self.max_calls - self.calls)

    # -- the send gate ------------------------------------------------------------------------
    def before_send(self, request: JudgeRequest, *, price_in: float = 0.0,
                    price_out: float = 0.0) -> None:
        """Count a request about to be sent, or raise :class:`BudgetRefused`."""
        cost = call_cost(request, price_in, price_out)
        with self._lock:
            why = self.refusal(cost)
            if why is not None:
                raise BudgetRefused(self.stop(why))
            self.calls += 1
            self.reserved += cost

    def after_send(self, request: JudgeRequest, reply_cost: float, tokens_in: int,
                   tokens_out: int, *, price_in: float = 0.0, price_out: float = 0.0) -> None:
        """Settle a sent request with what its reply cost."""
        cost = call_cost(request, price_in, price_out)
        with self._lock:
            self.reserved = max(0.0, self.reserved - cost)
            self.spent += float(reply_cost or 0.0)

    def gate(self, config: Any) -> PricedGate:
        """This budget as the send gate of a judge with ``config``'s prices."""
        return PricedGate(self, float(getattr(config, "price_in", 0.0) or 0.0),
                          float(getattr(config, "price_out", 0.0) or 0.0))

    # -- budgeting by replies (a judge without an engine) ---------------------------------------
    def admit(self, requests: Sequence[JudgeRequest], price_in: float = 0.0,
              price_out: float = 0.0) -> tuple[int, str | None]:
        """How many of ``requests`` fit now (in order), and the limit that stops the rest."""
        with self._lock:
            calls, total = self.calls, self.spent + self.reserved
            for i, req in enumerate(requests):
                cost = call_cost(req, price_in, price_out)
                if self.halted is not None:
                    return i, self.halted
                if self.max_calls is not None and calls + 1 > self.max_calls:
                    return i, "max_calls"
                if self.max_cost is not None and total + cost > self.max_cost:
                    return i, "max_cost"
                calls, total = calls + 1, total + cost
            return len(requests), None

    def account(self, replies: Sequence[JudgeReply]) -> None:
        """Count the requests behind ``replies`` (cached replies are free)."""
        with self._lock:
            for rep in replies:
                if not rep.cached and rep.attempts > 0:
                    self.calls += rep.attempts
                    self.spent += float(rep.cost or 0.0)


@dataclass(frozen=True)
class PricedGate:
    """A :class:`Budget` as the send gate of one judge: its prices reserve a request's cost."""

    budget: Budget
    price_in: float
    price_out: float

    def before_send(self, request: JudgeRequest) -> None:
        self.budget.before_send(request, price_in=self.price_in, price_out=self.price_out)

    def after_send(self, request: JudgeRequest, reply_cost: float, tokens_in: int,
                   tokens_out: int) -> None:
        self.budget.after_send(request, reply_cost, tokens_in, tokens_out,
                               price_in=self.price_in, price_out=self.price_out)


@contextlib.contextmanager
def gating(engines: Sequence[Any], budget: Budget) -> Iterator[None]:
    """``budget`` is the send gate of ``engines`` inside (their own gates come back after)."""
    before = [engine.send_gate for engine in engines]
    for engine in engines:
        engine.send_gate = budget.gate(engine.config)
    try:
        yield
    finally:
        for engine, gate in zip(engines, before, strict=True):
            engine.send_gate = gate


def gated_engines(judge: Any) -> list[Any] | None:
    """The engines below ``judge`` (a wrapper's, a :class:`MultiJudge`'s judges too), or
    ``None`` when some judge below has no engine send gate to take a budget."""
    from ragmeter.judges.llm_judge import EngineJudge
    from ragmeter.judges.multi import MultiJudge

    if isinstance(judge, BudgetJudge):
        return gated_engines(judge.inner)
    if isinstance(judge, EngineJudge):
        # an engine that declares ``send_gate`` calls it before every request it sends
        return [judge] if hasattr(judge, "send_gate") else None
    if isinstance(judge, MultiJudge):
        found: list[Any] = []
        for member in judge.judges:
            sub = gated_engines(member)
            if sub is None:
                return None
            found.extend(sub)
        return found
    return None


class BudgetJudge:
    """A judge behind a :class:`Budget`: while it is asked, the budget gates every request
    the engines below send; where no engine gate exists, requests go in chunks and a chunk is cut to what the
    budget admits. Cached replies cost nothing and are not counted as calls."""

    #: chained follow-ups (``JudgeRequest.then``) are sent wave by wave through this wrapper
    #: when it budgets by replies, so every call passes the budget check
    chains = False

    def __init__(self, inner: Any, budget: Budget, *, chunk: int | None = None):
        self.inner = inner
        self.budget = budget
        cfg = getattr(inner, "config", None)
        conc = int(getattr(cfg, "max_concurrency", 4) or 4)
        self.chunk = chunk or max(1, 2 * conc)
        self._prices = (float(getattr(cfg, "price_in", 0.0) or 0.0),
                        float(getattr(cfg, "price_out", 0.0) or 0.0))
        #: the engines below, which send every request through the budget while it is asked
        self._engines = gated_engines(inner)
        self.gated = self._engines is not None
        if self.gated:
            self.chains = bool(getattr(inner, "chains", False))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _next(self, reqs: list[JudgeRequest], done: int) -> list[JudgeRequest]:
        """The next chunk the budget admits (raises :class:`BudgetExhausted` for none)."""
        part = reqs[done:done + self.chunk]
        n, why = self.budget.admit(part, *self._prices)
        if n == 0:
            raise self.budget.stop(why or "max_calls")
        return part[:n]

    def _checked(self, replies: Sequence[JudgeReply]) -> list[JudgeReply]:
        """The replies of a gated call, unless the gate refused a request meanwhile (an
        engine may have turned the refusal into an unscored reply): then the stop."""
        if self.budget.halted is not None:
            raise self.budget.stop(self.budget.halted)
        return list(replies)

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        if self._engines is not None:
            try:
                with gating(self._engines, self.budget):
                    return self._checked(self.inner.ask_many(requests))
            except BudgetRefused as refused:
                raise refused.stop from None
        out: list[JudgeReply] = []
        reqs = list(requests)
        while len(out) < len(reqs):
            got = self.inner.ask_many(self._next(reqs, len(out)))
            self.budget.account(got)  # cached replies cost nothing: the loop goes on
            out.extend(got)
        return out

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        if self._engines is not None:
            try:
                with gating(self._engines, self.budget):
                    return self._checked(await self.inner.aask_many(requests))
            except BudgetRefused as refused:
                raise refused.stop from None
        out: list[JudgeReply] = []
        reqs = list(requests)
        while len(out) < len(reqs):
            got = await self.inner.aask_many(self._next(reqs, len(out)))
            self.budget.account(got)
            out.extend(got)
        return out

    def ask(self, request: JudgeRequest) -> JudgeReply:
        return self.ask_many([request])[0]

    async def aask(self, request: JudgeRequest) -> JudgeReply:
        return (await self.aask_many([request]))[0]


_ACTIVE: ContextVar[Budget | None] = ContextVar("ragmeter_budget", default=None)


@contextlib.contextmanager
def budget_scope(budget: Budget | None) -> Iterator[Budget | None]:
    """Every judge built by :func:`ragmeter.judges.make_judge` inside is budgeted."""
    token = _ACTIVE.set(budget if budget is not None and budget.active else None)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def active_budget() -> Budget | None:
    """The budget of the enclosing :func:`budget_scope` (``None`` outside one)."""
    return _ACTIVE.get()


def budgeted(judge: Any, budget: Budget | None = None) -> Any:
    """``judge`` behind ``budget`` (default: the one of the enclosing :func:`budget_scope`);
    unchanged without a budget, and never wrapped twice."""
    from ragmeter.cost.estimate import EstimatingJudge

    b = budget if budget is not None else _ACTIVE.get()
    if b is None or not b.active or isinstance(judge, (BudgetJudge, EstimatingJudge)):
        return judge
    return BudgetJudge(judge, b)


# make_judge puts every judge it builds behind the active budget (judges never import cost)
WRAPPERS.register("budget", JudgeWrapper(order=20, wrap=lambda judge, config: budgeted(judge)))

__all__ = ["EXPECTED_REPLY_TOKENS", "Budget", "BudgetExhausted", "BudgetJudge", "BudgetRefused",
           "PricedGate",
           "active_budget", "budget_scope", "budgeted", "call_cost", "gated_engines", "gating"]
