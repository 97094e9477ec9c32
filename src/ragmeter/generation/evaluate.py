"""``evaluate_generation``: score the answers already in the samples (``response``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.generation.context import GenerationContext
from ragmeter.metrics.judged import ROWS as JUDGED_ROWS
from ragmeter.metrics.registry import Metric, parse_metric
from ragmeter.results.records import EvalResult
from ragmeter.stats import DEFAULT_SEED
from ragmeter.text import detect_language

#: A sensible default set: every metric that needs no judge.
DEFAULT_METRICS = ("rouge_1", "rouge_2", "rouge_l", "bleu", "semantic_similarity")
#: The full judged set, one per row of :mod:`ragmeter.metrics.judged` (≤ 4 judge calls per
#: sample together).
JUDGED_DEFAULT = tuple(row.name for row in JUDGED_ROWS)
GENERATION_FAMILIES = ("lexical", "semantic", "judged", "context_ids")


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
) -> EvalResult:
    """Score generation metrics on ``samples`` and return one :class:`EvalResult`.

    ``metrics``: metric strings (``"rouge_l(stem=ru)"``, ``"factual_correctness(mode=recall)"``);
    default: :data:`DEFAULT_METRICS`, plus :data:`JUDGED_DEFAULT` when a judge is given.
    ``judge``: any :class:`~ragmeter.judges.base.Judge`; all judged metrics share one plan
    (≤ 4 calls per sample). ``embedder``: a factory ``name -> Embedder`` (default:
    :func:`ragmeter.retrieval.embedders.get_embedder`); a string picks the default model of
    ``semantic_similarity`` when the metric list does not name one. ``keep_prompts`` stores
    rendered prompts and raw replies in per-sample details.
    """
    if language not in ("auto", "ru", "en"):
        raise ConfigError("language", f"unknown language {language!r}", ["auto", "ru", "en"])
    if metrics is None:
        metrics = [*DEFAULT_METRICS, *(JUDGED_DEFAULT if judge is not None else ())]
    if isinstance(embedder, str):
        # a bare "semantic_similarity" names no model: use the one asked for
        metrics = [f"semantic_similarity(model={embedder})"
                   if isinstance(m, str) and m.strip() == "semantic_similarity" else m
                   for m in metrics]
    parsed = [parse_metric(m) for m in metrics]
    for m in parsed:
        if m.spec.family not in GENERATION_FAMILIES:
            raise ConfigError("metrics", f"'{m}' is a {m.spec.family} metric, not a generation "
                              "metric", list(GENERATION_FAMILIES))
    judged = [m for m in parsed if m.spec.family == "judged"]
    if judged and judge is None:
        raise ConfigError("judge", f"metrics {', '.join(map(str, judged))} need an LLM judge; "
                          "pass judge=... (or --judge-url/--judge-model), or drop them")
    kwargs: dict[str, Any] = {}
    if callable(embedder):
        kwargs["embedder_factory"] = embedder
    ctx = GenerationContext(list(samples), seed=seed, judge=judge, language=language,
                            keep_prompts=keep_prompts, **kwargs)
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
    result.meta["timings_s"] = timings
    if "corpus" in ctx.cache:
        result.meta["corpus"] = ctx.cache["corpus"]
    plans = ctx.judged.plans
    if plans:
        total = sum(p.n_requests for p in plans)
        by_prompt: dict[str, int] = {}
        for p in plans:
            for k, v in p.by_prompt.items():
                by_prompt[k] = by_prompt.get(k, 0) + v
        result.meta["judge_calls"] = {
            "total": total, "per_sample": total / max(1, len(ctx.samples)),
            "by_prompt": by_prompt, "judge": plans[0].judge_name,
            "model": plans[0].judge_model, "demo": plans[0].binary,
        }
    return result
