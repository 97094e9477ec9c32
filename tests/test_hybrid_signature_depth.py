"""The hybrid retriever's signature names how deep it fused each list, apart from the depth
of the ranking kept."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from conftest import requires_extra
from ragmeter.data.sample import Sample
from ragmeter.retrieval.base import Chunk, EmbedKind
from ragmeter.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever
from ragmeter.tiers.compare_retrievers import compare_retrievers

pytestmark = requires_extra("retrieval", "bm25s", "Stemmer")

CHUNKS = [Chunk(f"d{i}#0", f"d{i}", f"Документ номер {i} про тему {i % 3}.") for i in range(12)]


class _Embedder:
    name = "test-len-8"
    dim = 8

    def embed(self, texts: Sequence[str], kind: EmbedKind = "symmetric") -> np.ndarray:
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for j, ch in enumerate(t.encode()[:64]):
                out[i, (ch + j) % 8] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_hybrid_signature_says_fusion_depth() -> None:
    emb = _Embedder()
    hyb = HybridRetriever(BM25Retriever(), DenseRetriever(emb), depth=100)
    sig = hyb.signature_fields()
    assert sig["fusion_depth"] == 100 and "depth" not in sig


def test_compared_hybrid_keeps_both_depths() -> None:
    samples = [Sample(id=f"q{i}", user_input=f"про тему {i % 3}", gold_doc_ids=[f"d{i}"])
               for i in range(6)]
    cmp = compare_retrievers(["hybrid"], samples, CHUNKS, ks=(1, 3), embedder=_Embedder(),
                             n_resamples=200)
    sig = cmp.results["hybrid"].meta["retriever_signature"]
    assert sig["depth"] == 3 and sig["fusion_depth"] == 100
