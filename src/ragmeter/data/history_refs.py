"""Conversation history written once: a turn's ``history`` may refer to an earlier record of
the same file instead of repeating every message before it.

``"history": {"after": "<id of an earlier record>", "add": [{role, content}...]}`` means: the
history of record ``after``, then ``after``'s own question and answer, then ``add`` (turns
between the two that the file does not hold, e.g. left out by a sample). Without ``after``,
``add`` is the whole history. A file of N turns of one conversation thus grows linearly with N
(``ragmeter traces import`` writes it so); readers see the plain list in ``Sample.history``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from ragmeter.errors import RecordProblem

#: (history node of ``after``, messages added, the record's own messages)
_Node = tuple[Any, tuple[Mapping[str, Any], ...], tuple[dict[str, str], ...]]


def is_ref(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping) and ("after" in value or "add" in value)


def ref(after: str | None, add: list[dict[str, str]]) -> dict[str, Any]:
    """The ``history`` value of a turn that follows record ``after``."""
    out: dict[str, Any] = {}
    if after is not None:
        out["after"] = after
    if add or after is None:
        out["add"] = add
    return out


class HistoryLinks:
    """Resolves history references while a file is read in order (keeps one small node per
    turn of a conversation, not a copy of its history)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.nodes: dict[str, _Node] = {}

    def resolve(self, rec: Mapping[str, Any], line: int | None
                ) -> tuple[Mapping[str, Any], list[RecordProblem]]:
        """``rec`` with its history reference replaced by the list of messages."""
        value = rec.get("history")
        if not is_ref(value):
            return rec, []
        after, add = value.get("after"), value.get("add", [])

        def bad(msg: str) -> tuple[Mapping[str, Any], list[RecordProblem]]:
            return rec, [RecordProblem(self.source, line, "history", msg)]

        if not isinstance(add, list):
            return bad("'add' must be a list of {role, content} messages")
        parent = None
        if after is not None:
            if not isinstance(after, str) or after not in self.nodes:
                return bad(f"'after' refers to {after!r}, which is not an earlier turn of a "
                           "conversation in this file (the file's records must keep their "
                           "order)")
            parent = self.nodes[after]
        return {**rec, "history": [*self._messages(parent), *add]}, []

    def remember(self, sample: Any, rec: Mapping[str, Any]) -> None:
        """Keep ``sample`` as a turn later records may follow (conversation turns only)."""
        session = sample.metadata.get("session_id") if sample.metadata else None
        if session is None and not sample.history:
            return
        value = rec.get("history")
        parent = None
        add: tuple[Mapping[str, Any], ...] = ()
        if is_ref(value):
            after = value.get("after")
            parent = self.nodes.get(after) if isinstance(after, str) else None
            add = tuple(value.get("add") or ())
        elif sample.history:
            add = tuple(sample.history)
        own = []
        if sample.user_input is not None:
            own.append({"role": "user", "content": sample.user_input})
        if sample.response is not None:
            own.append({"role": "assistant", "content": sample.response})
        self.nodes[sample.id] = (parent, add, tuple(own))

    @staticmethod
    def _messages(node: _Node | None) -> list[Any]:
        chain = []
        while node is not None:
            chain.append(node)
            node = node[0]
        out: list[Any] = []
        for _, add, own in reversed(chain):
            out.extend(add)
            out.extend(own)
        return out
