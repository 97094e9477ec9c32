"""Every judge request pseudonymised before it leaves: a wrapper judge applied by
:func:`ragmeter.judges.make_judge` when the judge config says ``pseudonymise: true`` or a
:func:`privacy_scope` is active (``--pseudonymise``).

The wrapper rewrites the text of every message of every request, follow-ups (``then``)
included, with one :class:`~ragmeter.privacy.pseudonymise.Pseudonymiser` per scope, so a person
is the same token across every request of a run. Replies are not restored: scores, reasons and
kept prompts show tokens only. Redaction counts and the pseudonymiser's version go into the
signature of each judged metric (``privacy_meta``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper
from ragmeter.privacy.pseudonymise import Pseudonymiser, check_private_path

_ACTIVE: ContextVar[Pseudonymiser | None] = ContextVar("ragmeter_privacy", default=None)
_MAP: ContextVar[str | None] = ContextVar("ragmeter_privacy_map", default=None)


class PseudonymisingJudge:
    """Wraps a judge; each request's message texts go through the pseudonymiser first."""

    def __init__(self, inner: Any, pseudonymiser: Pseudonymiser,
                 map_path: str | Path | None = None) -> None:
        self.inner = inner
        self.privacy_meta = pseudonymiser
        self.map_path = map_path
        self.chains = bool(getattr(inner, "chains", False))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _clean(self, req: JudgeRequest) -> JudgeRequest:
        p = self.privacy_meta
        messages = tuple({**m, "content": p(m["content"])} if isinstance(m.get("content"), str)
                         else m for m in req.messages)
        then = req.then
        if then is not None:
            def follow(reply: JudgeReply, _then: Any = then) -> Sequence[JudgeRequest]:
                return [self._clean(r) for r in _then(reply)]
            then = follow
        return replace(req, messages=messages, then=then)

    def _saved(self, replies: list[JudgeReply]) -> list[JudgeReply]:
        if self.map_path is not None:
            self.privacy_meta.save_map(self.map_path)
        return replies

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return self._saved(list(self.inner.ask_many([self._clean(r) for r in requests])))

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        got = await self.inner.aask_many([self._clean(r) for r in requests])
        return self._saved(list(got))


@contextlib.contextmanager
def privacy_scope(pseudonymiser: Pseudonymiser | None = None,
                  map_path: str | Path | None = None) -> Iterator[Pseudonymiser]:
    """Every judge built by ``make_judge`` inside pseudonymises its requests with one shared
    pseudonymiser (written to ``map_path`` after each batch when given)."""
    p = pseudonymiser or Pseudonymiser()
    token = _ACTIVE.set(p)
    token_map = _MAP.set(None if map_path is None else str(map_path))
    try:
        yield p
    finally:
        _ACTIVE.reset(token)
        _MAP.reset(token_map)


def activate(enabled: bool, map_path: str | None = None) -> None:
    """Switch pseudonymisation on or off for the rest of this context (the CLI's
    ``--pseudonymise`` flag; ``RAGMETER_PSEUDONYMISE_MAP`` names the map file)."""
    if enabled and map_path:
        check_private_path(map_path)   # a link there: refused before any work is done
    _ACTIVE.set(Pseudonymiser() if enabled else None)
    _MAP.set(map_path if enabled else None)


def active() -> tuple[Pseudonymiser | None, str | None]:
    """The pseudonymiser switched on for this context (``--pseudonymise``) and its map path."""
    return _ACTIVE.get(), _MAP.get()


def pseudonymised(judge: Any, config: Any = None) -> Any:
    """``judge`` wrapped when pseudonymisation is on (scope or ``config.pseudonymise``)."""
    if isinstance(judge, PseudonymisingJudge):
        return judge
    active = _ACTIVE.get()
    if active is None and getattr(config, "pseudonymise", False):
        active = Pseudonymiser()
    if active is None:
        return judge
    map_path = _MAP.get() or getattr(config, "pseudonymise_map", None)
    if map_path:
        check_private_path(map_path)
    return PseudonymisingJudge(judge, active, map_path)


# make_judge applies it to every judge built from a config (judges never import privacy)
WRAPPERS.register("pseudonymise", JudgeWrapper(order=10, wrap=pseudonymised))
