"""``ragmeter score generation`` end to end (fake OpenAI-compatible judge server, no network)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from ragmeter.cli.app import app
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script

SCRIPT = make_script()


def _reply(body, schema):
    return SCRIPT(SimpleNamespace(schema=schema, messages=body["messages"]))


def test_split_metrics_respects_parentheses():
    # `generation --metrics` splits each option value with the one metric-list splitter
    from ragmeter.metrics.registry import split_metric_list

    items = ["rouge_l(stem=ru,measure=p),bleu", "faithfulness"]
    assert [m for item in items for m in split_metric_list(item)] == [
        "rouge_l(stem=ru,measure=p)", "bleu", "faithfulness"]


def test_cli_generation_table_and_json(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    data = tmp_path / "s.jsonl"
    rows = [
        {"id": "1", "user_input": "Где Париж?", "response": "Париж во Франции.",
         "reference": "Париж во Франции.", "retrieved_contexts": ["[rel=2] Париж во Франции."]},
        {"id": "2", "user_input": "Где Берлин?", "response": "Берлин в Германии.",
         "reference": "Берлин в Германии."},
    ]
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    out = tmp_path / "res.json"
    with MockJudgeServer(MockConfig(reply_fn=_reply)) as srv:
        res = CliRunner().invoke(app, [
            "score", "generation", "--samples", str(data), "--metrics",
            "rouge_1,faithfulness,context_relevance", "--judge-url", srv.base_url,
            "--judge-model", "m", "--judge-key-env", "", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "faithfulness" in res.output and "missing_field:retriev" in res.output
    assert "judge calls: 3 (1.50 per sample)" in res.output
    saved = json.loads(out.read_text("utf-8"))
    faith = saved["results"]["faithfulness"]
    assert faith["aggregate"]["mean"] == 1.0 and faith["aggregate"]["n_unscored"] == 1
    assert saved["results"]["rouge_1"]["aggregate"]["mean"] == 1.0
