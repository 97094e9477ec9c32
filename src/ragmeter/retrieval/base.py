"""Contracts shared by ingestion, retrievers and everything that embeds text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

EmbedKind = Literal["query", "passage", "symmetric"]


@dataclass(frozen=True)
class Chunk:
    """A piece of a document. ``chunk_id`` is stable and keeps its parent ``doc_id``."""

    chunk_id: str
    doc_id: str
    text: str
    title: str | None = None
    url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its retriever score (higher is better)."""

    chunk_id: str
    doc_id: str
    score: float


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (n, dim).

    ``kind`` selects the model's query/passage forms where it has them (e5: "query: " /
    "passage: "); ``symmetric`` is for text-to-text similarity (both sides the same form).
    """

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], kind: EmbedKind = "symmetric") -> np.ndarray: ...


@runtime_checkable
class Retriever(Protocol):
    """Indexes chunks once, then returns the top-k hits for each query."""

    name: str

    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...

    def signature_fields(self) -> dict[str, Any]: ...
