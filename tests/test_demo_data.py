"""The built-in Russian demo data: formats, cross-references and that derived files are fresh."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from collections import Counter
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ragmeter.demo

DATA = Path(ragmeter.demo.__file__).resolve().parent / "data"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build_demo_data.py"
FILES = ("corpus.jsonl", "evalset.jsonl", "chunking.json", "real_users.jsonl",
         "real_users.sqlite", "judge_pipeline.jsonl", "ux_sessions.jsonl",
         "semantic_cache.jsonl", "cache_queries.jsonl", "README.md")


def _jsonl(name: str) -> list[dict[str, Any]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, Any]]:
    return {d["doc_id"]: d for d in _jsonl("corpus.jsonl")}


@pytest.fixture(scope="module")
def evalset() -> list[dict[str, Any]]:
    return _jsonl("evalset.jsonl")


@pytest.fixture(scope="module")
def build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_demo_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_all_files_present() -> None:
    for name in FILES:
        assert (DATA / name).is_file(), name


def test_corpus(corpus: dict[str, dict[str, Any]]) -> None:
    rows = _jsonl("corpus.jsonl")
    assert 50 <= len(rows) <= 70
    assert len(corpus) == len(rows)
    assert len({d["url"] for d in rows}) == len(rows)
    for d in rows:
        assert set(d) == {"doc_id", "title", "url", "text", "metadata"}
        assert d["url"].startswith("https://wiki.sgut.example/")
        assert 600 <= len(d["text"]) <= 2500, d["doc_id"]
        assert d["text"].count("\n\n") >= 1, d["doc_id"]  # several paragraphs
        assert d["metadata"]["section"]
    sections = Counter(d["metadata"]["section"] for d in rows)
    assert sections["dormitory"] >= 2 and sections["scholarships"] >= 2


def test_corpus_loads_with_ragmeter_loader() -> None:
    from ragmeter.retrieval.corpus import load_corpus

    assert len(load_corpus(DATA / "corpus.jsonl")) == len(_jsonl("corpus.jsonl"))


def test_evalset_shape(evalset: list[dict[str, Any]]) -> None:
    assert 90 <= len(evalset) <= 110
    assert len({e["id"] for e in evalset}) == len(evalset)
    assert [e["id"] for e in evalset] == [f"q{i:03d}" for i in range(1, len(evalset) + 1)]
    types = Counter(e["type"] for e in evalset)
    assert set(types) == {"definition", "fact", "negative"}
    n = len(evalset)
    assert 0.15 <= types["definition"] / n <= 0.25
    assert 0.55 <= types["fact"] / n <= 0.75
    assert 0.10 <= types["negative"] / n <= 0.20
    quality = Counter(e["metadata"]["response_quality"] for e in evalset)
    assert set(quality) == {"correct", "partial", "hallucinated", "irrelevant"}
    assert 0.55 <= quality["correct"] / n <= 0.75
    for e in evalset:
        assert e["source"] == "ragmeter-demo"
        assert e["question"].strip() and e["reference"].strip() and e["response"].strip()
        assert isinstance(e["notes"], str)
    assert sum(len(e["gold_doc_ids"]) > 1 for e in evalset) >= 5


def test_evalset_cross_references(evalset: list[dict[str, Any]],
                                  corpus: dict[str, dict[str, Any]]) -> None:
    for e in evalset:
        if e["type"] == "negative":
            assert e["gold_doc_ids"] == [] and e["gold_chunk_ids"] == [] and e["evidence"] == []
            continue
        assert e["gold_doc_ids"], e["id"]
        assert all(g in corpus for g in e["gold_doc_ids"]), e["id"]
        assert e["evidence"], e["id"]
        for ev in e["evidence"]:
            assert any(ev in corpus[g]["text"] for g in e["gold_doc_ids"]), (e["id"], ev)


def test_gold_chunks_exist_in_chunked_corpus(evalset: list[dict[str, Any]],
                                             corpus: dict[str, dict[str, Any]]) -> None:
    from ragmeter.retrieval.chunking import chunk_documents
    from ragmeter.retrieval.corpus import Document

    params = json.loads((DATA / "chunking.json").read_text(encoding="utf-8"))
    assert params["chunk_size_chars"] == 800 and params["overlap_chars"] == 120
    chunks = chunk_documents([Document(d["doc_id"], d["text"]) for d in corpus.values()],
                             chunk_size_chars=params["chunk_size_chars"],
                             overlap_chars=params["overlap_chars"])
    assert params["n_chunks"] == len(chunks)
    by_id = {c.chunk_id: c for c in chunks}
    for e in evalset:
        if e["type"] == "negative":
            continue
        assert e["gold_chunk_ids"], e["id"]
        for cid in e["gold_chunk_ids"]:
            assert cid in by_id, (e["id"], cid)
            assert by_id[cid].doc_id in e["gold_doc_ids"], (e["id"], cid)
        # every evidence string is (mostly) inside one of the gold chunks
        for ev in e["evidence"]:
            head = ev[: max(1, len(ev) // 2)]
            tail = ev[len(ev) // 2:]
            assert any(head in by_id[c].text or tail in by_id[c].text
                       for c in e["gold_chunk_ids"]), (e["id"], ev)


def test_evalset_loads_with_ragmeter_loader(evalset: list[dict[str, Any]]) -> None:
    from ragmeter.data.evalset import load_evalset

    result = load_evalset(DATA / "evalset.jsonl")
    assert len(result.samples) == len(evalset)
    assert sum(s.is_negative for s in result.samples) == sum(
        e["type"] == "negative" for e in evalset)


def test_real_users_jsonl_and_sqlite(corpus: dict[str, dict[str, Any]],
                                     build_script: ModuleType) -> None:
    rows = _jsonl("real_users.jsonl")
    assert 50 <= len(rows) <= 70
    columns = ("id", "question", "answer", "confluence_url", "score", "created_at")
    urls = {build_script.normalise_url(d["url"]) for d in corpus.values()}
    for r in rows:
        assert tuple(sorted(r)) == tuple(sorted(columns))
        assert 1 <= r["score"] <= 5
        datetime.fromisoformat(r["created_at"])
        if r["confluence_url"] is not None:
            assert build_script.normalise_url(r["confluence_url"]) in urls
    raw = [r["confluence_url"] for r in rows]
    nulls = sum(u is None for u in raw)
    assert 0.05 <= nulls / len(rows) <= 0.15
    given = [u for u in raw if u]
    assert any(u.startswith("http://") for u in given)
    assert any("WIKI.SGUT.EXAMPLE" in u for u in given)
    assert any("?utm_source=bot" in u for u in given)
    assert any("#" in u for u in given)
    assert any(u.endswith("/") for u in given)

    con = sqlite3.connect(f"file:{DATA / 'real_users.sqlite'}?mode=ro", uri=True)
    try:
        info = con.execute("PRAGMA table_info(question_answer)").fetchall()
        assert tuple(c[1] for c in info) == columns
        assert {c[1]: c[2] for c in info}["id"] == "INTEGER" and info[0][5] == 1  # primary key
        db_rows = con.execute(f"SELECT {', '.join(columns)} FROM question_answer "
                              "ORDER BY id").fetchall()
    finally:
        con.close()
    assert db_rows == [tuple(r[c] for c in columns) for r in sorted(rows, key=lambda r: r["id"])]


def test_judge_pipeline() -> None:
    rows = _jsonl("judge_pipeline.jsonl")
    assert 30 <= len(rows) <= 50
    assert len({r["id"] for r in rows}) == len(rows)
    right = 0
    for r in rows:
        for key in ("question", "answer", "context", "rationale"):
            assert isinstance(r[key], str) and r[key].strip()
        assert isinstance(r["ground_truth_show"], bool) and isinstance(r["predicted_show"], bool)
        assert 0.0 <= r["predicted_score"] <= 1.0
        assert r["predicted_show"] == (r["predicted_score"] >= 0.5)
        right += r["predicted_show"] == r["ground_truth_show"]
    assert 0.8 <= right / len(rows) <= 0.9
    labels = Counter(r["ground_truth_show"] for r in rows)
    assert labels[True] and labels[False]


def test_ux_sessions() -> None:
    rows = _jsonl("ux_sessions.jsonl")
    assert 12 <= len(rows) <= 20
    assert len({r["session_id"] for r in rows}) == len(rows)
    for r in rows:
        assert 3 <= len(r["turns"]) <= 5
        for t in r["turns"]:
            assert t["question"].strip() and t["answer"].strip()
    assert 2 <= sum(r["metadata"]["contradiction"] for r in rows) <= 3
    assert sum(not r["metadata"]["coherent"] for r in rows) >= 2


def test_semantic_cache(corpus: dict[str, dict[str, Any]]) -> None:
    cache = _jsonl("semantic_cache.jsonl")
    queries = _jsonl("cache_queries.jsonl")
    assert 25 <= len(cache) <= 35 and 35 <= len(queries) <= 45
    by_id = {c["id"]: c for c in cache}
    assert all(c["source_doc_id"] in corpus and c["answer"].strip() for c in cache)
    kinds = Counter(q["metadata"]["kind"] for q in queries)
    assert set(kinds) == {"paraphrase", "trap", "unrelated"}
    cached_questions = {c["question"] for c in cache}
    for q in queries:
        assert q["question"] not in cached_questions
        assert q["gold_doc_id"] is None or q["gold_doc_id"] in corpus
        kind = q["metadata"]["kind"]
        if kind != "unrelated":
            source = by_id[q["metadata"]["nearest_cache_id"]]["source_doc_id"]
            assert (source == q["gold_doc_id"]) == (kind == "paraphrase"), q["id"]


def test_derived_files_are_up_to_date(build_script: ModuleType) -> None:
    problems, stale, summary = build_script.build(DATA, check=True)
    assert not problems, problems.items
    assert stale == [], f"run scripts/build_demo_data.py (stale: {stale})"
    assert summary["questions"] == len(_jsonl("evalset.jsonl"))


def test_build_reports_bad_evidence_and_is_deterministic(tmp_path: Path,
                                                         build_script: ModuleType) -> None:
    work = tmp_path / "data"
    shutil.copytree(DATA, work)
    first = {p.name: p.read_bytes() for p in work.iterdir()}
    problems, _, _ = build_script.build(work)
    assert not problems
    assert {p.name: p.read_bytes() for p in work.iterdir()} == first
    (work / "real_users.sqlite").unlink()
    build_script.build(work)
    once = (work / "real_users.sqlite").read_bytes()
    (work / "real_users.sqlite").unlink()
    build_script.build(work)
    assert (work / "real_users.sqlite").read_bytes() == once

    rows = _jsonl("evalset.jsonl")
    target = next(r for r in rows if r["type"] != "negative")
    target["evidence"] = [target["evidence"][0] + " (не из документа)"]
    rows[1]["gold_doc_ids"] = ["no-such-doc"]
    (work / "evalset.jsonl").write_text(build_script.dump_jsonl(rows), encoding="utf-8")
    problems, _, _ = build_script.build(work)
    text = "\n".join(problems.items)
    assert "not an exact substring" in text
    assert "unknown doc_id 'no-such-doc'" in text
