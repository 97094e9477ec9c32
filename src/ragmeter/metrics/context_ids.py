"""Id-based context precision and recall: no judge, gold chunk ids.

With G = ``gold_chunk_ids`` and the ranked ``retrieved_ids`` r_1..r_n (all that were given to
the generator, no cutoff unless ``@k``):

    id_context_precision = Σ_k (precision@k · rel_k) / Σ_k rel_k,  rel_k = [r_k ∈ G]
                           (rank-aware average precision over the retrieved list; 0 when no
                           retrieved id is gold)
    id_set_precision     = |{r_1..r_n} ∩ G| / |{r_1..r_n}|
                           (plain set precision — the number RAGAS's IDBasedContextPrecision
                           reports; 0.5 where the rank-aware form gives 0.75 on RAGAS's docs
                           example: retrieved d1 d2 d3 d4, gold d1 d4 d5 d6)
    id_context_recall    = |{g ∈ G : g ∈ {r_1..r_n}}| / |G|   (= RAGAS IDBasedContextRecall)

``id_context_precision`` is *rank-aware* (average precision): a gold id ranked first counts more
than one ranked last. It is not RAGAS's number of the same name; use ``id_set_precision`` to
compare with RAGAS. A sample whose retrieved list is empty is unscored for ``id_set_precision``
(reason ``empty:retrieved_ids``; precision of nothing is undefined).

Policy: a sample with no gold chunk ids (``gold_chunk_ids`` absent or empty, e.g. a
negative question) is not part of the population: it is *excluded* — unscored with reason
``missing_field:gold_chunk_ids`` and counted in ``counts["no_gold"]`` (``counts["negative"]``
for negatives). Duplicated retrieved ids count once (first occurrence), and a cutoff ``@k``
counts the first ``k`` *positions* of the ranking, repeats included — as ``recall@k`` and
trec_eval do — so ``id_context_recall@k`` equals ``recall@k`` on the same ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.metrics.registry import Metric, MetricSpec, register
from ragmeter.results.records import MetricResult, SampleScore


def _dedup(ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def id_precision(retrieved: Sequence[str], gold: set[str]) -> float:
    """Rank-aware average precision of the retrieved list against gold ids."""
    hits = 0
    total = 0.0
    for k, rid in enumerate(retrieved, 1):
        if rid in gold:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def id_set_precision(retrieved: Sequence[str], gold: set[str]) -> float | None:
    """Set precision |retrieved ∩ gold| / |retrieved| (RAGAS's IDBasedContextPrecision)."""
    ret = set(retrieved)
    return len(ret & gold) / len(ret) if ret else None


def id_recall(retrieved: Sequence[str], gold: set[str]) -> float:
    return len(gold & set(retrieved)) / len(gold)


def _make(kind: str) -> Callable[[Metric, Any], MetricResult]:
    def compute(metric: Metric, ctx: Any) -> MetricResult:
        scores = []
        counts = {"no_gold": 0, "negative": 0}
        for s in ctx.samples:
            if not s.gold_chunk_ids:
                counts["negative" if s.is_negative else "no_gold"] += 1
                scores.append(SampleScore(s.id, None, "missing_field:gold_chunk_ids"))
                continue
            if s.retrieved_ids is None:
                scores.append(SampleScore(s.id, None, "missing_field:retrieved_ids"))
                continue
            # the cutoff counts ranking positions (as recall@k), then repeats count once
            ret = _dedup(s.retrieved_ids if metric.k is None else s.retrieved_ids[: metric.k])
            gold = set(s.gold_chunk_ids)
            if kind == "set_precision":
                v = id_set_precision(ret, gold)
                scores.append(SampleScore(s.id, v, None if v is not None else
                                          "empty:retrieved_ids"))
                continue
            val = id_precision(ret, gold) if kind == "precision" else id_recall(ret, gold)
            scores.append(SampleScore(s.id, val, None))
        sig = ctx.signature(str(metric), k=metric.k, level="chunk")
        return MetricResult.from_scores(str(metric), scores, sig, counts=counts, seed=ctx.seed)
    return compute


register(MetricSpec(
    name="id_context_precision", family="context_ids", k="optional",
    doc="rank-aware (average precision): Σ_k precision@k·[r_k∈G] / Σ_k [r_k∈G] over retrieved "
        "chunk ids (0 if no gold retrieved); RAGAS's set form is id_set_precision",
    required_fields=("retrieved_ids", "gold_chunk_ids"), compute=_make("precision"),
))
register(MetricSpec(
    name="id_set_precision", family="context_ids", k="optional",
    doc="|retrieved ids ∩ G| / |retrieved ids| — set precision, the RAGAS "
        "IDBasedContextPrecision number (id_context_precision is the rank-aware form)",
    required_fields=("retrieved_ids", "gold_chunk_ids"), compute=_make("set_precision"),
))
register(MetricSpec(
    name="id_context_recall", family="context_ids", k="optional",
    doc="|G ∩ retrieved ids| / |G| with G = gold_chunk_ids",
    required_fields=("retrieved_ids", "gold_chunk_ids"), compute=_make("recall"),
))
