"""The generation plan: which kind of question is asked from which chunk(s), fixed by the seed.

Chunks are taken round-robin over the documents (in a seeded order) so that even a small set
touches as many documents as it can; kinds are interleaved by a seeded shuffle so no kind ends
up with only the first documents. A multi-chunk slot pairs its chunk with the most similar
chunk (BM25) of another document, else of the same document. A negative slot shows the
generator a few chunks for the domain and has no gold.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.hashing import dataset_hash
from ragmeter.errors import ConfigError
from ragmeter.retrieval.base import Chunk
from ragmeter.retrieval.chunking import ChunkingParams
from ragmeter.retrieval.corpus import Document
from ragmeter.synth.kinds import Mix

#: chunks shorter than this carry too little to ask about (headings, stubs)
MIN_CHUNK_CHARS = 120
#: chunks shown to the generator of a negative question
NEGATIVE_EXAMPLES = 3


@dataclass(frozen=True)
class Slot:
    """One planned question: its id, kind and the chunk ids it is generated from."""

    slot_id: str
    kind: str
    chunk_ids: tuple[str, ...]
    examples: tuple[str, ...] = ()   # negatives: chunks shown for the domain (not gold)

    def to_dict(self) -> dict[str, Any]:
        return {"slot_id": self.slot_id, "kind": self.kind, "chunk_ids": list(self.chunk_ids),
                "examples": list(self.examples)}


@dataclass
class Plan:
    """Slots in generation order, with the targets per kind and the chunks they refer to."""

    slots: list[Slot]
    targets: dict[str, int]
    chunks: dict[str, Chunk] = field(repr=False)
    n_documents: int = 0

    def hash(self) -> str:
        return dataset_hash([s.to_dict() for s in self.slots])


def corpus_hash(docs: Sequence[Document], chunking: ChunkingParams) -> str:
    """Hash of the documents' ids and texts plus the chunking settings."""
    recs: list[Any] = [chunking.signature_fields()]
    recs.extend({"doc_id": d.doc_id, "text": d.text, "title": d.title} for d in docs)
    return dataset_hash(recs)


def make_plan(docs: Sequence[Document], chunks: Sequence[Chunk], *, n: int, mix: Mix,
              seed: int, oversample: float = 1.25) -> Plan:
    """Plan ``ceil(n_kind × oversample)`` slots per kind (filters remove some)."""
    if n <= 0:
        raise ConfigError("n", f"must be > 0, got {n}")
    if oversample < 1.0:
        raise ConfigError("oversample", f"must be >= 1.0, got {oversample}")
    targets = mix.counts(n)
    usable = [c for c in chunks if len(c.text.strip()) >= MIN_CHUNK_CHARS] or list(chunks)
    if not usable:
        raise ConfigError("corpus", "has no chunks to generate questions from")
    rng = random.Random(seed)
    kinds: list[str] = []
    for kind, target in targets.items():
        if target:
            kinds.extend([kind] * max(1, -(-int(target * oversample * 1000) // 1000)))
    rng.shuffle(kinds)
    stream = _round_robin(docs, usable, rng)
    by_id = {c.chunk_id: c for c in chunks}
    partner = _Partners(usable) if "multi_chunk" in kinds else None
    slots: list[Slot] = []
    counters: dict[str, int] = {}
    used: dict[str, set[str]] = {}
    for kind in kinds:
        counters[kind] = counters.get(kind, 0) + 1
        sid = f"{kind}-{counters[kind]:04d}"
        if kind == "negative":
            shown = tuple(next(stream).chunk_id for _ in range(min(NEGATIVE_EXAMPLES,
                                                                   len(usable))))
            slots.append(Slot(sid, kind, (), shown))
            continue
        first = next(stream)
        # a chunk already used by this kind gives the same question again: try others first
        for _ in range(len(usable)):
            if first.chunk_id not in used.setdefault(kind, set()):
                break
            first = next(stream)
        used[kind].add(first.chunk_id)
        if kind == "multi_chunk":
            assert partner is not None
            second = partner.of(first)
            if second is None:   # a one-chunk corpus: no pair exists
                continue
            slots.append(Slot(sid, kind, (first.chunk_id, second.chunk_id)))
        else:
            slots.append(Slot(sid, kind, (first.chunk_id,)))
    return Plan(slots, targets, by_id, len(docs))


def _round_robin(docs: Sequence[Document], chunks: Sequence[Chunk], rng: random.Random) -> Any:
    """Endless stream of chunks: one per document in turn, each document's chunks shuffled."""
    per_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        per_doc.setdefault(c.doc_id, []).append(c)
    order = [d.doc_id for d in docs if d.doc_id in per_doc]
    rng.shuffle(order)
    queues = {d: rng.sample(per_doc[d], len(per_doc[d])) for d in order}
    pos = dict.fromkeys(order, 0)
    while True:
        for d in order:
            q = queues[d]
            yield q[pos[d] % len(q)]
            pos[d] += 1


class _Partners:
    """The most similar other chunk by BM25 (another document preferred)."""

    def __init__(self, chunks: Sequence[Chunk]):
        from ragmeter.retrieval.retrievers import BM25Retriever

        self.retriever = BM25Retriever()
        self.retriever.index(list(chunks))
        self.n = len(chunks)
        self.by_id = {c.chunk_id: c for c in chunks}

    def of(self, chunk: Chunk) -> Chunk | None:
        if self.n < 2:
            return None
        hits = self.retriever.search([chunk.text], min(self.n, 20))[0]
        others = [h for h in hits if h.chunk_id != chunk.chunk_id]
        pick = next((h for h in others if h.doc_id != chunk.doc_id), None)
        if pick is None:
            pick = next((h for h in others if not _adjacent(h.chunk_id, chunk.chunk_id)),
                        others[0] if others else None)
        if pick is None:
            return None
        return self.by_id[pick.chunk_id]


def _adjacent(a: str, b: str) -> bool:
    da, _, na = a.rpartition("#")
    db, _, nb = b.rpartition("#")
    return da == db and na.isdigit() and nb.isdigit() and abs(int(na) - int(nb)) <= 1
