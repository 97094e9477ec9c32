"""Contracts of the LLM judge engine: a request, a reply, and the judge that answers.

Every judge call declares its output JSON schema. A reply is either *scored* (``data`` holds
the parsed JSON, valid against the schema) or *unscored* (``data is None`` and ``reason`` is
one of :data:`UNSCORED_REASONS` or ``missing_field:<name>``) — never a silent 0 or NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

UNSCORED_REASONS = (
    "parse_error",        # reply is not valid JSON for the schema, even after one repair attempt
    "schema_error",       # JSON parsed but does not match the declared schema
    "truncated",          # finish_reason == "length"
    "timeout",            # per-call timeout exceeded (after retries)
    "rate_limited",       # HTTP 429 after the retry budget was spent
    "http_5xx",           # server error after retries
    "http_4xx",           # other client error (bad request, auth) — not retried
    "connection_error",   # could not connect
    "empty_input",        # a required text was empty; no call was made
    "refused",            # the model declined to answer
    "backend_error",      # anything else raised by a backend, with its message in ``detail``
)


@dataclass(frozen=True)
class JudgeRequest:
    """One call to a judge. ``schema`` is a JSON schema the reply must satisfy.

    ``metric``: what the call is asked for (the judged metrics a call serves, comma-separated
    when several share it: ``faithfulness,factual_correctness``; a tier's name for its own
    calls); ``kind``: the judged metrics' call kind (``claims``, ``verify``, ``contexts``,
    ``answer``, ...); ``sample_id``: the sample asked about. None of them changes the reply:
    they are not part of the request's cache key or hash.
    """

    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    prompt_version: str
    metric: str = ""
    sample_id: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    kind: str = ""
    #: follow-up requests once this one is answered (a per-sample chain: e.g. verify the
    #: claims of a sample as soon as its own claims call returns). The engine runs them in
    #: the same batch and returns their replies after the initial ones, in submission order.
    #: Not part of the request's identity (cache key, hash, equality).
    then: Callable[[JudgeReply], Sequence[JudgeRequest]] | None = field(
        default=None, compare=False, repr=False)

    def but(self, **changes: Any) -> JudgeRequest:
        """This request with ``changes``: :func:`dataclasses.replace` without calling the
        constructor again (a judged plan of 100,000 requests makes several per request)."""
        unknown = changes.keys() - _REQUEST_FIELDS
        if unknown:
            raise TypeError(f"JudgeRequest has no field {', '.join(sorted(unknown))}")
        new = object.__new__(JudgeRequest)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new


_REQUEST_FIELDS = frozenset(f.name for f in fields(JudgeRequest))


@dataclass
class JudgeReply:
    """The parsed reply (``data``) or the reason there is none, plus accounting."""

    data: Any | None
    reason: str | None = None
    detail: str | None = None
    raw: str | None = None
    model: str = ""
    latency_s: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    cached: bool = False
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.data is not None and self.reason is None

    @classmethod
    def unscored(cls, reason: str, detail: str | None = None, **fields: Any) -> JudgeReply:
        """An unscored reply made without calling a judge (e.g. ``empty_input``)."""
        if reason not in UNSCORED_REASONS and not reason.startswith("missing_field:"):
            raise ValueError(f"unknown unscored reason {reason!r}; see UNSCORED_REASONS")
        fields.setdefault("attempts", 0)
        return cls(data=None, reason=reason, detail=detail, **fields)


@runtime_checkable
class Judge(Protocol):
    """Anything that answers judge requests: an HTTP endpoint, a local GGUF model, a replay.

    ``demo`` is True for the weak offline demonstration judge: reports label it as such and
    metrics that need graded or claim-splitting abilities it lacks must refuse it (or use their
    non-LLM fallback) instead of presenting its numbers as real.
    """

    name: str
    model: str
    demo: bool

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]: ...

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]: ...


@runtime_checkable
class SendGate(Protocol):
    """Sees every request an engine sends to a backend: first tries, retries and hedged
    duplicates (never cache hits or in-batch duplicates).

    ``before_send`` runs immediately before a request goes out; it may raise (typically a
    budget's stop exception): the engine then sends nothing more in that batch, lets the calls
    already in flight finish (their replies are cached), and re-raises the exception from
    ``aask_many``/``ask_many``. ``after_send`` runs when that request's reply (or failure)
    came back, with its cost from the judge's price table and its token counts (0 for a
    failure).
    """

    def before_send(self, request: JudgeRequest) -> None: ...

    def after_send(self, request: JudgeRequest, reply_cost: float, tokens_in: int,
                   tokens_out: int) -> None: ...

