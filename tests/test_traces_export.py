"""From a trace export to a report in three commands, and the per-sample scores back out as
OpenTelemetry ``gen_ai.evaluation.result`` events and Langfuse scores, on the right traces."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_USAGE

FIX = Path(__file__).parent / "fixtures" / "traces"


def _ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out + err


def test_three_commands_then_scores_back_to_the_traces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    samples, results, report = (tmp_path / "samples.jsonl", tmp_path / "results.json",
                                tmp_path / "report.html")
    _ok(capsys, "traces", "import", str(FIX / "otlp_current.json"), "--out", str(samples), "--gold",
        str(FIX / "same_as_evalset.jsonl"))
    _ok(capsys, "score", "generation", "--samples", str(samples), "--metrics", "rouge_l,bleu",
        "--out",
        str(results))
    _ok(capsys, "report", str(results), "--out", str(report))
    assert report.read_text("utf-8").lstrip().lower().startswith("<!doctype html")

    saved = json.loads(results.read_text("utf-8"))["results"]["rouge_l"]["per_sample"]
    want = {r["sample_id"]: r["value"] for r in saved}
    otlp = tmp_path / "scores.otlp.json"
    _ok(capsys, "traces", "export", str(results), "--to", "otlp", "--samples", str(samples),
        "--out",
        str(otlp))
    logs = json.loads(otlp.read_text("utf-8"))["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    rouge = [r for r in logs if {"key": "gen_ai.evaluation.name",
                                 "value": {"stringValue": "rouge_l"}} in r["attributes"]]
    assert len(rouge) == 3 and all(r["eventName"] == "gen_ai.evaluation.result" for r in rouge)
    for r in rouge:
        attrs = {a["key"]: next(iter(a["value"].values())) for a in r["attributes"]}
        assert attrs["gen_ai.evaluation.score.value"] == pytest.approx(want[r["traceId"]])
        assert r["spanId"] == r["traceId"][:14] + "00"  # the request's root span
    doc = json.loads((FIX / "otlp_current.json").read_text("utf-8"))
    roots = {s["traceId"] for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
             if not s["parentSpanId"]}
    assert {r["traceId"] for r in rouge} == roots

    lf = tmp_path / "scores.csv"
    _ok(capsys, "traces", "export", str(results), "--to", "langfuse-csv", "--samples", str(samples),
        "--out", str(lf))
    rows = list(csv.DictReader(lf.read_text("utf-8").splitlines()))
    assert {(r["traceId"], r["name"]) for r in rows} >= {(t, "rouge_l") for t in roots}
    assert all(r["dataType"] == "NUMERIC" and "|metric:" in r["comment"] for r in rows)
    lf_json = tmp_path / "scores.json"
    _ok(capsys, "traces", "export", str(results), "--to", "langfuse", "--out", str(lf_json))
    assert len(json.loads(lf_json.read_text("utf-8"))) == len(rows)


def test_unscored_samples_are_counted_not_zero(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    res = {"name": "x", "results": {"faithfulness": {
        "metric": "faithfulness", "signature": "metric:faithfulness",
        "per_sample": [{"sample_id": "t1", "value": 0.5, "reason": None},
                       {"sample_id": "t2", "value": None, "reason": "parse_error"}]}}}
    p = tmp_path / "r.json"
    p.write_text(json.dumps(res), "utf-8")
    out = _ok(capsys, "traces", "export", str(p), "--to", "langfuse", "--out",
              str(tmp_path / "l.json"))
    assert "1 unscored" in out
    assert [r["traceId"] for r in json.loads((tmp_path / "l.json").read_text())] == ["t1"]
    _ok(capsys, "traces", "export", str(p), "--to", "otlp", "--out", str(tmp_path / "o.json"))
    recs = json.loads((tmp_path / "o.json").read_text())["resourceLogs"][0]["scopeLogs"][0][
        "logRecords"]
    bad = next(r for r in recs if r["traceId"] == "t2")
    assert {"key": "error.type", "value": {"stringValue": "parse_error"}} in bad["attributes"]
    assert not any(a["key"] == "gen_ai.evaluation.score.value" for a in bad["attributes"])


def test_export_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "empty.json"
    p.write_text(json.dumps({"name": "x", "results": {}}), "utf-8")
    assert cli.run(["traces", "export", str(p), "--to", "otlp", "--out",
                    str(tmp_path / "o")]) == EXIT_USAGE
    assert "per-sample" in capsys.readouterr().err
    assert cli.run(["traces", "export", str(p), "--to", "zipkin", "--out", "o"]) == EXIT_USAGE
    assert "--to" in capsys.readouterr().err
