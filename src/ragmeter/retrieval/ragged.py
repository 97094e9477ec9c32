"""Ragged relevance rows: only the non-zero cells of the rank arrays, evaluated in chunks.

A ranking of 100,000 ids next to 20,000 rankings of 10 must not become a 20,000 × 100,000
matrix. :class:`RelRows` keeps, per query, the number of retrieved positions and the
coordinates of the cells that matter (relevant positions with their grade; for text matching
also "hit" and "cover" cells) plus the positive gold grades. Metric values are per query and
independent, so :meth:`RelRows.chunks` sorts queries by how deep their arrays must be, cuts them
into chunks whose dense :class:`RankArrays` stay under a cell budget, and the caller scatters
each chunk's values back to the original query order.

A dense row only needs to reach the last non-zero cell (everything after it is 0 for every
metric), and when every metric asked has a cutoff, only the largest cutoff.

Grades must fit a signed 32-bit integer (:data:`ragmeter.data.grades.MAX_GRADE`): larger ones are refused with a
:class:`DataError` naming the query and the document, never wrapped.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np

from ragmeter.data.grades import MAX_GRADE, grade_problem
from ragmeter.errors import DataError, RecordProblem
from ragmeter.metrics.retrieval import NO_RELEVANT, RankArrays

#: Dense cells per chunk (rows × depth) when metrics are computed chunk by chunk.
CHUNK_CELLS = 2_000_000


def check_grades(golds: Sequence[Mapping[str, int]], qids: Sequence[str] | None = None,
                 source: str = "<gold>") -> np.ndarray:
    """Every grade of ``golds`` flattened in order (int64); one :class:`DataError` naming query
    and doc for every out-of-range grade."""
    flat = _grades_ok(golds)
    if flat is not None:
        return flat
    problems: list[RecordProblem] = []
    for i, gold in enumerate(golds):
        for doc, g in gold.items():
            if type(g) is int and -MAX_GRADE - 1 <= g <= MAX_GRADE:
                continue
            msg = grade_problem(g)
            if msg is not None:
                q = qids[i] if qids is not None else f"#{i}"
                problems.append(RecordProblem(source, None, f"{q}/{doc}",
                                              f"query '{q}', doc '{doc}': {msg}"))
    if problems:
        raise DataError(problems)
    total = sum(len(g) for g in golds)
    return np.fromiter(chain.from_iterable(g.values() for g in golds), dtype=np.int64,
                       count=total)


def _grades_ok(golds: Sequence[Mapping[str, int]]) -> np.ndarray | None:
    """Fast path: every grade a plain ``int`` in range, checked with C-level iteration; the
    grades flattened (int64), or None when the slow path must look."""
    if not set(map(type, golds)) <= {dict}:
        return None
    # one read of the scattered dicts: the list is checked, then converted
    grades: list[object] = list(chain.from_iterable(map(dict.values, golds)))  # type: ignore[arg-type]
    if not set(map(type, grades)) <= {int}:
        return None
    try:
        arr = np.fromiter(grades, dtype=np.int64, count=len(grades))
    except OverflowError:
        return None
    ok = arr.size == 0 or (arr.min() >= -MAX_GRADE - 1 and arr.max() <= MAX_GRADE)
    return arr if ok else None


def _sort_rows_descending(x: np.ndarray) -> np.ndarray:
    """Each row sorted descending; narrow rows by column compare-and-swap (a per-row sort
    costs more than the sorting itself there)."""
    width = x.shape[1]
    if width > 16:
        x.sort(axis=1)
        return x[:, ::-1]
    cols = [x[:, j].copy() for j in range(width)]
    for end in range(width - 1, 0, -1):  # bubble the smallest of cols[:end + 1] to the end
        for j in range(end):
            hi = np.maximum(cols[j], cols[j + 1])
            cols[j + 1] = np.minimum(cols[j], cols[j + 1])
            cols[j] = hi
    return np.stack(cols, axis=1) if cols else x


@dataclass
class RelRows:
    """Non-zero cells of Q queries' rank arrays (coordinates, no padding)."""

    n_ret: np.ndarray          # int64[Q]: retrieved positions
    q: np.ndarray              # relevant cells: query index,
    pos: np.ndarray            # 0-based rank,
    grade: np.ndarray          # grade (> 0)
    gold_q: np.ndarray         # positive gold grades: query index,
    gold_grade: np.ndarray     # grade (> 0)
    hit_q: np.ndarray | None = None    # text matching: cells matching any gold text
    hit_pos: np.ndarray | None = None
    cover_q: np.ndarray | None = None  # text matching: gold texts first matched at a cell
    cover_pos: np.ndarray | None = None
    cover_n: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return int(self.n_ret.size)

    @cached_property
    def n_rel(self) -> np.ndarray:
        return np.bincount(self.gold_q, minlength=self.n_queries).astype(np.int64)

    @cached_property
    def _ideal(self) -> np.ndarray | None:
        """Every query's positive gold grades sorted descending, 0-padded (built once), or
        None when that matrix would pass the cell budget (chunks then sort their own)."""
        n_rel = self.n_rel
        width = int(n_rel.max()) if n_rel.size else 0
        if n_rel.size * width > CHUNK_CELLS:
            return None
        gq, gg = self.gold_q, self.gold_grade
        if gq.size > 1 and bool(np.any(gq[1:] < gq[:-1])):
            order = np.argsort(gq, kind="stable")
            gq, gg = gq[order], gg[order]
        ideal = np.zeros((n_rel.size, width), dtype=np.int32)
        ideal[gq, np.arange(gq.size) - (np.cumsum(n_rel) - n_rel)[gq]] = gg
        return _sort_rows_descending(ideal)

    @property
    def text(self) -> bool:
        return self.hit_q is not None

    def _widths(self) -> np.ndarray:
        """Per query: dense columns needed (last non-zero cell + 1, and the ideal width)."""
        w = self.n_rel.copy()
        for q, p in ((self.q, self.pos), (self.hit_q, self.hit_pos), (self.cover_q, self.cover_pos)):
            if q is not None and p is not None and q.size:
                np.maximum.at(w, q, p + 1)
        return w

    def dense(self, idx: np.ndarray | None = None, cap: int | None = None) -> RankArrays:
        """Dense arrays of queries ``idx`` (all when None), at most ``cap`` columns deep."""
        nq = self.n_queries
        idx = np.arange(nq) if idx is None else np.asarray(idx, dtype=np.int64)
        local = np.full(nq, -1, dtype=np.int64)
        local[idx] = np.arange(idx.size)
        n_rel = self.n_rel[idx]

        def cells(q: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """``(kept cells, their rows, every cell's row)``: the cells of these queries
            within ``cap``; a cell of another query has row -1."""
            row = local[q]
            keep = row >= 0
            if cap is not None:
                keep &= p < cap
            return np.flatnonzero(keep), row[keep], row

        sel, rows, row_of = cells(self.q, self.pos)
        # the first relevant rank from every cell of these queries, also past ``cap``
        first = np.full(idx.size, NO_RELEVANT, dtype=np.int64)
        found = (row_of >= 0) & (self.grade > 0)
        np.minimum.at(first, row_of[found], self.pos[found])
        depth = int(self.pos[sel].max()) + 1 if sel.size else 0
        extra: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if self.text:
            assert self.hit_q is not None and self.hit_pos is not None
            assert self.cover_q is not None and self.cover_pos is not None
            hs, hr, _ = cells(self.hit_q, self.hit_pos)
            cs, cr, _ = cells(self.cover_q, self.cover_pos)
            extra = [(hs, hr, self.hit_pos), (cs, cr, self.cover_pos)]
            for s, _, p in extra:
                if s.size:
                    depth = max(depth, int(p[s].max()) + 1)
        rel = np.zeros((idx.size, depth), dtype=np.int32)
        rel[rows, self.pos[sel]] = self.grade[sel]
        width = int(n_rel.max()) if idx.size else 0
        if cap is not None:
            width = min(width, cap)
        every = self._ideal
        if every is not None:
            ideal = np.ascontiguousarray(every[idx, :width])
        else:
            ideal = self._chunk_ideal(local, n_rel, width)
        arrays = RankArrays(rel, n_rel, ideal, self.n_ret[idx], first=first)
        if self.text:
            (hs, hr, _), (cs, cr, _) = extra
            assert self.hit_pos is not None and self.cover_pos is not None
            assert self.cover_n is not None
            arrays.hit = np.zeros((idx.size, depth), dtype=bool)
            arrays.hit[hr, self.hit_pos[hs]] = True
            arrays.cover = np.zeros((idx.size, depth), dtype=np.int32)
            arrays.cover[cr, self.cover_pos[cs]] = self.cover_n[cs]
        return arrays

    def _chunk_ideal(self, local: np.ndarray, n_rel: np.ndarray, width: int) -> np.ndarray:
        """The ideal grades of the queries ``local`` marks (``local[q] >= 0``: their row)."""
        ideal = np.zeros((n_rel.size, width), dtype=np.int32)
        gkeep = local[self.gold_q] >= 0
        gq, gg = local[self.gold_q[gkeep]], self.gold_grade[gkeep]
        if gq.size:
            order = np.lexsort((-gg, gq))
            gq, gg = gq[order], gg[order]
            col = np.arange(gq.size) - (np.cumsum(n_rel) - n_rel)[gq]
            ok = col < width
            ideal[gq[ok], col[ok]] = gg[ok]
        return ideal

    def chunks(self, cap: int | None = None,
               budget: int = CHUNK_CELLS) -> Iterator[tuple[np.ndarray, RankArrays]]:
        """``(query indices, dense arrays)`` per chunk; rows × columns ≤ ``budget`` (≥ 1 row)."""
        widths = self._widths()
        if cap is not None:
            widths = np.minimum(widths, cap)
        widths = np.maximum(widths, 1)
        nq = widths.size
        if nq * int(widths.max(initial=1)) <= budget:  # one chunk: no sorting
            yield np.arange(nq), self.dense(None, cap)
            return
        small = widths.astype(np.uint16) if int(widths.max()) < 65_536 else widths
        order = np.argsort(small, kind="stable")  # 16-bit keys: a radix sort
        sw = widths[order]
        start = 0
        while start < nq:
            end = min(nq, start + max(1, budget // int(sw[start])))
            while end - start > 1 and (end - start) * int(sw[end - 1]) > budget:
                end = start + max(1, budget // int(sw[end - 1]))
            idx = np.sort(order[start:end])
            yield idx, self.dense(idx, cap)
            start = end


class RowsBuilder:
    """Collects :class:`RelRows` one query at a time (compact typed arrays, no padding)."""

    def __init__(self, text: bool = False) -> None:
        self.n = 0
        self.n_ret = array("q")
        self.q, self.pos, self.grade = array("q"), array("q"), array("q")
        self.gold_q, self.gold_grade = array("q"), array("q")
        self.text = text
        self.hit_q, self.hit_pos = array("q"), array("q")
        self.cover_q, self.cover_pos, self.cover_n = array("q"), array("q"), array("q")

    def add_gold(self, grades: Mapping[str, int] | None, qid: str | None = None) -> None:
        """Positive gold grades of the query being added (call before ``add_*``)."""
        for doc, g in (grades or {}).items():
            if not -MAX_GRADE - 1 <= g <= MAX_GRADE:
                check_grades([{doc: g}], [qid if qid is not None else f"#{self.n}"])
            if g > 0:
                self.gold_q.append(self.n)
                self.gold_grade.append(g)

    def add_cells(self, n_ret: int, positions: Sequence[int], grades: Sequence[int]) -> None:
        """One query: its retrieved count and the (0-based rank, grade > 0) of relevant cells."""
        self.n_ret.append(n_ret)
        self.q.extend([self.n] * len(positions))
        self.pos.extend(positions)
        self.grade.extend(grades)
        self.n += 1

    def add_ranking(self, ids: Sequence[str] | None, gold: Mapping[str, int],
                    unit: Callable[[str], str] | None = None, qid: str | None = None) -> None:
        """One ranked id list (None = nothing retrieved) against its gold grades."""
        self.add_gold(gold, qid)
        positions: list[int] = []
        grades: list[int] = []
        if ids:
            seen: set[str] = set()
            get = gold.get
            for p, x in enumerate(ids):
                u = unit(x) if unit is not None else x
                g = get(u, 0)
                if g > 0 and u not in seen:
                    seen.add(u)
                    positions.append(p)
                    grades.append(g)
        self.add_cells(len(ids) if ids else 0, positions, grades)

    def add_text_cells(self, n_ret: int, rel: Sequence[int], hit: Sequence[int],
                       cover: Sequence[tuple[int, int]], n_gold: int) -> None:
        """Text matching, one query: first-match cells, hit cells, (cell, gold texts covered)."""
        for _ in range(n_gold):
            self.gold_q.append(self.n)
            self.gold_grade.append(1)
        self.hit_q.extend([self.n] * len(hit))
        self.hit_pos.extend(hit)
        for p, c in cover:
            self.cover_q.append(self.n)
            self.cover_pos.append(p)
            self.cover_n.append(c)
        self.add_cells(n_ret, rel, [1] * len(rel))

    def build(self) -> RelRows:
        def a(x: array[int]) -> np.ndarray:
            return np.frombuffer(x, dtype=np.int64).copy() if len(x) else np.zeros(0, np.int64)

        rows = RelRows(a(self.n_ret), a(self.q), a(self.pos), a(self.grade), a(self.gold_q),
                       a(self.gold_grade))
        if self.text:
            rows.hit_q, rows.hit_pos = a(self.hit_q), a(self.hit_pos)
            rows.cover_q, rows.cover_pos, rows.cover_n = (a(self.cover_q), a(self.cover_pos),
                                                          a(self.cover_n))
        return rows
