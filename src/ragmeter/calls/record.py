"""What calls did: :class:`CallRecord`, for one call while it runs and summed over a caller's
calls.

The runner fills one record per call (attempts, retries, time spent, endpoints used) and, when
the call ends, adds it to the caller's totals (:meth:`CallRecord.add`); the dispatcher counts every payload sent (retries and hedged duplicates included) on
the same totals. A caller keeps one totals record for as long as it lives (a target's calls
over a whole run), so its accounting is the runner's, not a second count of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallRecord:
    """What one call did so far, or (summed) what many calls did.

    ``calls``: calls finished; ``sent``: payloads sent (retries, resends and hedged
    duplicates included; counted by the dispatcher); ``attempts``: attempts that came back;
    ``retries``: retries after a failure; ``cached``: outcomes served without a call (a cache,
    recorded replies); ``latency``: seconds spent in attempts; ``endpoints``: the pool member
    of each attempt (one call only); ``failures``: calls that ended failed, by reason;
    ``wall_s``: the caller's own wall time.
    """

    calls: int = 0
    sent: int = 0
    attempts: int = 0
    retries: int = 0
    cached: int = 0
    latency: float = 0.0
    endpoints: list[int] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0

    def add(self, call: CallRecord) -> None:
        """Add one finished call (its failure, if any, is counted by the caller, in the
        caller's own reasons)."""
        self.calls += 1
        self.attempts += call.attempts
        self.retries += call.retries
        self.latency += call.latency

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "sent": self.sent, "cached": self.cached,
                "retries": self.retries, "failures": dict(self.failures),
                "wall_s": round(self.wall_s, 4)}


__all__ = ["CallRecord"]
