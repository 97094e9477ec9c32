"""Retrieval metrics (family ``retrieval``): vectorised over padded per-query rank arrays.

Every ranking metric reads one :class:`RankArrays` built once per (dataset, level) and cached
across metrics and cutoffs. Notation for one query: ``rel_i`` is the grade of the item at rank
``i`` (1-based; 0 if not relevant, padding, or a repeat of an item already seen), ``R`` is the
number of gold items with grade > 0, ``[x]`` is 1 if ``x`` holds. An item is relevant iff its
grade > 0 (trec_eval ``rel >= 1``). Cutoff ``k`` counts retrieved *positions*; a missing ``k``
means the full ranking.

``level=doc`` maps each retrieved chunk to its parent document and keeps only the first chunk
of each document (later ones are repeats, grade 0) — so NDCG ≤ 1 and recall ≤ 1 always hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.metrics.registry import Metric, MetricSpec, Param, register, register_cutoff_alias

LEVEL = Param("level", str, "auto", ("auto", "chunk", "doc"),
              "chunk: ids as given; doc: chunks mapped to their parent document, repeats "
              "collapse; auto: chunk when the data has chunk gold, else doc (document hit as the "
              "proxy), shown as level:doc(auto) in the signature")
GAIN = Param("gain", str, "linear", ("linear", "exp"),
             "linear: gain = rel (trec_eval); exp: gain = 2^rel − 1 (Burges)")
THRESHOLD = Param("threshold", float, 0.0, None, "top-1 score at or above which a negative "
                  "question counts as a false retrieval (0.0: any non-negative score counts)")


#: :meth:`RankArrays.first_relevant` of a query without any relevant item
NO_RELEVANT = 2**62


@dataclass
class RankArrays:
    """Padded arrays for Q queries and L ranked positions (M = most gold items of a query).

    ``rel[q, i]``: grade of the item at rank ``i`` (0 = not relevant / padding / repeat).
    ``n_rel[q]``: number of gold items with grade > 0. ``ideal[q, j]``: gold grades sorted
    descending, 0-padded. ``n_ret[q]``: number of retrieved positions. ``first``: optional,
    :meth:`first_relevant` as the builder of the arrays knows it (from every relevant cell,
    also those past the columns kept).
    Text matching adds ``hit[q, i]`` (the item matches *any* gold text: precision)
    and ``cover[q, i]`` (number of gold texts first matched at ``i``: recall); without them both
    derive from ``rel > 0``.
    """

    rel: np.ndarray
    n_rel: np.ndarray
    ideal: np.ndarray
    n_ret: np.ndarray
    hit: np.ndarray | None = None
    cover: np.ndarray | None = None
    first: np.ndarray | None = None  # first_relevant(), when the builder already knows it
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_queries(self) -> int:
        return int(self.rel.shape[0])

    @property
    def depth(self) -> int:
        return int(self.rel.shape[1])

    def _cum(self, name: str) -> np.ndarray:
        """Cumulative counts along ranks (cached): ``relevant``, ``hit`` or ``cover``."""
        key = "cum_" + name
        if key not in self._cache:
            self._cache[key] = np.cumsum(self._counted(name), axis=1, dtype=np.int32)
        cum: np.ndarray = self._cache[key]
        return cum

    def count_at(self, k: int | None, name: str = "relevant") -> np.ndarray:
        """Per query: how many counted items are in the top ``k`` (``None``: all)."""
        if self.depth == 0:
            return np.zeros(self.n_queries, dtype=np.int32)
        col = self.depth if k is None else min(k, self.depth)
        if ("cum_" + name) in self._cache:
            return np.asarray(self._cum(name)[:, col - 1])
        counted = self._counted(name, col)
        if counted.dtype == np.bool_ and col < 65_536:  # a byte sum: faster than sum(bool)
            return counted.view(np.uint8).sum(axis=1, dtype=np.uint16).astype(np.int32)
        return np.asarray(np.sum(counted, axis=1, dtype=np.int32))

    def _counted(self, name: str, col: int | None = None) -> np.ndarray:
        """Per-position counts: ``relevant`` (rel > 0), ``hit`` or ``cover`` (text matching)."""
        extra = self.hit if name == "hit" else self.cover if name == "cover" else None
        if extra is None:
            return self.rel[:, :col] > 0
        return extra[:, :col]

    def first_relevant(self) -> np.ndarray:
        """0-based rank of the first relevant item, or :data:`NO_RELEVANT` when there is none
        (cached). Given by the builder (``first``), it may lie past the arrays' columns."""
        if "first" not in self._cache and self.first is not None:
            self._cache["first"] = self.first
        if "first" not in self._cache:
            binary = self.rel > 0
            pos = np.argmax(binary, axis=1) if self.depth else np.zeros(self.n_queries, int)
            has = binary.any(axis=1) if self.depth else np.zeros(self.n_queries, bool)
            self._cache["first"] = np.where(has, pos, NO_RELEVANT)
        first: np.ndarray = self._cache["first"]
        return first


def _cut(k: int | None, depth: int) -> int:
    return depth if k is None else min(k, depth)


def hit_rate(a: RankArrays, m: Metric) -> np.ndarray:
    return (a.count_at(m.k) > 0).astype(np.float64)


def precision(a: RankArrays, m: Metric) -> np.ndarray:
    k = m.k if m.k is not None else 1
    return a.count_at(m.k, "hit") / float(k)


def recall(a: RankArrays, m: Metric) -> np.ndarray:
    return a.count_at(m.k, "cover") / np.maximum(a.n_rel, 1)


def f1(a: RankArrays, m: Metric) -> np.ndarray:
    p, r = precision(a, m), recall(a, m)
    s = p + r
    return np.divide(2.0 * p * r, s, out=np.zeros_like(s), where=s > 0)


def mrr(a: RankArrays, m: Metric) -> np.ndarray:
    first = a.first_relevant()
    limit = NO_RELEVANT if m.k is None else m.k
    return np.where(first < limit, 1.0 / (first + 1.0), 0.0)


def _discount(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def _gains(grades: np.ndarray, kind: Any) -> np.ndarray:
    g = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(g) - 1.0 if kind == "exp" else g


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Sums along each row, left to right, like trec_eval: a query's value never depends on
    which other queries share its matrix or where its row sits in memory (vectorised sums
    and BLAS products may round differently by a unit in the last place). One vectorised add
    per column: the same additions in the same order as a sequential loop over each row."""
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    cols = np.asarray(x, dtype=np.float64).T
    acc = cols[0].copy()
    for col in cols[1:]:
        acc += col
    return acc


def ndcg(a: RankArrays, m: Metric) -> np.ndarray:
    kind = m.get("gain")
    k = _cut(m.k, a.depth)
    dcg = _row_sum(_gains(a.rel[:, :k], kind) * _discount(k)) if k else np.zeros(a.n_queries)
    ki = a.ideal.shape[1] if m.k is None else min(m.k, a.ideal.shape[1])
    idcg = _row_sum(_gains(a.ideal[:, :ki], kind) * _discount(ki))
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def average_precision(a: RankArrays, m: Metric) -> np.ndarray:
    k = _cut(m.k, a.depth)
    if k == 0:
        return np.zeros(a.n_queries)
    binary = a.rel[:, :k] > 0
    prec = a._cum("relevant")[:, :k] / np.arange(1, k + 1, dtype=np.float64)
    total = _row_sum(prec * binary)
    return total / np.maximum(a.n_rel, 1)


_COMMON: dict[str, Any] = {"family": "retrieval", "required_fields": ("retrieved_ids",)}

register(MetricSpec(
    name="hit_rate", k="required", params=(LEVEL,), compute=hit_rate,
    doc="HitRate@k = [∃ i ≤ k: rel_i > 0]",
    aliases={"hit": {}, "doc_hit": {"level": "doc"}, "doc_hit_rate": {"level": "doc"}},
    **_COMMON))
register(MetricSpec(
    name="precision", k="required", params=(LEVEL,), compute=precision,
    doc="P@k = |{i ≤ k: rel_i > 0}| / k  (k, not the number retrieved: trec_eval P_k)",
    aliases={"doc_precision": {"level": "doc"}}, **_COMMON))
register(MetricSpec(
    name="recall", k="required", params=(LEVEL,), compute=recall,
    doc="Recall@k = |{i ≤ k: rel_i > 0}| / R", aliases={"doc_recall": {"level": "doc"}},
    **_COMMON))
register(MetricSpec(
    name="f1", k="required", params=(LEVEL,), compute=f1,
    doc="F1@k = 2·P@k·Recall@k / (P@k + Recall@k), 0 when both are 0",
    aliases={"doc_f1": {"level": "doc"}}, **_COMMON))
register(MetricSpec(
    name="mrr", k="optional", params=(LEVEL,), compute=mrr,
    doc="RR@k = 1 / min{i ≤ k: rel_i > 0}, 0 if none (trec_eval recip_rank without k)",
    aliases={"doc_mrr": {"level": "doc"}, "recip_rank": {}}, first_only=True, **_COMMON))
register(MetricSpec(
    name="ndcg", k="optional", params=(LEVEL, GAIN), compute=ndcg,
    doc="nDCG@k = Σ_{i≤k} g(rel_i)/log2(i+1) / Σ_{j≤k} g(ideal_j)/log2(j+1); "
        "g(r) = r (linear, trec_eval) or 2^r − 1 (exp)",
    aliases={"doc_ndcg": {"level": "doc"}}, **_COMMON))
register(MetricSpec(
    name="map", k="optional", params=(LEVEL,), compute=average_precision,
    doc="AP@k = Σ_{i≤k, rel_i>0} P@i / R (trec_eval map / map_cut_k); MAP = mean over queries",
    aliases={"doc_map": {"level": "doc"}}, **_COMMON))
register(MetricSpec(
    name="negative_false_retrieval", family="retrieval", params=(THRESHOLD,),
    doc="Negative questions only: [top-1 score ≥ threshold] — the retriever is confident about "
        "a question whose answer is not in the corpus. Lower is better.",
    higher_is_better=False, required_fields=("retrieved_scores",)))
register(MetricSpec(
    name="negative_top_score", family="retrieval",
    doc="Negative questions only: the top-1 retriever score (lower is better).",
    higher_is_better=False, value_range=None, required_fields=("retrieved_scores",)))

#: trec_eval's measure names (as ``trec_eval -q`` prints them) accepted as aliases: ``P_5``,
#: ``recall_10``, ``ndcg_cut_10``, ``success_5``, ``map_cut_10``; ``recip_rank``, ``map`` and
#: ``ndcg`` (full ranking) are names or aliases of their own
TREC_CUTOFF_NAMES = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg",
                     "success": "hit_rate", "map_cut": "map"}
for _prefix, _name in TREC_CUTOFF_NAMES.items():
    register_cutoff_alias(_prefix, _name)

RANKING_METRICS = ("hit_rate", "precision", "recall", "f1", "mrr", "ndcg", "map")
NEGATIVE_METRICS = ("negative_false_retrieval", "negative_top_score")
