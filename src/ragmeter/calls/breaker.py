"""The circuit breaker of one batch: stop waiting for endpoints that refuse every connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ragmeter.calls.errors import CallError

log = logging.getLogger("ragmeter.calls")


#: refused connections in a row on every endpoint (with no success in the batch) that open the
#: circuit: the rest of the batch fails at once instead of sleeping through its retries
BREAKER_AFTER = 3


class Breaker:
    """Circuit breaker of one batch of calls.

    When every endpoint of the pool has refused ``after`` connections in a row and no call of
    the batch has succeeded, the endpoint is taken as down: every remaining call (and every
    retry sleeping in backoff) ends at once as ``connection_error`` with the detail
    "endpoint unreachable: ...". Any other outcome on an endpoint resets its count, and a
    single success keeps the breaker closed for the rest of the batch (a flaky server is
    retried, a dead one is not waited for)."""

    def __init__(self, n_endpoints: int, after: int = BREAKER_AFTER):
        self.after = after
        self.refused = [0] * max(1, n_endpoints)
        self.succeeded = False
        self.detail: str | None = None
        self._open = asyncio.Event()

    @property
    def tripped(self) -> bool:
        return self.detail is not None

    def record(self, idx: int, err: CallError | None) -> None:
        if self.tripped:
            return
        if err is None:
            self.succeeded = True
            return
        if not err.unreachable:
            self.refused[idx] = 0
            return
        self.refused[idx] += 1
        if not self.succeeded and min(self.refused) >= self.after:
            self.detail = (f"endpoint unreachable: {err.detail} (every endpoint refused "
                           f"{self.after} connections in a row; the remaining calls were not "
                           "sent)")
            self._open.set()
            log.info("circuit open: %s", self.detail)

    def wake(self) -> None:
        """End every backoff now (the batch stopped sending) without opening the circuit."""
        self._open.set()

    async def sleep(self, delay: float) -> None:
        """Back off ``delay`` seconds, or less if the breaker opens meanwhile."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._open.wait(), delay)


__all__ = ["BREAKER_AFTER", "Breaker"]
