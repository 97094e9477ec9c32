#!/usr/bin/env python
"""Validate the built-in Russian demo data and derive the generated parts.

The demo data (``src/ragmeter/demo/data/``) is hand-written; this script is the only thing that
changes it, and only in three derived places:

* ``evalset.jsonl``: ``gold_chunk_ids`` are recomputed by chunking ``corpus.jsonl`` with
  ``ragmeter.retrieval.chunking.chunk_documents`` (800 / 120 chars). A chunk is gold when it
  holds the bulk (>= ``MIN_EVIDENCE_SHARE``) of one of the item's evidence strings; when no
  chunk does, the chunk holding most of it.
* ``chunking.json``: the chunking parameters and the resulting chunk counts.
* ``real_users.sqlite``: table ``question_answer`` rebuilt from ``real_users.jsonl``.

Everything else is only validated: ids unique, doc ids exist, evidence strings are exact
substrings of a gold document, types and labels valid, and so on. Every problem is listed
(``file:line: field: message``) and the script exits 1 without writing anything.

Usage::

    python scripts/build_demo_data.py            # validate, then (re)write derived files
    python scripts/build_demo_data.py --check    # validate; exit 1 if a derived file is stale

Running it twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT / "src" / "ragmeter" / "demo" / "data"

CHUNK_SIZE_CHARS = 800
OVERLAP_CHARS = 120
MIN_EVIDENCE_SHARE = 0.5

QUESTION_TYPES = ("definition", "fact", "negative")
RESPONSE_QUALITIES = ("correct", "partial", "hallucinated", "irrelevant")
CACHE_QUERY_KINDS = ("paraphrase", "trap", "unrelated")
DOC_TEXT_CHARS = (600, 2500)
URL_PREFIX = "https://wiki.sgut.example/"
SOURCE = "ragmeter-demo"

EVALSET_FIELDS = ("id", "question", "type", "gold_doc_ids", "gold_chunk_ids", "reference",
                  "evidence", "response", "notes", "source", "metadata")
REAL_USER_COLUMNS = ("id", "question", "answer", "confluence_url", "score", "created_at")
SQLITE_SCHEMA = (
    "CREATE TABLE question_answer (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  question TEXT NOT NULL,\n"
    "  answer TEXT,\n"
    "  confluence_url TEXT,\n"
    "  score INTEGER,\n"
    "  created_at TEXT NOT NULL\n"
    ")"
)

Row = dict[str, Any]


class Problems:
    """Collects every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, source: str, line: int | None, field: str | None, message: str) -> None:
        where = source if line is None else f"{source}:{line}"
        self.items.append(f"{where}: {field + ': ' if field else ''}{message}")

    def __bool__(self) -> bool:
        return bool(self.items)


# --------------------------------------------------------------------------- io


def read_jsonl(path: Path, problems: Problems) -> list[tuple[int, Row]]:
    """``(line number, object)`` for every non-empty line; bad lines go to ``problems``."""
    rows: list[tuple[int, Row]] = []
    if not path.exists():
        problems.add(path.name, None, None, "file is missing")
        return rows
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(path.name, lineno, None, f"invalid JSON: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            problems.add(path.name, lineno, None, "expected a JSON object")
            continue
        rows.append((lineno, obj))
    return rows


def dump_jsonl(rows: Iterable[Row]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _is_str(value: Any, *, empty_ok: bool = False) -> bool:
    return isinstance(value, str) and (empty_ok or bool(value.strip()))


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_str(v) for v in value)


def _unique(rows: Sequence[tuple[int, Row]], key: str, source: str, problems: Problems) -> None:
    seen: dict[Any, int] = {}
    for lineno, row in rows:
        value = row.get(key)
        if value is None:
            problems.add(source, lineno, key, "missing")
        elif value in seen:
            problems.add(source, lineno, key, f"duplicate {value!r} (first on line {seen[value]})")
        else:
            seen[value] = lineno


def normalise_url(url: str) -> str:
    """The URL a real-users row points at, reduced to ``https://host/path`` (lower-case host,
    no query, no fragment, no trailing slash). Only used here to check the demo rows."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    return f"https://{parts.netloc.lower()}{path}"


# --------------------------------------------------------------------------- corpus


def validate_corpus(rows: Sequence[tuple[int, Row]], problems: Problems) -> dict[str, Row]:
    src = "corpus.jsonl"
    _unique(rows, "doc_id", src, problems)
    _unique(rows, "url", src, problems)
    docs: dict[str, Row] = {}
    for lineno, row in rows:
        for key in ("doc_id", "title", "url", "text"):
            if not _is_str(row.get(key)):
                problems.add(src, lineno, key, "missing or not a non-empty string")
        meta = row.get("metadata")
        if not isinstance(meta, dict) or not _is_str(meta.get("section")):
            problems.add(src, lineno, "metadata", "must be an object with a 'section'")
        url = row.get("url")
        if isinstance(url, str) and not url.startswith(URL_PREFIX):
            problems.add(src, lineno, "url", f"must start with {URL_PREFIX}")
        text = row.get("text")
        if isinstance(text, str) and not DOC_TEXT_CHARS[0] <= len(text) <= DOC_TEXT_CHARS[1]:
            problems.add(src, lineno, "text", f"{len(text)} chars, expected {DOC_TEXT_CHARS}")
        if isinstance(row.get("doc_id"), str):
            docs.setdefault(row["doc_id"], row)
    return docs


def chunk_corpus(docs: dict[str, Row]) -> list[Any]:
    from ragmeter.retrieval.chunking import chunk_documents
    from ragmeter.retrieval.corpus import Document

    documents = [Document(d["doc_id"], d["text"], d.get("title"), d.get("url"),
                          dict(d.get("metadata") or {})) for d in docs.values()]
    return chunk_documents(documents, chunk_size_chars=CHUNK_SIZE_CHARS,
                           overlap_chars=OVERLAP_CHARS)


def gold_chunks(gold_doc_ids: Sequence[str], evidence: Sequence[str], docs: dict[str, Row],
                chunks_by_doc: dict[str, list[Any]]) -> list[str]:
    """Chunks holding the bulk of an evidence string, in gold-doc then chunk order."""
    picked: set[str] = set()
    for doc_id in gold_doc_ids:
        text = docs[doc_id]["text"]
        for ev in evidence:
            start = text.find(ev)
            if start < 0:
                continue
            stop = start + len(ev)
            overlaps = [(min(stop, c.metadata["char_end"]) - max(start, c.metadata["char_start"]),
                         c.chunk_id) for c in chunks_by_doc[doc_id]]
            bulk = [cid for ov, cid in overlaps if ov >= MIN_EVIDENCE_SHARE * len(ev)]
            if not bulk:
                bulk = [max(overlaps)[1]]
            picked.update(bulk)
    order = {c.chunk_id: (gold_doc_ids.index(d), i) for d in gold_doc_ids
             for i, c in enumerate(chunks_by_doc[d])}
    return sorted(picked, key=order.__getitem__)


# --------------------------------------------------------------------------- evalset


def validate_evalset(rows: Sequence[tuple[int, Row]], docs: dict[str, Row],
                     problems: Problems) -> None:
    src = "evalset.jsonl"
    _unique(rows, "id", src, problems)
    _unique(rows, "question", src, problems)
    for lineno, row in rows:
        missing = [f for f in EVALSET_FIELDS if f not in row]
        if missing:
            problems.add(src, lineno, None, f"missing fields {missing}")
            continue
        for key in ("id", "question", "reference", "response"):
            if not _is_str(row[key]):
                problems.add(src, lineno, key, "must be a non-empty string")
        if not _is_str(row["notes"], empty_ok=True):
            problems.add(src, lineno, "notes", "must be a string")
        if row["source"] != SOURCE:
            problems.add(src, lineno, "source", f"must be {SOURCE!r}")
        qtype = row["type"]
        if qtype not in QUESTION_TYPES:
            problems.add(src, lineno, "type", f"{qtype!r} not in {QUESTION_TYPES}")
        meta = row["metadata"]
        if not isinstance(meta, dict) or meta.get("response_quality") not in RESPONSE_QUALITIES:
            problems.add(src, lineno, "metadata.response_quality",
                         f"must be one of {RESPONSE_QUALITIES}")
        golds, evidence = row["gold_doc_ids"], row["evidence"]
        if not _str_list(golds) or not _str_list(evidence) or not _str_list(row["gold_chunk_ids"]):
            problems.add(src, lineno, None,
                         "gold_doc_ids, gold_chunk_ids, evidence must be lists of strings")
            continue
        if qtype == "negative":
            if golds or evidence:
                problems.add(src, lineno, "gold_doc_ids",
                             "a negative question has no gold documents and no evidence")
            continue
        if not golds:
            problems.add(src, lineno, "gold_doc_ids", "empty for a non-negative question")
        if len(set(golds)) != len(golds):
            problems.add(src, lineno, "gold_doc_ids", "duplicate ids")
        unknown = [g for g in golds if g not in docs]
        for g in unknown:
            problems.add(src, lineno, "gold_doc_ids", f"unknown doc_id {g!r}")
        known = [g for g in golds if g in docs]
        if not evidence:
            problems.add(src, lineno, "evidence", "empty for a non-negative question")
        for ev in evidence:
            if not any(ev in docs[g]["text"] for g in known):
                problems.add(src, lineno, "evidence",
                             f"not an exact substring of a gold document: {ev[:60]!r}")
        for g in known:
            if not any(ev in docs[g]["text"] for ev in evidence):
                problems.add(src, lineno, "evidence", f"no evidence string from gold doc {g!r}")


def fill_gold_chunks(rows: Sequence[tuple[int, Row]], docs: dict[str, Row],
                     chunks: Sequence[Any]) -> list[Row]:
    by_doc: dict[str, list[Any]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out: list[Row] = []
    for _, row in rows:
        new = {k: row[k] for k in EVALSET_FIELDS}
        new["gold_chunk_ids"] = ([] if row["type"] == "negative" else
                                 gold_chunks(row["gold_doc_ids"], row["evidence"], docs, by_doc))
        out.append(new)
    return out


# --------------------------------------------------------------------------- real users


def validate_real_users(rows: Sequence[tuple[int, Row]], docs: dict[str, Row],
                        problems: Problems) -> None:
    src = "real_users.jsonl"
    _unique(rows, "id", src, problems)
    doc_urls = {normalise_url(d["url"]) for d in docs.values() if isinstance(d.get("url"), str)}
    for lineno, row in rows:
        if sorted(row) != sorted(REAL_USER_COLUMNS):
            problems.add(src, lineno, None, f"fields must be exactly {REAL_USER_COLUMNS}")
            continue
        if not isinstance(row["id"], int) or isinstance(row["id"], bool):
            problems.add(src, lineno, "id", "must be an integer")
        for key in ("question", "answer"):
            if not _is_str(row[key]):
                problems.add(src, lineno, key, "must be a non-empty string")
        url = row["confluence_url"]
        if url is not None:
            if not isinstance(url, str):
                problems.add(src, lineno, "confluence_url", "must be a string or null")
            elif normalise_url(url) not in doc_urls:
                problems.add(src, lineno, "confluence_url",
                             f"does not normalise to a corpus URL: {url!r}")
        score = row["score"]
        if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 5:
            problems.add(src, lineno, "score", "must be an integer 1..5")
        try:
            datetime.fromisoformat(str(row["created_at"]))
        except ValueError:
            problems.add(src, lineno, "created_at", "not an ISO timestamp")


def build_sqlite(rows: Sequence[tuple[int, Row]], path: Path) -> None:
    """Write ``question_answer`` to a fresh SQLite file (rows in id order)."""
    if path.exists():
        path.unlink()
    con = sqlite3.connect(str(path), isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("BEGIN")
        con.execute(SQLITE_SCHEMA)
        con.executemany(
            "INSERT INTO question_answer VALUES (?, ?, ?, ?, ?, ?)",
            [tuple(r[c] for c in REAL_USER_COLUMNS)
             for _, r in sorted(rows, key=lambda x: x[1]["id"])],
        )
        con.execute("COMMIT")
    finally:
        con.close()


def sqlite_rows(path: Path) -> list[tuple[Any, ...]] | None:
    if not path.exists():
        return None
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(question_answer)")]
        if tuple(cols) != REAL_USER_COLUMNS:
            return None
        return list(con.execute(f"SELECT {', '.join(REAL_USER_COLUMNS)} FROM question_answer "
                                "ORDER BY id"))
    except sqlite3.DatabaseError:
        return None
    finally:
        con.close()


# --------------------------------------------------------------------------- judge pipeline


def validate_judge_pipeline(rows: Sequence[tuple[int, Row]],
                            problems: Problems) -> dict[str, float]:
    src = "judge_pipeline.jsonl"
    _unique(rows, "id", src, problems)
    tp = tn = fp = fn = 0
    for lineno, row in rows:
        for key in ("id", "question", "answer", "context", "rationale"):
            if not _is_str(row.get(key)):
                problems.add(src, lineno, key, "must be a non-empty string")
        truth, pred, score = (row.get("ground_truth_show"), row.get("predicted_show"),
                              row.get("predicted_score"))
        if not isinstance(truth, bool) or not isinstance(pred, bool):
            problems.add(src, lineno, "ground_truth_show/predicted_show", "must be booleans")
            continue
        if (not isinstance(score, (int, float)) or isinstance(score, bool)
                or not 0.0 <= score <= 1.0 or math.isnan(score)):
            problems.add(src, lineno, "predicted_score", "must be a number in [0, 1]")
        elif pred != (score >= 0.5):
            problems.add(src, lineno, "predicted_show", "must equal predicted_score >= 0.5")
        tp += truth and pred
        tn += (not truth) and (not pred)
        fp += (not truth) and pred
        fn += truth and not pred
    n = tp + tn + fp + fn
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    return {"n": n, "accuracy": (tp + tn) / n if n else float("nan"), "precision": prec,
            "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else float("nan")}


# --------------------------------------------------------------------------- UX


def validate_ux_sessions(rows: Sequence[tuple[int, Row]], problems: Problems) -> None:
    src = "ux_sessions.jsonl"
    _unique(rows, "session_id", src, problems)
    for lineno, row in rows:
        turns = row.get("turns")
        if not isinstance(turns, list) or not 3 <= len(turns) <= 5:
            problems.add(src, lineno, "turns", "must be a list of 3..5 turns")
            continue
        for i, turn in enumerate(turns):
            if not isinstance(turn, dict) or not _is_str(turn.get("question")) \
                    or not _is_str(turn.get("answer")):
                problems.add(src, lineno, f"turns[{i}]", "needs non-empty question and answer")
        meta = row.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("contradiction"), bool) \
                or not isinstance(meta.get("coherent"), bool):
            problems.add(src, lineno, "metadata", "needs booleans 'coherent' and 'contradiction'")


def validate_cache(cache: Sequence[tuple[int, Row]], queries: Sequence[tuple[int, Row]],
                   docs: dict[str, Row], problems: Problems) -> None:
    _unique(cache, "id", "semantic_cache.jsonl", problems)
    _unique(cache, "question", "semantic_cache.jsonl", problems)
    cache_ids = {r.get("id"): r for _, r in cache}
    for lineno, row in cache:
        for key in ("id", "question", "answer", "source_doc_id"):
            if not _is_str(row.get(key)):
                problems.add("semantic_cache.jsonl", lineno, key, "must be a non-empty string")
        if row.get("source_doc_id") not in docs:
            problems.add("semantic_cache.jsonl", lineno, "source_doc_id", "unknown doc_id")
    src = "cache_queries.jsonl"
    _unique(queries, "id", src, problems)
    _unique(queries, "question", src, problems)
    for lineno, row in queries:
        if not _is_str(row.get("question")):
            problems.add(src, lineno, "question", "must be a non-empty string")
        gold = row.get("gold_doc_id")
        if gold is not None and gold not in docs:
            problems.add(src, lineno, "gold_doc_id", f"unknown doc_id {gold!r}")
        meta = row.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        kind = meta.get("kind")
        if kind not in CACHE_QUERY_KINDS:
            problems.add(src, lineno, "metadata.kind", f"must be one of {CACHE_QUERY_KINDS}")
            continue
        near = meta.get("nearest_cache_id")
        if kind in ("paraphrase", "trap"):
            if near not in cache_ids:
                problems.add(src, lineno, "metadata.nearest_cache_id", "unknown cache id")
                continue
            same = cache_ids[near].get("source_doc_id") == gold
            if same != (kind == "paraphrase"):
                problems.add(src, lineno, "gold_doc_id",
                             "a paraphrase shares its cached entry's source, a trap does not")


# --------------------------------------------------------------------------- main


def build(data_dir: Path, *, check: bool = False) -> tuple[Problems, list[str], dict[str, Any]]:
    """Validate ``data_dir``; write derived files unless ``check``.

    Returns (problems, stale-or-written file names, summary)."""
    problems = Problems()
    corpus_rows = read_jsonl(data_dir / "corpus.jsonl", problems)
    docs = validate_corpus(corpus_rows, problems)
    eval_rows = read_jsonl(data_dir / "evalset.jsonl", problems)
    validate_evalset(eval_rows, docs, problems)
    users = read_jsonl(data_dir / "real_users.jsonl", problems)
    validate_real_users(users, docs, problems)
    judge = read_jsonl(data_dir / "judge_pipeline.jsonl", problems)
    judge_metrics = validate_judge_pipeline(judge, problems)
    ux = read_jsonl(data_dir / "ux_sessions.jsonl", problems)
    validate_ux_sessions(ux, problems)
    cache = read_jsonl(data_dir / "semantic_cache.jsonl", problems)
    queries = read_jsonl(data_dir / "cache_queries.jsonl", problems)
    validate_cache(cache, queries, docs, problems)
    if problems:
        return problems, [], {}

    chunks = chunk_corpus(docs)
    evalset = fill_gold_chunks(eval_rows, docs, chunks)
    chunk_info = {
        "chunk_size_chars": CHUNK_SIZE_CHARS,
        "overlap_chars": OVERLAP_CHARS,
        "chunker": "ragmeter.retrieval.chunking.chunk_documents",
        "gold_chunk_rule": f"chunk holds >= {MIN_EVIDENCE_SHARE:g} of an evidence string "
                           "(else the chunk holding most of it)",
        "n_documents": len(docs),
        "n_chunks": len(chunks),
    }
    try:
        from ragmeter.retrieval.chunking import CHUNKER_VERSION
        chunk_info["chunker_version"] = CHUNKER_VERSION
    except ImportError:  # pragma: no cover - older chunking module
        pass
    outputs = {
        "evalset.jsonl": dump_jsonl(evalset),
        "chunking.json": json.dumps(chunk_info, ensure_ascii=False, indent=2,
                                    sort_keys=True) + "\n",
    }
    changed = [name for name, text in outputs.items()
               if not (data_dir / name).exists()
               or (data_dir / name).read_text(encoding="utf-8") != text]
    db = data_dir / "real_users.sqlite"
    wanted = [tuple(r[c] for c in REAL_USER_COLUMNS)
              for _, r in sorted(users, key=lambda x: x[1]["id"])]
    if sqlite_rows(db) != wanted:
        changed.append(db.name)
    if not check:
        for name in changed:
            if name == db.name:
                with tempfile.TemporaryDirectory() as tmp:
                    tmp_db = Path(tmp) / db.name
                    build_sqlite(users, tmp_db)
                    db.write_bytes(tmp_db.read_bytes())
            else:
                (data_dir / name).write_text(outputs[name], encoding="utf-8", newline="\n")
    summary = {"documents": len(docs), "chunks": len(chunks), "questions": len(evalset),
               "gold_chunks": sum(len(r["gold_chunk_ids"]) for r in evalset),
               "real_users": len(users), "judge_items": len(judge), "judge_metrics": judge_metrics,
               "ux_sessions": len(ux), "cache_entries": len(cache), "cache_queries": len(queries)}
    return problems, changed, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--check", action="store_true",
                        help="only validate; exit 1 if a derived file is out of date")
    args = parser.parse_args(argv)
    problems, changed, summary = build(args.data_dir, check=args.check)
    if problems:
        print(f"{len(problems.items)} problem(s) in {args.data_dir}:", file=sys.stderr)
        for p in problems.items:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    if args.check:
        if changed:
            print(f"out of date: {', '.join(changed)} (run scripts/build_demo_data.py)",
                  file=sys.stderr)
            return 1
        print("demo data is valid and up to date")
    else:
        print(f"wrote: {', '.join(changed) if changed else 'nothing (already up to date)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
