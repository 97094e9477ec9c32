"""What a model's tokens cost: :class:`Price` (per 1M input / output tokens, and the share a
batch API takes off), read from any config that carries ``price_in`` / ``price_out`` /
``batch_discount`` (a judge's today; a target's uses the same three names).

A call's price is ``(tokens_in × price_in + tokens_out × price_out) / 1e6``; sent through a
batch API (OpenAI Batch: half price) it is that times ``1 − batch_discount``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the share of the price a batch API takes off when a config does not say (OpenAI Batch: 50 %)
DEFAULT_BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """Prices per 1M tokens and the batch discount (a share of the price, ``0 <= d < 1``)."""

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

    @property
    def priced(self) -> bool:
        """Whether a price is set at all (an unpriced model costs *unknown*, not 0)."""
        return bool(self.price_in or self.price_out)

    def cost(self, tokens_in: int, tokens_out: int, *, batch: bool = False) -> float:
        """The price of ``tokens_in`` + ``tokens_out``; ``batch``: through a batch API."""
        full = (tokens_in * self.price_in + tokens_out * self.price_out) / 1_000_000.0
        return full * (1.0 - self.batch_discount) if batch else full


__all__ = ["DEFAULT_BATCH_DISCOUNT", "Price"]
