"""Tier 1, retrieval: the tier around :func:`~ragmeter.retrieval.evaluate.evaluate_retrieval`
(which holds the evaluation itself): the tier's options, its default metrics, and where its
rankings come from — the user's own system (a target), the configured retrievers, or the
``retrieved_ids`` already in the dataset."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragmeter.data.sample import Sample
from ragmeter.errors import WorkFailedError
from ragmeter.metrics.registry import parse_metric
from ragmeter.metrics.retrieval import RANKING_METRICS
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


def default_tier_metrics(ks: Sequence[int], *, documents: bool = False) -> list[str]:
    """The retrieval tier's metrics when the config lists none; ``documents``: the ranked ids
    are documents (every target declares ``ids.from: doc_ids``), so all of them are scored at
    document level."""
    if documents:
        return [*(f"{m}@{k}(level=doc)" for k in ks for m in ("hit_rate", "recall", "ndcg")),
                "mrr(level=doc)"]
    out = []
    for k in ks:
        out += [f"hit_rate@{k}", f"hit_rate@{k}(level=doc)", f"recall@{k}", f"ndcg@{k}"]
    return [*out, "mrr"]


def _targets_rank_documents(ctx: TierContext) -> bool:
    targets = getattr(ctx.config, "targets", None) or ()
    return bool(targets) and all(t.ids_from == "doc_ids" for t in targets)


def run_retrieval(ctx: TierContext, samples: list[Sample],
                  options: RetrievalOptions) -> list[EvalResult]:
    """Retrieve with each of the tier's retrievers and evaluate (one result per retriever);
    without retrievers, evaluate the ``retrieved_ids`` already in the dataset."""
    metrics = list(ctx.tier.metrics) or default_tier_metrics(
        ctx.k, documents=_targets_rank_documents(ctx))

    def evaluate(data: list[Sample], name: str,
                 extra: Mapping[str, Any] | None = None) -> EvalResult:
        return evaluate_retrieval(data, metrics=metrics, ties=options.ties, match=options.match,
                                  seed=ctx.seed, name=name, doc_of=options.doc_of,
                                  score_threshold=options.score_threshold,
                                  dataset_hash=ctx.dataset_hash, extra_signature=extra,
                                  doc_id_pattern=options.doc_id_pattern)

    from ragmeter.targets.conformance import chunk_level_metrics
    from ragmeter.targets.tier_hooks import run_targets  # the user's own system, if any

    if got := run_targets(ctx, samples, "retrieve", evaluate, k=max(ctx.k), scores_ids=True,
                          chunk_metrics=chunk_level_metrics(
                              metrics, getattr(ctx, "all_samples", None) or samples)):
        return got
    if ctx.config.retrievers:
        from ragmeter.retrieval.run import retrieve_samples

        chunks = ctx.chunks()
        _gold_in_index(ctx, metrics, chunks, options)
        if options.doc_of is None and options.doc_id_pattern is None:
            # the index knows each chunk's document (a pre-chunked corpus' ids do not say it)
            doc_of = {c.chunk_id: c.doc_id for c in chunks}

            def evaluate(data: list[Sample], name: str,
                         extra: Mapping[str, Any] | None = None) -> EvalResult:
                return evaluate_retrieval(data, metrics=metrics, ties=options.ties,
                                          match=options.match, seed=ctx.seed, name=name,
                                          doc_of=doc_of, score_threshold=options.score_threshold,
                                          dataset_hash=ctx.dataset_hash, extra_signature=extra)

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


def _gold_in_index(ctx: TierContext, metrics: Sequence[str], chunks: Sequence[Any],
                   options: RetrievalOptions) -> None:
    """Gold ids that cannot exist in the index this run built fail the tier (exit 3): a
    built-in retriever can never return them, so their metrics would be 0 for a reason that
    is not the retriever's (an evalset made with other chunking, a production system's chunk
    ids). Checked once per tier, on every sample of the tier, at the levels its metrics use."""
    if ctx.cache.get("gold_in_index") or options.match != "id":
        return
    samples = ctx.all_samples
    chunk_ids = {c.chunk_id for c in chunks}
    doc_ids = {c.doc_id for c in chunks}
    levels = set()
    for name in metrics:
        m = parse_metric(name)
        if m.name not in RANKING_METRICS:
            continue
        level = str(m.get("level") or "auto")
        if level == "auto":
            level = "chunk" if any(s.gold_chunk_ids for s in samples) else "doc"
        levels.add(level)
    problems = []
    if "chunk" in levels:
        gold_chunks = sorted({g for s in samples for g in s.gold_chunk_ids or ()})
        gone = [g for g in gold_chunks if g not in chunk_ids]
        if gone:
            example = next(iter(sorted(chunk_ids)), "?")
            problems.append(
                f"{len(gone)} of {len(gold_chunks)} gold chunk ids are not in the index ({len(chunk_ids)} "
                f"chunks, ids like {example!r}): {', '.join(map(repr, gone[:3]))}; chunk-level "
                "metrics could never find them. Score at document level "
                "(hit_rate@5(level=doc)), give the corpus pre-chunked (lines with doc_id and "
                "chunk_id) so the index keeps your chunk ids, or build the evalset with the "
                "corpus' chunking parameters")
    if "doc" in levels:
        pattern = re.compile(options.doc_id_pattern) if options.doc_id_pattern else None
        by_chunk = {c.chunk_id: c.doc_id for c in chunks}
        gold_docs: set[str] = set()
        for s in samples:
            if s.gold_doc_ids:
                gold_docs.update(s.gold_doc_ids)
            else:
                for g in s.gold_chunk_ids or ():
                    hit = pattern.fullmatch(g) if pattern else None
                    gold_docs.add((options.doc_of or {}).get(g) or
                                  (hit.group("doc") if hit else None) or by_chunk.get(g)
                                  or g.rsplit("#", 1)[0])
        gone = sorted(g for g in gold_docs if g not in doc_ids)
        if gone:
            example = next(iter(sorted(doc_ids)), "?")
            problems.append(
                f"{len(gone)} of {len(gold_docs)} gold document ids are not in the index "
                f"({len(doc_ids)} documents, ids like {example!r}): "
                f"{', '.join(map(repr, gone[:3]))}; document-level metrics could never find "
                "them. Use the corpus the evalset was made from, or map chunk ids to "
                "documents with the tier's options doc_of / doc_id_pattern")
    if problems:
        raise WorkFailedError("the gold ids cannot exist in the index this run built from "
                              f"{ctx.config.corpus.path if ctx.config.corpus else 'the corpus'}"
                              ":\n  " + "\n  ".join(problems))
    ctx.cache["gold_in_index"] = True


register_tier(Tier(
    name="retrieval", title="Retrieval", title_ru="Поиск",
    doc="retrieval metrics (hit rate, MRR, NDCG, recall, ...) per retriever",
    run=run_retrieval, per_sample=True, options=RetrievalOptions))


__all__ = ["RetrievalOptions", "default_tier_metrics", "run_retrieval"]
