"""BEIR datasets: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv`` and results JSON.

Layouts (as the BEIR repository documents them):

* ``corpus.jsonl``: ``{"_id": ..., "title": ..., "text": ..., "metadata"?: {...}}`` per line;
* ``queries.jsonl``: ``{"_id": ..., "text": ..., "metadata"?: {...}}`` per line;
* ``qrels/test.tsv``: header ``query-id<TAB>corpus-id<TAB>score``, then one judgement per line;
* results: ``{qid: {doc_id: score}}`` JSON — the same as a ragmeter run (:func:`load_run`).

:func:`load_beir` turns a BEIR folder into samples (question + graded gold doc ids) and the
corpus as :class:`~ragmeter.retrieval.corpus.Document`-like dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragmeter.data.reading import read_table
from ragmeter.data.sample import Sample
from ragmeter.data.trec import Qrels, load_qrels
from ragmeter.errors import DataError, RecordProblem


def _id_text(path: str | Path, kind: str) -> list[dict[str, Any]]:
    t = read_table(path)
    problems = list(t.problems)
    out: list[dict[str, Any]] = []
    seen: dict[str, int | None] = {}
    for line, rec in t.records:
        if not isinstance(rec, Mapping):
            problems.append(RecordProblem(str(path), line, None, "a record must be an object"))
            continue
        rid = rec.get("_id")
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid).strip() == "":
            problems.append(RecordProblem(str(path), line, "_id", "missing or not a string"))
            continue
        text = rec.get("text")
        if not isinstance(text, str):
            problems.append(RecordProblem(str(path), line, "text", "missing or not a string"))
            continue
        if str(rid) in seen:
            problems.append(RecordProblem(str(path), line, "_id",
                                          f"duplicate {kind} id '{rid}' (first on line "
                                          f"{seen[str(rid)]})"))
            continue
        seen[str(rid)] = line
        title = rec.get("title")
        meta = rec.get("metadata")
        out.append({"id": str(rid), "text": text,
                    "title": title if isinstance(title, str) else None,
                    "metadata": dict(meta) if isinstance(meta, Mapping) else {}})
    if problems:
        raise DataError(problems)
    return out


def load_beir_corpus(path: str | Path) -> list[dict[str, Any]]:
    """``corpus.jsonl`` → ``[{"id", "text", "title", "metadata"}]`` (every problem reported)."""
    return _id_text(path, "document")


def load_beir_queries(path: str | Path) -> dict[str, str]:
    """``queries.jsonl`` → ``{query_id: text}``."""
    return {r["id"]: r["text"] for r in _id_text(path, "query")}


def load_beir(folder: str | Path, split: str = "test") -> tuple[list[Sample], list[dict[str, Any]]]:
    """A BEIR folder → (samples with graded gold doc ids, corpus records).

    Queries without judgements in the split are left out (as BEIR's evaluation does).
    """
    root = Path(folder)
    qrels_path = root / "qrels" / f"{split}.tsv"
    for p in (root / "corpus.jsonl", root / "queries.jsonl", qrels_path):
        if not p.is_file():
            raise DataError(RecordProblem(str(p), None, None, "file not found (a BEIR folder "
                                          "holds corpus.jsonl, queries.jsonl, qrels/<split>.tsv)"))
    corpus = load_beir_corpus(root / "corpus.jsonl")
    queries = load_beir_queries(root / "queries.jsonl")
    qrels: Qrels = load_qrels(qrels_path)
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise DataError([RecordProblem(str(qrels_path), None, "query-id",
                                       f"query '{q}' is not in queries.jsonl")
                         for q in missing[:50]])
    samples = []
    for qid, docs in qrels.items():
        gold = [d for d, g in docs.items() if g > 0]
        samples.append(Sample(id=qid, user_input=queries[qid], gold_doc_ids=gold,
                              gold_grades={d: g for d, g in docs.items() if g > 0},
                              type=None if gold else "negative"))
    return samples, corpus


__all__ = ["load_beir", "load_beir_corpus", "load_beir_queries"]
