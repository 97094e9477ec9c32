"""The built-in judge questions and the four calls that ask them: builders and readers.

=============  =====================================================  ==================
call           questions                                              after
=============  =====================================================  ==================
``claims``     ``answer_claims``, ``reference_claims``
``verify``     ``answer_in_context``, ``answer_in_reference``,          ``claims``
               ``reference_in_answer``, ``reference_in_context``;
               ``claim_nli`` asks them three-way (``gen.verify/v2``)
``contexts``   ``ctx_relevance`` (graded), ``ctx_useful``
``answer``     ``answer_relevance`` (graded), ``e2e`` (graded)
``faithful_    ``faithfulness_direct`` (graded): the whole answer
direct``       against the contexts, 0 / 0.5 / 1
``relevant_    ``answer_relevance_direct`` (graded): the whole
direct``       answer against the question, 0 / 0.5 / 1
=============  =====================================================  ==================

The direct grades are kept in ``SampleJudgement.answers`` as 0/1/2 (twice the judge's
0 / 0.5 / 1), so a jury votes on them like on every other grade.

Each builder turns one sample's asked questions into a request (prompts in :mod:`.prompts`);
each reader stores the reply's answers in the sample's
:class:`~ragmeter.metrics.judged.state.SampleJudgement` or says why the reply does not fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragmeter.metrics.judged.calls import Ask, Call, Question, items_by_id, register_call, yes
from ragmeter.metrics.judged.prompts import (
    DIRECT_SCORES,
    NLI_LABELS,
    VERIFY_NLI,
    answer_request,
    claims_request,
    contexts_request,
    direct_request,
    verify_request,
)
from ragmeter.metrics.judged.state import SampleJudgement

if TYPE_CHECKING:
    from ragmeter.judges.base import JudgeRequest


def _build_claims(a: Ask) -> JudgeRequest | None:
    s, j = a.sample, a.judgement
    need_a, need_r = "answer_claims" in a.questions, "reference_claims" in a.questions
    if a.claims != "judge":  # no call: razdel sentences (demo judges) or the whole text
        from ragmeter.text import split_sentences

        def split(text: str) -> list[str]:
            if a.claims == "sentences":
                return split_sentences(text)
            return [text] if text.strip() else []

        j.claims_source = a.claims
        if need_a:
            j.answer_claims = split(s.response or "")
        if need_r:
            j.reference_claims = split(s.reference or "")
        return None
    return claims_request(s.id, a.lang, s.user_input, s.response if need_a else None,
                          s.reference if need_r else None)


def _read_claims(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    for key in ("answer_claims", "reference_claims"):
        if key in req.schema["properties"]:
            claims = [str(c).strip() for c in data.get(key) or [] if str(c).strip()]
            if not claims:
                return f"no {key} in the reply"
            setattr(j, key, claims)
    return None


_VERIFY_CHECKS = ("answer_in_context", "answer_in_reference", "reference_in_answer",
                  "reference_in_context")


def _build_verify(a: Ask) -> JudgeRequest | None:
    s, j = a.sample, a.judgement
    a_claims, r_claims = j.answer_claims or [], j.reference_claims or []
    checks = [c for c in _VERIFY_CHECKS if c in a.questions
              and (a_claims if c.startswith("answer") else r_claims)]
    if not checks:
        return None
    return verify_request(s.id, a.lang, binary=a.binary, checks=checks, answer_claims=a_claims,
                          reference_claims=r_claims, contexts=s.retrieved_contexts,
                          reference=s.reference, answer=s.response,
                          three_way="claim_nli" in a.questions)


def nli_label(v: Any) -> str | None:
    """A claim verdict as supported / contradicted / neutral; a yes/no verdict (the two-way
    prompt, replies cached before the three-way one) reads as supported / ``None``."""
    text = str(v).strip().lower()
    if text in NLI_LABELS:
        return text
    return "supported" if yes(v) else None


def _read_verify(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    three_way = req.prompt_version == VERIFY_NLI
    for side, keys in (("answer", ("in_context", "in_reference")),
                       ("reference", ("in_answer", "in_context"))):
        prop = f"{side}_claims"
        if prop not in req.schema["properties"]:
            continue
        n = len(getattr(j, prop) or [])
        items = items_by_id(data.get(prop), n, j, prop)
        if items is None:
            return f"{prop}: expected {n} items"
        for key in keys:
            if key in req.schema["properties"][prop]["items"]["properties"]:
                labels = [nli_label(it.get(key)) for it in items]
                j.verdicts[f"{side}_{key}"] = [int(x == "supported") for x in labels]
                if three_way:  # a yes/no answer to it: "no" does not say which of the two
                    j.verdict_labels[f"{side}_{key}"] = [x or "unsupported" for x in labels]
        j.verdict_reasons[side] = [it.get("reason") for it in items]
    return None


def _build_contexts(a: Ask) -> JudgeRequest | None:
    s = a.sample
    return contexts_request(s.id, a.lang, binary=a.binary, question=s.user_input or "",
                            contexts=list(s.retrieved_contexts or []), reference=s.reference,
                            relevance="ctx_relevance" in a.questions,
                            useful="ctx_useful" in a.questions)


def _read_contexts(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    n = req.schema["properties"]["contexts"]["minItems"]
    items = items_by_id(data.get("contexts"), n, j, "contexts")
    if items is None:
        return f"contexts: expected {n} items"
    props = req.schema["properties"]["contexts"]["items"]["properties"]
    if "relevance" in props:
        grades = [it.get("relevance") for it in items]
        if not all(isinstance(g, int) and 0 <= g <= 2 for g in grades):
            return "relevance must be 0, 1 or 2"
        j.ctx_relevance = [int(g) for g in grades]  # type: ignore[arg-type]
    if "relevant" in props:
        j.ctx_relevance = [2 * yes(it.get("relevant")) for it in items]
    if "useful" in props:
        j.ctx_useful = [yes(it.get("useful")) for it in items]
    return None


def _build_answer(a: Ask) -> JudgeRequest | None:
    s = a.sample
    return answer_request(s.id, a.lang, binary=a.binary, question=s.user_input or "",
                          answer=s.response or "", reference=s.reference,
                          relevance="answer_relevance" in a.questions, e2e="e2e" in a.questions)


def _keep_reason(j: SampleJudgement, kind: str, data: dict[str, Any]) -> None:
    """The judge's reason of a graded call, kept with its grades (a blank one is not)."""
    why = data.get("reason")
    if isinstance(why, str) and why.strip():
        j.call_reasons[kind] = why.strip()


def _read_answer(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    _keep_reason(j, "answer", data)
    for key, attr, binary in (("answer_relevance", "answer_relevance", False),
                              ("answers_question", "answer_relevance", True),
                              ("e2e", "e2e", False), ("matches_reference", "e2e", True)):
        if key not in data:
            continue
        if binary:
            setattr(j, attr, 2 * yes(data[key]))
        else:
            g = data[key]
            if not (isinstance(g, int) and not isinstance(g, bool) and 0 <= g <= 2):
                return f"{key} must be 0, 1 or 2"
            setattr(j, attr, g)
    return None


def _direct(question: str, faithful: bool) -> tuple[Call, Question]:
    """The call of one direct grade of the whole answer and its question."""
    def build(a: Ask) -> JudgeRequest | None:
        s = a.sample
        return direct_request(s.id, a.lang, binary=a.binary, faithful=faithful,
                              question=s.user_input, answer=s.response or "",
                              contexts=s.retrieved_contexts)

    def read(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
        _keep_reason(j, kind, data)
        if "verdict" in req.schema["properties"]:
            j.answers[question] = 2 * yes(data.get("verdict"))
            return None
        g = data.get("score")
        if isinstance(g, bool) or not isinstance(g, int | float) or g not in DIRECT_SCORES:
            return f"score must be 0, 0.5 or 1, got {g!r}"
        j.answers[question] = round(2 * g)
        return None

    kind = "faithful_direct" if faithful else "relevant_direct"
    return Call(kind, build, read), Question(question, kind, graded=True)


register_call(Call("claims", _build_claims, _read_claims),
              Question("answer_claims", "claims"),
              Question("reference_claims", "claims"))
register_call(Call("verify", _build_verify, _read_verify, after=("claims",)),
              Question("answer_in_context", "verify", requires=("answer_claims",)),
              Question("answer_in_reference", "verify", requires=("answer_claims",)),
              Question("reference_in_answer", "verify", requires=("reference_claims",)),
              Question("reference_in_context", "verify", requires=("reference_claims",)),
              # not a check of its own: asks the checks above three-way (gen.verify/v2)
              Question("claim_nli", "verify"))
register_call(Call("contexts", _build_contexts, _read_contexts),
              Question("ctx_relevance", "contexts", graded=True),
              Question("ctx_useful", "contexts"))
register_call(Call("answer", _build_answer, _read_answer),
              Question("answer_relevance", "answer", graded=True),
              Question("e2e", "answer", graded=True))
register_call(*_direct("faithfulness_direct", faithful=True))
register_call(*_direct("answer_relevance_direct", faithful=False))
