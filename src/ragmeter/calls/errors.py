"""The one failure of a call to an endpoint: :class:`CallError`.

Every caller of :mod:`ragmeter.calls` (the LLM judge, the user's targets, the embeddings
client, a caller of your own) raises it from its ``send`` and reads it in its exchange; the
request runner reads its fields, never the caller's vocabulary:

* ``retryable``: a retry may help (429, 5xx, timeouts, dropped connections);
* ``retry_after``: the seconds the server asked to wait (``Retry-After``);
* ``status``: the HTTP status, when there was one (429 is a rate limit: bounded per call,
  not by the run's retry budget, and it adapts the in-flight limit);
* ``unreachable``: no connection could be made at all (the circuit breaker counts these);
* ``fault``: the endpoint itself is at fault (connection errors, 5xx, timeouts, a 200 reply
  that cannot be read): it counts against the endpoint's health in a pool, which takes an
  endpoint out after a few.

``reason`` is a short word. The runner and :mod:`ragmeter.calls.http` give the reasons of
:data:`CALL_REASONS`; a caller may raise its own (``schema_unsupported`` asks the judge to
resend without structured output; a target's ``unmapped``). What a caller reports for a
failed call is its own business: the judge reports the reason as it is, a target as
``target_<reason>`` (and ``target_unreachable`` for an endpoint that could not be reached).
"""

from __future__ import annotations

#: the reasons the call machinery itself gives
CALL_REASONS = (
    "timeout",            # no reply within the timeout (or HTTP 408)
    "rate_limited",       # HTTP 429
    "http_5xx",           # a server error
    "http_4xx",           # any other client error (bad request, credentials): not retried
    "connection_error",   # the connection failed (``unreachable``: none could be made)
    "bad_reply",          # a reply whose body cannot be read (HTML for JSON, a broken stream)
    "backend_error",      # the sender raised something unexpected (a bug, a library error)
)

#: reasons that count against an endpoint's health unless the error says otherwise
ENDPOINT_FAULTS = frozenset({"connection_error", "http_5xx", "timeout", "bad_reply"})


class CallError(Exception):
    """A failed call (see the module doc). ``detail`` says what happened, with every secret
    masked; ``raw`` is the reply's body when there was one (masked before it is kept)."""

    def __init__(self, reason: str, detail: str = "", *, retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None,
                 unreachable: bool = False, fault: bool | None = None,
                 raw: str | None = None):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.unreachable = unreachable
        self.fault = (reason in ENDPOINT_FAULTS or unreachable) if fault is None else fault
        self.raw = raw

    @property
    def rate_limited(self) -> bool:
        """The server asked us to slow down (HTTP 429)."""
        return self.reason == "rate_limited" or self.status == 429


__all__ = ["CALL_REASONS", "ENDPOINT_FAULTS", "CallError"]
