"""Judged answer behaviours: conversations, citation support and refusals (opt-in metrics).

==========================  =====================================  ======================
metric                      judge questions (calls)                calls per sample
==========================  =====================================  ======================
``history_faithfulness``    claims, then ``claim_support`` per     2 (claims, history)
                            claim: in the contexts / in earlier
                            turns (``gen.history-verify/v1``)
``citation_support``        per citing sentence: does the cited    1
                            passage support it
                            (``gen.citation-support/v1``)
``judged_refusal``          does the answer decline to answer      1
                            (``gen.refusal/v1``)
==========================  =====================================  ======================

``history_faithfulness`` is faithfulness for a conversation turn: a claim counts as supported
when the retrieved contexts *or an earlier turn* support it, and the per-sample details say
which (``context`` / ``history`` / ``both`` / ``none``), so a claim resting on what was said
before is not a hallucination. ``citation_support`` pairs every sentence that cites a
retrieved passage (``[N]``, ``[id]``: :mod:`ragmeter.metrics.citations`) with that passage;
refusals (:mod:`ragmeter.metrics.refusal`) and answers citing nothing retrieved are unscored.
``judged_refusal`` is the judge's view of refusal (1 = refused): the fallback of the rules
for answers they do not know, and the judge-benchmark task that measures it.

None of them joins the default judged set; each appears on the judge benchmark as a task.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.data.sample import Sample
from ragmeter.metrics.citations import parse_citations, resolve
from ragmeter.metrics.judged import questions as _builtin  # noqa: F401  (claims call first)
from ragmeter.metrics.judged.calls import (
    YES_NO,
    Ask,
    Call,
    Question,
    fence,
    fence_many,
    items_by_id,
    make_request,
    register_call,
    yes,
)
from ragmeter.metrics.judged.row import JudgedMetric, Score
from ragmeter.metrics.judged.state import JudgedState, SampleJudgement
from ragmeter.metrics.refusal import ANSWERABILITY_JUDGES, JUDGE_DETECTORS, detect_refusal
from ragmeter.metrics.registry import Metric, register
from ragmeter.results.records import SampleScore

if TYPE_CHECKING:
    from ragmeter.judges.base import JudgeRequest

HISTORY_VERIFY = "gen.history-verify/v1"
CITATION_SUPPORT = "gen.citation-support/v1"
REFUSAL = "gen.refusal/v1"
ANSWERABLE = "gen.answerable/v1"

_TEXT = {
    HISTORY_VERIFY: {
        "en": "This is one turn of a conversation. For every numbered claim of the answer "
              "decide, using ONLY the given texts: in_context — is it supported by the "
              "retrieved contexts? in_history — is it supported by the earlier turns of the "
              "conversation? Answer yes or no for each.\n\n{body}",
        "ru": "Это одна реплика диалога. Для каждого пронумерованного утверждения ответа "
              "реши, опираясь ТОЛЬКО на данные тексты: in_context — подтверждается ли оно "
              "найденными контекстами? in_history — подтверждается ли оно предыдущими "
              "репликами диалога? Ответь yes или no для каждого.\n\n{body}",
    },
    CITATION_SUPPORT: {
        "en": "Each numbered pair is a sentence of an answer and the passage it cites. "
              "supported: yes if the passage supports everything the sentence states, else "
              "no.\n\n{body}",
        "ru": "Каждая пронумерованная пара — предложение ответа и фрагмент, на который оно "
              "ссылается. supported: yes, если фрагмент подтверждает всё, что сказано в "
              "предложении, иначе no.\n\n{body}",
    },
    ANSWERABLE: {
        "en": "Can the question be answered from the retrieved contexts alone? answerable: yes "
              "if they contain what the answer needs, else no.\n\n{body}",
        "ru": "Можно ли ответить на вопрос только по найденным контекстам? answerable: yes, "
              "если в них есть то, что нужно для ответа, иначе no.\n\n{body}",
    },
    REFUSAL: {
        "en": "Does the answer decline to give the information asked for (says it does not "
              "know, that nothing was found, or only sends the user elsewhere)? An apology "
              "followed by an answer, a hedged answer or a partial answer is NOT a refusal. "
              "refused: yes or no.\n\n{body}",
        "ru": "Отказывается ли ответ сообщить запрошенное (говорит, что не знает, что ничего "
              "не найдено, или только отсылает пользователя в другое место)? Извинение, за "
              "которым следует ответ, ответ с оговорками или частичный ответ — НЕ отказ. "
              "refused: yes или no.\n\n{body}",
    },
}


def _items(n: int, props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": n, "maxItems": n, "items": {
        "type": "object", "properties": {"id": {"type": "integer"}, **props,
                                          "reason": {"type": "string"}},
        "required": ["id", *props]}}


def _history_text(history: list[dict[str, str]] | None) -> str:
    turns = [f"{t['role']}: {t['content']}" for t in history or []]
    return fence_many(turns, "turn") if turns else fence("", "turn")


# ------------------------------------------------------------------ conversation faithfulness
def _build_history(a: Ask) -> JudgeRequest | None:
    s, claims = a.sample, a.judgement.answer_claims or []
    if not claims:
        return None
    body = "\n\n".join([
        "history:\n" + _history_text(s.history),
        fence(s.user_input or "", "question"),
        fence_many(s.retrieved_contexts or [], "context"),
        "answer_claims:\n" + fence_many(claims, "answer_claim")])
    schema = {"type": "object", "properties": {"answer_claims": _items(
        len(claims), {"in_context": YES_NO, "in_history": YES_NO})},
        "required": ["answer_claims"]}
    return make_request(HISTORY_VERIFY, a.lang, _TEXT[HISTORY_VERIFY][a.lang].format(body=body),
                        schema, s.id, "history_verify")


def _read_history(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    n = len(j.answer_claims or [])
    items = items_by_id(data.get("answer_claims"), n, j, "answer_claims")
    if items is None:
        return f"answer_claims: expected {n} items"
    j.verdicts["claim_in_context"] = [yes(it.get("in_context")) for it in items]
    j.verdicts["claim_in_history"] = [yes(it.get("in_history")) for it in items]
    return None


def _history_score(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    ctx, hist = j.verdicts.get("claim_in_context"), j.verdicts.get("claim_in_history")
    if not ctx or hist is None:
        return Score(None, "empty_input")
    source = ["both" if c and h else "context" if c else "history" if h else "none"
              for c, h in zip(ctx, hist, strict=True)]
    supported = sum(s != "none" for s in source)
    return Score(supported / len(source), details={
        "claims": [{"claim": c, "support": s} for c, s in
                   zip(j.answer_claims or [], source, strict=False)],
        "history_only": source.count("history")})


# ------------------------------------------------------------------------ citation support
_SENTENCE = re.compile(r"[^.!?…]+(?:[.!?…]+|$)")


def citing_pairs(response: str | None, retrieved_ids: list[str] | None,
                 contexts: list[str] | None) -> list[tuple[str, str]]:
    """(sentence, cited passage) for every sentence citing a retrieved passage."""
    ids = [str(x) for x in retrieved_ids or []] or [str(i + 1) for i in range(len(contexts or []))]
    texts = dict(zip(ids, contexts or [], strict=False))
    pairs: list[tuple[str, str]] = []
    for m in _SENTENCE.finditer(response or ""):
        sentence = m.group(0).strip()
        for c in parse_citations(sentence):
            src = resolve(c, ids)
            if src is not None and src in texts:
                pairs.append((sentence, texts[src]))
    return list(dict.fromkeys(pairs))


def _build_citations(a: Ask) -> JudgeRequest | None:
    s = a.sample
    pairs = citing_pairs(s.response, s.retrieved_ids, s.retrieved_contexts)
    a.judgement.answers["citing_pairs"] = len(pairs)
    if not pairs or detect_refusal(s.response).refused:
        return None
    body = "\n\n".join(f"{i}.\n{fence(sent, 'sentence')}\n{fence(passage, 'passage')}"
                       for i, (sent, passage) in enumerate(pairs, 1))
    schema = {"type": "object", "properties": {"pairs": _items(len(pairs),
                                                                {"supported": YES_NO})},
              "required": ["pairs"]}
    return make_request(CITATION_SUPPORT, a.lang,
                        _TEXT[CITATION_SUPPORT][a.lang].format(body=body), schema, s.id,
                        "citation_support")


def _read_citations(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    n = req.schema["properties"]["pairs"]["minItems"]
    items = items_by_id(data.get("pairs"), n, j, "pairs")
    if items is None:
        return f"pairs: expected {n} items"
    j.verdicts["citation_supported"] = [yes(it.get("supported")) for it in items]
    return None


def _citation_score(metric: Metric, j: SampleJudgement, extra: SampleScore | None) -> Score:
    v = j.verdicts.get("citation_supported")
    if v:
        return Score(sum(v) / len(v), details={"supported": v})
    if not j.answers.get("citing_pairs"):
        return Score(None, "not_applicable:no_citations")
    return Score(None, "not_applicable:refusal")


# ---------------------------------------------------------------------------- refusals
def _build_refusal(a: Ask) -> JudgeRequest | None:
    s = a.sample
    body = "\n\n".join([fence(s.user_input or "", "question"), fence(s.response or "", "answer")])
    schema = {"type": "object", "properties": {"refused": YES_NO, "reason": {"type": "string"}},
              "required": ["refused"]}
    return make_request(REFUSAL, a.lang, _TEXT[REFUSAL][a.lang].format(body=body), schema,
                        s.id, "refusal")


def _read_refusal(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
    if "refused" not in data:
        return "no 'refused' in the reply"
    j.answers["refused"] = yes(data["refused"])
    return None


register_call(Call("history_verify", _build_history, _read_history, after=("claims",)),
              Question("claim_support", "history_verify", requires=("answer_claims",)))
register_call(Call("citation_support", _build_citations, _read_citations),
              Question("citation_supported", "citation_support"))
register_call(Call("refusal", _build_refusal, _read_refusal), Question("refused", "refusal"))


def _build_answerable(a: Ask) -> JudgeRequest | None:
    s = a.sample
    body = "\n\n".join([fence(s.user_input or "", "question"),
                         fence_many(s.retrieved_contexts or [], "context")])
    schema = {"type": "object", "properties": {"answerable": YES_NO,
                                               "reason": {"type": "string"}},
              "required": ["answerable"]}
    return make_request(ANSWERABLE, a.lang, _TEXT[ANSWERABLE][a.lang].format(body=body), schema,
                        s.id, "answerable")


def _read_answerable(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]
                     ) -> str | None:
    if "answerable" not in data:
        return "no 'answerable' in the reply"
    j.answers["answerable"] = yes(data["answerable"])
    return None


register_call(Call("answerable", _build_answerable, _read_answerable),
              Question("answerable", "answerable"))

ROWS = (
    JudgedMetric(
        "history_faithfulness",
        "|answer claims supported by the contexts or by earlier turns| / |answer claims|; "
        "details say which (calls: claims, history_verify)",
        ("response", "retrieved_contexts"), frozenset({"answer_claims", "claim_support"}),
        _history_score, label_scale="binary"),
    JudgedMetric(
        "citation_support",
        "|citing sentences the cited passage supports| / |citing sentences| (call: "
        "citation_support; refusals and answers citing nothing retrieved are unscored)",
        ("response", "retrieved_contexts"), frozenset({"citation_supported"}),
        _citation_score, label_scale="binary"),
    JudgedMetric(
        "judged_answerable", "1 if the judge says the question can be answered from the "
        "retrieved contexts, else 0 (call: answerable)", ("user_input", "retrieved_contexts"),
        frozenset({"answerable"}), lambda m, j, extra: Score(float(j.answers["answerable"])),
        label_scale="binary"),
    JudgedMetric(
        "judged_refusal", "1 if the judge says the answer refuses to answer, else 0 (call: "
        "refusal)", ("user_input", "response"), frozenset({"refused"}),
        lambda m, j, extra: Score(float(j.answers["refused"])), label_scale="binary",
        higher_is_better=False),
)
for _row in ROWS:
    register(_row.spec())


@dataclass
class _Subset:
    """The scoring context of a judged metric run on some of another context's samples."""

    samples: Sequence[Sample]
    parent: Any
    judged: JudgedState = field(default_factory=JudgedState)

    @property
    def seed(self) -> int:
        return int(self.parent.seed)

    @property
    def judge(self) -> Any:
        return self.parent.judge

    @property
    def language(self) -> str:
        return str(getattr(self.parent, "language", "auto"))

    @property
    def keep_prompts(self) -> bool:
        return False

    def signature(self, metric: str, **extra: Any) -> Any:
        return self.parent.signature(metric, **extra)


def _yes_no(name: str, ctx: Any, samples: list[Sample]) -> dict[str, bool | str]:
    """The judged metric ``name`` (a yes/no row) on ``samples``: verdicts, or the unscored
    reason of a sample whose call failed."""
    from ragmeter.metrics.judged.row import judged_row
    from ragmeter.metrics.registry import parse_metric

    m = parse_metric(name)
    res = judged_row(m)(m, _Subset(samples, ctx))
    return {sid: (bool(v >= 0.5) if v == v else res.reasons.get(i, "unscored"))
            for i, (sid, v) in enumerate(zip(res.sample_ids, res.values, strict=True))}


def judge_refusals(metric: Metric, ctx: Any, samples: list[Sample]) -> dict[str, bool | str]:
    """The judge's refusal verdicts (``judged_refusal``'s call) for ``samples``: the fallback
    behind the refusal metrics' ``detector=rules+judge`` / ``judge``."""
    return _yes_no("judged_refusal", ctx, samples)


def judge_answerability(metric: Metric, ctx: Any, samples: list[Sample]
                        ) -> dict[str, bool | str]:
    """Answerable from the contexts? (``judged_answerable``'s call) for samples without a
    label: the refusal metrics' ``answerability=labels+judge``."""
    return _yes_no("judged_answerable", ctx, samples)


JUDGE_DETECTORS.append(judge_refusals)
ANSWERABILITY_JUDGES.append(judge_answerability)
