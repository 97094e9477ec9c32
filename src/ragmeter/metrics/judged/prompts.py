"""The prompts of the built-in judge calls: versioned, written in Russian and English.

=====================  ===========================================================
prompt version         questions asked (only those some requested metric needs)
=====================  ===========================================================
``gen.claims/v1``      ``answer_claims``, ``reference_claims``: atomic claims
``gen.verify/v1``      yes/no per claim: ``answer_in_context``,
                       ``answer_in_reference``, ``reference_in_answer``,
                       ``reference_in_context`` (after the claims call)
``gen.verify/v2``      the same checks, three-way per claim: supported /
                       contradicted / neutral (asked with ``claim_nli``, the
                       ``verdicts=three_way`` parameter of the claim metrics)
``gen.contexts/v1``    per context: ``ctx_relevance`` 0/1/2, ``ctx_useful`` yes/no
``gen.answer/v1``      ``answer_relevance`` 0/1/2, ``e2e`` usefulness 0/1/2
``gen.faithful-direct  ``faithfulness_direct``: the whole answer against the contexts,
/v1``                  one score 0 / 0.5 / 1 (``faithfulness(method=direct)``)
``gen.relevant-direct  ``answer_relevance_direct``: the whole answer against the
/v1``                  question, one score 0 / 0.5 / 1 (``answer_relevance(method=direct)``)
=====================  ===========================================================

Demo judges (``judge.demo``) get ``*-binary/v1`` variants: yes/no questions only (the weak
demo model grades 0/1/2 at chance), English instructions (they worked better on Russian data),
and no ``gen.claims`` call (claims are razdel sentences).

Every untrusted text (question, answer, reference, contexts, claims) is fenced with
:func:`ragmeter.judges.prompts.fence`; the JSON schema carries ``title`` = prompt version, so
replays and scripted judges can tell the calls apart. A prompt change is a new version.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.metrics.judged.calls import GRADE, YES_NO, fence, fence_many, make_request

if TYPE_CHECKING:
    from ragmeter.judges.base import JudgeRequest

CLAIMS = "gen.claims/v1"
VERIFY = "gen.verify/v1"
VERIFY_BINARY = "gen.verify-binary/v1"
VERIFY_NLI = "gen.verify/v2"
#: the three-way verdicts of ``gen.verify/v2``
NLI_LABELS = ("supported", "contradicted", "neutral")
NLI = {"type": "string", "enum": list(NLI_LABELS)}
CONTEXTS = "gen.contexts/v1"
CONTEXTS_BINARY = "gen.contexts-binary/v1"
ANSWER = "gen.answer/v1"
ANSWER_BINARY = "gen.answer-binary/v1"
FAITHFUL_DIRECT = "gen.faithful-direct/v1"
FAITHFUL_DIRECT_BINARY = "gen.faithful-direct-binary/v1"
RELEVANT_DIRECT = "gen.relevant-direct/v1"
RELEVANT_DIRECT_BINARY = "gen.relevant-direct-binary/v1"
#: the scale of a direct grade, as the judge writes it
DIRECT_SCORES = (0, 0.5, 1)

_TEXT: dict[str, dict[str, str]] = {
    CLAIMS: {
        "en": "Split each text below into short, self-contained factual claims (one fact each, "
              "pronouns replaced by what they refer to, nothing added). {which}\n\n{body}",
        "ru": "Разбей каждый текст ниже на короткие самостоятельные фактические утверждения "
              "(по одному факту, местоимения заменены тем, к чему они относятся, ничего не "
              "добавляй). {which}\n\n{body}",
    },
    VERIFY: {
        "en": "For every numbered claim decide, using ONLY the given texts, whether it is "
              "supported (can be inferred) — answer yes or no. {checks}\n\n{body}",
        "ru": "Для каждого пронумерованного утверждения реши, опираясь ТОЛЬКО на данные "
              "тексты, подтверждается ли оно (можно ли его вывести) — ответь yes или no. "
              "{checks}\n\n{body}",
    },
    VERIFY_NLI: {
        "en": "For every numbered claim decide, using ONLY the given texts, how the texts "
              "relate to it: supported (it can be inferred from them), contradicted (they "
              "state the opposite or something incompatible) or neutral (they say nothing "
              "that settles it). {checks}\n\n{body}",
        "ru": "Для каждого пронумерованного утверждения реши, опираясь ТОЛЬКО на данные "
              "тексты, как они с ним соотносятся: supported — его можно из них вывести, "
              "contradicted — тексты утверждают обратное или несовместимое с ним, neutral — "
              "тексты ничего не говорят, что позволило бы его проверить. {checks}\n\n{body}",
    },
    CONTEXTS: {
        "en": "Rate each retrieved context for the question. relevance: 0 = irrelevant (no "
              "information to answer), 1 = partially relevant (some useful information, "
              "incomplete), 2 = fully relevant (enough to answer).{useful}\n\n{body}",
        "ru": "Оцени каждый найденный контекст для вопроса. relevance: 0 — нерелевантен "
              "(нет информации для ответа), 1 — частично релевантен (есть полезная "
              "информация, но неполная), 2 — полностью релевантен (достаточно для ответа)."
              "{useful}\n\n{body}",
    },
    ANSWER: {
        "en": "Rate the answer. answer_relevance: 2 = fully answers the question, 1 = "
              "partially answers it, 0 = does not answer it.{e2e}\n\n{body}",
        "ru": "Оцени ответ. answer_relevance: 2 — полностью отвечает на вопрос, 1 — частично "
              "отвечает, 0 — не отвечает.{e2e}\n\n{body}",
    },
}
_USEFUL = {
    "en": " useful: yes if the context was useful to arrive at the reference answer, else no.",
    "ru": " useful: yes, если контекст помогает прийти к эталонному ответу, иначе no.",
}
_E2E = {
    "en": " e2e: compared with the reference answer, 2 = the answer is as useful as the "
          "reference, 1 = partially useful, 0 = not useful.",
    "ru": " e2e: по сравнению с эталонным ответом 2 — ответ столь же полезен, как эталон, "
          "1 — частично полезен, 0 — бесполезен.",
}
_REL_BINARY = (" relevant: does the context contain information that helps answer the "
               "question?")
_AR_BINARY = " answers_question: does the answer address the question asked?"
_USEFUL_BINARY = " useful: was the context useful to arrive at the reference answer?"
_E2E_BINARY = (" matches_reference: does the answer give the same key information as the "
               "reference answer?")
_CHECKS = {
    "answer_in_context": {"en": "answer claims vs the context (field in_context)",
                          "ru": "утверждения ответа против контекста (поле in_context)"},
    "answer_in_reference": {"en": "answer claims vs the reference answer (field in_reference)",
                            "ru": "утверждения ответа против эталонного ответа (поле "
                                  "in_reference)"},
    "reference_in_answer": {"en": "reference claims vs the answer (field in_answer)",
                            "ru": "утверждения эталона против ответа (поле in_answer)"},
    "reference_in_context": {"en": "reference claims vs the context (field in_context)",
                             "ru": "утверждения эталона против контекста (поле in_context)"},
}


def _claims_schema(n: int, key_props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": n, "maxItems": n, "items": {
        "type": "object", "properties": {"id": {"type": "integer"}, **key_props,
                                          "reason": {"type": "string"}},
        "required": ["id", *key_props]}}


def claims_request(sample_id: str, lang: str, question: str | None, answer: str | None,
                   reference: str | None) -> JudgeRequest:
    """``gen.claims/v1``: decompose answer and/or reference into claims in one call."""
    parts = []
    which = []
    if question:
        parts.append(fence(question, "question"))
    if answer is not None:
        parts.append(fence(answer, "answer"))
        which.append("answer → answer_claims")
    if reference is not None:
        parts.append(fence(reference, "reference"))
        which.append("reference → reference_claims")
    shape = ("claims", answer is not None, reference is not None)
    user = _TEXT[CLAIMS][lang].format(which="; ".join(which) + ".", body="\n\n".join(parts))
    return make_request(CLAIMS, lang, user, _claims_call_schema(*shape[1:]), sample_id,
                        "claims", shape)


@functools.lru_cache(maxsize=8)
def _claims_call_schema(answer: bool, reference: bool) -> dict[str, Any]:
    """The reply schema of a claims call (one object per shape: read-only)."""
    props: dict[str, Any] = {}
    if answer:
        props["answer_claims"] = {"type": "array", "minItems": 1, "items": {"type": "string"}}
    if reference:
        props["reference_claims"] = {"type": "array", "minItems": 1,
                                     "items": {"type": "string"}}
    return {"type": "object", "properties": props, "required": list(props)}


def verify_request(sample_id: str, lang: str, *, binary: bool, checks: Sequence[str],
                   answer_claims: Sequence[str], reference_claims: Sequence[str],
                   contexts: Sequence[str] | None, reference: str | None,
                   answer: str | None, three_way: bool = False) -> JudgeRequest:
    """``gen.verify/v1``: every needed verdict for every claim, in one structured reply
    (``three_way``: ``gen.verify/v2``, supported / contradicted / neutral per claim).

    ``checks`` ⊆ {answer_in_context, answer_in_reference, reference_in_answer,
    reference_in_context}.
    """
    three_way = three_way and not binary
    version = VERIFY_BINARY if binary else VERIFY_NLI if three_way else VERIFY
    lang_eff = "en" if binary else lang
    a_keys = tuple(k for k, c in (("in_context", "answer_in_context"),
                                  ("in_reference", "answer_in_reference")) if c in checks)
    r_keys = tuple(k for k, c in (("in_answer", "reference_in_answer"),
                                  ("in_context", "reference_in_context")) if c in checks)
    parts = []
    if contexts is not None and ("answer_in_context" in checks
                                 or "reference_in_context" in checks):
        parts.append(fence_many(contexts, "context"))
    if reference is not None and "answer_in_reference" in checks:
        parts.append(fence(reference, "reference"))
    if answer is not None and "reference_in_answer" in checks:
        parts.append(fence(answer, "answer"))
    if a_keys:
        parts.append("answer_claims:\n" + fence_many(answer_claims, "answer_claim"))
    if r_keys:
        parts.append("reference_claims:\n" + fence_many(reference_claims, "reference_claim"))
    shape = ("verify", three_way, a_keys, len(answer_claims) if a_keys else 0, r_keys,
             len(reference_claims) if r_keys else 0)
    check_text = "Checks: " + "; ".join(_CHECKS[c][lang_eff] for c in checks) + "."
    if lang_eff == "ru":
        check_text = "Проверки: " + "; ".join(_CHECKS[c]["ru"] for c in checks) + "."
    text = _TEXT[VERIFY_NLI if three_way else VERIFY][lang_eff]
    user = text.format(checks=check_text, body="\n\n".join(parts))
    return make_request(version, lang_eff, user, _verify_schema(*shape[1:]), sample_id,
                        "verify", shape)


@functools.lru_cache(maxsize=1024)
def _verify_schema(three_way: bool, a_keys: tuple[str, ...], n_answer: int,
                   r_keys: tuple[str, ...], n_reference: int) -> dict[str, Any]:
    """The reply schema of a verification call (one object per shape: read-only): per claim
    list, the verdict fields asked of every claim."""
    value = NLI if three_way else YES_NO
    props: dict[str, Any] = {}
    if a_keys:
        props["answer_claims"] = _claims_schema(n_answer, dict.fromkeys(a_keys, value))
    if r_keys:
        props["reference_claims"] = _claims_schema(n_reference, dict.fromkeys(r_keys, value))
    return {"type": "object", "properties": props, "required": list(props)}


def contexts_request(sample_id: str, lang: str, *, binary: bool, question: str,
                     contexts: Sequence[str], reference: str | None,
                     relevance: bool, useful: bool) -> JudgeRequest:
    """``gen.contexts/v1``: relevance 0/1/2 (binary variant: yes/no) and usefulness per context."""
    shape = ("contexts", binary, relevance, useful, len(contexts))
    schema = _contexts_schema(*shape[1:])
    parts = [fence(question, "question"), fence_many(contexts, "context")]
    if useful and reference is not None:
        parts.append(fence(reference, "reference"))
    body = "\n\n".join(parts)
    if binary:
        user = ("For each retrieved context answer yes or no."
                + (_REL_BINARY if relevance else "") + (_USEFUL_BINARY if useful else "")
                + "\n\n" + body)
        return make_request(CONTEXTS_BINARY, "en", user, schema, sample_id, "contexts", shape)
    user = _TEXT[CONTEXTS][lang].format(useful=_USEFUL[lang] if useful else "", body=body)
    return make_request(CONTEXTS, lang, user, schema, sample_id, "contexts", shape)


@functools.lru_cache(maxsize=256)
def _contexts_schema(binary: bool, relevance: bool, useful: bool, n: int) -> dict[str, Any]:
    """The reply schema of a contexts call (one object per shape: read-only)."""
    item: dict[str, Any] = {"id": {"type": "integer"}}
    if relevance:
        item["relevant" if binary else "relevance"] = YES_NO if binary else GRADE
    if useful:
        item["useful"] = YES_NO
    return {"type": "object", "properties": {"contexts": {
        "type": "array", "minItems": n, "maxItems": n,
        "items": {"type": "object", "properties": item, "required": list(item)}}},
        "required": ["contexts"]}


def answer_request(sample_id: str, lang: str, *, binary: bool, question: str, answer: str,
                   reference: str | None, relevance: bool, e2e: bool) -> JudgeRequest:
    """``gen.answer/v1``: answer relevance 0/1/2 and E2E usefulness 0/1/2 (binary: yes/no)."""
    shape = ("answer", binary, relevance, e2e)
    schema = _answer_schema(*shape[1:])
    parts = [fence(question, "question"), fence(answer, "answer")]
    if e2e and reference is not None:
        parts.append(fence(reference, "reference"))
    body = "\n\n".join(parts)
    if binary:
        user = ("Answer yes or no." + (_AR_BINARY if relevance else "")
                + (_E2E_BINARY if e2e else "") + "\n\n" + body)
        return make_request(ANSWER_BINARY, "en", user, schema, sample_id, "answer", shape)
    if relevance:
        user = _TEXT[ANSWER][lang].format(e2e=_E2E[lang] if e2e else "", body=body)
    else:
        user = ("Оцени ответ." if lang == "ru" else "Rate the answer.") + _E2E[lang] + "\n\n" + body
    return make_request(ANSWER, lang, user, schema, sample_id, "answer", shape)


@functools.lru_cache(maxsize=64)
def _answer_schema(binary: bool, relevance: bool, e2e: bool) -> dict[str, Any]:
    """The reply schema of an answer call (one object per shape: read-only)."""
    props: dict[str, Any] = {}
    if relevance:
        props["answers_question" if binary else "answer_relevance"] = YES_NO if binary else GRADE
    if e2e:
        props["matches_reference" if binary else "e2e"] = YES_NO if binary else GRADE
    props["reason"] = {"type": "string"}
    return {"type": "object", "properties": props,
            "required": [k for k in props if k != "reason"]}


_DIRECT: dict[str, dict[str, str]] = {
    FAITHFUL_DIRECT: {
        "en": "Judge how faithful the answer is to the retrieved context: is everything the "
              "answer states found in the context, with nothing invented? Read the whole "
              "answer, then put one score in the field \"score\": 1 = the answer agrees with "
              "the context completely, nothing is made up; 0.5 = the answer partly agrees with "
              "the context (some of it is not backed by the context); 0 = the answer contains "
              "invented facts or contradicts the context. Briefly explain why in \"reason\" "
              "first.\n\n{body}",
        "ru": "Оцени фактичность ответа относительно найденного контекста: всё ли, что "
              "утверждает ответ, есть в контексте, и нет ли в нём выдуманного? Прочитай ответ "
              "целиком и поставь одну оценку в поле \"score\": 1 — ответ полностью "
              "согласуется с контекстом, ничего не выдумано; 0.5 — ответ согласуется с "
              "контекстом частично (часть сказанного контекстом не подтверждается); 0 — в "
              "ответе есть выдуманные факты или он противоречит контексту. Сначала кратко "
              "обоснуй оценку в поле \"reason\".\n\n{body}",
    },
    RELEVANT_DIRECT: {
        "en": "Judge how relevant the answer is to the question: does it address exactly the "
              "question that was asked? Put one score in the field \"score\": 1 = the answer "
              "fully answers the question; 0.5 = the answer answers it only in part; 0 = the "
              "answer does not answer the question. Briefly explain why in \"reason\" first."
              "\n\n{body}",
        "ru": "Оцени релевантность ответа вопросу: отвечает ли он именно на тот вопрос, "
              "который был задан? Поставь одну оценку в поле \"score\": 1 — ответ полностью "
              "отвечает на вопрос; 0.5 — отвечает лишь частично; 0 — не отвечает на вопрос. "
              "Сначала кратко обоснуй оценку в поле \"reason\".\n\n{body}",
    },
}
_DIRECT_BINARY = {
    FAITHFUL_DIRECT_BINARY: "Is everything the answer states supported by the context, with "
                            "nothing invented? Answer yes or no in the field \"verdict\".",
    RELEVANT_DIRECT_BINARY: "Does the answer address the question that was asked? Answer yes "
                            "or no in the field \"verdict\".",
}


def direct_request(sample_id: str, lang: str, *, binary: bool, faithful: bool,
                   question: str | None, answer: str,
                   contexts: Sequence[str] | None) -> JudgeRequest:
    """``gen.faithful-direct/v1`` or ``gen.relevant-direct/v1``: one grade of the whole answer,
    0 / 0.5 / 1 (binary variants: yes/no)."""
    parts = []
    if question:
        parts.append(fence(question, "question"))
    if faithful:
        parts.append(fence_many(contexts or [], "context"))
    parts.append(fence(answer, "answer"))
    body = "\n\n".join(parts)
    kind = "faithful_direct" if faithful else "relevant_direct"
    if binary:
        version = FAITHFUL_DIRECT_BINARY if faithful else RELEVANT_DIRECT_BINARY
        schema = {"type": "object", "properties": {"reason": {"type": "string"},
                                                   "verdict": YES_NO},
                  "required": ["verdict"]}
        return make_request(version, "en", _DIRECT_BINARY[version] + "\n\n" + body, schema,
                            sample_id, kind)
    version = FAITHFUL_DIRECT if faithful else RELEVANT_DIRECT
    schema = {"type": "object", "properties": {
        "reason": {"type": "string"},
        "score": {"type": "number", "enum": list(DIRECT_SCORES)}}, "required": ["score"]}
    return make_request(version, lang, _DIRECT[version][lang].format(body=body), schema,
                        sample_id, kind)
