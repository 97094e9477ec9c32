"""Which retrieved items are relevant, turned into the padded arrays the metrics read.

* ``id`` matching: an item is relevant with the grade its id has in the gold mapping; at
  ``doc`` level ids are first mapped to parent documents (``doc_of``). Only the first occurrence
  of a gold unit counts; later repeats keep their position but get grade 0.
* ``text`` matching: texts are normalised (NFKC, casefold, whitespace collapsed) and a
  retrieved text matches a gold text when either contains the other; an empty text never matches.
  ``hit`` marks retrieved texts matching any gold text (precision, hit rate), ``cover`` counts gold
  texts matched for the first time (recall), and ``rel`` marks "first match of a new gold text"
  (MRR, NDCG, MAP), so every metric stays within [0, 1].
* runs (``{qid: {docid: score}}``) are ranked by the tie policy: ``stable`` = score desc (full
  float64 precision), then input order; ``trec`` = exactly trec_eval: scores compared as C
  ``float`` (single precision, so 0.93759565 and 0.93759564 tie), then doc id desc.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.metrics.retrieval import RankArrays

TIES = ("stable", "trec")
DocOf = Callable[[str], str] | Mapping[str, str] | None
_WS = re.compile(r"\s+")


def default_doc_of(chunk_id: str) -> str:
    """Parent document of ``"{doc_id}#{n}"``; an id without ``#`` is its own document."""
    return chunk_id.rsplit("#", 1)[0]


def resolve_doc_of(doc_of: DocOf) -> Callable[[str], str]:
    """A callable chunk → doc from a callable, a mapping (unmapped ids: ``#`` convention) or None."""
    if doc_of is None:
        return default_doc_of
    if isinstance(doc_of, Mapping):
        table = doc_of
        return lambda c: table.get(c) or default_doc_of(c)
    return doc_of


def check_ties(ties: str) -> None:
    if ties not in TIES:
        raise ConfigError("ties", f"unknown tie policy '{ties}'", list(TIES))


def _single(x: np.ndarray) -> np.ndarray:
    """Scores rounded to single precision (as trec_eval stores them), back in float64."""
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(np.float64)


def rank_docs(docs: Mapping[str, float], ties: str) -> list[str]:
    """Doc ids of one query ranked by the tie policy.

    ``stable``: score desc (full precision), then input order. ``trec``: score desc compared in
    single precision, then doc id desc — exactly trec_eval's order.
    """
    if ties == "trec":
        ids = list(docs)
        s32 = _single(np.fromiter(docs.values(), dtype=np.float64, count=len(ids))).tolist()
        return [d for _, d in sorted(zip(s32, ids, strict=True), reverse=True)]
    return sorted(docs, key=docs.__getitem__, reverse=True)  # stable: input order on ties


def _pad(rows: list[int], cols: list[int], vals: list[int], shape: tuple[int, int]) -> np.ndarray:
    out = np.zeros(shape, dtype=np.int32)
    if vals:
        out[np.asarray(rows), np.asarray(cols)] = np.asarray(vals)
    return out


def ideal_from_golds(golds: Sequence[Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ideal, n_rel)``: positive gold grades sorted descending per query, 0-padded."""
    pos = [sorted((g for g in gold.values() if g > 0), reverse=True) for gold in golds]
    n_rel = np.fromiter((len(p) for p in pos), dtype=np.int64, count=len(pos))
    width = int(n_rel.max()) if len(pos) else 0
    rows = [i for i, p in enumerate(pos) for _ in p]
    cols = [j for p in pos for j in range(len(p))]
    vals = [g for p in pos for g in p]
    return _pad(rows, cols, vals, (len(pos), width)), n_rel


def arrays_from_lists(rankings: Sequence[Sequence[str] | None],
                      golds: Sequence[Mapping[str, int]],
                      unit: Callable[[str], str] | None = None) -> RankArrays:
    """Rank arrays from ranked id lists (``None`` = nothing retrieved) and gold grade maps.

    ``unit`` maps a retrieved id to the unit the gold is expressed in (its document at doc level).
    """
    rows: list[int] = []
    cols: list[int] = []
    vals: list[int] = []
    n_ret = np.zeros(len(rankings), dtype=np.int64)
    for q, (ids, gold) in enumerate(zip(rankings, golds, strict=True)):
        if not ids:
            continue
        n_ret[q] = len(ids)
        seen: set[str] = set()
        for pos, x in enumerate(ids):
            u = unit(x) if unit is not None else x
            g = gold.get(u, 0)
            if g > 0 and u not in seen:
                seen.add(u)
                rows.append(q)
                cols.append(pos)
                vals.append(g)
    depth = int(n_ret.max()) if len(rankings) else 0
    ideal, n_rel = ideal_from_golds(golds)
    return RankArrays(_pad(rows, cols, vals, (len(rankings), depth)), n_rel, ideal, n_ret)


_CHUNK_CELLS = 2_000_000  # bound the temporary (items × depth) comparison matrices


@dataclass
class Judgments:
    """Positive judgments of qrels, flattened: queries with ≥ 1 relevant doc, in qrels order."""

    qids: list[str]
    q: np.ndarray        # query index of each positive judgment
    docs: list[str]      # its doc id
    grades: np.ndarray   # its grade (> 0)
    n_no_relevant: int   # qrels queries without any grade > 0


def positive_judgments(qrels: Mapping[str, Mapping[str, int]]) -> Judgments:
    """Every judgment with grade > 0, flattened with C-level iteration (no per-query Python)."""
    keys = list(qrels)
    rows = list(qrels.values())
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    total = int(lens.sum())
    grades = np.fromiter(chain.from_iterable(map(_values, rows)), dtype=np.int64, count=total)
    q_index = np.repeat(np.arange(len(rows)), lens)
    keep = grades > 0
    per_query = np.bincount(q_index[keep], minlength=len(rows))
    has = per_query > 0
    compact = np.cumsum(has) - 1  # original query index -> index among queries kept
    docs = list(compress(chain.from_iterable(rows), keep.tolist()))
    qids = list(compress(keys, has.tolist()))
    return Judgments(qids, compact[q_index[keep]], docs, grades[keep], len(rows) - len(qids))


def _values(d: Mapping[str, Any]) -> Iterable[Any]:
    return d.values()


def arrays_from_run(judged: Judgments, run: Mapping[str, Mapping[str, float]],
                    ties: str) -> RankArrays:
    """Chunk-level rank arrays straight from dict-of-dicts qrels and run, without sorting.

    All scores are read once into a padded ``(Q, depth)`` matrix. Only relevant documents need a
    rank: rank = #{scores > s} + #{tied scores placed before it by the tie policy}, computed
    by vectorised comparison of each relevant document's score with its query's row. Ties
    (rare with real-valued scores) are resolved per tied document: ``stable`` = input order,
    ``trec`` = doc id descending. A NaN score is an error.
    """
    check_ties(ties)
    qids = judged.qids
    nq = len(qids)
    empty: dict[str, float] = {}
    rows: list[dict[str, float]] = [run.get(q) or empty for q in qids]  # type: ignore[misc]
    if not set(map(type, rows)) <= {dict}:  # other Mappings: copy once into dicts
        rows = [r if type(r) is dict else dict(r) for r in rows]
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=nq)
    depth = int(lens.max()) if nq else 0
    total = int(lens.sum())
    flat = np.fromiter(chain.from_iterable(map(dict.values, rows)), dtype=np.float64, count=total)
    if np.isnan(flat).any():
        bad = [q for q, r in zip(qids, rows, strict=True) if any(v != v for v in r.values())]
        raise DataError([RecordProblem("<run>", None, q, "NaN score") for q in bad[:50]])
    if ties == "trec":  # trec_eval keeps scores as C float: compare in single precision
        with np.errstate(over="ignore"):
            flat = flat.astype(np.float32)
    if nq and bool(np.all(lens == depth)):
        scores = flat.reshape(nq, depth)
    else:
        scores = np.full((nq, depth), -np.inf, dtype=flat.dtype)
        if total:
            offsets = np.repeat(np.cumsum(lens) - lens, lens)
            scores[np.repeat(np.arange(nq), lens), np.arange(total) - offsets] = flat
    q_all, g_all = judged.q, judged.grades
    ideal, n_rel = _ideal_sparse(q_all, g_all, nq)
    lookup: Callable[[dict[str, float], str, float], float] = dict.get
    found = np.fromiter(map(lookup, map(rows.__getitem__, q_all.tolist()), judged.docs,
                            repeat(np.nan)), dtype=np.float64, count=q_all.size)
    idx = np.flatnonzero(~np.isnan(found))
    hq_r = q_all[idx]
    hs = found[idx].astype(scores.dtype)
    ranks = np.empty(idx.size, dtype=np.int64)
    n_tied = np.empty(idx.size, dtype=np.int64)
    step = max(1, _CHUNK_CELLS // max(depth, 1))
    for a in range(0, idx.size, step):
        block = scores[hq_r[a:a + step]]
        sc = hs[a:a + step, None]
        ranks[a:a + step] = np.count_nonzero(block > sc, axis=1)
        n_tied[a:a + step] = np.count_nonzero(block == sc, axis=1)
    for j in np.flatnonzero(n_tied > 1):
        qi, doc = int(hq_r[j]), judged.docs[int(idx[j])]
        docs = list(rows[qi])
        tied = np.flatnonzero(scores[qi, :len(docs)] == hs[j])
        if ties == "trec":
            ranks[j] += sum(1 for t in tied if docs[t] > doc)
        else:
            ranks[j] += int(np.count_nonzero(tied < docs.index(doc)))
    gmax = int(g_all.max()) if g_all.size else 0
    rel = np.zeros((nq, depth), dtype=np.int8 if gmax < 127 else np.int32)
    rel[hq_r, ranks] = g_all[idx]
    return RankArrays(rel, n_rel, ideal, lens)


def _ideal_sparse(q: np.ndarray, g: np.ndarray, nq: int) -> tuple[np.ndarray, np.ndarray]:
    """Ideal grade matrix from flattened positive judgments (query index, grade)."""
    n_rel = np.bincount(q, minlength=nq).astype(np.int64)
    width = int(n_rel.max()) if nq and q.size else 0
    ideal = np.zeros((nq, width), dtype=np.int32)
    if q.size:
        order = np.lexsort((-g, q))
        qs = q[order]
        starts = np.cumsum(n_rel) - n_rel
        ideal[qs, np.arange(qs.size) - starts[qs]] = g[order]
    return ideal, n_rel


def normalize_text(text: str) -> str:
    """NFKC, casefold, and collapse whitespace (Unicode-aware)."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def texts_match(a: str, b: str) -> bool:
    """Normalised containment in either direction; empty texts never match."""
    na, nb = normalize_text(a), normalize_text(b)
    return bool(na) and bool(nb) and (na in nb or nb in na)


def arrays_from_texts(retrieved: Sequence[Sequence[str] | None],
                      gold: Sequence[Sequence[str]]) -> RankArrays:
    """Rank arrays for text matching: ``rel`` / ``hit`` / ``cover`` as described above.

    Gold texts that are empty after normalisation can never match and are not counted.
    """
    nq = len(retrieved)
    n_ret = np.fromiter((len(r or ()) for r in retrieved), dtype=np.int64, count=nq)
    depth = int(n_ret.max()) if nq else 0
    rel = np.zeros((nq, depth), dtype=np.int32)
    hit = np.zeros((nq, depth), dtype=bool)
    cover = np.zeros((nq, depth), dtype=np.int32)
    n_rel = np.zeros(nq, dtype=np.int64)
    for q in range(nq):
        golds = [g for g in (normalize_text(t) for t in gold[q]) if g]
        n_rel[q] = len(golds)
        matched: set[int] = set()
        for i, text in enumerate(retrieved[q] or ()):
            r = normalize_text(text)
            if not r:
                continue
            found = {j for j, g in enumerate(golds) if g in r or r in g}
            if found:
                hit[q, i] = True
                new = found - matched
                if new:
                    rel[q, i] = 1
                    cover[q, i] = len(new)
                    matched |= new
    width = int(n_rel.max()) if nq else 0
    ideal = (np.arange(width)[None, :] < n_rel[:, None]).astype(np.int32)
    return RankArrays(rel, n_rel, ideal, n_ret, hit=hit, cover=cover)
