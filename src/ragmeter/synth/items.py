"""One generated question on its way through the filters, and its evalset / RAGAS forms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.retrieval.base import Chunk
from ragmeter.synth.filters import Verdict
from ragmeter.synth.kinds import EVALSET_TYPE

ID_PREFIX = "syn-"


@dataclass
class Item:
    """A planned slot, what the generator made of it, and every check's outcome.

    ``checks`` lists the checks passed, in order, with what they measured; ``dropped_by`` /
    ``reason`` / ``detail`` say which check removed the item and why.
    """

    slot_id: str
    kind: str
    chunk_ids: tuple[str, ...]
    examples: tuple[str, ...] = ()
    question: str = ""
    answer: str | None = None
    turns: list[dict[str, str]] = field(default_factory=list)
    standalone: str | None = None
    why: str | None = None
    retrieved_ids: list[str] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict)
    generator: dict[str, Any] = field(default_factory=dict)
    dropped_by: str | None = None
    reason: str | None = None
    detail: str | None = None

    @property
    def id(self) -> str:
        return ID_PREFIX + self.slot_id

    @property
    def alive(self) -> bool:
        return self.dropped_by is None

    @property
    def check_question(self) -> str:
        """The question a checker or retriever sees (the self-contained form of a dialogue)."""
        return self.standalone or self.question

    def passed(self, check: str, value: Any = "pass") -> None:
        self.checks[check] = value

    def drop(self, check: str, verdict: Verdict) -> None:
        self.dropped_by = check
        self.reason = verdict.reason
        self.detail = verdict.detail

    def gold_doc_ids(self, chunks: dict[str, Chunk]) -> list[str]:
        out: list[str] = []
        for cid in self.chunk_ids:
            d = chunks[cid].doc_id
            if d not in out:
                out.append(d)
        return out

    def synth_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": self.kind, "checks": dict(self.checks),
                                "generator": dict(self.generator)}
        if self.turns:
            meta["history"] = [dict(t) for t in self.turns]
        if self.standalone:
            meta["standalone_question"] = self.standalone
        if self.kind == "negative":
            meta["shown_chunks"] = list(self.examples)
            if self.why:
                meta["why_unanswerable"] = self.why
            if self.retrieved_ids:
                meta["retrieved_ids"] = list(self.retrieved_ids)
        return meta

    def to_sample(self, chunks: dict[str, Chunk], source: str) -> Sample:
        negative = self.kind == "negative"
        notes = f"synthetic {self.kind}; passed: {', '.join(self.checks)}"
        return Sample(
            id=self.id, user_input=self.question,
            reference=None if negative else self.answer,
            reference_contexts=None if negative else [chunks[c].text for c in self.chunk_ids],
            gold_doc_ids=[] if negative else self.gold_doc_ids(chunks),
            gold_chunk_ids=[] if negative else list(self.chunk_ids),
            type=EVALSET_TYPE[self.kind],
            metadata={"notes": notes, "source": source, "synth": self.synth_meta()})

    def ragas_record(self, chunks: dict[str, Chunk]) -> dict[str, Any]:
        """RAGAS test-set row (``user_input``, ``reference``, ``reference_contexts``,
        ``synthesizer_name``) plus the ids that make it usable for retrieval metrics."""
        negative = self.kind == "negative"
        rec: dict[str, Any] = {
            "user_input": self.question,
            "reference": None if negative else self.answer,
            "reference_contexts": [] if negative else [chunks[c].text for c in self.chunk_ids],
            "synthesizer_name": f"ragmeter:{self.kind}",
            "id": self.id, "type": EVALSET_TYPE[self.kind],
            "gold_doc_ids": [] if negative else self.gold_doc_ids(chunks),
            "gold_chunk_ids": [] if negative else list(self.chunk_ids),
        }
        if self.turns:
            rec["history"] = [dict(t) for t in self.turns]
        return rec

    def session_record(self) -> dict[str, Any] | None:
        """The dialogue as a UX-tier session (``session_id``, ``turns``), or ``None``."""
        if self.kind != "conversational" or not self.turns:
            return None
        turns = [{"question": t["question"], "answer": t.get("answer") or None}
                 for t in self.turns]
        turns.append({"question": self.question, "answer": self.answer})
        return {"session_id": self.id, "turns": turns,
                "metadata": {"source": "ragmeter-synth", "gold_chunk_ids": list(self.chunk_ids),
                             "standalone_question": self.standalone}}

    def rejected_record(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "question": self.question,
                "answer": self.answer, "chunk_ids": list(self.chunk_ids),
                "dropped_by": self.dropped_by, "reason": self.reason, "detail": self.detail,
                "passed": list(self.checks)}
