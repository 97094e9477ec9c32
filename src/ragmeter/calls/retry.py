"""How calls are retried: :class:`RetryPolicy` (backoff and bounds), the run's
:class:`RetryBudget`, and :func:`retry_delay` (the server's ``Retry-After`` first)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: ``initial * multiplier**n`` seconds, capped at ``max``.

    ``max_retries`` bounds retries per call; ``budget`` bounds retries of failures (5xx,
    timeouts, connection errors; not 429s, which are bounded per call only) over a whole run
    (``None`` = ``max(20, n_requests)``), so a dead endpoint fails fast instead of sleeping
    ``n_requests × max_retries`` times.
    """

    # the rules a config is checked by (ragmeter.schema reads this metadata)
    initial: float = field(default=2.0, metadata={"ge": 0.0})
    max: float = field(default=30.0, metadata={"ge": 0.0})
    multiplier: float = field(default=2.0, metadata={"ge": 1.0})
    max_retries: int = field(default=6, metadata={"ge": 0})
    budget: int | None = field(default=None, metadata={"ge": 0})

    def delay(self, attempt: int) -> float:
        """Backoff before retry number ``attempt`` (1-based)."""
        return float(min(self.max, self.initial * self.multiplier ** max(0, attempt - 1)))


class RetryBudget:
    """Retries left for a whole run; shared by every call of one batch."""

    def __init__(self, total: int):
        self.total = total
        self.used = 0

    def take(self) -> bool:
        if self.used >= self.total:
            return False
        self.used += 1
        return True


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


__all__ = ["RetryBudget", "RetryPolicy", "retry_delay"]
