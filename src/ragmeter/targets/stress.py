"""Stress tests of a target's generator, each reported as the drop against a control arm.

Through the target's ``generate`` entry every sample is answered several times, once per arm:

* ``control``: the gold context alone;
* ``first@k`` / ``middle@k`` / ``last@k``: the gold context first, in the middle or last among
  ``k`` distractor passages (for each ``k`` of the options, e.g. 4, 8, 16);
* ``shuffled@k``: the gold context and ``k`` distractors in a seeded random order;
* ``paraphrase``: the gold context alone, the question asked in other words (a sample's
  ``metadata.paraphrases``, the first one; samples without one are not in this arm).

Distractors come from the same corpus: the passages a BM25 retriever ranks highest for the
question, gold passages excluded (hard distractors, not random ones). Each arm is scored
with the tier's metrics; for every metric and arm, ``<metric>:<arm>-control`` holds the
per-sample difference arm − control, so its mean is the drop and its bootstrap CI is a paired
CI (samples scored in both arms only).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.targets.fill import mark_unscored
from ragmeter.targets.session import TargetSession

POSITIONS = ("first", "middle", "last")
Score = Callable[[list[Sample], str], EvalResult]


def arms(ks: Sequence[int], shuffled: bool = True) -> list[str]:
    """Arm names in report order (control first)."""
    out = ["control"]
    for k in ks:
        out += [f"{p}@{k}" for p in POSITIONS] + ([f"shuffled@{k}"] if shuffled else [])
    return out


def paraphrase_of(sample: Sample) -> str | None:
    """The sample's first paraphrase (``metadata.paraphrases``: a text or a list), if any."""
    p = (sample.metadata or {}).get("paraphrases")
    if isinstance(p, str):
        return p.strip() or None
    if isinstance(p, list):
        return next((x.strip() for x in p if isinstance(x, str) and x.strip()), None)
    return None


def arm_contexts(arm: str, gold: list[str], distractors: list[str], rng: random.Random
                 ) -> list[str]:
    """The contexts one arm gives one sample (the gold passages kept together)."""
    if arm in ("control", "paraphrase"):
        return list(gold)
    kind, _, k_text = arm.partition("@")
    pool = distractors[: int(k_text)]
    if kind == "first":
        return [*gold, *pool]
    if kind == "last":
        return [*pool, *gold]
    if kind == "middle":
        half = len(pool) // 2
        return [*pool[:half], *gold, *pool[half:]]
    mixed = [*gold, *pool]
    rng.shuffle(mixed)
    return mixed


def distractors_for(samples: Sequence[Sample], gold: Sequence[list[str]], chunks: Sequence[Any],
                    depth: int) -> list[list[str]]:
    """Per sample, the ``depth`` corpus passages BM25 ranks highest that are not its gold."""
    from ragmeter.retrieval.retrievers import make_retriever

    retriever = make_retriever("bm25")
    retriever.index(list(chunks))
    text = {c.chunk_id: c.text for c in chunks}
    hits = retriever.search([s.user_input or "" for s in samples], depth * 2 + 8)
    out = []
    for s, g, hs in zip(samples, gold, hits, strict=True):
        gold_ids = set(s.gold_chunk_ids or ())
        gold_text = set(g)
        picked = [text[h.chunk_id] for h in hs
                  if h.chunk_id not in gold_ids and text[h.chunk_id] not in gold_text]
        out.append(picked[:depth])
    return out


def paired_drops(control: EvalResult, arm: EvalResult, arm_name: str) -> list[MetricResult]:
    """Per metric, the per-sample difference arm − control (NaN where either is unscored)."""
    out = []
    for m in control:
        other = arm.results.get(m.metric)
        if other is None:
            continue
        pos = {sid: i for i, sid in enumerate(other.sample_ids)}
        vals = np.full(len(m.sample_ids), np.nan)
        reasons: dict[int, str] = {}
        for i, sid in enumerate(m.sample_ids):
            j = pos.get(sid)
            a = m.values[i]
            b = other.values[j] if j is not None else np.nan
            if np.isnan(a) or np.isnan(b):
                reasons[i] = (m.reasons.get(i) or (other.reasons.get(j) if j is not None
                                                   else None) or "not_in_both_arms")
            else:
                vals[i] = b - a
        out.append(MetricResult(f"{m.metric}:{arm_name}-control", list(m.sample_ids), vals,
                                other.signature.with_fields(arm=arm_name, vs="control"),
                                reasons=reasons, higher_is_better=m.higher_is_better,
                                seed=m.seed))
    return out


def run_stress(session: TargetSession, samples: list[Sample], gold: list[list[str]],
               distractors: list[list[str]], score: Score, *, ks: Sequence[int],
               shuffled: bool = True, seed: int = 42) -> list[EvalResult]:
    """Every arm through ``session``'s ``generate`` entry, scored; then one result
    ``<target>:stress`` with the paired drops of every arm against the control."""
    results: dict[str, EvalResult] = {}
    rephrased = {s.id: p for s in samples if (p := paraphrase_of(s))}
    for arm in arms(ks, shuffled) + (["paraphrase"] if rephrased else []):
        rows = [(s, g, d) for s, g, d in zip(samples, gold, distractors, strict=True)
                if arm != "paraphrase" or s.id in rephrased]
        contexts = [arm_contexts(arm, g, d, random.Random(f"{seed}:{s.id}:{arm}"))
                    for s, g, d in rows]
        base = [replace(s, retrieved_contexts=c or None, retrieved_ids=None,
                        user_input=rephrased[s.id] if arm == "paraphrase" else s.user_input)
                for (s, _, _), c in zip(rows, contexts, strict=True)]
        filled = session.generate(base, contexts)
        res = mark_unscored(score(filled, f"{session.name}:{arm}"), filled)
        for r in res:
            r.signature = r.signature.with_fields(arm=arm, **session.signature_fields())
        results[arm] = res
    drops = EvalResult(f"{session.name}:stress", meta={"arms": list(results), "ks": list(ks)})
    for arm, res in results.items():
        if arm != "control":
            for m in paired_drops(results["control"], res, arm):
                drops.add(m)
    return [*results.values(), drops]


__all__ = ["POSITIONS", "arm_contexts", "arms", "distractors_for", "paired_drops",
           "paraphrase_of", "run_stress"]
