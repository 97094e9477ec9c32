"""Sentence-aware chunking for Russian and English (``razdel.sentenize``).

Whole sentences are packed into a chunk while the chunk (from the start of its first sentence
to the end of its last one, original spacing kept) fits in ``chunk_size_chars``. A sentence
longer than the budget is split at word boundaries (a single word longer than the budget is cut
at the budget). A new chunk starts with the trailing sentences of the previous chunk whose span
fits in ``overlap_chars`` (never the whole previous chunk, and never so much that the next
sentence would not fit). Chunk ids are ``f"{doc_id}#{n}"`` with ``n`` the 0-based index, so the
same text and parameters always give the same ids and texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.retrieval.base import Chunk
from ragmeter.retrieval.corpus import Document

CHUNKER_VERSION = "razdel-sent-v1"
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkingParams:
    """Chunking settings; ``signature_fields()`` goes into every result signature."""

    chunk_size_chars: int = 800
    overlap_chars: int = 120

    def __post_init__(self) -> None:
        if self.chunk_size_chars <= 0:
            raise ConfigError("chunk_size_chars", f"must be > 0, got {self.chunk_size_chars}")
        if not 0 <= self.overlap_chars < self.chunk_size_chars:
            raise ConfigError("overlap_chars", f"must be in [0, chunk_size_chars), got "
                                               f"{self.overlap_chars}")

    def signature_fields(self) -> dict[str, Any]:
        return {"chunk_size": self.chunk_size_chars, "overlap": self.overlap_chars,
                "chunker": CHUNKER_VERSION}

    @classmethod
    def from_options(cls, chunk_size: int, overlap: int) -> ChunkingParams:
        """From ``--chunk-size`` / ``--overlap``: a bad value names the option typed."""
        if chunk_size <= 0:
            raise ConfigError("--chunk-size", f"must be a positive number of characters, got "
                                              f"{chunk_size}")
        if not 0 <= overlap < chunk_size:
            raise ConfigError("--overlap", f"must be at least 0 and less than --chunk-size "
                                           f"{chunk_size}, got {overlap}")
        return cls(chunk_size, overlap)


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    import razdel

    return [(s.start, s.stop) for s in razdel.sentenize(text) if s.text.strip()]


def _split_long(text: str, start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """Split the span ``[start, stop)`` at word boundaries into pieces of at most ``size``."""
    words: list[tuple[int, int]] = []
    for m in _WORD.finditer(text, start, stop):
        ws, we = m.start(), m.end()
        while we - ws > size:  # a "word" longer than the budget: cut it
            words.append((ws, ws + size))
            ws += size
        words.append((ws, we))
    pieces: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_stop = 0
    for ws, we in words:
        if cur_start is None:
            cur_start, cur_stop = ws, we
        elif we - cur_start <= size:
            cur_stop = we
        else:
            pieces.append((cur_start, cur_stop))
            cur_start, cur_stop = ws, we
    if cur_start is not None:
        pieces.append((cur_start, cur_stop))
    return pieces


def chunk_spans(text: str, *, chunk_size_chars: int = 800,
                overlap_chars: int = 120) -> list[tuple[int, int]]:
    """Character spans ``(start, stop)`` of the chunks of ``text`` (see module docstring)."""
    params = ChunkingParams(chunk_size_chars, overlap_chars)
    size, overlap = params.chunk_size_chars, params.overlap_chars
    units: list[tuple[int, int]] = []
    for s, e in _sentence_spans(text):
        units.extend([(s, e)] if e - s <= size else _split_long(text, s, e, size))
    spans: list[tuple[int, int]] = []
    cur: list[tuple[int, int]] = []
    for unit in units:
        if cur and unit[1] - cur[0][0] > size:
            spans.append((cur[0][0], cur[-1][1]))
            keep: list[tuple[int, int]] = []
            # trailing sentences of the previous chunk, never all of it
            for prev in reversed(cur[1:]):
                if cur[-1][1] - prev[0] > overlap or unit[1] - prev[0] > size:
                    break
                keep.insert(0, prev)
            cur = keep
        cur.append(unit)
    if cur:
        spans.append((cur[0][0], cur[-1][1]))
    return spans


def chunk_text(text: str, *, chunk_size_chars: int = 800, overlap_chars: int = 120) -> list[str]:
    """Chunk texts of one document (see module docstring for the packing rules)."""
    return [text[s:e] for s, e in chunk_spans(text, chunk_size_chars=chunk_size_chars,
                                                   overlap_chars=overlap_chars)]


def chunk_documents(docs: Iterable[Document], *, chunk_size_chars: int = 800,
                    overlap_chars: int = 120) -> list[Chunk]:
    """Chunk every document; ids are ``f"{doc_id}#{n}"`` and metadata keeps char offsets. A
    chunk of a pre-chunked corpus (a :class:`Document` with ``chunk_id``) is kept as it is,
    under its own id."""
    params = ChunkingParams(chunk_size_chars, overlap_chars)
    out: list[Chunk] = []
    for doc in docs:
        if doc.chunk_id is not None:
            out.append(Chunk(chunk_id=doc.chunk_id, doc_id=doc.doc_id, text=doc.text,
                             title=doc.title, url=doc.url,
                             metadata={**doc.metadata, "prechunked": True}))
            continue
        spans = chunk_spans(doc.text, chunk_size_chars=params.chunk_size_chars,
                            overlap_chars=params.overlap_chars)
        for n, (s, e) in enumerate(spans):
            out.append(Chunk(
                chunk_id=f"{doc.doc_id}#{n}", doc_id=doc.doc_id, text=doc.text[s:e],
                title=doc.title, url=doc.url,
                metadata={**doc.metadata, "char_start": s, "char_end": e},
            ))
    return out


def doc_of_chunk(chunk_id: str) -> str:
    """Parent document id of a chunk id (``"a/b#3"`` -> ``"a/b"``)."""
    return chunk_id.rsplit("#", 1)[0]
