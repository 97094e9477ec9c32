"""Tier 2 (``generation``) and Tier 3 (``e2e``): answer quality from gold or retrieved contexts.

Tier 2 asks how good the answers are when the context is ideal; Tier 3 asks the same end to
end, with what a retriever found. Each runs in one of two modes:

* with an answer ``generator`` configured, new answers are written and scored —
  :func:`run_tier2` answers from the *gold* context (``reference_contexts``, else the texts of
  ``gold_chunk_ids`` looked up in ``chunks``) and :func:`run_tier3` from a retriever's top-k
  chunks (the sample keeps ``retrieved_ids`` / ``retrieved_contexts`` / ``retrieved_scores``,
  so id-based context precision/recall and answer metrics come from one run);
* without one, the answers already in the dataset (``response``) are scored, against their
  gold context (:func:`with_gold_contexts`) or the first retriever's top-k
  (:func:`with_retrieved_contexts`) when the sample has no ``retrieved_contexts`` of its own.

Both return the :class:`~ragmeter.results.records.EvalResult` of
:func:`~ragmeter.generation.evaluate.evaluate_generation`; generated runs keep the generated
samples in ``meta["samples"]`` and the generator (and retriever) settings in every signature.
A failed generation leaves ``response=None`` (metrics: ``missing_field:response``) and its
cause in ``metadata["generation_error"]``, counted in ``meta["generation_errors"]``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import DataError, RagmeterError, RecordProblem
from ragmeter.generation.client import GeneratorClient
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.results.records import EvalResult
from ragmeter.retrieval.base import Chunk
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier


def _chunk_map(chunks: Mapping[str, Chunk] | Sequence[Chunk] | None) -> dict[str, Chunk]:
    if chunks is None:
        return {}
    if isinstance(chunks, Mapping):
        return dict(chunks)
    return {c.chunk_id: c for c in chunks}


def gold_context(sample: Sample, texts: Mapping[str, str]) -> list[str] | None:
    """A sample's gold context: ``reference_contexts``, else the texts of its
    ``gold_chunk_ids`` (all must be in ``texts``, chunk id -> text); None when it has neither."""
    if sample.reference_contexts:
        return list(sample.reference_contexts)
    if sample.gold_chunk_ids and all(c in texts for c in sample.gold_chunk_ids):
        return [texts[c] for c in sample.gold_chunk_ids]
    return None


def gold_contexts(samples: Sequence[Sample], texts: Mapping[str, str], *,
                  hint: str) -> list[list[str]]:
    """Every sample's gold context for Tier 2 (:func:`gold_context`; a negative question gets
    an empty one: the generator should say it does not know). Samples with none raise one
    :class:`DataError` listing all of them, with ``hint`` — never an empty context sent to a
    generator that would then be scored on its refusals."""
    problems: list[RecordProblem] = []
    contexts: list[list[str]] = []
    for s in samples:
        gold = gold_context(s, texts)
        if gold is not None:
            contexts.append(gold)
        elif s.is_negative:
            contexts.append([])
        else:
            missing = [c for c in (s.gold_chunk_ids or []) if c not in texts]
            problems.append(RecordProblem(
                "samples", None, "reference_contexts",
                f"sample {s.id!r}: no gold context (no reference_contexts"
                + (f"; chunk ids not in the chunks: {missing[:3]}" if missing else "") + ")"))
            contexts.append([])
    if problems:
        raise DataError(problems, hint=hint)
    return contexts


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
    ``kwargs`` go to :func:`evaluate_generation` (``language``, ``keep_prompts``, ``name``).
    """
    cmap = _chunk_map(chunks)
    contexts = gold_contexts(samples, {cid: c.text for cid, c in cmap.items()},
                             hint="Tier 2 needs reference_contexts or gold_chunk_ids with "
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
    """Retrieve top-``k`` with ``retriever.search``, generate from those chunks, then score;
    ``kwargs`` as for :func:`run_tier2`."""
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


# --------------------------------------------------------------------------- answers in the data
def _with_contexts(samples: list[Sample], contexts: list[list[str] | None]) -> list[Sample]:
    return [s if s.retrieved_contexts or c is None else replace(s, retrieved_contexts=c)
            for s, c in zip(samples, contexts, strict=True)]


def with_gold_contexts(ctx: TierContext, samples: list[Sample]) -> list[Sample]:
    """Samples for scoring answers already in the dataset against their gold context: a sample
    without ``retrieved_contexts`` gets :func:`gold_context` (chunk texts from the configured
    corpus); one without a gold context is left as it is."""
    if all(s.retrieved_contexts for s in samples):
        return samples
    texts = {c.chunk_id: c.text for c in ctx.chunks()} if ctx.config.corpus is not None else {}
    return _with_contexts(samples, [gold_context(s, texts) for s in samples])


def with_retrieved_contexts(ctx: TierContext, samples: list[Sample], k: int) -> list[Sample]:
    """Samples for scoring answers already in the dataset end to end: a sample without
    ``retrieved_contexts`` gets the top-``k`` of the tier's first retriever."""
    if all(s.retrieved_contexts for s in samples) or not ctx.config.retrievers:
        return samples
    from ragmeter.retrieval.run import retrieve_samples

    name, retriever = next(iter(ctx.retrievers().items()))
    filled = retrieve_samples(retriever, samples, k)
    for s in filled:
        ctx.annotate(s.id, f"e2e_contexts:{name}", {"ids": list(s.retrieved_ids or [])})
    return _with_contexts(samples, [list(s.retrieved_contexts or []) or None for s in filled])


# --------------------------------------------------------------------------- the two tiers
@dataclass(frozen=True)
class GenerationOptions(TierOptions):
    """``embedding``: which configured embedding ``semantic_similarity`` uses by default (the
    first one if not given); ``language`` of the judge prompts (auto, ru, en);
    ``keep_prompts``: store rendered prompts and raw replies in per-sample details."""

    embedding: str | None = None
    language: str = "auto"
    keep_prompts: bool = False
    #: how a jury (``judges: [a, b, c]`` on the tier) combines grades: majority, mean,
    #: median, trimmed_mean or weighted_mean (with ``weights``, one per judge); claim verdicts
    #: are always voted per claim
    vote: str = "majority"
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        from ragmeter.errors import ConfigError
        from ragmeter.judges.multi import COMBINE_METHODS

        if self.vote not in COMBINE_METHODS:
            raise ConfigError("vote", f"unknown vote {self.vote!r}", list(COMBINE_METHODS))


@dataclass(frozen=True)
class E2EOptions(GenerationOptions):
    """As for ``generation``, plus ``k``: how many retrieved chunks the answer sees
    (default: 5, or the largest configured cutoff when smaller)."""

    k: int | None = None


def _metrics(ctx: TierContext) -> list[str] | None:
    return list(ctx.tier.metrics) or None


def tier_judge(ctx: TierContext, options: GenerationOptions) -> Any | None:
    """The tier's judge: a jury (:class:`~ragmeter.judges.multi.MultiJudge`) when the tier
    names several ``judges``, else the one judge (or none)."""
    names = ctx.tier.judges
    if len(names) < 2:
        return ctx.judge(names[0]) if names else ctx.optional_judge()
    from ragmeter.errors import ConfigError
    from ragmeter.judges.multi import MultiJudge

    if options.weights and len(options.weights) != len(names):
        raise ConfigError(f"tiers.{ctx.tier.name}.options.weights",
                          f"{len(options.weights)} weights for {len(names)} judges")
    return MultiJudge([ctx.judge(n) for n in names], combine=options.vote,  # type: ignore[arg-type]
                      weights=list(options.weights) or None)


def run_generation(ctx: TierContext, samples: list[Sample],
                   options: GenerationOptions) -> list[EvalResult]:
    """With a ``generator``: answer from the gold context, then score; without one: score the
    answers already in the dataset against their gold context. Without a judge only the
    metrics that need none are computed."""
    judge = tier_judge(ctx, options)
    embedder = ctx.embedders(options.embedding)   # configured options kept (URL, key)
    got = _on_targets(ctx, samples, options, "generate", judge, embedder)
    if got:
        return got
    client = ctx.generator()
    if client is not None:
        chunks = ctx.chunks() if ctx.config.corpus is not None else None
        return [run_tier2(samples, client, chunks=chunks, metrics=_metrics(ctx), judge=judge,
                          embedder=embedder, seed=ctx.seed, language=options.language,
                          keep_prompts=options.keep_prompts)]
    if not any(s.response for s in samples):
        raise TierNotRunnable("no generator configured and the dataset has no answers "
                              "('response'); add a 'generator' endpoint")
    return [evaluate_generation(with_gold_contexts(ctx, samples), _metrics(ctx), judge=judge,
                                embedder=embedder, seed=ctx.seed, language=options.language,
                                keep_prompts=options.keep_prompts, name="generation")]


def run_e2e(ctx: TierContext, samples: list[Sample], options: E2EOptions) -> list[EvalResult]:
    """Retrieve with each of the tier's retrievers, generate, score (one result per
    retriever); without a generator, score the bot's own answers in the dataset (samples
    without contexts get the first retriever's top-k)."""
    judge = tier_judge(ctx, options)
    embedder = ctx.embedders(options.embedding)   # configured options kept (URL, key)
    k = options.k if options.k is not None else min(5, max(ctx.k))
    got = _on_targets(ctx, samples, options, "answer", judge, embedder, k=k)
    if got:
        return got
    if ctx.config.generator is not None:
        if not ctx.config.retrievers:
            raise TierNotRunnable("e2e with a generator needs at least one retriever")
        out = []
        for name, retriever in ctx.retrievers().items():
            client = ctx.generator()
            assert client is not None  # a generator is configured
            res = run_tier3(samples, client, retriever, ctx.chunks(), k=k,
                            metrics=_metrics(ctx), judge=judge, embedder=embedder,
                            seed=ctx.seed, language=options.language,
                            keep_prompts=options.keep_prompts)
            res.name = name
            out.append(res)
        return out
    if not any(s.response for s in samples):
        raise TierNotRunnable("no generator configured and the dataset has no answers")
    return [evaluate_generation(with_retrieved_contexts(ctx, samples, k), _metrics(ctx),
                                judge=judge, embedder=embedder, seed=ctx.seed,
                                language=options.language, keep_prompts=options.keep_prompts,
                                name="e2e")]


def _on_targets(ctx: TierContext, samples: list[Sample], options: GenerationOptions,
                entry: str, judge: Any, embedder: Any, k: int | None = None) -> list[EvalResult]:
    """Tier 2 through each target's ``generate`` entry on the gold contexts, or Tier 3 on its
    ``answer`` (its own retrieval); empty when no configured target has that entry."""
    from ragmeter.targets.tier_hooks import has_targets, run_targets

    if not has_targets(ctx):
        return []
    contexts = None
    if entry == "generate":
        texts = {c.chunk_id: c.text for c in ctx.chunks()} if ctx.config.corpus else {}
        contexts = gold_contexts(samples, texts, hint=(
            "a target's 'generate' entry answers from the gold context: give the samples "
            "reference_contexts, or gold_chunk_ids and a 'corpus:' whose chunks carry them "
            "(a pre-chunked corpus keeps its chunk ids); or measure the target end to end "
            "with the 'e2e' tier"))
        samples = [replace(s, retrieved_contexts=c or None, retrieved_ids=None)
                   for s, c in zip(samples, contexts, strict=True)]
    tier = 2 if entry == "generate" else 3

    def score(data: list[Sample], name: str, sig: dict[str, str]) -> EvalResult:
        res = evaluate_generation(data, _metrics(ctx), judge=judge, embedder=embedder,
                                  seed=ctx.seed, language=options.language,
                                  keep_prompts=options.keep_prompts, name=name)
        return _finish(res, data, {}, tier, {**sig, "context": "gold" if tier == 2 else
                                             "target"})

    return run_targets(ctx, samples, entry, score, k=k, contexts=contexts)


register_tier(Tier(
    name="generation", title="Answer generation", title_ru="Генерация ответа",
    doc="answer quality from the gold context (faithfulness, ROUGE, BLEU, ...)",
    run=run_generation, judge="optional", default_judge=True, per_sample=True,
    options=GenerationOptions))
register_tier(Tier(
    name="e2e", title="End to end", title_ru="Сквозная оценка",
    doc="answer quality from what the retriever found, per retriever",
    run=run_e2e, judge="optional", default_judge=True, per_sample=True, options=E2EOptions))
