"""Tier 2 (generation from gold context) and Tier 3 (end to end) runs.

* :func:`run_tier2` — the generator answers from the *ideal* context: ``reference_contexts``,
  else the texts of ``gold_chunk_ids`` looked up in ``chunks``. The answer is scored with the
  contexts it saw as ``retrieved_contexts`` (so faithfulness is measured against them).
* :func:`run_tier3` — a retriever's top-k chunks for each question go to the generator; the
  sample keeps ``retrieved_ids`` / ``retrieved_contexts`` / ``retrieved_scores``, so retrieval-
  side (id-based context precision/recall) and answer-side metrics come from one run.

Both return the :class:`~ragmeter.results.records.EvalResult` of
:func:`~ragmeter.generation.evaluate.evaluate_generation`, with the generated samples in
``meta["samples"]`` and the generator (and retriever) settings in every signature.
A failed generation leaves ``response=None`` (metrics: ``missing_field:response``) and its
cause in ``metadata["generation_error"]``, counted in ``meta["generation_errors"]``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import DataError, RagmeterError, RecordProblem
from ragmeter.generation.client import GeneratorClient
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.results.records import EvalResult
from ragmeter.retrieval.base import Chunk


def _chunk_map(chunks: Mapping[str, Chunk] | Sequence[Chunk] | None) -> dict[str, Chunk]:
    if chunks is None:
        return {}
    if isinstance(chunks, Mapping):
        return dict(chunks)
    return {c.chunk_id: c for c in chunks}


def _generate(client: GeneratorClient, samples: list[Sample],
              contexts: list[list[str]]) -> tuple[list[Sample], dict[str, int]]:
    todo = [i for i, s in enumerate(samples) if s.user_input]
    gens = client.generate_many([(samples[i].user_input or "", contexts[i]) for i in todo])
    out = list(samples)
    errors: Counter[str] = Counter()
    for i, g in zip(todo, gens, strict=True):
        meta = dict(samples[i].metadata)
        if g.reason:
            meta["generation_error"] = g.reason
            errors[g.reason] += 1
            if g.detail:
                meta["generation_detail"] = g.detail
        out[i] = replace(samples[i], response=g.text, metadata=meta)
    for i, s in enumerate(samples):
        if not s.user_input:
            errors["missing_field:user_input"] += 1
            out[i] = replace(s, response=None,
                             metadata={**s.metadata,
                                       "generation_error": "missing_field:user_input"})
    return out, dict(errors)


def _finish(result: EvalResult, samples: list[Sample], errors: dict[str, int], tier: int,
            sig: dict[str, Any]) -> EvalResult:
    for r in result:
        r.signature = r.signature.with_fields(tier=tier, **sig)
    result.meta.update({"tier": tier, "generation_errors": errors,
                        "samples": [s.to_dict() for s in samples], **{
                            f"sig_{k}": v for k, v in sig.items()}})
    return result


def run_tier2(
    samples: Sequence[Sample],
    client: GeneratorClient,
    *,
    chunks: Mapping[str, Chunk] | Sequence[Chunk] | None = None,
    metrics: Sequence[str] | None = None,
    judge: Any | None = None,
    embedder: Any | None = None,
    seed: int = 42,
    **kwargs: Any,
) -> EvalResult:
    """Generate from gold context, then score. Samples with neither ``reference_contexts`` nor
    resolvable ``gold_chunk_ids`` raise one :class:`DataError` listing all of them (negative
    questions get an empty context and are kept: the generator should say it does not know).
    """
    cmap = _chunk_map(chunks)
    problems: list[RecordProblem] = []
    contexts: list[list[str]] = []
    for s in samples:
        if s.reference_contexts:
            contexts.append(list(s.reference_contexts))
        elif s.gold_chunk_ids and all(c in cmap for c in s.gold_chunk_ids):
            contexts.append([cmap[c].text for c in s.gold_chunk_ids])
        elif s.is_negative:
            contexts.append([])
        else:
            missing = [c for c in (s.gold_chunk_ids or []) if c not in cmap]
            problems.append(RecordProblem(
                "samples", None, "reference_contexts",
                f"sample {s.id!r}: no gold context (no reference_contexts"
                + (f"; chunk ids not in chunks: {missing[:3]}" if missing else "") + ")"))
            contexts.append([])
    if problems:
        raise DataError(problems, hint="Tier 2 needs reference_contexts or gold_chunk_ids with "
                        "chunks=...; use run_tier3 to answer from a retriever instead")
    base = [replace(s, retrieved_contexts=ctx or None, retrieved_ids=None,
                    retrieved_scores=None) for s, ctx in zip(samples, contexts, strict=True)]
    generated, errors = _generate(client, base, contexts)
    res = evaluate_generation(generated, metrics, judge=judge, embedder=embedder, seed=seed,
                              name=kwargs.pop("name", "tier2"), **kwargs)
    return _finish(res, generated, errors, 2,
                   {**client.config.signature_fields(), "context": "gold"})


def run_tier3(
    samples: Sequence[Sample],
    client: GeneratorClient,
    retriever: Any,
    chunks: Mapping[str, Chunk] | Sequence[Chunk],
    *,
    k: int = 5,
    metrics: Sequence[str] | None = None,
    judge: Any | None = None,
    embedder: Any | None = None,
    seed: int = 42,
    **kwargs: Any,
) -> EvalResult:
    """Retrieve top-``k`` with ``retriever.search``, generate from those chunks, then score."""
    cmap = _chunk_map(chunks)
    questions = [s.user_input or "" for s in samples]
    hits = retriever.search(questions, k)
    if len(hits) != len(samples):
        raise RagmeterError(f"retriever {getattr(retriever, 'name', retriever)!r} returned "
                            f"{len(hits)} hit lists for {len(samples)} queries")
    base: list[Sample] = []
    contexts: list[list[str]] = []
    for s, hs in zip(samples, hits, strict=True):
        known = [h for h in hs if h.chunk_id in cmap]
        ctx = [cmap[h.chunk_id].text for h in known]
        contexts.append(ctx)
        base.append(replace(s, retrieved_ids=[h.chunk_id for h in known],
                            retrieved_scores=[float(h.score) for h in known],
                            retrieved_contexts=ctx or None))
    generated, errors = _generate(client, base, contexts)
    if metrics is not None:
        metrics = list(metrics)
    res = evaluate_generation(generated, metrics, judge=judge, embedder=embedder, seed=seed,
                              name=kwargs.pop("name", "tier3"), **kwargs)
    rsig = {}
    if hasattr(retriever, "signature_fields"):
        rsig = {f"retriever_{k2}": v for k2, v in retriever.signature_fields().items()}
    return _finish(res, generated, errors, 3, {**client.config.signature_fields(), "topk": k,
                                               "retriever": getattr(retriever, "name", "?"),
                                               **rsig})
