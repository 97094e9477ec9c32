"""The language probe: does the judge grade the same item differently in English and Russian?

Paired (the default wherever translations exist): a *pair* is a Russian benchmark item and
its English translation — same task, same label, the English item's ``pair`` naming the
Russian item's id. The bundled translations (``data/judge_bench_pairs.jsonl``, built by
``scripts/build_judge_bench.py`` from a seeded, label-balanced subset of the Russian items)
cover faithfulness, factual correctness, answer and context relevance and the production gate;
a user's benchmark file may carry its own pairs in the same way. Per pair the judge is right
(1) or wrong (0) on each side; the effect is the mean of English − Russian correctness, with a
percentile-bootstrap 95 % CI over pairs and a sign-flip randomization p-value (both seeded).
A negative effect: the judge is wrong more often in English.

Unpaired (only when no pair is available): the judge's accuracy on English minus Russian
items of the same tasks — different items, so item difficulty and language are confounded; the
result says so in its note and carries ``paired=False``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.judge_trust.bench import (
    MAX_TOKENS,
    BenchItem,
    BenchRun,
    _ask_items,
    bench_path,
    load_bench,
)
from ragmeter.judge_trust.probe_result import ProbeResult
from ragmeter.stats import DEFAULT_SEED, paired_test

PAIRS_FILE = "judge_bench_pairs.jsonl"
Pair = tuple[BenchItem, BenchItem]   # (Russian original, English translation)


def language_pairs(items: Sequence[BenchItem]) -> list[Pair]:
    """The pairs within ``items``: each English item whose ``pair`` names a Russian item of
    the same task and label there."""
    by_id = {i.id: i for i in items}
    out = []
    for en in items:
        ru = by_id.get(en.pair or "")
        if (en.lang == "en" and ru is not None and ru.lang == "ru" and ru.task == en.task
                and ru.label_value == en.label_value):
            out.append((ru, en))
    return out


def bundled_pairs(tasks: Sequence[str] | None = None) -> list[Pair]:
    """The bundled translations with their Russian originals (of ``tasks`` only, if given)."""
    originals = load_bench()
    translations = load_bench(bench_path(PAIRS_FILE))
    pairs = language_pairs([*originals, *translations])
    return [p for p in pairs if not tasks or p[0].task in tasks]


def _run_values(run: BenchRun | None, binary: bool) -> dict[str, float]:
    """Repeat 1 of a benchmark run asked with the same prompt variant: item id → value
    (NaN when unscored); empty when the run used the other variant."""
    if run is None or run.card.meta.get("prompt_variant") != ("binary" if binary else "graded"):
        return {}
    return {it.id: float(run.values[0, k]) for k, it in enumerate(run.items)}


def paired_language(judge: Any, pairs: Sequence[Pair], *, run: BenchRun | None = None,
                    binary: bool, seed: int = DEFAULT_SEED, n_resamples: int = 10000
                    ) -> ProbeResult:
    """English − Russian correctness per pair. An item the benchmark ``run`` already asked
    (with the same prompt variant) keeps its value; the judge is asked the others, through
    the benchmark's own calls."""
    known = _run_values(run, binary)
    todo = list({it.id: it for p in pairs for it in p if it.id not in known}.values())
    if todo:
        V = _ask_items(judge, todo, 1, binary, MAX_TOKENS)[0]
        known = {**known, **{it.id: float(V[0, k]) for k, it in enumerate(todo)}}
    ru_c, en_c = [], []
    for ru, en in pairs:
        a, b = known[ru.id], known[en.id]
        if not (math.isnan(a) or math.isnan(b)):
            ru_c.append(ru.correct(a))
            en_c.append(en.correct(b))
    tasks = tuple(sorted({p[0].task for p in pairs}))
    unscored = len(pairs) - len(ru_c)
    if not ru_c:
        return ProbeResult("language", None, None, None, 0, unscored, None, True, tasks,
                           "no pair scored on both sides")
    pc = paired_test(np.asarray(ru_c), np.asarray(en_c), metric="language", seed=seed,
                     n_resamples=n_resamples)
    return ProbeResult("language", pc.diff, pc.ci_low, pc.ci_high, pc.n, unscored,
                       pc.p_value, True, tasks,
                       "paired: each item in Russian and its English translation; "
                       "English − Russian correctness")


def language_gap(run: BenchRun, seed: int = DEFAULT_SEED, n_boot: int = 2000
                 ) -> ProbeResult:
    """English minus Russian accuracy over the tasks with items in both languages
    (unpaired: different items; used only when no translated pair is available)."""
    corr: dict[str, list[float]] = {"ru": [], "en": []}
    tasks = []
    lang = {i.id: i.lang for i in run.items}
    for task in sorted({i.task for i in run.items}):
        ids, c = run.correct(task)
        per = {g: [float(v) for s, v in zip(ids, c, strict=True) if lang[s] == g
                   and not math.isnan(v)] for g in ("ru", "en")}
        if per["ru"] and per["en"]:
            tasks.append(task)
            for g in ("ru", "en"):
                corr[g] += per[g]
    note = ("unpaired: no translated pairs, so the ru and en items are different items, "
            "not translations")
    if not corr["ru"] or not corr["en"]:
        return ProbeResult("language", None, None, None, 0, 0, None, False, (),
                           "needs translated pairs, or items of one task in both ru and en "
                           "(--lang all)")
    ru, en = np.asarray(corr["ru"]), np.asarray(corr["en"])
    rng = np.random.default_rng(seed)
    boots = (en[rng.integers(0, en.size, (n_boot, en.size))].mean(axis=1)
             - ru[rng.integers(0, ru.size, (n_boot, ru.size))].mean(axis=1))
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return ProbeResult("language", float(en.mean() - ru.mean()), float(lo), float(hi),
                       int(ru.size + en.size), 0, None, False, tuple(tasks), note)


__all__ = ["PAIRS_FILE", "Pair", "bundled_pairs", "language_gap", "language_pairs",
           "paired_language"]
