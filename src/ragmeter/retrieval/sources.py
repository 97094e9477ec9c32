"""Populations from qrels and a run: a run given as a mapping, or a TREC file streamed by query.

A *population* is what one (level, match) pair scores: ragged relevance rows for the scored
queries and the reasons of the unscored ones. :class:`QrelsSource` reads ``{qid: {docid: score}}``
runs; :class:`RunFileSource` reads a TREC run file block by block (see
:func:`ragmeter.data.trec.iter_run_blocks`) and keeps only relevant cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.trec import Qrels, Run, RunNotGrouped, iter_run_blocks, load_run
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.retrieval.ragged import RelRows, RowsBuilder
from ragmeter.retrieval.relevance import (
    positive_judgments,
    rank_docs,
    rank_hits,
    rows_from_lists,
    rows_from_run,
)

MATCHES = ("id", "text")

@dataclass
class Population:
    """Queries one level/match scores: ragged rows for the scored ones, reasons for the unscored."""

    ids: list[str]
    rows: RelRows
    unscored: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def grade_map(ids: Sequence[str] | None, grades: Mapping[str, int] | None,
            unit: Callable[[str], str] | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in ids or ():
        g = (grades or {}).get(x, 1)
        u = unit(x) if unit is not None else x
        out[u] = max(out.get(u, 0), g)
    return out



class QrelsSource:
    """Builds populations from qrels and a run."""

    def __init__(self, qrels: Qrels, run: Run, ties: str, doc_of: Callable[[str], str]):
        self.qrels, self.run, self.ties, self.doc_of = qrels, run, ties, doc_of
        self.judged = positive_judgments(qrels)
        self.qids = self.judged.qids
        self.no_relevant = self.judged.n_no_relevant
        self.not_in_qrels = len(run) - sum(map(qrels.__contains__, run))

    def population(self, level: str, match: str) -> Population:
        if match == "text":
            raise ConfigError("match", "text matching needs samples with retrieved_contexts and "
                                       "reference_contexts, not qrels/run", list(MATCHES))
        if level == "chunk":
            rows = rows_from_run(self.judged, self.run, self.ties)
        else:
            golds = (grade_map(list(self.qrels[q]), self.qrels[q], self.doc_of) for q in self.qids)
            rankings = (rank_docs(self.run[q], self.ties) if q in self.run else None
                        for q in self.qids)
            rows = rows_from_lists(rankings, golds, self.doc_of, self.qids)
        missing = int(np.count_nonzero(rows.n_ret == 0))  # no run entry or an empty one
        counts = {"missing_from_run": missing, "no_relevant": self.no_relevant,
                  "not_in_qrels": self.not_in_qrels}
        return Population(list(self.qids), rows, [], counts)


class RunFileSource:
    """Qrels and a TREC run file read group by group: the run is never held in memory.

    Each query's lines (consecutive in the file) are matched against the qrels as they are read,
    with array operations over a block of lines; only relevant cells are kept. Raises
    :class:`RunNotGrouped` when the file is not grouped by query (the caller then loads it whole).
    """

    def __init__(self, qrels: Qrels, path: Path, ties: str, doc_of: Callable[[str], str],
                 keys: Sequence[tuple[str, str]]):
        for _, match in keys:
            if match == "text":
                raise ConfigError("match", "text matching needs samples with retrieved_contexts "
                                  "and reference_contexts, not qrels/run", list(MATCHES))
        judged = positive_judgments(qrels)
        self.qids = judged.qids
        index = {q.encode("utf-8"): i for i, q in enumerate(self.qids)}
        known = {q.encode("utf-8") for q in qrels}
        hashed = _JudgedHashes(judged)
        lookup: _JudgedHashes | _JudgedKeys = hashed if hashed.exact else _JudgedKeys(judged)
        nq = len(self.qids)
        n_ret = np.zeros(nq, dtype=np.int64)
        cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        doc_rows: dict[int, tuple[int, list[int], list[int]]] = {}
        want_doc = ("doc", "id") in keys
        problems: list[RecordProblem] = []
        not_in_qrels = 0
        single = ties == "trec"
        for block in iter_run_blocks(path, problems=problems):
            lens = np.diff(block.starts)
            gid = np.repeat(np.arange(lens.size), lens)
            doc_hash = _doc_hashes(block.docs)
            problems.extend(_repeats(block, gid, str(path), doc_hash))
            qmap = np.fromiter((index.get(q, -1) for q in block.qids), dtype=np.int64,
                               count=len(block.qids))
            not_in_qrels += sum(1 for q, i in zip(block.qids, qmap.tolist(), strict=True)
                                if i < 0 and q not in known)
            seen = qmap >= 0
            n_ret[qmap[seen]] = lens[seen]
            scores = block.scores.astype(np.float32) if single else block.scores
            if want_doc:
                starts = block.starts.tolist()
                for g in np.flatnonzero(seen).tolist():
                    qi = int(qmap[g])
                    a, b = starts[g], starts[g + 1]
                    doc_rows[qi] = _doc_cells(block.docs[a:b].tolist(), scores[a:b],
                                              qrels[self.qids[qi]], ties, doc_of)
            if isinstance(lookup, _JudgedHashes):
                grades = lookup.grades(qmap[gid], doc_hash, block.docs)
            else:
                grades = lookup.grades(block.line_qids, block.docs)
            hits = np.flatnonzero(grades > 0)
            if not hits.size:
                continue
            hq = gid[hits]
            docs, starts_a = block.docs, block.starts

            def tie(j: int, g: int, tied: np.ndarray, hits: np.ndarray = hits,
                    docs: np.ndarray = docs, starts_a: np.ndarray = starts_a) -> int:
                line = int(hits[j])
                if single:
                    return int(np.count_nonzero(docs[int(starts_a[g]) + tied] > docs[line]))
                return int(np.count_nonzero(tied < line - int(starts_a[g])))

            ranks = rank_hits(scores, lens, hq, scores[hits], tie)
            cells.append((qmap[hq], ranks, grades[hits]))
        if problems:
            raise DataError(problems)
        cat = (lambda i: np.concatenate([c[i] for c in cells]) if cells  # noqa: E731
               else np.zeros(0, dtype=np.int64))
        self.rows = {"chunk": RelRows(n_ret, cat(0), cat(1), cat(2), judged.q, judged.grades)}
        if want_doc:
            builder = RowsBuilder()
            for qi, q in enumerate(self.qids):
                builder.add_gold(grade_map(list(qrels[q]), qrels[q], doc_of), q)
                n, positions, doc_grades = doc_rows.get(qi, (0, [], []))
                builder.add_cells(n, positions, doc_grades)
            self.rows["doc"] = builder.build()
        self.counts = {"no_relevant": judged.n_no_relevant, "not_in_qrels": not_in_qrels}

    def population(self, level: str, match: str) -> Population:
        rows = self.rows[level]
        counts = {"missing_from_run": int(np.count_nonzero(rows.n_ret == 0)), **self.counts}
        return Population(list(self.qids), rows, [], counts)


class _JudgedKeys:
    """Positive judgments as sorted fixed-width ``qid + docid`` byte keys, for array lookups."""

    def __init__(self, judged: Any) -> None:
        q = np.array([judged.qids[i].encode("utf-8") for i in judged.q.tolist()] or [b""])
        d = np.array([doc.encode("utf-8") for doc in judged.docs] or [b""])
        self.wq, self.wd = max(q.itemsize, 1), max(d.itemsize, 1)
        keys = self._keys(q, d)[:judged.q.size]
        order = np.argsort(keys, kind="stable")
        self.keys, self.values = keys[order], judged.grades[order]

    def _keys(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        qm = q.astype(f"S{self.wq}").view(np.uint8).reshape(-1, self.wq)
        dm = d.astype(f"S{self.wd}").view(np.uint8).reshape(-1, self.wd)
        return np.ascontiguousarray(np.hstack([qm, dm])).view(f"S{self.wq + self.wd}").ravel()

    def grades(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Grade of each (query, doc) line; 0 when not judged relevant."""
        out = np.zeros(q.size, dtype=np.int64)
        if not self.keys.size or not q.size:
            return out
        fits = (np.strings.str_len(q) <= self.wq) & (np.strings.str_len(d) <= self.wd)
        keys = self._keys(q, d)
        order = np.argsort(keys)  # sorted needles: each search starts where the last ended
        pos = np.empty(keys.size, dtype=np.int64)
        pos[order] = np.searchsorted(self.keys, keys[order])
        np.minimum(pos, self.keys.size - 1, out=pos)
        match = fits & (self.keys[pos] == keys)
        out[match] = self.values[pos[match]]
        return out


_HASH_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                       0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                       0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


def _doc_hashes(docs: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every byte string of ``docs`` (independent of the array's width)."""
    n = docs.size
    width = max(8, -(-docs.itemsize // 8) * 8)
    mat = docs.astype(f"S{width}").view(np.uint64).reshape(n, width // 8)
    mult = np.resize(_HASH_MULT, mat.shape[1])
    with np.errstate(over="ignore"):
        return np.asarray((mat * mult).sum(axis=1, dtype=np.uint64))


_PREFIX_BITS = 22


class _JudgedHashes:
    """Positive judgments keyed by ``hash(doc) ^ query index``: an integer lookup per line,
    each match then checked exactly (query index and doc bytes)."""

    def __init__(self, judged: Any) -> None:
        docs = np.array([doc.encode("utf-8") for doc in judged.docs] or [b""])[:judged.q.size]
        hashes = _doc_hashes(docs)
        # which doc hashes are judged at all: one flag per top-22-bit prefix, so most lines of a
        # run are ruled out by one lookup in a 4 MiB table before any search
        self.judged_doc = np.zeros(1 << _PREFIX_BITS, dtype=bool)
        self.judged_doc[hashes >> np.uint64(64 - _PREFIX_BITS)] = True
        with np.errstate(over="ignore"):
            keys = hashes ^ (judged.q.astype(np.uint64) * _HASH_MULT[1])
        order = np.argsort(keys, kind="stable")
        self.keys, self.q = keys[order], np.asarray(judged.q)[order]
        self.docs, self.values = docs[order], np.asarray(judged.grades)[order]
        self.exact = not bool(np.any(self.keys[1:] == self.keys[:-1]))  # no two share a key

    def grades(self, line_q: np.ndarray, doc_hash: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Grade of each line (its query's judged index, -1 when none); 0 when not relevant."""
        out = np.zeros(line_q.size, dtype=np.int64)
        if not self.keys.size or not line_q.size:
            return out
        maybe = np.flatnonzero(self.judged_doc[doc_hash >> np.uint64(64 - _PREFIX_BITS)]
                               & (line_q >= 0))
        with np.errstate(over="ignore"):
            keys = doc_hash[maybe] ^ (line_q[maybe].astype(np.uint64) * _HASH_MULT[1])
        order = np.argsort(keys)  # sorted needles: each search starts where the last ended
        pos = np.empty(keys.size, dtype=np.int64)
        pos[order] = np.searchsorted(self.keys, keys[order])
        np.minimum(pos, self.keys.size - 1, out=pos)
        found = self.keys[pos] == keys
        idx, at = maybe[found], pos[found]
        ok = (self.q[at] == line_q[idx]) & (self.docs[at] == docs[idx])
        out[idx[ok]] = self.values[at[ok]]
        return out


def _repeats(block: Any, gid: np.ndarray, source: str,
             doc_hash: np.ndarray) -> list[RecordProblem]:
    """A problem for every doc id repeated within one query of ``block`` (hash, then exact)."""
    docs = block.docs
    n = docs.size
    if n < 2:
        return []
    lens = np.diff(block.starts)
    if bool(np.all(lens == lens[0])):  # queries of one depth: sort each query's hashes alone
        within = np.sort(doc_hash.reshape(lens.size, int(lens[0])), axis=1)
        if not bool(np.any(within[:, 1:] == within[:, :-1])):
            return []
    with np.errstate(over="ignore"):
        h = doc_hash ^ (gid.astype(np.uint64) * _HASH_MULT[0])
    ordered = np.sort(h)
    if not bool(np.any(ordered[1:] == ordered[:-1])):
        return []
    order = np.argsort(h, kind="stable")
    same = np.flatnonzero(h[order][1:] == h[order][:-1])
    out = []
    for k in same.tolist():
        i, j = sorted((int(order[k]), int(order[k + 1])))
        if gid[i] == gid[j] and docs[i] == docs[j]:
            d = bytes(docs[i]).decode("utf-8", "replace")
            q = block.qids[int(gid[i])].decode("utf-8", "replace")
            out.append(RecordProblem(source, int(block.lines[j]), "docid",
                                     f"doc id '{d}' repeated for query '{q}' (first on line "
                                     f"{int(block.lines[i])})"))
    return out


def _doc_cells(group: list[bytes], scores: np.ndarray, gold: Mapping[str, int], ties: str,
               doc_of: Callable[[str], str]) -> tuple[int, list[int], list[int]]:
    """Doc-level cells of one query's group (ranked by the tie policy, chunks → documents)."""
    run = dict(zip((d.decode("utf-8", "replace") for d in group), scores.tolist(), strict=True))
    builder = RowsBuilder()
    builder.add_ranking(rank_docs(run, ties), grade_map(list(gold), gold, doc_of), doc_of)
    rows = builder.build()
    return len(group), rows.pos.tolist(), rows.grade.tolist()


def run_file_source(qrels: Qrels, path: Path, ties: str, doc_of: Callable[[str], str],
                     keys: Sequence[tuple[str, str]]) -> RunFileSource | QrelsSource:
    """Stream a TREC run file; a JSON run or one not grouped by query is loaded whole."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    except FileNotFoundError:
        raise DataError(RecordProblem(str(path), None, None, "file not found")) from None
    if not head.startswith(b"{"):
        try:
            return RunFileSource(qrels, path, ties, doc_of, keys)
        except RunNotGrouped:
            pass
    return QrelsSource(qrels, load_run(path), ties, doc_of)


