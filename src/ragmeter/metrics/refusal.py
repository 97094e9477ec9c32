"""Did the answer refuse? Clause cues and a small calibrated classifier for Russian and
English (no judge call).

An answer *refuses* when it gives the user no substantive information: it says the knowledge
base has nothing ("в базе знаний нет информации", "I couldn't find…"), that it cannot answer
or does not know ("понятия не имею", "that's beyond me"), only sends the user elsewhere
("обратитесь в деканат"), or only asks a clarifying question. An apology followed by an
answer, a hedged answer ("возможно, я ошибаюсь, но…"), a partial answer and a bare «Нет.» to
a yes/no question are *answers*.

Two parts decide, neither of them a list of exact phrases:

* the clause cues (:mod:`ragmeter.metrics.refusal_cues`): each clause gets a role from which
  classes of words co-occur in it (negation with information or knowing verbs, idioms of not
  knowing, sending elsewhere, courtesy, content), whatever their order; courtesy and
  apology clauses never count as content;
* the refusal classifier (:mod:`ragmeter.metrics.refusal_model`): a logistic model over those
  cues and the bundled multilingual-e5-small embedding of the answer without its courtesy
  clauses, trained on our own labelled data, giving a calibrated P(refusal). Without the
  ``retrieval`` extra the cues-only model decides (its signature says so).

The answer refuses when P(refusal) ≥ 0.5. ``detector=rules+judge`` asks the judge about the
answers whose probability falls in the model's uncertain band, and counts them.

Measured on our own sets and on sets written by others: ``docs/behaviours.md``
("How far the refusal detector can be trusted").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.errors import MetricSpecError
from ragmeter.metrics.refusal_model import EMBEDDING, RefusalModel, active_model
from ragmeter.metrics.registry import Metric, MetricSpec, Param, register
from ragmeter.results.records import MetricResult, SampleScore
from ragmeter.stats import bootstrap_stat

RefusalKind = Literal["statement", "redirect", "question", "classifier", "empty", "judge"]

#: the detector's version, part of every refusal metric's signature (with the model used)
DETECTOR_VERSION = "refusal-v2"


@dataclass(frozen=True)
class RefusalVerdict:
    """The detector's verdict on one answer: ``refused``, which kind of refusal (the clause
    role that carries it, ``classifier`` when only the model sees one), the calibrated
    ``probability`` of a refusal and whether it lies in the ``uncertain`` band."""

    refused: bool
    kind: RefusalKind | None = None
    probability: float | None = None
    #: in the band where ``detector=rules+judge`` asks the judge
    uncertain: bool = False

    def __bool__(self) -> bool:
        return self.refused


def detect_refusals(texts: Sequence[str | None], model: RefusalModel | None = None
                    ) -> list[RefusalVerdict]:
    """Verdicts for many answers at once; ``model`` defaults to :func:`active_model` (the
    ``e5`` model with the ``retrieval`` extra, else the cues-only one)."""
    model = model or active_model()
    idx = [i for i, t in enumerate(texts) if t is not None and t.strip()]
    out = [RefusalVerdict(True, "empty", 1.0)] * len(texts)
    if not idx:
        return out
    given = [str(texts[i]) for i in idx]
    cs, x = model.features(given)
    lo, hi = model.band
    for i, c, p in zip(idx, cs, model.probability(x), strict=True):
        refused = bool(p >= 0.5)
        kind: RefusalKind | None = None
        if refused:
            kind = ("statement" if c.kind == "statement" else "redirect" if c.kind == "redirect"
                    else "question" if c.kind == "question" else "classifier")
        out[i] = RefusalVerdict(refused, kind, round(float(p), 6), bool(lo < p < hi))
    return out


def detect_refusal(text: str | None) -> RefusalVerdict:
    """The detector's verdict on one answer: does ``text`` refuse (no substantive
    information)?"""
    return detect_refusals([text])[0]


def is_refusal(text: str | None) -> bool:
    """``detect_refusal(text).refused``."""
    return detect_refusal(text).refused


def detector_name(model: RefusalModel | None = None) -> str:
    """Which model decides (printed beside every figure and kept in signatures)."""
    m = model or active_model()
    return (f"{DETECTOR_VERSION}:{m.name}" + (f" ({EMBEDDING})" if m.uses_embedding else
                                              " (cues only: the path without the retrieval extra)"))


# ------------------------------------------------------------------------------ the metrics
def answerable(sample: Any) -> bool | None:
    """Should the system answer this sample? ``metadata.answerable`` when given; a negative
    question (``type: negative``) is unanswerable; a sample with gold ids or a reference is
    answerable; otherwise unknown (``None``)."""
    label = sample.metadata.get("answerable") if sample.metadata else None
    if isinstance(label, bool):
        return label
    if sample.is_negative:
        return False
    if sample.gold_doc_ids or sample.gold_chunk_ids or (sample.reference or "").strip():
        return True
    return None


#: metric -> (which samples it scores: "all" | "answerable" | "unanswerable" | "refused",
#:            the per-sample value from (answerable, refused))
_RATES: dict[str, tuple[str, Callable[[bool, bool], float], bool, str]] = {
    "answer_rate": ("all", lambda a, r: float(not r), True,
                    "|answered| / |samples| (refusal detector, no judge call)"),
    "over_refusal": ("answerable", lambda a, r: float(r), False,
                     "|answerable samples refused| / |answerable samples|"),
    "unsupported_answer": ("unanswerable", lambda a, r: float(not r), False,
                           "|unanswerable samples answered| / |unanswerable samples|"),
    "abstention_recall": ("unanswerable", lambda a, r: float(r), True,
                          "|unanswerable samples refused| / |unanswerable samples|"),
    "abstention_precision": ("refused", lambda a, r: float(not a), True,
                             "|refused samples that were unanswerable| / |refused samples|"),
}


#: the judge behind ``detector=rules+judge`` / ``judge``: ``fn(metric, ctx, samples) ->
#: {sample id: refused (bool) or an unscored reason (str)}``, declared by the judged
#: behaviours (``metrics/judged/behaviours.py``) so that this module needs no judge
JUDGE_DETECTORS: list[Callable[[Metric, Any, list[Any]], dict[str, bool | str]]] = []
#: the judge behind ``answerability=labels+judge``: answerable from the retrieved contexts?
#: (same shape; declared beside the other judged behaviours)
ANSWERABILITY_JUDGES: list[Callable[[Metric, Any, list[Any]], dict[str, bool | str]]] = []


def _answerability(metric: Metric, ctx: Any) -> dict[str, bool | str]:
    """The judge's answerability verdicts for the samples without a label (one call each)."""
    if str(metric.get("answerability")) == "labels":
        return {}
    if getattr(ctx, "judge", None) is None or not ANSWERABILITY_JUDGES:
        raise MetricSpecError(f"metric '{metric}': answerability=labels+judge needs a judge")
    unknown = [s for s in ctx.samples if s.response is not None and answerable(s) is None]
    return ANSWERABILITY_JUDGES[0](metric, ctx, unknown) if unknown else {}


def _judge_verdicts(metric: Metric, ctx: Any, detector: str,
                    verdicts: dict[str, RefusalVerdict]) -> dict[str, bool | str]:
    """The judge's refusal verdicts for the samples ``detector`` sends it: every answer
    (``judge``) or those in the classifier's uncertain band (``rules+judge``)."""
    if detector == "rules":
        return {}
    if getattr(ctx, "judge", None) is None or not JUDGE_DETECTORS:
        raise MetricSpecError(f"metric '{metric}': detector={detector} needs a judge "
                              "(--judge-url / judge=...)")
    asked = [s for s in ctx.samples if s.response is not None and (
        detector == "judge" or verdicts[s.id].uncertain)]
    return JUDGE_DETECTORS[0](metric, ctx, asked) if asked else {}


def _verdicts(samples: Any) -> dict[str, RefusalVerdict]:
    with_answer = [s for s in samples if s.response is not None]
    return dict(zip((s.id for s in with_answer),
                    detect_refusals([s.response for s in with_answer]), strict=True))


def _scores(metric: str, samples: Any, judged: dict[str, bool | str] | None = None,
            labels: dict[str, bool | str] | None = None,
            verdicts: dict[str, RefusalVerdict] | None = None
            ) -> tuple[list[SampleScore], dict[str, int]]:
    scope, value, _, _ = _RATES[metric]
    scores: list[SampleScore] = []
    verdicts = verdicts if verdicts is not None else _verdicts(samples)
    counts = {"refused": 0, "judge_asked": len(judged or {}),
              "uncertain": sum(v.uncertain for v in verdicts.values()),
              "answerability_judged": len(labels or {})}
    for s in samples:
        if s.response is None:
            scores.append(SampleScore(s.id, None, "missing_field:response"))
            continue
        verdict = own = verdicts[s.id]
        j = (judged or {}).get(s.id)
        if isinstance(j, str):
            scores.append(SampleScore(s.id, None, j))
            continue
        if j is not None:
            verdict = RefusalVerdict(j, "judge" if j else None, own.probability, own.uncertain)
        counts["refused"] += verdict.refused
        a = answerable(s)
        guess = (labels or {}).get(s.id)
        if a is None and isinstance(guess, bool):
            a = guess
        details = {"refused": verdict.refused, "kind": verdict.kind, "answerable": a,
                   "p_refusal": own.probability, "uncertain": own.uncertain}
        if a is None and scope != "all":
            scores.append(SampleScore(s.id, None, "no_answerability_label", details))
        elif (scope == "answerable" and not a) or (scope == "unanswerable" and a) or (
                scope == "refused" and not verdict.refused):
            scores.append(SampleScore(s.id, None, f"not_applicable:{scope}", details))
        else:
            scores.append(SampleScore(s.id, value(bool(a), verdict.refused), None, details))
    return scores, counts


def _compute(metric: Metric, ctx: Any) -> MetricResult:
    detector = str(metric.get("detector"))
    verdicts = _verdicts(ctx.samples)
    judged = _judge_verdicts(metric, ctx, detector, verdicts)
    labels = _answerability(metric, ctx)
    scores, counts = _scores(metric.name, ctx.samples, judged, labels, verdicts)
    source = str(metric.get("answerability"))
    sig = ctx.signature(str(metric), refusal=f"{DETECTOR_VERSION}:{active_model().name}",
                        detector=None if detector == "rules" else detector,
                        answerability=None if source == "labels" else source)
    return MetricResult.from_scores(str(metric), scores, sig, counts=counts, seed=ctx.seed)


DETECTOR = Param("detector", str, "rules", ("rules", "rules+judge", "judge"),
                 "rules: clause cues + the refusal classifier, no judge call; rules+judge: the "
                 "judge decides the answers in the classifier's uncertain band (counted in "
                 "judge_asked); judge: the judge decides every answer")

ANSWERABILITY = Param("answerability", str, "labels", ("labels", "labels+judge"),
                      "labels (metadata.answerable, negatives, gold); labels+judge: one judge "
                      "call for each sample without a label (answerable from its contexts?)")

for _name, (_scope, _fn, _hib, _doc) in _RATES.items():
    register(MetricSpec(name=_name, family="refusal", doc=_doc, higher_is_better=_hib,
                        params=(ANSWERABILITY, DETECTOR), required_fields=("response",),
                        compute=_compute))


# ------------------------------------------------------- whole-set statistics (F1, AURC)
def confidence_of(sample: Any) -> float | None:
    """The system's confidence signal for a sample: ``metadata.confidence`` when given, else
    its top retrieval score; None without either."""
    c = sample.metadata.get("confidence") if sample.metadata else None
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        return float(c)
    return float(max(sample.retrieved_scores)) if sample.retrieved_scores else None


def abstention_summary(samples: Sequence[Any], *, seed: int = 42) -> dict[str, Any]:
    """Whole-set abstention statistics with seeded bootstrap CIs (resampling samples):
    ``f1`` of abstention precision and recall, and — when every labelled sample has a
    confidence signal (:func:`confidence_of`) — the risk–coverage ``curve`` and its area
    ``aurc`` (lower is better). A sample's loss is 1 when its behaviour was wrong (an
    unanswerable question answered, an answerable one refused). Samples without an
    answerability label or a response are left out (counted in ``n_left_out``)."""
    verdicts = _verdicts(samples)
    rows = [(answerable(s), verdicts[s.id].refused, confidence_of(s))
            for s in samples if s.response is not None]
    kept = [(a, r, c) for a, r, c in rows if a is not None]
    unans = np.array([not a for a, _, _ in kept], dtype=bool)
    refused = np.array([r for _, r, _ in kept], dtype=bool)

    def f1(idx: np.ndarray) -> float | None:
        u, r = unans[idx], refused[idx]
        if not u.any() or not r.any():
            return None
        p, rec = (u & r).sum() / r.sum(), (u & r).sum() / u.sum()
        return 0.0 if p + rec == 0 else float(2 * p * rec / (p + rec))

    out: dict[str, Any] = {"n": len(kept), "n_left_out": len(samples) - len(kept),
                           "f1": bootstrap_stat(f1, len(kept), seed=seed)}
    conf = [c for _, _, c in kept]
    if kept and all(c is not None for c in conf):
        order = np.argsort(-np.array(conf, dtype=float), kind="stable")
        loss = (unans != refused)[order].astype(float)     # wrong behaviour, most confident first

        def aurc(idx: np.ndarray) -> float:
            ls = loss[np.sort(idx)]
            return float(np.mean(np.cumsum(ls) / np.arange(1, ls.size + 1)))

        risk = np.cumsum(loss) / np.arange(1, loss.size + 1)
        out["curve"] = [(round((i + 1) / loss.size, 6), float(x)) for i, x in enumerate(risk)]
        out["aurc"] = bootstrap_stat(aurc, len(kept), seed=seed)
    return out

