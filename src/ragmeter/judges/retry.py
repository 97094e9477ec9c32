"""The retry budget of a run and the delay before each retry."""

from __future__ import annotations

import random

from ragmeter.judges.config import RetryPolicy


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


__all__ = ["RetryBudget", "retry_delay"]
