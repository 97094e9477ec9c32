"""Did the answer refuse? Deterministic rules for Russian and English (no judge call).

An answer *refuses* when it gives the user no substantive information: it says the knowledge
base has nothing ("в базе знаний нет информации", "I couldn't find…"), that it cannot answer,
or only sends the user elsewhere ("обратитесь в деканат"). An apology followed by an answer,
a hedged answer ("возможно, я ошибаюсь, но…") and a partial refusal that still answers part
of the question are *answers*.

The rules read the answer clause by clause (sentences, then ``:``/``;``/``—`` and contrastive
``но`` / ``а`` / ``but`` / ``however``). Each clause is a refusal statement, a redirect, a
courtesy, or content. The answer refuses when it has a refusal statement or a redirect and no
content clause. Both languages' rules apply to every answer (mixed-language answers are
common), so no language detection is needed.

Measured on the shipped labelled set's unseen half (``ragmeter.metrics.refusal_data``): see
``docs/metrics.md`` ("Refusals").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.errors import MetricSpecError
from ragmeter.metrics.registry import Metric, MetricSpec, Param, register
from ragmeter.results.records import MetricResult, SampleScore
from ragmeter.stats import bootstrap_stat

RefusalKind = Literal["statement", "redirect", "empty", "judge"]

_NORM = str.maketrans({"ё": "е", "Ё": "Е", "’": "'", "«": '"', "»": '"'})

# clause boundaries: sentence ends, colon / semicolon / dash, contrastive conjunctions
_CLAUSE_SPLIT = re.compile(
    r"[.!?…]+(?:\s+|$)|[:;]\s*|\s[—–-]\s|,?\s+(?:но|однако|а|зато|but|however|though|yet)\s+",
    re.IGNORECASE)

# statements that the system has nothing / cannot answer
_REFUSAL_RU = (
    r"\bнет (?:никакой |такой |нужной |точной |подходящей )?(?:информации|сведений|данных|"
    r"ответа|материалов|документов)",
    r"(?:информаци[яи]|сведени[йя]|данны[хе]|ответа?|материалов|документов|подробностей|"
    r"положени[яе])\b[^.]{0,60}?\b(?:нет|отсутству\w+|не найден\w*|не обнаружен\w*|"
    r"не содерж\w+|не указан\w*)",
    r"\bне (?:могу|можем|получится|удалось|удастся|смог\w*|в состоянии) "
    r"(?:\w+ )?(?:ответить|найти|помочь|подсказать|сказать|дать|предоставить|отыскать|"
    r"подтвердить|расс?читать)",
    r"\bответить (?:не получится|невозможно|нельзя|не могу)",
    r"\bне (?:на(?:шел|шла|шлось|ходится)|нашел|обнаружил\w*|располагаю|знаю|известно|"
    r"уполномочен)\b",
    r"\b(?:ничего|ничем)\b[^.]{0,40}?\b(?:не (?:найден\w*|нашл\w+|сказано|написано|"
    r"известно|знаю|могу)|нет)\b",
    r"\bничего не (?:найдено|нашлось|известно|знаю|сказано|написано)",
    r"\bне могу (?:найти|ответить|помочь|сказать|подсказать|гарантировать ответ)",
    r"\bмне неизвестно\b", r"\bне знаю\b", r"\bзатрудняюсь ответить\b",
    r"\b(?:вне|за рамками|выходит за рамки) (?:моей|моих|базы)", r"\bвне моей компетенции\b",
    r"\bне (?:содерж\w*|рассматривается|освещен|указано|сказано|говорится)\b",
    r"\bне хватает (?:информации|сведений|данных)", r"\bнепонят\w*\b",
    r"\bвоздержусь\b", r"\bне буду гадать\b", r"\bвводить вас в заблуждение\b",
    r"\bничем не могу помочь\b", r"\bне найден\w*\b", r"\bненайден\w*\b",
    r"^\s*нет данных\s*$", r"\bдоступа к\b[^.]{0,40}\bнет\b|\bнет доступа\b",
    r"\bвопрос(?: лучше)? (?:задать|адресовать)\b", r"\bответить\b[^.]{0,30}\b(?:невозможно|нельзя|"
    r"не получится)", r"\bнет (?:нужн|необходим|подходящ)\w+", r"\bнет ничего\b",
    r"\bв (?:базе|документах|источниках|контексте|материалах|найденн\w+)\b[^.]{0,50}\bнет\b",
)
_REFUSAL_EN = (
    r"\b(?:i|we|i'm|i am|we're|we are) (?:do not|don't|did not|didn't|cannot|can't|could not|couldn't|am unable to|"
    r"was unable to|wasn't able to|was not able to|am not able to|unable to|not able to"
    r"|have not|haven't) (?:\w+ )?(?:know|find|found|locate|answer|help|say|advise|provide|"
    r"share|calculate|confirm|give|have (?:any |enough |that |such |the |precise |exact )?"
    r"(?:information|data|details|access))\b",
    r"\b(?:no|not enough|insufficient) (?:relevant |suitable |such |precise |exact |"
    r"further )?(?:information|data|details|answer|documents|materials|results)\b",
    r"\b(?:isn't|is not|are not|aren't|was not|wasn't) (?:available |stated |mentioned |"
    r"covered |specified |found |in )",
    r"\b(?:does not|doesn't|do not|don't|did not|didn't) (?:contain|mention|say|cover|"
    r"address|specify|answer|include)\b",
    r"\bsays? nothing\b", r"\bnothing (?:was )?(?:found|matches|on|about)\b",
    r"^\s*nothing found\b", r"\b(?:answer|information) not found\b", r"\bno idea\b",
    r"\b(?:outside|beyond) (?:the scope|my remit|my knowledge)\b", r"\bnot (?:sure|certain) how "
    r"to answer\b", r"\b(?:not|unable to be) answered\b", r"\bnot possible to answer\b",
    r"\bdoes not allow an answer\b", r"\brefrain from answering\b", r"\bwon't guess\b",
    r"\brather not mislead\b", r"\bdon't understand the question\b", r"\bi'm afraid i can't\b",
    r"\bcan neither confirm nor deny\b", r"\bno answer\b", r"\bnot in (?:the|my) "
    r"(?:knowledge base|sources|documents)\b", r"\bhave nothing\b|\bhas nothing\b",
    r"\b(?:knowledge base|documents?|sources?|context|passages?|materials?) (?:has|have|contains?)"
    r" no\b", r"\bnone of the (?:\w+ )?(?:documents|passages|sources|results|materials)\b",
)
# sending the user elsewhere
_REDIRECT = (
    r"\b(?:задать вопрос|можете спросить|обратит\w+|обращайтесь|обратиться|уточнит\w*|спросит\w*|спросите|позвонит\w*|напишит\w*|"
    r"свяжит\w+|рекоменд\w+|попробуйте|переформулир\w+)\b",
    r"\b(?:please )?(?:contact|ask|check with|call|email|e-mail|get in touch|reach out|"
    r"rephrase|try (?:clarifying|rephrasing|calling))\b",
    r"\b(?:you may want|you could|it might be best|you'd better|i suggest|we recommend|"
    r"please check)\b",
)
# politeness and filler that carry no information
_COURTESY = re.compile(
    r"^(?:к сожалению|увы|извините|простите|прошу прощения|сожалею|мне жаль|sorry|"
    r"i'm sorry|unfortunately|regrettably|apologies|sadly|i'm afraid|пожалуйста|please|"
    r"да|нет|yes|no|ok|хорошо|спасибо за вопрос|thanks)[\s,!]*$", re.IGNORECASE)
_WORD = re.compile(r"\w+")

_REFUSAL_RE = re.compile("|".join(_REFUSAL_RU + _REFUSAL_EN), re.IGNORECASE)
_REDIRECT_RE = re.compile("|".join(_REDIRECT), re.IGNORECASE)


@dataclass(frozen=True)
class RefusalVerdict:
    """The rules' verdict on one answer: ``refused`` and, when refused, which kind."""

    refused: bool
    kind: RefusalKind | None = None
    #: in the band where ``detector=rules+judge`` asks the judge
    uncertain: bool = False

    def __bool__(self) -> bool:
        return self.refused


def clauses(text: str) -> list[str]:
    """The clauses the rules read, normalised (ё → е, lower case), empty ones dropped."""
    t = text.translate(_NORM).lower()
    return [c.strip(" ,\"'()") for c in _CLAUSE_SPLIT.split(t) if c and c.strip(" ,\"'()")]


def _is_content(clause: str) -> bool:
    if _COURTESY.match(clause):
        return False
    words = _WORD.findall(clause)
    return len(words) >= 3 or any(ch.isdigit() for ch in clause)


def detect_refusal(text: str | None) -> RefusalVerdict:
    """Rule-based verdict: does ``text`` refuse to answer (no substantive information)?"""
    if text is None or not text.strip():
        return RefusalVerdict(True, "empty")
    refusal = redirect = content = False
    for c in clauses(text):
        if _REFUSAL_RE.search(c):
            refusal = True
        elif _REDIRECT_RE.search(c):
            redirect = True
        elif _is_content(c):
            content = True
    if content or not (refusal or redirect):
        return RefusalVerdict(False, uncertain=bool(_NEGATION.search(text)))
    return RefusalVerdict(True, "statement" if refusal else "redirect")


def is_refusal(text: str | None) -> bool:
    """``detect_refusal(text).refused``."""
    return detect_refusal(text).refused


# ------------------------------------------------------------------------------ the metrics
#: rules version, part of every refusal metric's signature
RULES_VERSION = "rules-v1"


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
                    "|answered| / |samples| (refusal rules, no judge call)"),
    "over_refusal": ("answerable", lambda a, r: float(r), False,
                     "|answerable samples refused| / |answerable samples|"),
    "unsupported_answer": ("unanswerable", lambda a, r: float(not r), False,
                           "|unanswerable samples answered| / |unanswerable samples|"),
    "abstention_recall": ("unanswerable", lambda a, r: float(r), True,
                          "|unanswerable samples refused| / |unanswerable samples|"),
    "abstention_precision": ("refused", lambda a, r: float(not a), True,
                             "|refused samples that were unanswerable| / |refused samples|"),
}


#: answers the rules call answered that still carry a negation or absence cue: where the
#: ``rules+judge`` detector asks the judge (the rules' refusals are kept: they almost never
#: call an answer a refusal, but miss refusals phrased in ways they do not know)
_NEGATION = re.compile(r"\b(?:не|нет|ни|no|not|none|nothing|never|cannot|can't|unable)\b",
                       re.IGNORECASE)

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


def _judge_verdicts(metric: Metric, ctx: Any, detector: str) -> dict[str, bool | str]:
    """The judge's refusal verdicts for the samples ``detector`` sends it."""
    if detector == "rules":
        return {}
    if getattr(ctx, "judge", None) is None or not JUDGE_DETECTORS:
        raise MetricSpecError(f"metric '{metric}': detector={detector} needs a judge "
                              "(--judge-url / judge=...)")
    asked = [s for s in ctx.samples if s.response is not None and (
        detector == "judge" or detect_refusal(s.response).uncertain)]
    return JUDGE_DETECTORS[0](metric, ctx, asked) if asked else {}


def _scores(metric: str, samples: Any, judged: dict[str, bool | str] | None = None,
            labels: dict[str, bool | str] | None = None
            ) -> tuple[list[SampleScore], dict[str, int]]:
    scope, value, _, _ = _RATES[metric]
    scores: list[SampleScore] = []
    counts = {"refused": 0, "judge_asked": len(judged or {}),
              "answerability_judged": len(labels or {})}
    for s in samples:
        if s.response is None:
            scores.append(SampleScore(s.id, None, "missing_field:response"))
            continue
        verdict = detect_refusal(s.response)
        j = (judged or {}).get(s.id)
        if isinstance(j, str):
            scores.append(SampleScore(s.id, None, j))
            continue
        if j is not None:
            verdict = RefusalVerdict(j, "judge" if j else None)
        counts["refused"] += verdict.refused
        a = answerable(s)
        guess = (labels or {}).get(s.id)
        if a is None and isinstance(guess, bool):
            a = guess
        details = {"refused": verdict.refused, "kind": verdict.kind, "answerable": a}
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
    judged = _judge_verdicts(metric, ctx, detector)
    labels = _answerability(metric, ctx)
    scores, counts = _scores(metric.name, ctx.samples, judged, labels)
    source = str(metric.get("answerability"))
    sig = ctx.signature(str(metric), refusal=RULES_VERSION,
                        detector=None if detector == "rules" else detector,
                        answerability=None if source == "labels" else source)
    return MetricResult.from_scores(str(metric), scores, sig, counts=counts, seed=ctx.seed)


DETECTOR = Param("detector", str, "rules", ("rules", "rules+judge", "judge"),
                 "rules (no judge call); rules+judge: the judge decides the answers the rules "
                 "call answered that carry a negation cue; judge: the judge decides every answer")

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
    rows = [(answerable(s), detect_refusal(s.response).refused, confidence_of(s))
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


def detector_name() -> str:
    """What decides :func:`detect_refusal` (printed beside every figure)."""
    return RULES_VERSION
