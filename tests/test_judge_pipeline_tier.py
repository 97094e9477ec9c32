"""Judge pipeline: strict Yes/No parsing, confusion / P / R / F1 against scikit-learn,
threshold sweep and AUC, and a real HTTP round trip to the fake OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import ConfigError, DataError
from ragmeter.judges import JudgeConfig, RetryPolicy, make_judge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.metrics.classification import threshold_sweep
from ragmeter.reports.charts import confusion_chart
from ragmeter.stats import bootstrap_stat, roc_auc
from ragmeter.tiers.judge_pipeline import (
    evaluate_judge_pipeline,
    load_pipeline_items,
    parse_yes_no,
)

skm = pytest.importorskip("sklearn.metrics")

TEMPLATE = ("---system---\nТы решаешь, показывать ли ответ.\n---user---\n"
            "Вопрос: {question}\nКонтекст: {context}\nОтвет: {answer}\nПоказать? Yes или No.")


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "items.jsonl"
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return p


@pytest.mark.parametrize("text, want", [
    ("Yes", True), ("yes.", True), (" YES\n", True), ("Да", True), ("да!", True),
    ('"No"', False), ("Нет.", False), ("no", False), ("<think>hmm</think>No", False),
    ("Yes, because the answer is supported", None), ("Maybe", None), ("", None), (None, None),
    ("Yes/No", None), ("Нет, не показывать", None),
])
def test_parse_yes_no_strict(text, want) -> None:
    assert parse_yes_no(text) is want


GOLD = [1, 1, 1, 0, 0, 1, 0, 0, 1, 0]
PRED = [1, 0, 1, 1, 0, 1, 0, 0, 0, 0]
SCORE = [0.9, 0.4, 0.8, 0.7, 0.2, 0.95, 0.1, 0.3, 0.45, 0.05]


def _rows() -> list[dict]:
    return [{"id": f"i{i}", "question": f"q{i}", "answer": f"a{i}", "context": f"c{i}",
             "ground_truth_show": bool(g), "predicted_show": "yes" if p else "no",
             "predicted_score": s, "rationale": "r"}
            for i, (g, p, s) in enumerate(zip(GOLD, PRED, SCORE, strict=True))]


def test_predictions_mode_matches_sklearn(tmp_path: Path) -> None:
    items = load_pipeline_items(_write(tmp_path, _rows()))
    res = evaluate_judge_pipeline(items)
    c = res.meta["confusion"]
    assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (3, 1, 2, 4)
    assert res["cls_accuracy"].mean == pytest.approx(skm.accuracy_score(GOLD, PRED))
    assert res["cls_precision"].mean == pytest.approx(skm.precision_score(GOLD, PRED))
    assert res["cls_recall"].mean == pytest.approx(skm.recall_score(GOLD, PRED))
    assert res.meta["f1"]["value"] == pytest.approx(skm.f1_score(GOLD, PRED))
    lo, hi = res.meta["f1"]["ci_low"], res.meta["f1"]["ci_high"]
    assert lo <= res.meta["f1"]["value"] <= hi
    assert res.meta["roc_auc"]["value"] == pytest.approx(skm.roc_auc_score(GOLD, SCORE))
    best = res.meta["best_f1_threshold"]
    f1s = [skm.f1_score(GOLD, [s >= t for s in SCORE]) for t in SCORE]
    assert best["f1"] == pytest.approx(max(f1s))
    assert res["cls_accuracy"].signature.get("mode") == "predictions"


def test_sweep_and_auc_with_ties() -> None:
    g = np.array([1, 0, 1, 0, 1, 0], dtype=bool)
    s = np.array([0.5, 0.5, 0.7, 0.2, 0.5, 0.7])
    assert roc_auc(g, s) == pytest.approx(skm.roc_auc_score(g, s))
    rows = threshold_sweep(g, s)
    assert [r["threshold"] for r in rows] == [0.2, 0.5, 0.7]
    assert rows[0]["recall"] == 1.0 and rows[0]["precision"] == 0.5
    assert roc_auc(np.array([1, 1], dtype=bool), np.array([0.1, 0.2])) is None
    est = bootstrap_stat(lambda i: roc_auc(g[i], s[i]), g.size, n_boot=200, min_defined=0.0)
    assert est.value == roc_auc(g, s)
    assert est.ci_low is not None and est.ci_high is not None and est.ci_low <= est.ci_high


def test_missing_ground_truth_and_bad_predictions_listed(tmp_path: Path) -> None:
    rows = _rows()
    del rows[2]["ground_truth_show"]
    rows[4]["predicted_show"] = "perhaps"
    rows[5]["predicted_score"] = "high"
    with pytest.raises(DataError) as ei:
        load_pipeline_items(_write(tmp_path, rows))
    msg = str(ei.value)
    assert ":3 field 'ground_truth_show'" in msg and ":5 field 'predicted_show'" in msg
    assert ":6 field 'predicted_score'" in msg


def test_predictions_missing_without_judge(tmp_path: Path) -> None:
    rows = _rows()
    del rows[1]["predicted_show"]
    items = load_pipeline_items(_write(tmp_path, rows))
    with pytest.raises(DataError, match="predicted_show"):
        evaluate_judge_pipeline(items)


def _reply(body, schema):
    user = body["messages"][-1]["content"]
    q = user.split("Вопрос: ")[1].split("\n")[0]
    return {"q0": "Yes", "q1": "Нет", "q2": "Да.", "q3": "Yes", "q4": "Maybe",
            "q5": "yes", "q6": "No", "q7": "нет", "q8": "No", "q9": "No"}[q]


def test_judge_mode_over_http_fake_server(tmp_path: Path) -> None:
    items = load_pipeline_items(_write(tmp_path, _rows()))
    with MockJudgeServer(MockConfig(reply_fn=_reply, latency_ms=5)) as srv:
        judge = make_judge(JudgeConfig(name="prod", backend="openai", base_url=srv.base_url,
                                       model="mistral-prod", api_key_env=None, no_cache=True,
                                       retry=RetryPolicy(initial=0.01, max=0.05)))
        res = evaluate_judge_pipeline(items, judge=judge, prompt_template=TEMPLATE)
        assert srv.stats()["with_response_format"] == 0  # plain text, as in production
    # q4 "Maybe" -> parse_error, excluded; predictions: 1,0,1,1,-,1,0,0,0,0
    acc = res["cls_accuracy"]
    assert acc.reasons == {4: "parse_error"}
    gold = [g for i, g in enumerate(GOLD) if i != 4]
    pred = [1, 0, 1, 1, 1, 0, 0, 0, 0]
    assert acc.mean == pytest.approx(skm.accuracy_score(gold, pred))
    assert res.meta["f1"]["value"] == pytest.approx(skm.f1_score(gold, pred))
    assert res.meta["unscored_by_reason"] == {"parse_error": 1}
    assert res.meta["per_item"][4]["raw"] == "Maybe"
    assert res.meta["latency_ms"]["p50"] >= 5.0
    assert res["cls_accuracy"].signature.get("model") == "mistral-prod"
    paths = confusion_chart(res, tmp_path)  # the chart of the CLI and the demo
    assert [p.name for p in paths] == ["judge_pipeline_confusion.svg"]  # SVG, one engine
    assert "<svg" in paths[0].read_text("utf-8")


def test_judge_mode_item_missing_answer_not_sent(tmp_path: Path) -> None:
    rows = _rows()
    del rows[0]["answer"]
    items = load_pipeline_items(_write(tmp_path, rows))
    with MockJudgeServer(MockConfig(reply_fn=_reply)) as srv:
        judge = make_judge(JudgeConfig(name="prod", backend="openai", base_url=srv.base_url,
                                       model="m", api_key_env=None, no_cache=True))
        res = evaluate_judge_pipeline(items, judge=judge, prompt_template=TEMPLATE)
        stats = srv.stats()
    assert res["cls_accuracy"].reasons == {0: "missing_field:answer", 4: "parse_error"}
    assert res.meta["n_scored"] == 8
    assert len(res["judge_latency"].sample_ids) == 9
    assert stats["requests"] == 9  # the item without an answer was never sent


def test_judge_mode_needs_placeholders(tmp_path: Path) -> None:
    items = load_pipeline_items(_write(tmp_path, _rows()))
    with pytest.raises(ConfigError, match="placeholders"):
        evaluate_judge_pipeline(items, judge=object(), prompt_template="Show {question}?")


def test_cli_predictions_and_judge(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    data = _write(tmp_path, _rows())
    out = tmp_path / "jp.json"
    r = CliRunner().invoke(app, ["judge", "pipeline", str(data), "--out", str(out),
                                 "--charts", str(tmp_path / "charts")])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["meta"]["confusion"]["tp"] == 3
    assert (tmp_path / "charts" / "judge_pipeline_confusion.svg").exists()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(TEMPLATE, encoding="utf-8")
    with MockJudgeServer(MockConfig(reply_fn=_reply)) as srv:
        r = CliRunner().invoke(app, ["judge", "pipeline", str(data), "--prompt", str(prompt),
                                     "--base-url", srv.base_url, "--model", "prod",
                                     "--api-key-env", "", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["meta"]["mode"] == "judge" and res["meta"]["unscored_by_reason"] == {
        "parse_error": 1}


def test_generic_judge_without_backend_uses_raw_text(tmp_path: Path) -> None:
    from ragmeter.judges.base import JudgeReply

    class Replay:
        """A Judge without an engine backend (e.g. a replay): raw text is parsed strictly."""

        name, model, demo = "replay", "replayed", False

        def ask_many(self, requests):
            raws = ["Yes", "No", "Да", None, "нет."] * 2
            out = []
            for req, raw in zip(requests, raws, strict=False):
                assert "{question}" not in req.messages[-1]["content"]
                out.append(JudgeReply(data=None, reason="parse_error" if raw else "timeout",
                                      raw=raw, latency_s=0.01))
            return out

    items = load_pipeline_items(_write(tmp_path, _rows()))
    res = evaluate_judge_pipeline(items, judge=Replay(), prompt_template=TEMPLATE)
    assert res["cls_accuracy"].reasons == {3: "timeout", 8: "timeout"}
    assert [p["pred"] for p in res.meta["per_item"]][:5] == [True, False, True, None, False]
