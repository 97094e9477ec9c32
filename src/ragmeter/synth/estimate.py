"""The cost of a generation run before anything is sent: an upper bound of its calls.

Token counts come from the project's one estimate (:func:`ragmeter.cost.count_tokens`);
prices from the generator's config (``price_in`` / ``price_out`` per 1M tokens). While the
run goes, the command's one :class:`ragmeter.cost.Budget` counts what is really sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.cost import count_tokens
from ragmeter.judges.base import JudgeRequest
from ragmeter.synth.filters import FilterSettings
from ragmeter.synth.prompts import CHECKS

if TYPE_CHECKING:
    from ragmeter.synth.pipeline import Setup

#: output tokens assumed per call in estimates
EXPECTED_OUT = {"generate": 150, "generate_conversational": 300, "check": 60}


def approx_tokens(text: str) -> int:
    """Estimated tokens of ``text``: the project's one token estimate
    (:func:`ragmeter.cost.count_tokens`, calibrated on measured usage), at least 1."""
    return max(1, count_tokens(text))


@dataclass
class CostEstimate:
    """Planned calls, tokens and cost (``None`` when the generator has no prices)."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    price_in: float = 0.0
    price_out: float = 0.0
    breakdown: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "cost": self.cost, "price_in_per_1m": self.price_in,
                "price_out_per_1m": self.price_out, "breakdown": self.breakdown,
                "method": "ragmeter.cost.count_tokens (characters per token, calibrated)"}


def estimate_cost(calls: int, tokens_in: int, tokens_out: int, *, price_in: float = 0.0,
                  price_out: float = 0.0,
                  breakdown: dict[str, dict[str, int]] | None = None) -> CostEstimate:
    """The cost of ``calls`` calls with these token totals (prices per 1M tokens)."""
    priced = price_in > 0 or price_out > 0
    cost = (tokens_in * price_in + tokens_out * price_out) / 1_000_000.0 if priced else None
    return CostEstimate(calls, tokens_in, tokens_out, cost, price_in, price_out,
                        dict(breakdown or {}))


def _messages_tokens(req: JudgeRequest) -> int:
    return sum(approx_tokens(m.get("content", "")) for m in req.messages)


def plan_estimate(setup: Setup, filters: FilterSettings, *, price_in: float = 0.0,
                  price_out: float = 0.0, check_prices: tuple[float, float] | None = None,
                  skip: set[str] | None = None) -> CostEstimate:
    """Upper bound of calls/tokens: every slot generated and every item checked.

    ``check_prices`` are the checker's prices when it is not the generator; ``skip`` holds
    generation keys already finished (a resumed run does not ask them again).
    """
    skip = skip or set()
    gen_calls = gen_in = gen_out = 0
    chk_calls = chk_in = chk_out = 0
    chk_prompt = approx_tokens(CHECKS["supported"].system.get(setup.language, ""))
    for (key, req), slot in zip(setup.requests, setup.plan.slots, strict=True):
        if key not in skip:
            gen_calls += 1
            gen_in += _messages_tokens(req)
            gen_out += EXPECTED_OUT["generate_conversational" if slot.kind == "conversational"
                                    else "generate"]
        if filters.answerability:
            chk_calls += 1
            texts = ([setup.by_id[c].text for c in slot.chunk_ids] if slot.chunk_ids else
                     # negatives are checked against the retriever's top chunks
                     [setup.by_id[c].text for c in list(setup.by_id)[:filters.negative_k]])
            chk_in += (chk_prompt + 120
                       + sum(approx_tokens(t) for t in texts))
            chk_out += EXPECTED_OUT["check"]
    c_in, c_out = check_prices if check_prices is not None else (price_in, price_out)
    gen = estimate_cost(gen_calls, gen_in, gen_out, price_in=price_in, price_out=price_out)
    chk = estimate_cost(chk_calls, chk_in, chk_out, price_in=c_in, price_out=c_out)
    parts = [p for p in (gen, chk) if p.calls]
    cost = (None if any(p.cost is None for p in parts) or not parts
            else sum(p.cost or 0.0 for p in parts))
    total = estimate_cost(gen_calls + chk_calls, gen_in + chk_in, gen_out + chk_out,
                          price_in=price_in, price_out=price_out,
                          breakdown={"generate": {"calls": gen_calls, "tokens_in": gen_in,
                                                  "tokens_out": gen_out},
                                     "check": {"calls": chk_calls, "tokens_in": chk_in,
                                               "tokens_out": chk_out}})
    total.cost = cost
    return total


__all__ = ["EXPECTED_OUT", "CostEstimate", "approx_tokens", "estimate_cost", "plan_estimate"]
