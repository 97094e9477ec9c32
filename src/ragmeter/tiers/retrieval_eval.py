"""Tier 1, retrieval: the tier around :func:`~ragmeter.retrieval.evaluate.evaluate_retrieval`
(which holds the evaluation itself): the tier's options, its default metrics, and where its
rankings come from — the user's own system (a target), the configured retrievers, or the
``retrieved_ids`` already in the dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier


@dataclass(frozen=True)
class RetrievalOptions(TierOptions):
    """``ties``: order of equal scores (stable, trec); ``match``: how a retrieved item meets the
    gold (id, text); ``score_threshold``: also report
    ``negative_false_retrieval(threshold=t)``; ``doc_of``: chunk id -> document id, for
    ``level=doc`` metrics when the ids do not say it; ``doc_id_pattern``: a regular expression
    whose group ``doc`` is a chunk id's document (default rules: ``doc#n``, ``doc_chunk_n``)."""

    ties: Literal["stable", "trec"] = "stable"
    match: Literal["id", "text"] = "id"
    score_threshold: float | None = None
    doc_of: dict[str, str] | None = None
    doc_id_pattern: str | None = None


def default_tier_metrics(ks: Sequence[int]) -> list[str]:
    """The retrieval tier's metrics when the config lists none."""
    out = []
    for k in ks:
        out += [f"hit_rate@{k}", f"hit_rate@{k}(level=doc)", f"recall@{k}", f"ndcg@{k}"]
    return [*out, "mrr"]


def run_retrieval(ctx: TierContext, samples: list[Sample],
                  options: RetrievalOptions) -> list[EvalResult]:
    """Retrieve with each of the tier's retrievers and evaluate (one result per retriever);
    without retrievers, evaluate the ``retrieved_ids`` already in the dataset."""
    metrics = list(ctx.tier.metrics) or default_tier_metrics(ctx.k)

    def evaluate(data: list[Sample], name: str,
                 extra: Mapping[str, Any] | None = None) -> EvalResult:
        return evaluate_retrieval(data, metrics=metrics, ties=options.ties, match=options.match,
                                  seed=ctx.seed, name=name, doc_of=options.doc_of,
                                  score_threshold=options.score_threshold,
                                  dataset_hash=ctx.dataset_hash, extra_signature=extra,
                                  doc_id_pattern=options.doc_id_pattern)

    from ragmeter.targets.tier_hooks import run_targets  # the user's own system, if any

    if got := run_targets(ctx, samples, "retrieve", evaluate, k=max(ctx.k)):
        return got
    if ctx.config.retrievers:
        from ragmeter.retrieval.run import retrieve_samples

        depth = max(ctx.k)
        out = []
        for name, retriever in ctx.retrievers().items():
            filled = retrieve_samples(retriever, samples, depth)
            for s in filled:
                ctx.annotate(s.id, f"retrieved:{name}", {
                    "ids": list(s.retrieved_ids or [])[:depth],
                    "contexts": list(s.retrieved_contexts or [])[:5]})
            sig = getattr(retriever, "signature_fields", None)
            out.append(evaluate(filled, name, dict(sig()) if callable(sig) else {}))
        return out
    if not any(s.retrieved_ids for s in samples):
        raise TierNotRunnable("no retrievers configured and the dataset has no retrieved_ids")
    return [evaluate(samples, "retrieval")]


register_tier(Tier(
    name="retrieval", title="Retrieval", title_ru="Поиск",
    doc="retrieval metrics (hit rate, MRR, NDCG, recall, ...) per retriever",
    run=run_retrieval, per_sample=True, options=RetrievalOptions))


__all__ = ["RetrievalOptions", "default_tier_metrics", "run_retrieval"]
