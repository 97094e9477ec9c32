"""The ``stress`` tier: a target's generator with the gold context first / middle / last
among distractors from the same corpus, and shuffled, each arm's drop against the gold-only
control with a paired CI (:mod:`ragmeter.targets.stress`). Needs a configured ``target``
with a ``generate`` entry and a ``corpus``."""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.results.records import EvalResult
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.generation import gold_context
from ragmeter.tiers.registry import Tier, TierOptions, register_tier


@dataclass(frozen=True)
class StressOptions(TierOptions):
    """``ks``: how many distractors surround the gold context (one set of arms per k);
    ``shuffled``: also a shuffled arm per k; ``language``: of the judge prompts."""

    ks: tuple[int, ...] = (4, 8, 16)
    shuffled: bool = True
    language: str = "auto"


def run_stress_tier(ctx: TierContext, samples: list[Sample],
                    options: StressOptions) -> list[EvalResult]:
    from ragmeter.targets.stress import distractors_for, run_stress
    from ragmeter.targets.tier_hooks import target_sessions

    sessions = [s for s in target_sessions(ctx).values() if "generate" in s.target.entries()]
    if not sessions:
        raise TierNotRunnable("stress needs a target with a 'generate' entry (target: ...)")
    if ctx.config.corpus is None:
        raise TierNotRunnable("stress needs a corpus (the distractors come from it)")
    chunks = ctx.chunks()
    texts = {c.chunk_id: c.text for c in chunks}
    kept = [(s, g) for s in samples if (g := gold_context(s, texts)) and not s.is_negative]
    if not kept:
        raise TierNotRunnable("no sample has a gold context (reference_contexts or "
                              "gold_chunk_ids in the corpus)")
    todo, gold = [s for s, _ in kept], [g for _, g in kept]
    distractors = distractors_for(todo, gold, chunks, max(options.ks))
    judge = ctx.optional_judge()
    metrics = list(ctx.tier.metrics) or ["rouge_l"]

    def score(data: list[Sample], name: str) -> EvalResult:
        return evaluate_generation(data, metrics, judge=judge, seed=ctx.seed,
                                   language=options.language, name=name)

    out: list[EvalResult] = []
    for session in sessions:
        out += run_stress(session, todo, gold, distractors, score, ks=options.ks,
                          shuffled=options.shuffled, seed=ctx.seed)
    return out


register_tier(Tier(
    name="stress", title="Stress tests", title_ru="Стресс-тесты",
    doc="the target's answers with the gold context among distractors (first / middle / "
        "last, shuffled): the drop against the gold-only control, paired",
    run=run_stress_tier, judge="optional", per_sample=True, options=StressOptions))
