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

    One call only: ``durations``, each attempt's seconds in order; ``first_sent`` /
    ``last_sent``, the ``time.perf_counter()`` when its first / latest attempt was sent;
    ``span``, seconds from the first send to the end of the latest attempt — the call's
    latency once it has its outcome, every retry and wait between attempts included.
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
    durations: list[float] = field(default_factory=list)
    first_sent: float | None = None
    last_sent: float | None = None
    span: float = 0.0

    def attempted(self, sent_at: float, seconds: float, endpoint: int = 0) -> None:
        """One attempt of this call came back: sent at ``sent_at``, ``seconds`` long."""
        self.attempts += 1
        self.latency += seconds
        self.durations.append(seconds)
        self.endpoints.append(endpoint)
        if self.first_sent is None:
            self.first_sent = sent_at
        self.last_sent = sent_at
        self.span = sent_at + seconds - self.first_sent

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
