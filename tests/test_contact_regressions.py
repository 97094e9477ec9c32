"""Regression tests of the first-contact bugs: production-judge replies and empty contexts,
BLEU without references, RAGAS-compatible id precision, store paths relative to the config,
the stored reason of an errored tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
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
    for loose in ("Yes.", "**Yes**", "No - bad", "Yes, sure"):
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
        return "Yes." if truth[q] else "No: the answer is not supported"

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


def test_bleu_without_any_usable_reference_is_unscored() -> None:
    samples = [Sample(id="a", user_input="q", response="hello"),
               Sample(id="b", user_input="q", response="x", reference="   ")]
    a = evaluate_generation(samples, ["bleu"])["bleu"].aggregate
    assert a.n == 0 and a.n_unscored == 2 and a.mean is None
    assert set(a.unscored_by_reason) == {"missing_field:reference", "empty_input"}


def test_id_set_precision_matches_ragas_docs_example() -> None:
    s = Sample(id="1", user_input="q", retrieved_ids=["doc_1", "doc_2", "doc_3", "doc_4"],
               gold_chunk_ids=["doc_1", "doc_4", "doc_5", "doc_6"])
    res = evaluate_generation([s], ["id_set_precision", "id_context_precision",
                                    "id_context_recall"])
    assert res["id_set_precision"].aggregate.mean == pytest.approx(0.5)
    assert res["id_context_precision"].aggregate.mean == pytest.approx(0.75)  # rank-aware
    assert res["id_context_recall"].aggregate.mean == pytest.approx(0.5)


def test_store_path_relative_to_config(tmp_path: Path) -> None:
    from ragmeter.runner.config import parse_config

    for store in ("results.sqlite", "sqlite:///results.sqlite"):
        cfg = parse_config({"name": "x", "store": store, "tiers": ["ux"]}, base_dir=tmp_path)
        assert str(tmp_path / "results.sqlite") in str(cfg.store), store
    cfg = parse_config({"name": "x", "store": "sqlite:////abs/r.sqlite", "tiers": ["ux"]},
                       base_dir=tmp_path)
    assert cfg.store == "sqlite:////abs/r.sqlite"


def test_errored_tier_keeps_the_whole_reason() -> None:
    from ragmeter.errors import DataError, RecordProblem
    from ragmeter.runner.engine import _reason

    exc = DataError(RecordProblem("data/e.jsonl", 7, "gold_doc_ids", "must be a list"))
    text = _reason(exc)
    assert "data/e.jsonl:7 field 'gold_doc_ids': must be a list" in text
