"""Which retrieved items are relevant, turned into the padded arrays the metrics read.

* ``id`` matching: an item is relevant with the grade its id has in the gold mapping; at
  ``doc`` level ids are first mapped to parent documents (``doc_of``). Only the first occurrence
  of a gold unit counts; later repeats keep their position but get grade 0.
* ``text`` matching (seed 002): texts are normalised (NFKC, casefold, whitespace collapsed) and a
  retrieved text matches a gold text when either contains the other; an empty text never matches.
  ``hit`` marks retrieved texts matching any gold text (precision, hit rate), ``cover`` counts gold
  texts matched for the first time (recall), and ``rel`` marks "first match of a new gold text"
  (MRR, NDCG, MAP), so every metric stays within [0, 1].
* runs (``{qid: {docid: score}}``) are ranked by the tie policy: ``stable`` = score desc, then
  input order; ``trec`` = score desc, then doc id desc (trec_eval).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from itertools import chain

import numpy as np

from ragmeter.errors import ConfigError
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


def rank_docs(docs: Mapping[str, float], ties: str) -> list[str]:
    """Doc ids of one query ranked by the tie policy."""
    if ties == "trec":
        return [d for d, _ in sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
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


def arrays_from_run(qids: Sequence[str], qrels: Mapping[str, Mapping[str, int]],
                    run: Mapping[str, Mapping[str, float]], ties: str) -> RankArrays:
    """Chunk-level rank arrays straight from dict-of-dicts qrels and run, without sorting.

    All scores are read once into a padded ``(Q, depth)`` matrix. Only relevant documents need a
    rank: rank = #{scores > s} + #{tied scores placed before it by the tie policy}, computed
    by vectorised comparison of each relevant document's score with its query's row. Ties
    (rare with real-valued scores) are resolved per tied document: ``stable`` = input order,
    ``trec`` = doc id descending.
    """
    check_ties(ties)
    nq = len(qids)
    empty: dict[str, float] = {}
    rows = [run.get(q) or empty for q in qids]
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=nq)
    depth = int(lens.max()) if nq else 0
    total = int(lens.sum())
    flat = np.fromiter(chain.from_iterable(map(dict.values, rows)), dtype=np.float64, count=total)
    if nq and bool(np.all(lens == depth)):
        scores = flat.reshape(nq, depth)
    else:
        scores = np.full((nq, depth), -np.inf)
        if total:
            offsets = np.repeat(np.cumsum(lens) - lens, lens)
            scores[np.repeat(np.arange(nq), lens), np.arange(total) - offsets] = flat
    # positive judgments, flattened: query index, doc id, grade
    hq: list[int] = []
    hdoc: list[str] = []
    hg: list[int] = []
    for i, q in enumerate(qids):
        for d, g in qrels.get(q, empty).items():
            if g > 0:
                hq.append(i)
                hdoc.append(d)
                hg.append(int(g))
    q_all = np.asarray(hq, dtype=np.int64)
    g_all = np.asarray(hg, dtype=np.int64)
    ideal, n_rel = _ideal_sparse(q_all, g_all, nq)
    found = list(map(dict.get, [rows[i] for i in hq], hdoc))
    ret = np.fromiter((x is not None for x in found), dtype=bool, count=len(found))
    idx = np.flatnonzero(ret)
    hq_r = q_all[idx]
    hs = np.fromiter((found[i] for i in idx), dtype=np.float64, count=idx.size)
    ranks = np.empty(idx.size, dtype=np.int64)
    n_tied = np.empty(idx.size, dtype=np.int64)
    step = max(1, _CHUNK_CELLS // max(depth, 1))
    for a in range(0, idx.size, step):
        block = scores[hq_r[a:a + step]]
        s = hs[a:a + step, None]
        ranks[a:a + step] = np.count_nonzero(block > s, axis=1)
        n_tied[a:a + step] = np.count_nonzero(block == s, axis=1)
    for j in np.flatnonzero(n_tied > 1):
        row, doc, sc = rows[int(hq_r[j])], hdoc[int(idx[j])], float(hs[j])
        if ties == "trec":
            ranks[j] += sum(1 for d, v in row.items() if v == sc and d > doc)
        else:
            for d, v in row.items():
                if d == doc:
                    break
                ranks[j] += v == sc
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
    """NFKC, casefold, and collapse whitespace (seed 002, made Unicode-aware)."""
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
