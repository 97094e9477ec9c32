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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.metrics.retrieval import RankArrays
from ragmeter.retrieval.ragged import CHUNK_CELLS as _CHUNK_CELLS
from ragmeter.retrieval.ragged import RelRows, RowsBuilder, check_grades

TIES = ("stable", "trec")
#: scores read per slice of a run mapping: a slice's dicts stay in the CPU cache while used
_READ_CELLS = 50_000
DocOf = Callable[[str], str] | Mapping[str, str] | None
_WS = re.compile(r"\s+")


#: the default document-id rules, in order: ``doc#n`` (ragmeter's chunk ids) and
#: ``<doc>_chunk_<n>`` (a common chunker's ids); an id neither rule matches is its own document
DEFAULT_DOC_ID_RULES = ("<doc>#<n>", "<doc>_chunk_<n>")
_CHUNK_SUFFIX = re.compile(r"(?P<doc>.+)_chunk_\d+")


def default_doc_of(chunk_id: str) -> str:
    """Parent document of ``"{doc}#{n}"`` or ``"{doc}_chunk_{n}"``; other ids are documents."""
    if "#" in chunk_id:
        return chunk_id.rsplit("#", 1)[0]
    if "_chunk_" in chunk_id:
        m = _CHUNK_SUFFIX.fullmatch(chunk_id)
        if m is not None:
            return m.group("doc")
    return chunk_id


def doc_id_rule(pattern: str) -> Callable[[str], str]:
    """A chunk → document rule from a regular expression: the whole chunk id must match, and
    the group ``doc`` (else the first group) is the document id; an id that does not match is
    its own document."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ConfigError("doc_id_pattern", f"invalid regular expression {pattern!r}: {exc}") \
            from None
    if rx.groups == 0:
        raise ConfigError("doc_id_pattern", f"{pattern!r} has no group: mark the document id "
                          "with (?P<doc>...), e.g. '(?P<doc>.+)_part\\d+'")
    group: str | int = "doc" if "doc" in rx.groupindex else 1

    def doc_of(chunk_id: str) -> str:
        m = rx.fullmatch(chunk_id)
        return chunk_id if m is None or m.group(group) is None else m.group(group)
    return doc_of


def resolve_doc_of(doc_of: DocOf, pattern: str | None = None) -> Callable[[str], str]:
    """A callable chunk → doc from a callable, a mapping (unmapped ids: the rule) or None; the
    rule is ``pattern`` (see :func:`doc_id_rule`) or the default rules."""
    rule = doc_id_rule(pattern) if pattern else default_doc_of
    if doc_of is None:
        return rule
    if isinstance(doc_of, Mapping):
        table = doc_of
        return lambda c: table.get(c) or rule(c)
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


def ideal_from_golds(golds: Sequence[Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ideal, n_rel)``: positive gold grades sorted descending per query, 0-padded."""
    builder = RowsBuilder()
    for gold in golds:
        builder.add_gold(gold)
        builder.add_cells(0, (), ())
    arrays = builder.build().dense()
    return arrays.ideal, arrays.n_rel


def rows_from_lists(rankings: Iterable[Sequence[str] | None],
                    golds: Iterable[Mapping[str, int]],
                    unit: Callable[[str], str] | None = None,
                    qids: Sequence[str] | None = None) -> RelRows:
    """Ragged rows from ranked id lists (``None`` = nothing retrieved) and gold grade maps.

    ``unit`` maps a retrieved id to the unit the gold is expressed in (its document at doc level).
    """
    builder = RowsBuilder()
    for i, (ids, gold) in enumerate(zip(rankings, golds, strict=True)):
        builder.add_ranking(ids, gold, unit, qids[i] if qids is not None else None)
    return builder.build()


def arrays_from_lists(rankings: Sequence[Sequence[str] | None],
                      golds: Sequence[Mapping[str, int]],
                      unit: Callable[[str], str] | None = None) -> RankArrays:
    """Dense rank arrays from ranked id lists and gold grade maps (see :func:`rows_from_lists`)."""
    return rows_from_lists(rankings, golds, unit).dense()


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
    grades = check_grades(rows, keys, "<qrels>")
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    q_index = np.repeat(np.arange(len(rows)), lens)
    keep = grades > 0
    per_query = np.bincount(q_index[keep], minlength=len(rows))
    has = per_query > 0
    compact = np.cumsum(has) - 1  # original query index -> index among queries kept
    # commonly every judgment is positive and every query has one: nothing to leave out
    docs = list(chain.from_iterable(rows) if keep.all() else
                compress(chain.from_iterable(rows), keep.tolist()))
    qids = keys if has.all() else list(compress(keys, has.tolist()))
    return Judgments(qids, compact[q_index[keep]], docs, grades[keep], len(rows) - len(qids))


def arrays_from_run(judged: Judgments, run: Mapping[str, Mapping[str, float]],
                    ties: str) -> RankArrays:
    """Dense chunk-level rank arrays from qrels and a run (see :func:`rows_from_run`)."""
    return rows_from_run(judged, run, ties).dense()


def rows_from_run(judged: Judgments, run: Mapping[str, Mapping[str, float]],
                  ties: str, chunk: int = _READ_CELLS) -> RelRows:
    """Chunk-level ragged rows straight from dict-of-dicts qrels and run, without sorting.

    Only relevant documents need a rank: rank = #{scores > s} + #{tied scores placed before it
    by the tie policy}, computed by vectorised comparison of each relevant document's score with
    its query's scores (see :func:`rank_hits`). A NaN score is an error.

    The run is read a slice of queries at a time (about ``chunk`` scores): a slice's dicts are
    looked up, its scores read, its relevant documents found and ranked while those dicts are
    still in the CPU cache, and no array of every score is ever built (reading scattered dicts
    twice costs more than all the arithmetic).
    """
    check_ties(ties)
    qids = judged.qids
    nq = len(qids)
    q_all, g_all, docs = judged.q, judged.grades, judged.docs
    jb = np.searchsorted(q_all, np.arange(nq + 1)).tolist()  # judgments of query q: jb[q]:jb[q+1]
    dtype = np.float32 if ties == "trec" else np.float64  # trec_eval keeps scores as C float
    lookup: Callable[[dict[str, float], str, float], float] = dict.get
    # the run holding exactly the judged queries, in their order (one pipeline wrote both):
    # its rows are read in order instead of looked up one by one
    in_order = list(run.values()) if len(run) == nq and list(run) == qids else None
    lens_parts: list[np.ndarray] = []
    hit_idx: list[np.ndarray] = []
    hit_ranks: list[np.ndarray] = []
    step = max(1, chunk // 100)
    for b0 in range(0, nq, step):
        b1 = min(nq, b0 + step)
        got: list[Any] = in_order[b0:b1] if in_order is not None else [*map(run.get, qids[b0:b1])]
        rows: list[dict[str, float]] = got
        if not set(map(type, rows)) <= {dict}:  # absent queries, other Mappings: dicts, once
            rows = [r if type(r) is dict else dict(r or {}) for r in rows]
        lens = np.fromiter(map(len, rows), dtype=np.int64, count=b1 - b0)
        lens_parts.append(lens)
        for c, e in _read_slices(lens, chunk):
            flat = np.fromiter(chain.from_iterable(map(dict.values, rows[c:e])),
                               dtype=np.float64, count=int(lens[c:e].sum()))
            if flat.size and np.isnan(flat.min()):  # min() propagates NaN
                _raise_nan(qids, run)
            if dtype is np.float32:
                with np.errstate(over="ignore"):
                    flat = flat.astype(np.float32)
            a, b = jb[b0 + c], jb[b0 + e]
            local = (q_all[a:b] - b0).tolist()
            found = np.fromiter(map(lookup, map(rows.__getitem__, local), docs[a:b],
                                    repeat(np.nan)), dtype=np.float64, count=b - a)
            sel = np.flatnonzero(~np.isnan(found))
            if not sel.size:
                continue
            idx = sel + a
            base = b0 + c

            def tie(j: int, qi: int, tied: np.ndarray, idx: np.ndarray = idx,
                    row: int = c, rows: list[dict[str, float]] = rows) -> int:
                doc = docs[int(idx[j])]
                keys = list(rows[row + qi])
                if ties == "trec":
                    return sum(1 for t in tied.tolist() if keys[t] > doc)
                return int(np.count_nonzero(tied < keys.index(doc)))

            hit_idx.append(idx)
            hit_ranks.append(rank_hits(flat, lens[c:e], q_all[idx] - base,
                                       found[sel].astype(dtype), tie))
    all_lens = np.concatenate(lens_parts) if lens_parts else np.zeros(0, dtype=np.int64)
    idx = np.concatenate(hit_idx) if hit_idx else np.zeros(0, dtype=np.int64)
    ranks = np.concatenate(hit_ranks) if hit_ranks else np.zeros(0, dtype=np.int64)
    return RelRows(all_lens, q_all[idx], ranks, g_all[idx], q_all, g_all)


def _read_slices(lens: np.ndarray, chunk: int) -> Iterator[tuple[int, int]]:
    """``(first query, end)`` of consecutive queries holding about ``chunk`` scores (a longer
    ranking alone); empty rankings ride along."""
    nq = lens.size
    total = int(lens.sum())
    if total <= chunk:
        if nq:
            yield 0, nq
        return
    ends = np.cumsum(lens)
    cuts = np.searchsorted(ends, np.arange(chunk, total, chunk), side="right")
    c = 0
    for e in [*np.unique(cuts).tolist(), nq]:
        e = max(e, c + 1) if e < nq else nq
        if e > c:
            yield c, e
            c = e


def _raise_nan(qids: Sequence[str], run: Mapping[str, Mapping[str, float]]) -> None:
    bad = [q for q in qids if any(v != v for v in (run.get(q) or {}).values())]
    raise DataError([RecordProblem("<run>", None, q, "NaN score") for q in bad[:50]])


def rank_hits(flat: np.ndarray, lens: np.ndarray, hq: np.ndarray, hs: np.ndarray,
              tie: Callable[[int, int, np.ndarray], int],
              budget: int = _CHUNK_CELLS) -> np.ndarray:
    """0-based ranks of scored hits: ``#{scores of its query > s}`` + ``tie(j, q, tied)``.

    ``flat`` holds every query's scores back to back (``lens`` per query); hit ``j`` has query
    ``hq[j]`` (non-decreasing) and score ``hs[j]``. Queries are padded into ``(rows, longest)``
    blocks of at most ``budget`` cells, so one very long ranking never pads the others. ``tie``
    is called only for hits whose score is shared (``tied``: positions in the query's row).
    """
    nq = lens.size
    offsets = np.cumsum(lens) - lens
    ranks = np.zeros(hq.size, dtype=np.int64)
    if not hq.size:
        return ranks
    bounds = np.searchsorted(hq, np.arange(nq + 1))
    lens_l = lens.tolist()
    for q, e, width in _query_blocks(lens, lens_l, budget):
        a, b = int(bounds[q]), int(bounds[e])
        if a < b and width:
            seg = flat[int(offsets[q]):int(offsets[e - 1] + lens[e - 1])]
            sub = lens[q:e]
            if bool(np.all(sub == width)):
                block = seg.reshape(e - q, width)
            else:
                block = np.full((e - q, width), -np.inf, dtype=flat.dtype)
                offs = np.repeat(np.cumsum(sub) - sub, sub)
                block[np.repeat(np.arange(e - q), sub), np.arange(seg.size) - offs] = seg
            step = max(1, budget // width)
            for c in range(a, b, step):
                d = min(b, c + step)
                rows = block[hq[c:d] - q]
                sc = hs[c:d, None]
                ranks[c:d] = _row_counts(rows > sc)
                n_tied = _row_counts(rows == sc)
                for j in np.flatnonzero(n_tied > 1).tolist():
                    qi = int(hq[c + j])
                    tied = np.flatnonzero(block[qi - q, :lens_l[qi]] == hs[c + j])
                    ranks[c + j] += tie(c + j, qi, tied)
    return ranks


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """True cells per row of a 2-D bool array (a byte sum: faster than ``count_nonzero``)."""
    dtype = np.uint16 if mask.shape[1] < 65_536 else np.int64
    return mask.view(np.uint8).sum(axis=1, dtype=dtype)


def _query_blocks(lens: np.ndarray, lens_l: list[int], budget: int
                  ) -> Iterator[tuple[int, int, int]]:
    """``(first query, end, width)`` of consecutive queries padded to ``width`` (their longest
    ranking) in at most ``budget`` cells; a query longer than the budget alone."""
    nq = len(lens_l)
    if nq and int(lens.min()) == int(lens.max()):  # one depth: no per-query walk
        width = lens_l[0]
        rows = max(1, budget // width) if width else nq
        for q in range(0, nq, rows):
            yield q, min(nq, q + rows), width
        return
    q = 0
    while q < nq:
        e, width = q, 0
        while e < nq and (e - q + 1) * max(width, lens_l[e]) <= budget:
            width = max(width, lens_l[e])
            e += 1
        if e == q:  # one query longer than the budget: alone
            width, e = lens_l[q], q + 1
        yield q, e, width
        q = e


def normalize_text(text: str) -> str:
    """NFKC, casefold, and collapse whitespace (Unicode-aware)."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def texts_match(a: str, b: str) -> bool:
    """Normalised containment in either direction; empty texts never match."""
    na, nb = normalize_text(a), normalize_text(b)
    return bool(na) and bool(nb) and (na in nb or nb in na)


def arrays_from_texts(retrieved: Sequence[Sequence[str] | None],
                      gold: Sequence[Sequence[str]]) -> RankArrays:
    """Dense rank arrays for text matching (see :func:`rows_from_texts`)."""
    return rows_from_texts(retrieved, gold).dense()


def add_text_query(builder: RowsBuilder, retrieved: Sequence[str] | None,
                   gold: Sequence[str]) -> None:
    """Append one query's text-matching cells (``rel`` / ``hit`` / ``cover``) to ``builder``."""
    golds = [g for g in (normalize_text(t) for t in gold) if g]
    matched: set[int] = set()
    rel: list[int] = []
    hit: list[int] = []
    cover: list[tuple[int, int]] = []
    for i, text in enumerate(retrieved or ()):
        r = normalize_text(text)
        if not r:
            continue
        found = {j for j, g in enumerate(golds) if g in r or r in g}
        if found:
            hit.append(i)
            new = found - matched
            if new:
                rel.append(i)
                cover.append((i, len(new)))
                matched |= new
    builder.add_text_cells(len(retrieved or ()), rel, hit, cover, len(golds))


def rows_from_texts(retrieved: Iterable[Sequence[str] | None],
                    gold: Iterable[Sequence[str]]) -> RelRows:
    """Ragged rows for text matching: ``rel`` / ``hit`` / ``cover`` as described above.

    Gold texts that are empty after normalisation can never match and are not counted.
    """
    builder = RowsBuilder(text=True)
    for r, g in zip(retrieved, gold, strict=True):
        add_text_query(builder, r, g)
    return builder.build()
