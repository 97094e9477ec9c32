"""A jury's judge card shows each member's κ beside the jury's, on the same labelled items;
grades are combined by majority, median, trimmed or weighted mean."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.judge_trust.bench import BenchItem, load_bench, run_bench
from ragmeter.judge_trust.card import JudgeCard
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.multi import MultiJudge, combine_grades, trimmed_mean, vote_items
from ragmeter.judges.scripted import ScriptedJudge


def _faith_items(n: int = 30) -> list[BenchItem]:
    return [i for i in load_bench(lang="ru") if i.task == "faithfulness"][:n]


def _verify_script(items: list[BenchItem], mode: str) -> Any:
    """Answers the claim check: ``oracle`` (the label), ``yes`` or ``no``."""
    by_text = sorted(((i.answer or "", i.context or "", i.label) for i in items),
                     key=lambda p: -len(p[0]) - len(p[1]))

    def fn(req: JudgeRequest) -> dict[str, Any]:
        user = req.messages[-1]["content"]
        if mode == "oracle":
            verdict = next(str(lab) for ans, ctx, lab in by_text if ans in user and ctx in user)
        else:
            verdict = mode
        return {"answer_claims": [{"id": 1, "reason": "r", "in_context": verdict}]}
    return fn


def test_card_has_per_member_kappa_beside_the_jurys() -> None:
    items = _faith_items()
    jury = MultiJudge([ScriptedJudge(_verify_script(items, m), name=m, model=f"m-{m}")
                       for m in ("oracle", "yes", "no")])
    run = run_bench(jury, items, n_boot=200)
    mc = run.card.metrics["faithfulness"]
    assert mc.stats["kappa"].value == pytest.approx(1.0)   # yes and no cancel; oracle decides
    assert set(mc.members) == {"oracle", "yes", "no"}
    assert mc.members["oracle"]["kappa"].value == pytest.approx(1.0)
    assert mc.members["yes"]["kappa"].value == pytest.approx(0.0)
    assert mc.members["yes"]["accuracy"].n == mc.n
    back = JudgeCard.from_dict(run.card.to_dict())
    assert back.metrics["faithfulness"].members["no"]["kappa"].value == pytest.approx(0.0)
    assert "kappa[oracle]" in run.card.rows()[0]
    assert run.card.judge == "jury(oracle,yes,no)"


def test_vote_items_ties_and_splits() -> None:
    votes, ties, splits = vote_items([[1, 1, 0, 1], [1, 0, 0, 0], [1, 0, 0, 1]])
    assert votes == [1, 0, 0, 1] and ties == [] and splits == [1, 3]
    votes, ties, _ = vote_items([[1, 0], [0, 0]])
    assert votes == [0, 0] and ties == [0]
    with pytest.raises(ValueError):
        vote_items([[1], [1, 0]])


def test_grade_combinations() -> None:
    assert combine_grades([2, 2, 0]) == (2.0, False)
    assert combine_grades([2, 0]) == (0.0, True)           # tie: lower median, flagged
    assert combine_grades([2, 1, 0], "median") == (1.0, False)
    assert combine_grades([0, 1, 2, 2, 2], "trimmed_mean")[0] == pytest.approx(5 / 3)
    assert trimmed_mean([0, 10, 10, 10, 100], 0.2) == pytest.approx(10.0)
    assert combine_grades([2, 0], "weighted_mean", [3, 1])[0] == pytest.approx(1.5)
    with pytest.raises(ValueError):
        MultiJudge([ScriptedJudge(lambda r: {}, name="x")], weights=[1, 2])
    with pytest.raises(ValueError):
        MultiJudge([ScriptedJudge(lambda r: {}, name="x")], combine="mode")  # type: ignore


def test_grades_of_a_jury_use_its_combine_method() -> None:
    from ragmeter.data.sample import Sample
    from ragmeter.generation.evaluate import evaluate_generation

    def grader(g: int) -> Any:
        return lambda req: {"answer_relevance": g}

    s = Sample(id="s", user_input="Где бассейн?", response="Бассейн в спорткомплексе.")
    judges = [ScriptedJudge(grader(g), name=f"g{i}") for i, g in enumerate((2, 2, 0))]
    maj = evaluate_generation([s], ["answer_relevance"], judge=MultiJudge(judges))
    assert maj["answer_relevance"].values[0] == 1.0
    judges = [ScriptedJudge(grader(g), name=f"g{i}") for i, g in enumerate((2, 2, 0))]
    wm = evaluate_generation([s], ["answer_relevance"],
                             judge=MultiJudge(judges, combine="weighted_mean",
                                              weights=[1, 1, 2]))
    assert wm["answer_relevance"].values[0] == pytest.approx(0.5)   # grade 1 of 2
    assert wm["answer_relevance"].details[0]["jury"]["splits"] == {"answer_relevance": [0]}
    assert "weighted_mean" in str(wm["answer_relevance"].signature)


def test_generic_replies_are_combined_item_by_item() -> None:
    from ragmeter.judges.multi import combine_data

    datas = [{"items": [{"ok": "yes"}, {"ok": "yes"}], "n": 2},
             {"items": [{"ok": "no"}, {"ok": "yes"}], "n": 2},
             {"items": [{"ok": "no"}, {"ok": "no"}], "n": 1}]
    assert combine_data(datas) == {"items": [{"ok": "no"}, {"ok": "yes"}], "n": 2}
    uneven = [{"items": [1, 2]}, {"items": [1]}]
    assert combine_data(uneven) == {"items": [1, 2]}
