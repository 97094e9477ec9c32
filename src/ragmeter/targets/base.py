"""What a target call is: :class:`TargetRequest` in, :class:`TargetReply` out, one
:class:`TargetSignature` per target, and the :data:`KINDS` registry of target kinds.

A *target* is the user's own RAG system, reached over HTTP, an OpenAI-compatible chat
endpoint, a Python callable or a command. Every kind turns one request into one reply, or
raises :class:`~ragmeter.calls.errors.CallError` with the call's reason (``timeout``,
``http_5xx``, ``bad_reply``, ``unmapped``, ``error``, ...); :mod:`ragmeter.targets.calls` runs
it on the call machinery (concurrency, retries, the circuit breaker, the budget) with the
recorded-replies store around it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragmeter.calls.body import DEFAULT_MAX_REPLY_BYTES
from ragmeter.calls.errors import CallError
from ragmeter.registry import Registry

#: the entry points a target may have
ENTRIES = ("answer", "retrieve", "generate")

#: reasons a target call ends without a usable reply (prefix ``target_``; free text after
#: ':'): ``target_`` and the reason of the failed call (:func:`target_reason`), or one of
#: the caller's own (``target_not_recorded`` in a replay)
TARGET_REASONS = ("target_unreachable", "target_timeout", "target_http_4xx", "target_http_5xx",
                  "target_rate_limited", "target_connection_error", "target_bad_reply",
                  "target_unmapped", "target_error", "target_backend_error",
                  "target_not_recorded", "target_budget", "target_circuit_open",
                  "target_reply_too_large", "target_redirected")

#: the default bound of one reply (``max_reply_bytes``): 16 MiB, on the wire and decoded
MAX_REPLY_BYTES = DEFAULT_MAX_REPLY_BYTES


@dataclass(frozen=True)
class TargetRequest:
    """One question for the target. ``contexts`` only for the ``generate`` entry."""

    entry: str
    question: str
    history: tuple[Mapping[str, str], ...] = ()
    session_id: str | None = None
    k: int | None = None
    contexts: tuple[str, ...] = ()
    sample_id: str | None = None

    def canonical(self) -> dict[str, Any]:
        """What changes the target's reply (the sample id does not)."""
        return {"entry": self.entry, "question": self.question,
                "history": [dict(h) for h in self.history], "session_id": self.session_id,
                "k": self.k, "contexts": list(self.contexts)}

    def key(self, signature: TargetSignature) -> str:
        """The recorded-replies key: the target's identity, this request and its sample (a
        question asked twice — a semantic-cache probe — is two calls, each measured)."""
        text = json.dumps({"target": signature.identity(), "request": self.canonical(),
                           "sample": self.sample_id}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class TargetReply:
    """What one call captured. ``reason`` set ⇔ the call gave nothing usable (unscored).

    ``raw`` is the reply as received (text), masked before it is stored or shown.
    ``latency_s`` is the call's: from its first send to its final reply, retries and the
    waits between them included; ``ttft_s`` the time from the first send to the first byte
    of the final reply's answer (streamed kinds) or of the reply; ``attempt_s`` each
    attempt's own duration. ``warmup``: the first call of its caller (a connection opened, a
    service woken), kept out of the latency percentiles and reported apart.
    """

    answer: str | None = None
    contexts: list[str] | None = None
    context_ids: list[str] | None = None
    doc_ids: list[str] | None = None
    scores: list[float] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    ttft_s: float | None = None
    latency_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    version: str | None = None
    reason: str | None = None
    detail: str | None = None
    attempts: int = 1
    #: every attempt's duration (seconds), the last one the final reply's
    attempt_s: list[float] | None = None
    warmup: bool = False
    #: invalid characters (lone surrogates, undecodable bytes) replaced by U+FFFD
    invalid_text: int = 0
    recorded: bool = False   # served from the recorded replies (no call made)
    #: when the call started, seconds after its batch started, and which batch (so a
    #: replayed run has the same wall time and throughput as the live one)
    started_s: float | None = None
    batch: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (a shallow copy: lists and mappings are copied one level,
        as a reply's values are plain JSON)."""
        out: dict[str, Any] = {}
        for k in _FIELDS:
            v = getattr(self, k)
            if v is None or v == {} or v == [] or (k in _ZERO_UNSET and not v):
                continue
            out[k] = list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TargetReply:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


_FIELDS = tuple(TargetReply.__dataclass_fields__)
#: fields left out of :meth:`TargetReply.to_dict` at their default (0 / False)
_ZERO_UNSET = frozenset({"invalid_text", "warmup"})


def target_reason(err: CallError) -> str:
    """What a failed call is reported as: ``target_`` and the call's reason
    (``target_timeout``, ``target_http_5xx``, ``target_unmapped``, ...), and
    ``target_unreachable`` for a target no connection could be made to (or a program that
    could not be started)."""
    return "target_unreachable" if err.unreachable else f"target_{err.reason}"


@dataclass(frozen=True)
class TargetSignature:
    """Who answered: kind, URL without credentials (or the callable / command), the version
    the service reported, and a hash of the config (secrets excluded: only their names)."""

    kind: str
    where: str
    config_hash: str
    version: str | None = None

    def identity(self) -> str:
        """Stable across runs of the same config (the reported version is not part of it:
        replay must find replies recorded before the version was known)."""
        return f"{self.kind}|{self.where}|{self.config_hash}"

    def fields(self) -> dict[str, str]:
        out = {"target": self.kind, "target_at": self.where.replace("|", "/"),
               "target_cfg": self.config_hash}
        if self.version:
            out["target_version"] = self.version
        return out


class Target(Protocol):
    """One target kind's client: ``call`` one request -> one reply (or a CallError)."""

    kind: str
    name: str
    signature: TargetSignature
    max_concurrency: int
    timeout_s: float

    def entries(self) -> Sequence[str]: ...

    async def call(self, request: TargetRequest) -> TargetReply: ...

    async def aclose(self) -> None: ...


#: target kinds: name -> factory ``(config: TargetConfig) -> Target``
KINDS: Registry[Any] = Registry(
    "target kind", key="target.kind",
    modules=("ragmeter.targets.http", "ragmeter.targets.openai_chat",
             "ragmeter.targets.python_fn", "ragmeter.targets.command"))


__all__ = ["ENTRIES", "KINDS", "MAX_REPLY_BYTES", "TARGET_REASONS", "Target", "TargetReply",
           "TargetRequest", "TargetSignature", "target_reason"]
