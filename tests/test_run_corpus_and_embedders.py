"""`ragmeter run` with built-in retrievers on a production system's golden set: a pre-chunked
knowledge base (lines with doc_id and chunk_id) keeps its chunk ids, gold ids that cannot
exist in the index fail the run with the fix, a named ``openai:`` embedding keeps its URL,
dimensions and key in every tier, and an evalset ``type`` is any label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.retrieval.chunking import chunk_documents
from ragmeter.retrieval.corpus import load_corpus
from ragmeter.targets.example_service import DATA

pytest.importorskip("bm25s", reason="the built-in BM25 retriever (ragmeter[retrieval])")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _production(tmp_path: Path, *, relabel: bool = True) -> tuple[Path, Path]:
    """The demo knowledge base as a production system keeps it: chunks with opaque ids
    (c0001, ...), and the golden set in those ids (``relabel``: its types are the team's own
    labels)."""
    chunks = chunk_documents(load_corpus(DATA / "corpus.jsonl"))
    rename = {c.chunk_id: f"c{i + 1:04d}" for i, c in enumerate(chunks)}
    kb = _write(tmp_path / "kb_chunks.jsonl", [
        {"doc_id": c.doc_id, "chunk_id": rename[c.chunk_id], "text": c.text,
         "title": c.title, "url": c.url} for c in chunks])
    rows = [json.loads(x) for x in (DATA / "evalset.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    labels = {"fact": "lookup", "definition": "what_is", "negative": "negative"} if relabel \
        else {t: t for t in ("fact", "definition", "negative")}
    gold = _write(tmp_path / "golden.jsonl", [
        {**r, "gold_chunk_ids": [rename[g] for g in r.get("gold_chunk_ids") or []],
         "type": labels[r["type"]]} for r in rows])
    return kb, gold


def _bench(tmp_path: Path, evalset: Path, corpus: Path, metrics: list[str],
           **extra: Any) -> Path:
    cfg = {"name": "prod", "k": [5], "store": str(tmp_path / "runs.sqlite"),
           "run_dir": str(tmp_path / "runs"),
           "datasets": [{"path": str(evalset), "format": "evalset"}],
           "corpus": {"path": str(corpus)}, "retrievers": [{"name": "bm25", "type": "bm25"}],
           "tiers": [{"name": "retrieval", "metrics": metrics}], **extra}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], bench: Path) -> tuple[int, Any, str]:
    code, out, err = run_cli(capsys, "run", str(bench), "--json", "--quiet")
    start = out.find("{")
    return code, json.loads(out[start:]) if start >= 0 else None, err


def _agg(run: Any, tier: str, metric: str, system: str = "bm25") -> Any:
    res = next(r for r in run["tiers"][tier]["results"] if r["name"] == system)
    return res["results"][metric]["aggregate"]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))


def test_a_pre_chunked_knowledge_base_keeps_its_chunk_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb, gold = _production(tmp_path)
    code, run, err = _run(capsys, _bench(tmp_path, gold, kb, [
        "hit_rate@5", "hit_rate@5(level=doc)"]))
    assert code == 0, err
    chunk, doc = _agg(run, "retrieval", "hit_rate@5"), _agg(run, "retrieval",
                                                            "hit_rate@5(level=doc)")
    assert run["tiers"]["retrieval"]["status"] == "ok"
    assert chunk["n"] == 95 and chunk["mean"] > 0.6        # the production ids are found
    assert doc["mean"] >= chunk["mean"]                    # documents known from the index
    # the same golden set against the documents (chunked by ragmeter, ids doc#n) is run on
    # the same chunks: the values agree
    code, demo, err = _run(capsys, _bench(tmp_path, DATA / "evalset.jsonl",
                                          DATA / "corpus.jsonl", ["hit_rate@5"]))
    assert code == 0, err
    assert _agg(demo, "retrieval", "hit_rate@5")["mean"] == chunk["mean"]


def test_gold_ids_that_cannot_exist_in_the_index_fail_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, gold = _production(tmp_path, relabel=False)   # chunk ids c0001..., corpus as documents
    code, _, err = _run(capsys, _bench(tmp_path, gold, DATA / "corpus.jsonl",
                                       ["hit_rate@5", "mrr"]))
    assert code == 3, err
    assert "gold chunk ids are not in the index" in err and "'c0001'" in err
    assert "level=doc" in err and "pre-chunked" in err
    # at document level the same golden set can be scored: the documents are in the index
    code, run, err = _run(capsys, _bench(tmp_path, gold, DATA / "corpus.jsonl",
                                         ["hit_rate@5(level=doc)"]))
    assert code == 0, err
    assert _agg(run, "retrieval", "hit_rate@5(level=doc)")["mean"] > 0.6


def test_corpus_lines_mixing_chunked_and_not_are_one_error(tmp_path: Path) -> None:
    from ragmeter.errors import DataError

    path = _write(tmp_path / "mixed.jsonl", [
        {"doc_id": "a", "chunk_id": "a-1", "text": "one"},
        {"doc_id": "a", "chunk_id": "a-1", "text": "two"},
        {"doc_id": "b", "text": "three"}])
    with pytest.raises(DataError) as info:
        load_corpus(path)
    got = {(p.line, p.field) for p in info.value.problems}
    assert got == {(2, "chunk_id"), (3, "chunk_id")}
    assert "duplicate chunk_id 'a-1'" in str(info.value)


def test_a_named_openai_embedding_keeps_its_url_dimensions_and_key_in_every_tier(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_EMB_KEY", "emb-key-123")
    with MockJudgeServer(MockConfig(require_api_key="emb-key-123")) as srv:
        bench = _bench(
            tmp_path, DATA / "evalset.jsonl", DATA / "corpus.jsonl", ["hit_rate@5"],
            embeddings=[{"name": "remote", "model": "openai:mock-emb", "options": {
                "base_url": srv.base_url, "api_key_env": "RAG_EMB_KEY", "dimensions": 48}}],
            retrievers=[{"name": "dense", "type": "dense", "embedding": "remote"}],
            tiers=[{"name": "retrieval", "metrics": ["hit_rate@5"]},
                   {"name": "generation", "metrics": ["semantic_similarity"],
                    "options": {"embedding": "remote"}},
                   {"name": "e2e", "metrics": ["semantic_similarity"],
                    "options": {"embedding": "remote"}}])
        code, run, err = _run(capsys, bench)
        stats = srv.stats()
    assert code == 0, err
    assert stats["embedding_requests"] > 0 and not stats.get("faults", {}).get("401")
    for tier in ("generation", "e2e"):
        res = next(r for r in run["tiers"][tier]["results"])
        sim = res["results"]["semantic_similarity(model=openai:mock-emb)"]
        assert sim["aggregate"]["n"] > 0, (tier, sim["aggregate"])
        assert "openai:mock-emb@127.0.0.1" in sim["signature"] and "dim=48" in sim["signature"]
    assert _agg(run, "retrieval", "hit_rate@5", "dense")["n"] == 95


def test_an_evalset_type_is_any_label_and_slices_by_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, gold = _production(tmp_path)          # types lookup / what_is / negative
    code, run, err = _run(capsys, _bench(tmp_path, gold, DATA / "corpus.jsonl",
                                         ["hit_rate@5(level=doc)"],
                                         slices={"by": ["type"], "min_n": 5}))
    assert code == 0, err
    res = next(r for r in run["tiers"]["retrieval"]["results"] if r["name"] == "bm25")
    keys = res["meta"]["slices"]["keys"]
    assert {tuple(k) for k in keys.values()} == {("lookup",), ("what_is",), ("negative",)}
