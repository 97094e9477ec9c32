"""The seam between a caller and the call machinery: what a caller supplies.

A caller of :mod:`ragmeter.calls` (the LLM judge, a target, the embeddings client, a reranker
of your own) supplies three things; the machinery owns the rest (slots, the adaptive
in-flight limit, the endpoint pool, retries and their budget, the circuit breaker, hedging,
the send gate, deduplication, the cache round trip):

* :class:`Send`: deliver one payload to endpoint ``idx`` of the pool and return what came
  back, or raise :class:`~ragmeter.calls.errors.CallError`;
* per request an :class:`Exchange`: what to send for each attempt and how to read what came
  back (the final outcome, or send again);
* for a batch, :class:`BatchHooks`: the key of each request (duplicates share one call), an
  optional cache, and what is delivered (:class:`~ragmeter.calls.scheduler.Hooks` gives the
  defaults).

:class:`Gate` is what sees every payload sent (a budget's stop). docs/calls.md shows a whole
caller in twenty lines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from ragmeter.calls.errors import CallError
    from ragmeter.calls.record import CallRecord

Q = TypeVar("Q")
O = TypeVar("O")  # noqa: E741  (an outcome)
R_co = TypeVar("R_co", covariant=True)
R_in = TypeVar("R_in", contravariant=True)
O_out = TypeVar("O_out", covariant=True)


class Send(Protocol[R_co]):
    """``await send(idx, payload)``: one payload to endpoint ``idx`` (0 for a single
    endpoint); returns the raw result or raises :class:`~ragmeter.calls.errors.CallError`.
    Anything else raised counts as ``backend_error`` (unscored, never raised to the caller)."""

    def __call__(self, idx: int, payload: Any, /) -> Awaitable[R_co]: ...


class Exchange(Protocol[R_in, O_out]):
    """One request's conversation with the endpoints."""

    #: handed to the send gate's ``before_send``/``after_send``
    request: Any

    def payload(self) -> Any:
        """What to send for the next attempt (called once a slot is taken)."""

    def resend(self, err: CallError) -> bool:
        """True: ``err`` is answered by changing the payload; send again at once, no retry."""

    def outcome(self, result: R_in, rec: CallRecord) -> O_out | None:
        """The final outcome of a result, or None to send again (e.g. a repair)."""

    def usable(self) -> bool:
        """Whether the last result read by :meth:`outcome` could be used; an unusable one
        (unparseable) counts against its endpoint's health like a server error."""

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> O_out:
        """The outcome of a call that failed for good."""

    def skipped(self, detail: str, rec: CallRecord) -> O_out:
        """The outcome of a call not sent because the circuit is open."""


class BatchHooks(Protocol[Q, O]):
    """How a caller's requests map onto :meth:`~ragmeter.calls.scheduler.RequestRunner.run`."""

    lookup: Callable[[list[str]], Awaitable[dict[str, O]]] | None
    store: Callable[[str, O], Awaitable[None]] | None

    def key(self, item: Q) -> str: ...

    def exchange(self, item: Q, key: str) -> Exchange[Any, O]: ...

    def hit(self, item: Q, key: str, out: O) -> O:
        """A cache hit as delivered (marked cached)."""

    def duplicate(self, out: O) -> O:
        """The outcome delivered to a duplicate of a request in the same batch."""

    def finished(self, item: Q, key: str, out: O) -> O:
        """A fresh outcome as delivered and stored (decorated)."""

    def delivered(self, i: int, item: Q, out: O) -> Sequence[Q]:
        """Outcome ``i`` is known; returns its follow-up requests (may be empty)."""


class Gate(Protocol):
    """What the dispatcher calls around every send: first tries, retries and hedged
    duplicates (never cache hits or in-batch duplicates). ``before_send`` may raise (a
    budget's stop): nothing more is sent in that batch, the calls in flight finish, and the
    batch re-raises it. ``after_send`` follows every send with its cost and token counts
    (``measure`` of the runner; zeros for a failure)."""

    def before_send(self, request: Any) -> None: ...

    def after_send(self, request: Any, reply_cost: float, tokens_in: int,
                   tokens_out: int) -> None: ...


__all__ = ["BatchHooks", "Exchange", "Gate", "Send"]
