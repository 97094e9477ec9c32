"""The one record type every tier reads: a RAG sample (RAGAS field names where they exist)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: the question types ragmeter's own sets use; a sample's ``type`` may be any label (a slice:
#: ``multi_hop``, ``comparison``, ...) — only ``negative`` changes how a sample is scored
QUESTION_TYPES = ("definition", "fact", "negative")


@dataclass
class Sample:
    """One question of an evaluation set and whatever is known about it.

    Field names follow RAGAS where RAGAS has them (``user_input``, ``retrieved_contexts``,
    ``response``, ``reference``, ``reference_contexts``); the others come from the
    evalset format (``gold_doc_ids``, ``gold_chunk_ids``, ``type``).

    ``gold_grades`` optionally maps a gold id to a graded relevance (default grade 1).
    ``retrieved_scores`` are the retriever's scores, aligned with ``retrieved_ids``.
    ``type`` is any label (results can be sliced by it); ``"negative"`` marks a question
    whose answer is not in the corpus.
    ``history`` holds the earlier turns of a conversation, oldest first, as
    ``{"role": "user" | "assistant", "content": text}``; ``user_input`` is the current turn.
    """

    id: str
    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    retrieved_ids: list[str] | None = None
    retrieved_scores: list[float] | None = None
    response: str | None = None
    reference: str | None = None
    reference_contexts: list[str] | None = None
    gold_doc_ids: list[str] | None = None
    gold_chunk_ids: list[str] | None = None
    gold_grades: dict[str, int] | None = None
    type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, str]] | None = None

    @property
    def is_negative(self) -> bool:
        return self.type == "negative"

    @property
    def turn(self) -> int:
        """The current turn's index in its conversation (0 for a single question)."""
        return sum(1 for m in self.history or () if m.get("role") == "user")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict without empty optional fields (stable for hashing and JSON); a deep
        copy, as ``dataclasses.asdict`` gives, several times faster on JSON-like values."""
        out: dict[str, Any] = {}
        for k in _FIELDS:
            v = getattr(self, k)
            if v is not None and v != {}:
                out[k] = _copy(v)
        return out


_FIELDS = tuple(Sample.__dataclass_fields__)
_ATOMS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """A deep copy of a JSON-like value (dicts, lists, tuples of atoms); anything else as
    ``dataclasses.asdict`` copies it."""
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {_copy(k): _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return asdict(_Box(value))["value"]


@dataclass
class _Box:
    value: Any
