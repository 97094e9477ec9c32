"""The backend seam: what turns one prepared payload into one :class:`Completion`.

A backend answers one chat completion (or raises :class:`~ragmeter.calls.errors.CallError`);
everything else (slots, retries, hedging, the endpoint pool, the cache) is the request
runner's (:mod:`ragmeter.calls`) and the judge's. :class:`Backend`
declares every member the engine reads; :class:`BackendBase` gives the optional ones their
defaults, so a backend states only what differs::

    class MyBackend(BackendBase):
        kind = "my"
        def __init__(self, model): self.model = model
        async def complete(self, messages, schema, *, max_tokens, temperature, seed): ...

A duck-typed object that does not subclass :class:`BackendBase` still works:
:func:`as_backend` wraps it once, filling the optional members from their defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Completion:
    """One raw model answer with its accounting."""

    text: str | None
    finish_reason: str | None = "stop"
    tokens_in: int = 0
    tokens_out: int = 0
    refusal: str | None = None
    model: str | None = None
    mock: bool = False   # served by the fake server (never cached for a real judge)
    #: the probability of the reply's least certain verdict token (servers that return
    #: token log-probabilities, when the judge config asks for them); None: not known
    token_prob: float | None = None


class Backend(Protocol):
    """Every member a judge backend provides (defaults in :class:`BackendBase`).

    ``kind``: the cache namespace of replies ("openai", "gguf", "mock", ...). ``model``: what
    answers. ``supports_schema``: it accepts a JSON schema for structured output.
    ``hedgeable``: a duplicate of a stalled call costs little (HTTP), so the engine may race
    one. ``max_in_flight``: the most calls it can serve at once (None: the config's cap).
    ``identity``: where replies come from, for the cache key (None: the config's endpoint).
    ``members``: the backends of an endpoint pool (empty: this backend alone). ``enter`` /
    ``exit`` bracket one batch on the running loop; ``aclose`` frees its resources.
    """

    kind: str
    model: str
    supports_schema: bool
    hedgeable: bool
    max_in_flight: int | None
    identity: str | None
    members: Sequence[Backend]

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion: ...

    async def enter(self) -> None: ...

    async def exit(self) -> None: ...

    async def aclose(self) -> None: ...


class BackendBase:
    """Defaults for the optional members of :class:`Backend`."""

    kind: str = "custom"
    model: str = ""
    supports_schema: bool = True
    hedgeable: bool = False
    max_in_flight: int | None = None
    identity: str | None = None
    members: Sequence[Backend] = ()

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        raise NotImplementedError

    async def enter(self) -> None:
        return None

    async def exit(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _Adapted(BackendBase):
    """A duck-typed backend with the optional members it lacks filled from the defaults.
    Other attributes (a test backend's counters) are read through to the wrapped object."""

    def __init__(self, inner: Any):
        self.inner = inner
        for name in ("kind", "model", "supports_schema", "hedgeable", "max_in_flight",
                     "identity", "members"):
            if hasattr(inner, name):
                setattr(self, name, getattr(inner, name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        out: Completion = await self.inner.complete(messages, schema, max_tokens=max_tokens,
                                                    temperature=temperature, seed=seed)
        return out

    async def enter(self) -> None:
        if hasattr(self.inner, "enter"):
            await self.inner.enter()

    async def exit(self) -> None:
        if hasattr(self.inner, "exit"):
            await self.inner.exit()

    async def aclose(self) -> None:
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()


def as_backend(obj: Any) -> Backend:
    """``obj`` itself when it subclasses :class:`BackendBase`, else wrapped so that every
    member of :class:`Backend` is there."""
    if isinstance(obj, BackendBase):
        return obj
    return _Adapted(obj)


__all__ = ["Backend", "BackendBase", "Completion", "as_backend"]
