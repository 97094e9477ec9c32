"""Cost of a generation run before anything is sent, and the budget guard while it runs.

Token counts come from the project's one estimate (:func:`ragmeter.cost.count_tokens`);
prices from the generator's config (``price_in`` / ``price_out`` per 1M tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError


def approx_tokens(text: str) -> int:
    """Estimated tokens of ``text``: the project's one token estimate
    (:func:`ragmeter.cost.count_tokens`, calibrated on measured usage), at least 1."""
    from ragmeter.cost import count_tokens

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


@dataclass
class Budget:
    """Hard limits honoured while the run goes: new calls stop once the next could pass one.

    ``calls`` counts requests sent to the model (retries and repairs included, cached replies
    not); ``cost`` is the engine's accounting from the generator's prices.
    """

    max_calls: int | None = None
    max_cost: float | None = None
    per_call_cost: float = 0.0     # estimated, reserved for calls in flight
    calls: int = 0
    cost: float = 0.0
    in_flight: int = 0
    stopped: str | None = None

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 0:
            raise ConfigError("max_calls", f"must be >= 0, got {self.max_calls}")
        if self.max_cost is not None and self.max_cost < 0:
            raise ConfigError("max_cost", f"must be >= 0, got {self.max_cost}")

    def admit(self) -> bool:
        """Reserve one call, or refuse (and remember why) when a limit would be passed."""
        if self.max_calls is not None and self.calls + self.in_flight + 1 > self.max_calls:
            self.stopped = f"--max-calls {self.max_calls} reached"
            return False
        if self.max_cost is not None and (
                self.cost + (self.in_flight + 1) * self.per_call_cost > self.max_cost + 1e-12):
            self.stopped = f"--max-cost {self.max_cost:g} reached"
            return False
        self.in_flight += 1
        return True

    def settle(self, calls: int, cost: float) -> None:
        self.in_flight -= 1
        self.calls += calls
        self.cost += cost
