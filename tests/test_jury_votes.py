"""A jury votes per claim: several judges' verdicts are combined claim by claim before scoring.

Three scripted judges verify the same two answer claims and two reference claims. Alone they
give factual-correctness F1 of 0.667, 0 and 0.667; first-judge-wins would report 0.667, the
mean of their final scores 0.444, and a majority per claim gives precision 1/2, recall 1/2,
F1 0.5.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.multi import MultiJudge
from ragmeter.judges.scripted import ScriptedJudge

A_CLAIMS = ["Paris is the capital of France.", "Paris has two million inhabitants."]
R_CLAIMS = ["Paris is the capital of France.", "Paris lies on the Seine."]


def _yn(v: int) -> str:
    return "yes" if v else "no"


def _script(a_in_r: list[int], r_in_a: list[int]) -> Any:
    def fn(req: JudgeRequest) -> dict[str, Any]:
        props = req.schema["properties"]
        if str(req.schema.get("title", "")).startswith("gen.claims"):
            return {k: list(A_CLAIMS if k == "answer_claims" else R_CLAIMS) for k in props}
        out: dict[str, Any] = {}
        if "answer_claims" in props:
            out["answer_claims"] = [{"id": i + 1, "reason": "r", "in_reference": _yn(v)}
                                    for i, v in enumerate(a_in_r)]
        if "reference_claims" in props:
            out["reference_claims"] = [{"id": i + 1, "reason": "r", "in_answer": _yn(v)}
                                       for i, v in enumerate(r_in_a)]
        return out
    return fn


SCRIPTS = {"a": ([1, 1], [1, 0]),   # precision 1, recall 1/2: F1 0.667
           "b": ([0, 0], [0, 0]),   # F1 0
           "c": ([1, 0], [1, 1])}   # precision 1/2, recall 1: F1 0.667


def _sample() -> Sample:
    return Sample(id="q1", user_input="What is Paris?", response=" ".join(A_CLAIMS),
                  reference=" ".join(R_CLAIMS))


def _f1(judge: Any) -> float:
    res = evaluate_generation([_sample()], ["factual_correctness"], judge=judge)
    return float(res["factual_correctness"].values[0])


def _judges(names: str = "abc") -> list[ScriptedJudge]:
    return [ScriptedJudge(_script(*SCRIPTS[n]), name=n, model=f"m-{n}") for n in names]


def test_each_member_alone() -> None:
    assert [round(_f1(j), 3) for j in _judges()] == [0.667, 0.0, 0.667]


def test_jury_votes_per_claim_not_first_judge() -> None:
    res = evaluate_generation([_sample()], ["factual_correctness"],
                              judge=MultiJudge(_judges()))
    fc = res["factual_correctness"]
    assert fc.values[0] == pytest.approx(0.5)   # first-judge-wins gave 0.667
    details = fc.details[0]
    assert details["verdicts"]["answer_in_reference"] == [1, 0]
    assert details["verdicts"]["reference_in_answer"] == [1, 0]
    jury = details["jury"]
    assert jury["members"] == ["a", "b", "c"]
    # every claim split 2:1 here, no tie
    assert jury["splits"]["answer_in_reference"] == [0, 1]
    assert jury["ties"] == {}


def test_tie_is_flagged_and_resolved_to_no() -> None:
    res = evaluate_generation([_sample()], ["factual_correctness"],
                              judge=MultiJudge(_judges("ab")))
    d = res["factual_correctness"].details[0]
    # a says yes/yes, b no/no on the answer claims: both tied, both counted as not supported
    assert d["verdicts"]["answer_in_reference"] == [0, 0]
    assert d["jury"]["ties"]["answer_in_reference"] == [0, 1]
    assert res["factual_correctness"].values[0] == 0.0


def test_jury_signature_says_jury_and_lists_members() -> None:
    res = evaluate_generation([_sample()], ["factual_correctness"],
                              judge=MultiJudge(_judges()))
    sig = str(res["factual_correctness"].signature)
    assert "jury(a,b,c)" in sig
    assert "vote:majority" in sig
