"""BM25 (Russian morphology, stopwords), exact dense search, fusion maths, factory, run."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, DataError
from ragmeter.retrieval.base import Chunk, Embedder, EmbedKind, Hit, Retriever
from ragmeter.retrieval.chunking import ChunkingParams
from ragmeter.retrieval.retrievers import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    fuse_minmax,
    fuse_rrf,
    make_retriever,
    minmax_normalise,
    top_k_indices,
)
from ragmeter.retrieval.run import retrieve_samples
from ragmeter.text import Analyzer

CHUNKS = [
    Chunk("rules#0", "rules", "Правила проживания в общежитии утверждает ректор."),
    Chunk("pay#0", "pay", "Оплата общежития вносится до десятого числа."),
    Chunk("addr#0", "addr", "Общежитие номер три находится на улице Ленина."),
    Chunk("lib#0", "lib", "Библиотека работает с девяти утра до восьми вечера."),
    Chunk("en#0", "en", "The sports hall runs volleyball classes for students."),
]


@pytest.fixture(scope="module")
def bm25() -> BM25Retriever:
    needs_extra("retrieval", "bm25s", "Stemmer")
    r = BM25Retriever(language="auto")
    r.index(CHUNKS)
    return r


@pytest.mark.parametrize("form", ["общежитие", "общежития", "общежитии", "Общежитием"])
def test_bm25_russian_morphology(bm25: BM25Retriever, form: str) -> None:
    hits = bm25.search([form], 10)[0]
    assert {h.chunk_id for h in hits} == {"rules#0", "pay#0", "addr#0"}
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_without_stemming_forms_do_not_match() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    r = BM25Retriever(language="none")
    r.index(CHUNKS)
    assert [h.chunk_id for h in r.search(["общежития"], 10)[0]] == ["pay#0"]


def test_analyzer_auto_stems_each_script_with_its_language() -> None:
    needs_extra("retrieval", "Stemmer")
    a = Analyzer("auto")
    assert a.tokens("Студенты running в общежитии и the students") == [
        "студент", "run", "общежит", "student"]
    assert Analyzer("ru").tokens("running") == ["running"]  # Russian stemmer leaves Latin alone
    assert Analyzer("auto").tokens("Ёлка") == Analyzer("auto").tokens("елка")
    with pytest.raises(ConfigError, match="language"):
        Analyzer("de")


def test_bm25_english_and_stopword_only_queries(bm25: BM25Retriever) -> None:
    assert bm25.search(["run"], 3)[0][0].chunk_id == "en#0"
    assert bm25.search(["и в на the of", "квазар"], 5) == [[], []]


def test_bm25_needs_index_and_rejects_duplicate_ids() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    r = BM25Retriever()
    with pytest.raises(ConfigError, match="index"):
        r.search(["x"], 1)
    with pytest.raises(ConfigError, match="duplicate chunk_id"):
        r.index([CHUNKS[0], CHUNKS[0]])


def test_top_k_ties_are_stable() -> None:
    s = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert top_k_indices(s, 3).tolist() == [1, 3, 0]
    assert top_k_indices(s, 4).tolist() == [1, 3, 0, 2]
    assert top_k_indices(s, 10).tolist() == [1, 3, 0, 2, 5, 4]
    assert top_k_indices(s, 0).tolist() == []


def _h(cid: str, score: float) -> Hit:
    return Hit(cid, cid, score)


A = [_h("x", 10.0), _h("y", 6.0), _h("z", 2.0)]
B = [_h("y", 0.9), _h("w", 0.5)]


def test_rrf_hand_computed() -> None:
    fused = fuse_rrf([A, B], k_rrf=60)
    assert [h.chunk_id for h in fused] == ["y", "x", "w", "z"]
    expect = {"y": 1 / 62 + 1 / 61, "x": 1 / 61, "w": 1 / 62, "z": 1 / 63}
    for h in fused:
        assert h.score == pytest.approx(expect[h.chunk_id], abs=1e-12)
    weighted = fuse_rrf([A, B], k_rrf=60, weights=[2, 1])
    assert [h.chunk_id for h in weighted] == ["y", "x", "z", "w"]
    assert weighted[0].score == pytest.approx(2 / 62 + 1 / 61)
    assert [h.chunk_id for h in fuse_rrf([A, B], k_rrf=1)] == ["y", "x", "w", "z"]


def test_rrf_ties_use_index_order_then_appearance() -> None:
    only_a, only_b = [_h("x", 1.0)], [_h("w", 1.0)]
    assert [h.chunk_id for h in fuse_rrf([only_a, only_b])] == ["x", "w"]
    assert [h.chunk_id for h in fuse_rrf([only_a, only_b], order={"w": 0, "x": 1})] == ["w", "x"]


def test_minmax_hand_computed() -> None:
    assert minmax_normalise([10, 6, 2]) == [1.0, 0.5, 0.0]
    assert minmax_normalise([0.3]) == [1.0] and minmax_normalise([]) == []
    fused = {h.chunk_id: h.score for h in fuse_minmax([A, B])}
    assert fused == pytest.approx({"x": 0.5, "y": 0.75, "z": 0.0, "w": 0.0})
    order = [h.chunk_id for h in fuse_minmax([A, B], order={"w": 0, "z": 1})]
    assert order == ["y", "x", "w", "z"]  # z and w tie at 0: index order decides
    heavy_lex = fuse_minmax([A, B], weights=[0.8, 0.2])
    assert [h.chunk_id for h in heavy_lex][:2] == ["x", "y"]
    assert heavy_lex[0].score == pytest.approx(0.8)
    assert heavy_lex[1].score == pytest.approx(0.8 * 0.5 + 0.2)
    only_dense = fuse_minmax([[], [_h("w", 0.3)]], weights=[0.5, 0.5])
    assert only_dense == [Hit("w", "w", 0.5)]
    with pytest.raises(ConfigError, match="weights"):
        fuse_minmax([A, B], weights=[1.0])


class HashEmbedder:
    """Test double: bag of stemmed words hashed into 64 dims (deterministic, no model)."""

    name = "test-hash-64"

    def __init__(self) -> None:
        self.analyzer = Analyzer("auto")
        self.calls: list[tuple[int, str]] = []

    @property
    def dim(self) -> int:
        return 64

    def embed(self, texts: Sequence[str], kind: EmbedKind = "symmetric") -> np.ndarray:
        self.calls.append((len(texts), kind))
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in self.analyzer.tokens(t):
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


def test_dense_exact_search_matches_brute_force() -> None:
    needs_extra("retrieval", "Stemmer")
    emb = HashEmbedder()
    assert isinstance(emb, Embedder)
    dense = DenseRetriever(emb, query_batch=2)
    dense.index(CHUNKS)
    assert emb.calls == [(5, "passage")]
    queries = ["оплата общежития", "библиотека утра", "volleyball students"]
    hits = dense.search(queries, 2)
    p = emb.embed([c.text for c in CHUNKS], "passage")
    q = emb.embed(queries, "query")
    brute = np.argsort(-(q @ p.T), axis=1, kind="stable")[:, :2]
    assert [[h.chunk_id for h in hs] for hs in hits] == [[CHUNKS[j].chunk_id for j in row]
                                                         for row in brute]
    assert hits[0][0].chunk_id == "pay#0"
    assert ("query" in {k for _, k in emb.calls}) and len(hits) == 3


def test_hybrid_index_once_and_fusion_params() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    emb = HashEmbedder()
    lex, sem = BM25Retriever(), DenseRetriever(emb)
    lex.index(CHUNKS)
    sem.index(CHUNKS)
    hyb = HybridRetriever(lex, sem, method="rrf", k_rrf=10, depth=5)
    hyb.index(CHUNKS)
    assert emb.calls == [(5, "passage")]  # children already held these chunks
    got = hyb.search(["общежитие Ленина"], 3)[0]
    a = lex.search(["общежитие Ленина"], 5)[0]
    b = sem.search(["общежитие Ленина"], 5)[0]
    want = fuse_rrf([a, b], k_rrf=10)[:3]
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
    assert got[0].chunk_id == "addr#0"
    sig = hyb.signature_fields()
    assert sig["fusion"] == "rrf" and sig["k_rrf"] == "10" and sig["embedder"] == "test-hash-64"
    assert sig["stemmer"] == "auto"
    mm = HybridRetriever(lex, sem, method="minmax", weights=(0.3, 0.7))
    assert mm.signature_fields()["weights"] == "0.3,0.7"
    with pytest.raises(ConfigError, match="method"):
        HybridRetriever(lex, sem, method="sum")


def test_make_retriever_factory() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    emb = HashEmbedder()
    params = ChunkingParams(500, 50)
    names = {"bm25": BM25Retriever, "dense": DenseRetriever, "hybrid": HybridRetriever,
             "hybrid-rrf": HybridRetriever, "hybrid-minmax": HybridRetriever}
    for name, cls in names.items():
        r = make_retriever(name, embedder=emb, chunking=params)
        assert isinstance(r, cls) and isinstance(r, Retriever)
        sig = r.signature_fields()
        assert sig["chunk_size"] == 500 and sig["overlap"] == 50
    assert make_retriever("hybrid", embedder=emb).signature_fields()["fusion"] == "minmax"
    assert make_retriever("hybrid-rrf", embedder=emb).signature_fields()["k_rrf"] == "60"
    assert make_retriever("hybrid-minmax", embedder=emb).name == "hybrid-minmax"
    assert make_retriever("bm25", language="ru", k1=1.2).signature_fields()["k1"] == 1.2
    with pytest.raises(ConfigError, match="unknown retriever"):
        make_retriever("splade")
    with pytest.raises(ConfigError, match="unknown option"):
        make_retriever("bm25", k_rrf=3)


def test_retrieve_samples_fills_fields() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    r = BM25Retriever()
    r.index(CHUNKS)
    samples = [Sample("q1", user_input="где общежитие на улице Ленина", gold_doc_ids=["addr"]),
               Sample("q2", user_input="квазар", metadata={"a": 1})]
    out = retrieve_samples(r, samples, 2)
    assert out[0].retrieved_ids is not None and out[0].retrieved_ids[0] == "addr#0"
    assert out[0].retrieved_contexts is not None
    assert out[0].retrieved_contexts[0] == CHUNKS[2].text
    assert out[0].retrieved_scores is not None and len(out[0].retrieved_scores) == 2
    assert out[1].retrieved_ids == [] and out[1].metadata == {"a": 1}
    assert samples[0].retrieved_ids is None  # inputs untouched
    with pytest.raises(DataError, match="q3"):
        retrieve_samples(r, [Sample("q3", user_input=" ")], 2)
