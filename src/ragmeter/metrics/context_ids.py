"""Id-based context precision and recall: no judge, gold chunk ids.

With G = ``gold_chunk_ids`` and the ranked ``retrieved_ids`` r_1..r_n (all that were given to
the generator, no cutoff unless ``@k``):

    id_context_precision = Σ_k (precision@k · rel_k) / Σ_k rel_k,  rel_k = [r_k ∈ G]
                           (rank-aware average precision over the retrieved list; 0 when no
                           retrieved id is gold)
    id_context_recall    = |{g ∈ G : g ∈ {r_1..r_n}}| / |G|

Policy: a sample with no gold chunk ids (``gold_chunk_ids`` absent or empty, e.g. a
negative question) is not part of the population: it is *excluded* — unscored with reason
``missing_field:gold_chunk_ids`` and counted in ``counts["no_gold"]`` (``counts["negative"]``
for negatives). Duplicated retrieved ids count once (first occurrence).
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
            ret = _dedup(s.retrieved_ids)
            if metric.k is not None:
                ret = ret[: metric.k]
            gold = set(s.gold_chunk_ids)
            val = id_precision(ret, gold) if kind == "precision" else id_recall(ret, gold)
            scores.append(SampleScore(s.id, val, None))
        sig = ctx.signature(str(metric), k=metric.k, level="chunk")
        return MetricResult.from_scores(str(metric), scores, sig, counts=counts, seed=ctx.seed)
    return compute


register(MetricSpec(
    name="id_context_precision", family="context_ids", k="optional",
    doc="Σ_k precision@k·[r_k∈G] / Σ_k [r_k∈G] over retrieved chunk ids (0 if no gold retrieved)",
    required_fields=("retrieved_ids", "gold_chunk_ids"), compute=_make("precision"),
))
register(MetricSpec(
    name="id_context_recall", family="context_ids", k="optional",
    doc="|G ∩ retrieved ids| / |G| with G = gold_chunk_ids",
    required_fields=("retrieved_ids", "gold_chunk_ids"), compute=_make("recall"),
))
