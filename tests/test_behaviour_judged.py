"""Judged behaviours: conversation faithfulness, citation support and the judge's refusal view,
each scored by evaluate_generation and graded on the judge benchmark with the same calls."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.data.sample import Sample
from ragmeter.judge_trust.bench import BenchItem, item_requests, run_bench
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.scripted import ScriptedJudge
from ragmeter.metrics.judged.behaviours import citing_pairs

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import fenced


def _norm(s: str) -> str:
    return re.sub(r"\W+", " ", s.casefold()).strip()


def script(req: JudgeRequest) -> Any:
    """Claims are sentences; a claim is supported by a text that contains it word for word."""
    title = req.schema.get("title", "")
    f = fenced(req.messages[1]["content"])
    if title.startswith("gen.claims"):
        text = f["answer"][0]
        return {"answer_claims": [s.strip() for s in re.split(r"(?<=\.)\s+", text) if s.strip()]}
    if title.startswith("gen.verify"):
        ctx = " ".join(_norm(c) for c in f.get("context", []))
        return {"answer_claims": [{"id": i, "in_context": "yes" if _norm(c) in ctx else "no"}
                                  for i, c in enumerate(f["answer_claim"], 1)]}
    if title == "gen.history-verify/v1":
        ctx = " ".join(_norm(c) for c in f.get("context", []))
        hist = " ".join(_norm(t) for t in f.get("turn", []))
        return {"answer_claims": [
            {"id": i, "in_context": "yes" if _norm(c) in ctx else "no",
             "in_history": "yes" if _norm(c) in hist else "no"}
            for i, c in enumerate(f["answer_claim"], 1)]}
    if title == "gen.citation-support/v1":
        return {"pairs": [{"id": i, "supported": "yes" if _norm(re.sub(r"\[\d+\]", "", s))
                           in _norm(p) else "no"}
                          for i, (s, p) in enumerate(zip(f["sentence"], f["passage"],
                                                         strict=True), 1)]}
    if title == "gen.refusal/v1":
        return {"refused": "yes" if "нет информации" in f["answer"][0] else "no"}
    raise AssertionError(title)


HISTORY = [{"role": "user", "content": "Сколько стоит очное обучение?"},
           {"role": "assistant", "content": "Очное обучение стоит 280 000 рублей в год."}]
CONTEXT = ["Заочное обучение стоит 140 000 рублей в год."]


def _turn(answer: str) -> Sample:
    return Sample(id="t2", user_input="А если заочно?", history=HISTORY,
                  retrieved_contexts=CONTEXT, response=answer)


def test_a_claim_resting_on_an_earlier_turn_is_faithful_an_invented_number_is_not() -> None:
    judge = ScriptedJudge(script)
    good = _turn("Заочное обучение стоит 140 000 рублей в год. "
                 "Очное обучение стоит 280 000 рублей в год.")
    bad = _turn("Заочное обучение стоит 140 000 рублей в год. "
                "Очное обучение стоит 310 000 рублей в год.")
    r = ragmeter.evaluate_generation([good, bad], ["history_faithfulness", "faithfulness"],
                                     judge=judge)
    hf = r["history_faithfulness"]
    assert hf.values[0] == 1.0 and hf.values[1] == 0.5
    assert [c["support"] for c in hf.details[0]["claims"]] == ["context", "history"]
    assert r["faithfulness"].values[0] == 0.5      # context-only faithfulness misses history
    assert r.meta["judge_calls"]["total"] <= 4 * 2   # ≤ 4 calls per turn


def test_citation_support_pairs_sentences_with_the_passages_they_cite() -> None:
    s = Sample(id="c", user_input="q", retrieved_ids=["a#0", "b#1"],
               retrieved_contexts=["Стипендия выплачивается до 25 числа.", "Другое."],
               response="Стипендия выплачивается до 25 числа [1]. Её платят раз в год [2].")
    assert citing_pairs(s.response, s.retrieved_ids, s.retrieved_contexts) == [
        ("Стипендия выплачивается до 25 числа [1].", "Стипендия выплачивается до 25 числа."),
        ("Её платят раз в год [2].", "Другое.")]
    refusal = Sample(id="r", user_input="q", retrieved_ids=["a#0"], retrieved_contexts=["x"],
                     response="В базе знаний нет информации об этом [1].")
    none = Sample(id="n", user_input="q", retrieved_ids=["a#0"], retrieved_contexts=["x"],
                  response="Без ссылок.")
    r = ragmeter.evaluate_generation([s, refusal, none], ["citation_support"],
                                     judge=ScriptedJudge(script))["citation_support"]
    assert r.values[0] == 0.5
    assert r.reasons[1] == "not_applicable:refusal" and r.reasons[2] == "not_applicable:no_citations"


def test_behaviour_metrics_are_judge_benchmark_tasks_with_the_metrics_calls() -> None:
    items = [
        BenchItem("h1", "ru", "history_faithfulness", "conv", "yes", "А если заочно?",
                  CONTEXT[0], "Очное обучение стоит 280 000 рублей в год.", None, HISTORY),
        BenchItem("h2", "ru", "history_faithfulness", "conv", "no", "А если заочно?",
                  CONTEXT[0], "Очное обучение стоит 310 000 рублей в год.", None, HISTORY),
        BenchItem("c1", "ru", "citation_support", "cite", "yes", None,
                  "Стипендия выплачивается до 25 числа.",
                  "Стипендия выплачивается до 25 числа [1]."),
        BenchItem("r1", "ru", "judged_refusal", "refusal", "yes", "Где бассейн?",
                  None, "В базе знаний нет информации о бассейне."),
        BenchItem("r2", "ru", "judged_refusal", "refusal", "no", "Где бассейн?",
                  None, "Бассейн в спорткомплексе."),
    ]
    titles = {r.schema["title"] for i in items for r in item_requests(i, binary=False)}
    assert {"gen.refusal/v1", "gen.citation-support/v1"} <= titles
    res = run_bench(ScriptedJudge(script), items)
    assert not any(res.reasons[0].values()), res.reasons
    for task in ("history_faithfulness", "citation_support", "judged_refusal"):
        ids, correct = res.correct(task)
        assert len(ids) > 0 and correct.tolist() == [1.0] * len(ids), task
        assert task in res.card.metrics


def test_refusal_metrics_with_the_judge_as_fallback() -> None:
    """rules+judge: the judge decides only the answers in the classifier's uncertain band —
    not those that merely carry a negation — and their number is counted; judge: every
    answer; rules: no call at all."""
    from ragmeter.metrics.refusal import detect_refusals

    calls: list[str] = []

    def counting(req: JudgeRequest) -> Any:
        calls.append(req.schema.get("title", ""))
        return {"refused": "yes"}

    texts = ["Стипендия 3 000 рублей.", "Не знаю.",
             "Общежитие не положено заочникам.",              # a negation, answered for sure
             "Обратитесь в деканат: именно декан подписывает индивидуальный план.",
             "Sorry, I can't give exact figures, but tuition is about 280,000 roubles.",
             "Может быть, это есть у коменданта, но я не уверен."]
    verdicts = detect_refusals(texts)
    uncertain = [t for t, v in zip(texts, verdicts, strict=True) if v.uncertain]
    assert uncertain and len(uncertain) < len(texts)
    assert not verdicts[2].uncertain and not verdicts[2].refused
    s = [Sample(id=str(i), user_input="q", type="negative", response=t)
         for i, t in enumerate(texts)]
    rules = ragmeter.evaluate_generation(s, ["abstention_recall"])["abstention_recall"]
    assert calls == []
    mixed = ragmeter.evaluate_generation(s, ["abstention_recall(detector=rules+judge)"],
                                         judge=ScriptedJudge(counting))
    got = mixed["abstention_recall(detector=rules+judge)"]
    assert calls == ["gen.refusal/v1"] * len(uncertain)
    assert got.counts["judge_asked"] == len(uncertain) == got.counts["uncertain"]
    refused = sum(v.refused or v.uncertain for v in verdicts)   # the judge says "refused"
    assert rules.aggregate.mean == pytest.approx(sum(v.refused for v in verdicts) / len(s))
    assert got.aggregate.mean == pytest.approx(refused / len(s))
    assert "detector:rules+judge" in str(got.signature)
    from ragmeter.errors import MetricSpecError

    with pytest.raises(MetricSpecError, match="needs a judge"):
        ragmeter.evaluate_generation(s, ["over_refusal(detector=judge)"])


def test_answerability_unknown_is_one_judge_call() -> None:
    """A sample with no answerability label: unscored by default, one judge call with
    answerability=labels+judge (answerable from its contexts?)."""
    calls: list[str] = []

    def judge(req: JudgeRequest) -> Any:
        calls.append(req.schema.get("title", ""))
        ctx = " ".join(fenced(req.messages[1]["content"]).get("context", []))
        return {"answerable": "yes" if "рублей" in ctx else "no"}

    s = [Sample(id="u1", user_input="Сколько стоит?", retrieved_contexts=["Стоит 100 рублей."],
                response="Не знаю."),
         Sample(id="u2", user_input="Где бассейн?", retrieved_contexts=["Библиотека открыта."],
                response="Не знаю.")]
    plain = ragmeter.evaluate_generation(s, ["over_refusal"])["over_refusal"]
    assert plain.aggregate.n == 0 and set(plain.reasons.values()) == {"no_answerability_label"}
    res = ragmeter.evaluate_generation(s, ["over_refusal(answerability=labels+judge)"],
                                       judge=ScriptedJudge(judge))
    r = res["over_refusal(answerability=labels+judge)"]
    assert calls == ["gen.answerable/v1"] * 2
    assert r.aggregate.n == 1 and r.values[0] == 1.0       # u1 answerable, yet refused
    assert r.reasons[1] == "not_applicable:answerable"      # u2 judged unanswerable
    assert "answerability:labels+judge" in str(r.signature)
