"""``evaluate_generation``: score the answers already in the samples (``response``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MissingExtraError
from ragmeter.generation.context import GenerationContext
from ragmeter.metrics.judged.rows import JUDGED_DEFAULT
from ragmeter.metrics.registry import Metric, parse_metric
from ragmeter.results.records import EvalResult
from ragmeter.stats import DEFAULT_SEED
from ragmeter.text import detect_language

_log = logging.getLogger("ragmeter.generation")

#: A sensible default set: every metric that needs no judge.
DEFAULT_METRICS = ("rouge_1", "rouge_2", "rouge_l", "bleu", "semantic_similarity")
GENERATION_FAMILIES = ("lexical", "semantic", "judged", "context_ids", "refusal", "citations")
#: metrics that embed text; their ``model`` parameter names the embedder (an optional extra)
EMBEDDING_METRICS = ("semantic_similarity", "answer_correctness")


def evaluate_generation(
    samples: Sequence[Sample],
    metrics: Sequence[str | Metric] | None = None,
    *,
    judge: Any | None = None,
    embedder: str | Callable[[str], Any] | None = None,
    seed: int = DEFAULT_SEED,
    language: str = "auto",
    keep_prompts: bool = False,
    name: str = "generation",
    batch_size: int | None = None,
    on_batch: Callable[[EvalResult], None] | None = None,
    data_hash: str | None = None,
    embedders: dict[str, Any] | None = None,
    outputs_hash: str | None = None,
) -> EvalResult:
    """Score generation metrics on ``samples`` and return one :class:`EvalResult`.

    ``metrics``: metric strings (``"rouge_l(stem=ru)"``, ``"factual_correctness(mode=recall)"``);
    default: :data:`DEFAULT_METRICS`, plus :data:`JUDGED_DEFAULT` when a judge is given.
    ``judge``: any :class:`~ragmeter.judges.base.Judge`, or a plain function
    ``fn(request) -> dict | str`` (see :func:`ragmeter.make_judge`); all judged metrics share one plan
    (≤ 4 calls per sample). ``embedder``: a factory ``name -> Embedder`` (default:
    :func:`ragmeter.retrieval.embedders.get_embedder`); a string picks the default model of
    ``semantic_similarity`` when the metric list does not name one. ``keep_prompts`` stores
    rendered prompts and raw replies in per-sample details.

    ``batch_size``: score the samples ``batch_size`` at a time and call ``on_batch`` with each
    batch's result as soon as it is done (so per-sample records can be written incrementally);
    the returned result covers every sample, with the same signatures as an unbatched run.
    ``data_hash`` / ``outputs_hash`` / ``embedders``: the gold-fields dataset hash, the hash of
    the system outputs and the loaded embedders to use (batches share them).
    """
    judge = _judge_of(judge)
    if batch_size is not None:
        return _in_batches(list(samples), batch_size, on_batch, metrics=metrics, judge=judge,
                           embedder=embedder, seed=seed, language=language,
                           keep_prompts=keep_prompts, name=name).attach_samples(samples)
    if language not in ("auto", "ru", "en"):
        raise ConfigError("language", f"unknown language {language!r}", ["auto", "ru", "en"])
    defaulted = metrics is None
    parsed = _parse(metrics, judge is not None, embedder)
    ctx = _context(samples, embedder, seed=seed, judge=judge, language=language,
                   keep_prompts=keep_prompts, data_hash=data_hash, outputs_hash=outputs_hash,
                   embedders=embedders)
    skipped: list[dict[str, str]] = []
    if defaulted:  # a default metric whose extra is not installed is skipped, not an error
        parsed, skipped = _drop_unavailable(parsed, ctx)
    judged = [m for m in parsed if m.spec.family == "judged"]
    if judged and judge is None:
        raise ConfigError("judge", f"metrics {', '.join(map(str, judged))} need an LLM judge; "
                          "pass judge=... (or --judge-url/--judge-model), or drop them")
    ctx.judged.announced = tuple(judged)
    result = EvalResult(name, meta={"n_samples": len(ctx.samples), "seed": seed,
                                    "dataset": ctx.data_hash, "outputs": ctx.outputs_hash,
                                    "lang": detect_language(s.user_input for s in ctx.samples)})
    timings: dict[str, float] = {}
    for m in parsed:
        t0 = time.perf_counter()
        assert m.spec.compute is not None  # every generation spec has one
        result.add(m.spec.compute(m, ctx))
        timings[str(m)] = round(time.perf_counter() - t0, 4)
        _log.info("metric %s: %.3f s", m, timings[str(m)])
    result.meta["timings_s"] = timings
    result.attach_samples(ctx.samples)  # question/answer/contexts for to_pandas and gates
    if skipped:
        result.meta["skipped_metrics"] = skipped
        for skip in skipped:
            _log.info("metric %s skipped: %s", skip["metric"], skip["reason"])
    if "corpus" in ctx.cache:
        result.meta["corpus"] = ctx.cache["corpus"]
    plans = ctx.judged.plans
    if plans:
        total = sum(p.n_requests for p in plans)
        result.meta["judge_calls"] = {
            "total": total, "per_sample": total / max(1, len(ctx.samples)),
            "by_prompt": _summed(p.by_prompt for p in plans), "judge": plans[0].judge_name,
            "model": plans[0].judge_model, "demo": plans[0].binary,
            "mock": any(p.mock for p in plans)}
    return result


def _judge_of(judge: Any) -> Any:
    """A judge, or a plain function ``fn(request) -> dict | str`` made one."""
    if judge is None or hasattr(judge, "ask_many"):
        return judge
    from ragmeter.judges.factory import as_judge

    return as_judge(judge)


def _parse(metrics: Sequence[str | Metric] | None, with_judge: bool,
           embedder: str | Callable[[str], Any] | None) -> list[Metric]:
    """The generation metrics asked for (default: :data:`DEFAULT_METRICS`, plus
    :data:`JUDGED_DEFAULT` with a judge); any other family is a :class:`ConfigError`."""
    if metrics is None:
        metrics = [*DEFAULT_METRICS, *(JUDGED_DEFAULT if with_judge else ())]
    default = embedder if isinstance(embedder, str) else getattr(embedder, "default_model",
                                                                  None)
    if isinstance(default, str):
        # a bare "semantic_similarity" names no model: use the one asked for (a factory's
        # default_model)
        metrics = [f"semantic_similarity(model={default})"
                   if isinstance(m, str) and m.strip() == "semantic_similarity" else m
                   for m in metrics]
    parsed = [parse_metric(m) for m in metrics]
    for m in parsed:
        if m.spec.family not in GENERATION_FAMILIES:
            raise ConfigError("metrics", f"'{m}' is a {m.spec.family} metric, not a generation "
                              "metric", list(GENERATION_FAMILIES))
    return parsed


def _summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts by key, added up."""
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _context(samples: Sequence[Sample], embedder: str | Callable[[str], Any] | None,
             **kwargs: Any) -> GenerationContext:
    """The scoring context; empty hashes and a missing embedder factory take the defaults."""
    given = {k: v for k, v in kwargs.items()
             if v is not None and not (isinstance(v, str) and not v)}
    if callable(embedder):
        given["embedder_factory"] = embedder
    return GenerationContext(list(samples), **given)


def _drop_unavailable(parsed: list[Metric], ctx: GenerationContext
                      ) -> tuple[list[Metric], list[dict[str, str]]]:
    """Split default metrics into those that can run and those whose embedder's optional extra
    is missing (``{"metric", "reason", "install"}`` each; the reason carries the pip line)."""
    keep: list[Metric] = []
    skipped: list[dict[str, str]] = []
    for m in parsed:
        if m.name in EMBEDDING_METRICS:
            try:
                ctx.embedder(str(m.get("model")))
            except MissingExtraError as exc:
                skipped.append({"metric": str(m), "reason": str(exc),
                                "install": f"pip install 'ragmeter[{exc.extra}]'"})
                continue
        keep.append(m)
    return keep, skipped


def _in_batches(samples: list[Sample], batch_size: int,
                on_batch: Callable[[EvalResult], None] | None, **kwargs: Any) -> EvalResult:
    """Evaluate ``batch_size`` samples at a time; merge the batches into one result."""
    from ragmeter.data.hashing import gold_hash, outputs_hash
    from ragmeter.results.records import MetricResult

    if batch_size < 1:
        raise ConfigError("batch_size", f"must be a positive integer, got {batch_size}")
    data, outputs = gold_hash(samples), outputs_hash(samples)
    shared: dict[str, Any] = {}
    parts: list[EvalResult] = []
    for start in range(0, max(1, len(samples)), batch_size):
        part = evaluate_generation(samples[start:start + batch_size], data_hash=data,
                                   outputs_hash=outputs, embedders=shared, **kwargs)
        if on_batch is not None:
            on_batch(part)
        parts.append(part)
    first = parts[0]
    merged = EvalResult(first.name, meta=dict(first.meta))
    merged.meta["n_samples"] = len(samples)
    merged.meta["lang"] = detect_language(s.user_input for s in samples)
    for key, r in first.results.items():
        counts: dict[str, int] = {}
        for part in parts:
            for c, v in part.results[key].counts.items():
                counts[c] = counts.get(c, 0) + v
        merged.add(MetricResult.concat(
            key, [part.results[key] for part in parts], r.signature, counts=counts,
            higher_is_better=r.higher_is_better, seed=r.seed, n_boot=r.n_boot))
    timings: dict[str, float] = {}
    for part in parts:
        for k, v in part.meta.get("timings_s", {}).items():
            timings[k] = round(timings.get(k, 0.0) + v, 4)
    merged.meta["timings_s"] = timings
    calls = [p.meta["judge_calls"] for p in parts if "judge_calls" in p.meta]
    if calls:
        total = sum(c["total"] for c in calls)
        merged.meta["judge_calls"] = {**calls[0], "total": total,
                                      "by_prompt": _summed(c["by_prompt"] for c in calls),
                                      "per_sample": total / max(1, len(samples))}
    return merged
