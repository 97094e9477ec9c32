"""Query rewriting in conversations: retrieval on the raw follow-up, the system's rewrite and a
gold rewrite, side by side and paired.

A follow-up ("а если заочно?") retrieves badly on its own; conversational systems rewrite it
into a standalone question first. For each sample with a rewrite — the system's in
``metadata.rewrite`` (or what a target reports there), a gold one in ``metadata.gold_rewrite``
— the same retriever is run on each form of the question, and the same retrieval metrics are
computed per arm: ``raw``, ``system_rewrite``, ``gold_rewrite``. Only samples with the arm's
text are in that arm; a paired comparison between arms uses the samples they share
(:func:`ragmeter.results.records.compare_metric`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult

#: arm name -> where the arm's question text comes from
ARMS = {"raw": None, "system_rewrite": "rewrite", "gold_rewrite": "gold_rewrite"}


def arm_question(sample: Sample, arm: str) -> str | None:
    """The question text ``arm`` asks for ``sample`` (None: the sample is not in that arm)."""
    key = ARMS[arm]
    if key is None:
        return sample.user_input
    value = (sample.metadata or {}).get(key)
    return value.strip() or None if isinstance(value, str) else None


def evaluate_rewrites(samples: Sequence[Sample], retriever: Any, *, k: int,
                      metrics: Sequence[str], seed: int = 42,
                      name: str = "rewrites") -> dict[str, EvalResult]:
    """Retrieval metrics per arm (``raw`` always; a rewrite arm when any sample has one) with
    the indexed ``retriever``; each result is signed ``query:<arm>``."""
    from ragmeter.retrieval.evaluate import evaluate_retrieval
    from ragmeter.retrieval.run import retrieve_samples

    out: dict[str, EvalResult] = {}
    for arm in ARMS:
        asked = [replace(s, user_input=q) for s in samples if (q := arm_question(s, arm))]
        if not asked:
            continue
        ran = retrieve_samples(retriever, asked, k)
        res = evaluate_retrieval(ran, metrics=list(metrics), seed=seed, name=f"{name}:{arm}")
        for m in res:
            m.signature = m.signature.with_fields(query=arm)
        out[arm] = res
    return out


__all__ = ["ARMS", "arm_question", "evaluate_rewrites"]
