"""The production judge's yes/no replies: every form a real model writes (Yes., **Yes**,
No: reason, Да / Нет, thinking tags), strict mode, and a judge-pipeline file with empty
knowledge-base contexts and no ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.judges.scripted import ScriptedJudge
from ragmeter.tiers.judge_pipeline import (
    evaluate_judge_pipeline,
    load_pipeline_items,
    parse_production_reply,
)

PROMPT = ("You decide whether to show an answer. Knowledge base:\n{context}\nIf the knowledge "
          "base is empty, answer No: no information.\nQuestion: {question}\nAnswer: {answer}\n"
          "Reply exactly Yes, or No: [brief reason].")


@pytest.mark.parametrize(("reply", "decision", "reason"), [
    ("Yes", True, None), ("Yes.", True, None), ("yes!", True, None), ("**Yes**", True, None),
    (" Yes \n", True, None), ("No: the date is wrong", False, "the date is wrong"),
    ("No - wrong date", False, "wrong date"), ("No.", False, None), ("Да", True, None),
    ("Да.", True, None), ("Нет: в базе нет сведений", False, "в базе нет сведений"),
    ("нет", False, None), ("<think>hmm</think>No: x", False, "x"),
    ("Yesterday", None, None), ("Maybe", None, None), ("", None, None),
])
def test_production_reply_forms(reply: str, decision: bool | None, reason: str | None) -> None:
    got = parse_production_reply(reply)
    assert got.decision is decision and got.reason == reason and got.raw == reply


def test_strict_mode_accepts_only_the_prompt_format() -> None:
    assert parse_production_reply("Yes", strict=True).decision is True
    assert parse_production_reply("No: bad", strict=True).decision is False
    assert parse_production_reply("Нет: плохо", strict=True).decision is False
    assert parse_production_reply("Yes.", strict=True).decision is True   # as the lenient parser
    for loose in ("**Yes**", "No - bad", "Yes, sure"):
        assert parse_production_reply(loose, strict=True).decision is None


def test_pipeline_compact_json_empty_context_and_real_reply_forms(tmp_path: Path) -> None:
    """A compact judge-pipeline JSON without ids, with empty-knowledge-base items, judged by a
    perfect judge replying in the prompt's own format: every negative counts."""
    rows = []
    for i in range(20):
        empty = i % 5 == 0
        show = (i % 3 != 0) and not empty
        rows.append({"question": f"q{i}", "answer": f"a{i}", "context": "" if empty else f"c{i}",
                     "ground_truth_show": show})
    p = tmp_path / "pipeline.json"
    p.write_text(json.dumps(rows, separators=(",", ":")), "utf-8")
    items = load_pipeline_items(p)
    assert [it.id for it in items][:3] == ["#0", "#1", "#2"]
    assert items[0].context == ""
    truth = {f"q{i}": r["ground_truth_show"] for i, r in enumerate(rows)}

    def perfect(req):  # type: ignore[no-untyped-def]
        text = req.messages[-1]["content"]
        q = text.split("Question: ")[1].split("\n")[0]
        if "Knowledge base:\n\nIf" in text:
            return "No: no information."
        return "**Yes**" if truth[q] else "No: the answer is not supported"

    judge = ScriptedJudge(perfect)
    res = evaluate_judge_pipeline(items, judge=judge, prompt_template=PROMPT)
    conf = res.meta["confusion"]
    assert conf["n"] == 20 and conf["fp"] == conf["fn"] == 0
    assert conf["tn"] == sum(not v for v in truth.values()) > 0
    per = res.meta["per_item"]
    assert per[0]["raw"] == "No: no information." and per[0]["reply_reason"] == "no information"
    strict = evaluate_judge_pipeline(items, judge=ScriptedJudge(perfect), prompt_template=PROMPT,
                                     strict=True)
    assert strict.meta["unscored_by_reason"].get("parse_error", 0) > 0








