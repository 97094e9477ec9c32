"""What calls cost: token usage priced per million tokens, and the cost metrics built on it.

:class:`Price` holds the prices per 1M input / output tokens and the share a batch API takes
off, read from any config that carries ``price_in`` / ``price_out`` / ``batch_discount`` (a
judge's, a target's). A call's price is ``(tokens_in × price_in + tokens_out × price_out) /
1e6``; sent through a batch API (OpenAI Batch: half price) it is that times
``1 − batch_discount``.

A call is priced only from the usage it reported: a call whose usage is not known (the
endpoint returned no ``usage``, a failed call, a reply without token fields) is *unknown* —
unscored with the reason ``usage_unknown``, never 0 — so a cost's mean is over the calls that
reported usage and its unknown count is shown beside it.

Two metrics (declared in :mod:`ragmeter.metrics.cost`):

* ``cost_per_answer`` — the system's: one value per target call, from the target's usage at
  the target's price (:func:`cost_per_answer`; built beside a target's latency metrics);
* ``judge_cost_per_sample`` — the evaluation's: per sample, the priced usage of every judge
  call made for it, follow-ups included (:class:`UsageLedger`, :func:`judge_cost_result`).
  A cached reply counts at the usage recorded when it was first made: the figure is what
  judging a sample costs, not what this run paid (the run's spend is the judge stats' cost).

Both carry a bootstrap CI of the mean like any per-sample metric.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.cost.tokens import TEXT_REPLY_TOKENS
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.statistic import (
    COST_BLOCK,
    COST_METRICS,
    USAGE_UNKNOWN,
    is_cost_block,
    unknown_count,
)
from ragmeter.stats import DEFAULT_N_BOOT, DEFAULT_SEED

#: the metric names (declared once, in ragmeter.metrics.cost; COST_METRICS, COST_BLOCK and
#: USAGE_UNKNOWN live with the latency block in ragmeter.results.statistic)
COST_PER_ANSWER, JUDGE_COST = COST_METRICS
#: the unit a cost is shown in: the currency of the price table, per answer or sample
UNIT = "price units"


#: the share of the price a batch API takes off when a config does not say (OpenAI Batch: 50 %)
DEFAULT_BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """Prices per 1M tokens and the batch discount (a share of the price, ``0 <= d < 1``);
    the currency is whatever the prices are in."""

    price_in: float = 0.0
    price_out: float = 0.0
    batch_discount: float = DEFAULT_BATCH_DISCOUNT

    @classmethod
    def of(cls, config: Any) -> Price:
        """The price of ``config`` (any object with ``price_in`` / ``price_out`` and,
        optionally, ``batch_discount``); no config: unpriced."""
        if config is None:
            return cls()
        discount = getattr(config, "batch_discount", None)
        return cls(float(getattr(config, "price_in", 0.0) or 0.0),
                   float(getattr(config, "price_out", 0.0) or 0.0),
                   DEFAULT_BATCH_DISCOUNT if discount is None else float(discount))

    @classmethod
    def set_on(cls, config: Any) -> Price | None:
        """The price of ``config`` when it sets one, else None (unpriced: no cost figure)."""
        price = cls.of(config)
        return price if price.priced else None

    @property
    def priced(self) -> bool:
        """Whether a price is set at all (an unpriced model costs *unknown*, not 0)."""
        return bool(self.price_in or self.price_out)

    def cost(self, tokens_in: int, tokens_out: int, *, batch: bool = False) -> float:
        """The price of ``tokens_in`` + ``tokens_out``; ``batch``: through a batch API."""
        full = (tokens_in * self.price_in + tokens_out * self.price_out) / 1_000_000.0
        return full * (1.0 - self.batch_discount) if batch else full

    def of_usage(self, tokens_in: int | None, tokens_out: int | None) -> float | None:
        """The cost of one call's reported usage; None when the usage is unknown."""
        if not known_usage(tokens_in, tokens_out):
            return None
        return self.cost(int(tokens_in or 0), int(tokens_out or 0))

    def fields(self) -> dict[str, str]:
        """The price as signature fields (a different price is a different measurement)."""
        return {"price_in": f"{self.price_in:g}", "price_out": f"{self.price_out:g}"}


def known_usage(tokens_in: int | None, tokens_out: int | None) -> bool:
    """Whether a call reported its usage: at least one count given and not both zero (a
    model call always reads some input, so 0 and 0 is an endpoint that reported nothing)."""
    if tokens_in is None and tokens_out is None:
        return False
    return bool(int(tokens_in or 0) or int(tokens_out or 0))


def cost_per_answer(ids: Sequence[str], usage: Sequence[tuple[int | None, int | None]],
                    price: Price, signature: Signature, *, seed: int = DEFAULT_SEED,
                    n_boot: int = DEFAULT_N_BOOT) -> MetricResult:
    """``cost_per_answer`` over one target's calls: each call's ``(tokens_in, tokens_out)``
    at ``price``; a call without usage is unscored with :data:`USAGE_UNKNOWN`."""
    values = np.full(len(ids), np.nan)
    reasons: dict[int, str] = {}
    for i, (t_in, t_out) in enumerate(usage):
        c = price.of_usage(t_in, t_out)
        if c is None:
            reasons[i] = USAGE_UNKNOWN
        else:
            values[i] = c
    sig = signature.with_fields(metric=COST_PER_ANSWER, unit=UNIT, **price.fields())
    return MetricResult(COST_PER_ANSWER, list(ids), values, sig, reasons=reasons,
                        higher_is_better=False, seed=seed, n_boot=n_boot)


# -- a target's cost before it is called (``--estimate``) ----------------------------------

@dataclass
class UsageEstimate:
    """What a target's planned calls will cost: tokens from the usage its earlier recorded
    calls reported (mean per call), else a rough guess from the questions."""

    target: str
    calls: int
    tokens_in: int
    tokens_out: int
    price: Price | None
    #: recorded calls with known usage the per-call means come from (0: a rough guess)
    basis: int
    #: planned calls whose very request was recorded before: priced at its own usage
    same: int = 0

    @property
    def cost(self) -> float | None:
        if self.price is None:
            return None
        return (self.tokens_in * self.price.price_in
                + self.tokens_out * self.price.price_out) / 1_000_000.0

    def line(self) -> str:
        """What ``--estimate`` prints for the target."""
        from ragmeter.cost.tokens import money

        how = (f"mean usage of {self.basis} recorded call(s)" if self.basis else
               "no recorded usage yet: input from the questions' length, output "
               f"{TEXT_REPLY_TOKENS} tokens per answer (a rough guess)")
        if self.same:
            how = f"{self.same} call(s) at their own recorded usage, the rest at the " + how
        cost = self.cost
        priced = (f"cost ~{money(cost)} at {self.price.price_in:g}/{self.price.price_out:g} "
                  "per 1M tokens in/out" if cost is not None and self.price is not None else
                  "cost: no price set for this target (price_in/price_out)")
        return (f"target {self.target}: ~{self.tokens_in:,} input and ~{self.tokens_out:,} "
                f"output tokens over {self.calls} calls; {priced} ({how})")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "calls": self.calls, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cost": self.cost, "basis": self.basis,
                "same": self.same,
                "price_in": self.price.price_in if self.price else None,
                "price_out": self.price.price_out if self.price else None}


def estimate_usage(target: str, question_tokens: Sequence[int],
                   recorded: Iterable[tuple[int | None, int | None]],
                   price: Price | None,
                   exact: Sequence[tuple[int | None, int | None] | None] | None = None
                   ) -> UsageEstimate:
    """The usage of calls with questions of ``question_tokens`` estimated tokens each.
    ``exact[i]``: the usage recorded for that very request (a question asked before), used
    as it is; the others get the mean input and output tokens per call of ``recorded`` —
    the usage the target's earlier calls reported — or, with none known, the question (plus
    the message overhead) as input and :data:`~ragmeter.cost.tokens.TEXT_REPLY_TOKENS` as
    output."""
    from ragmeter.cost.tokens import MESSAGE_OVERHEAD

    known = [(int(a or 0), int(b or 0)) for a, b in recorded if known_usage(a, b)]
    mean_in = sum(a for a, _ in known) / len(known) if known else None
    mean_out = sum(b for _, b in known) / len(known) if known else float(TEXT_REPLY_TOKENS)
    t_in = t_out = 0.0
    same = 0
    for i, q in enumerate(question_tokens):
        got = exact[i] if exact is not None and i < len(exact) else None
        if got is not None and known_usage(*got):
            t_in += int(got[0] or 0)
            t_out += int(got[1] or 0)
            same += 1
            continue
        t_in += mean_in if mean_in is not None else q + MESSAGE_OVERHEAD
        t_out += mean_out
    return UsageEstimate(target, len(question_tokens), round(t_in), round(t_out), price,
                         len(known), same)


# -- the evaluation's cost: judge usage per sample ------------------------------------------

@dataclass
class SampleUsage:
    """The judge calls made for one sample: priced cost of those with usage, and how many
    had none."""

    cost: float = 0.0
    calls: int = 0
    unknown: int = 0
    unpriced: int = 0


@dataclass
class UsageLedger:
    """Judge calls by sample, filled while :func:`usage_scope` is active (thread-safe)."""

    samples: dict[str, SampleUsage] = field(default_factory=dict)
    prices: set[Price] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, sample_id: str, tokens_in: int | None, tokens_out: int | None,
            price: Price | None) -> None:
        if not sample_id:
            return
        with self._lock:
            s = self.samples.setdefault(sample_id, SampleUsage())
            s.calls += 1
            if price is None:
                s.unpriced += 1
                return
            self.prices.add(price)
            c = price.of_usage(tokens_in, tokens_out)
            if c is None:
                s.unknown += 1
            else:
                s.cost += c

    def take(self, ids: Iterable[str]) -> dict[str, SampleUsage]:
        """The entries of ``ids`` (removed from the ledger)."""
        with self._lock:
            return {i: self.samples.pop(i) for i in ids if i in self.samples}


_LEDGER: ContextVar[UsageLedger | None] = ContextVar("ragmeter_usage_ledger", default=None)


@contextmanager
def usage_scope() -> Iterator[UsageLedger]:
    """Every judge call delivered inside is recorded by its sample in the yielded ledger."""
    from ragmeter.judges.stats import DELIVERED

    ledger = UsageLedger()
    token = _LEDGER.set(ledger)
    tap = DELIVERED.set(record_judge_call)
    try:
        yield ledger
    finally:
        DELIVERED.reset(tap)
        _LEDGER.reset(token)


def record_judge_call(request: Any, reply: Any, config: Any) -> None:
    """Record one delivered judge call in the active ledger (none active: nothing). Called
    by the judge engine for every reply it delivers, follow-ups included."""
    ledger = _LEDGER.get()
    if ledger is None:
        return
    if not getattr(reply, "cached", False) and int(getattr(reply, "attempts", 1) or 0) == 0:
        return   # answered without a call (empty input, a missing field)
    ledger.add(str(getattr(request, "sample_id", "") or ""), getattr(reply, "tokens_in", None),
               getattr(reply, "tokens_out", None), Price.set_on(config))


def judge_cost_result(usage: dict[str, SampleUsage], signature: Signature, *,
                      name: str = "judge:cost", seed: int = DEFAULT_SEED,
                      n_boot: int = DEFAULT_N_BOOT) -> EvalResult | None:
    """``judge_cost_per_sample`` over the samples of ``usage`` (None when no judge call of
    them was priced): a sample with any call of unknown usage is unscored
    (:data:`USAGE_UNKNOWN`), never counted at a part of its cost."""
    priced = {k: u for k, u in usage.items() if u.calls > u.unpriced}
    if not priced:
        return None
    ids = list(priced)
    values = np.array([u.cost if not u.unknown else np.nan for u in priced.values()])
    reasons = {i: USAGE_UNKNOWN for i, u in enumerate(priced.values()) if u.unknown}
    out = EvalResult(name, meta={"block": COST_BLOCK,
                                 "judge_calls": sum(u.calls for u in priced.values()),
                                 "unknown_calls": sum(u.unknown for u in priced.values())})
    out.add(MetricResult(JUDGE_COST, ids, values,
                         signature.with_fields(metric=JUDGE_COST, unit=UNIT), reasons=reasons,
                         higher_is_better=False, seed=seed, n_boot=n_boot))
    return out


__all__ = [
    "COST_BLOCK",
    "COST_METRICS",
    "COST_PER_ANSWER",
    "DEFAULT_BATCH_DISCOUNT",
    "JUDGE_COST",
    "UNIT",
    "USAGE_UNKNOWN",
    "Price",
    "SampleUsage",
    "UsageEstimate",
    "UsageLedger",
    "cost_per_answer",
    "estimate_usage",
    "is_cost_block",
    "judge_cost_result",
    "known_usage",
    "record_judge_call",
    "unknown_count",
    "usage_scope",
]
