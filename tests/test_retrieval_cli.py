"""``ragmeter score retrieval``: both input modes, outputs that round-trip, errors with exit code 2."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.app import app
from ragmeter.cli.commands.retrieval import build_metrics, split_metric_list
from ragmeter.errors import DataError, UsageError
from ragmeter.results.records import EvalResult

FIX = Path(__file__).parent / "fixtures" / "retrieval"
runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["score", "retrieval", *args], catch_exceptions=True,
                         env={"COLUMNS": "200"})


def test_split_and_build_metrics() -> None:
    assert split_metric_list("ndcg@5,10,mrr,ndcg@3(gain=exp,level=doc),recall") == [
        "ndcg@5,10", "mrr", "ndcg@3(gain=exp,level=doc)", "recall"]
    got = [str(m) for m in build_metrics("recall,mrr,ndcg@3", [5, 10], "both")]
    assert got == ["recall@5(level=chunk)", "recall@5(level=doc)", "recall@10(level=chunk)",
                   "recall@10(level=doc)", "mrr(level=chunk)", "mrr(level=doc)",
                   "ndcg@3(level=chunk)", "ndcg@3(level=doc)"]
    assert [str(m) for m in build_metrics(None, [3], "doc")] == [
        "hit_rate@3(level=doc)", "mrr(level=doc)", "recall@3(level=doc)",
        "precision@3(level=doc)", "ndcg@3(level=doc)", "map(level=doc)"]
    with pytest.raises(UsageError, match="level"):
        build_metrics(None, None, "page")


def test_qrels_run_trec_and_json_agree(tmp_path: Path) -> None:
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    r1 = invoke("--qrels", str(FIX / "qrels.txt"), "--run", str(FIX / "run.txt"), "-k", "1,3",
                "--ties", "trec", "--out", str(out1))
    r2 = invoke("--qrels", str(FIX / "qrels.txt"), "--run", str(FIX / "run.json"), "-k", "1,3",
                "--ties", "trec", "--out", str(out2))
    assert r1.exit_code == 0, r1.output
    assert r2.exit_code == 0, r2.output
    a = EvalResult.from_dict(json.loads(out1.read_text()))
    b = EvalResult.from_dict(json.loads(out2.read_text()))
    assert a.means() == b.means()
    # q1: relevant at ranks 1 and 3 of 3; q2: tie at 0.5 → trec puts gk-196#1 first
    assert a["mrr"].by_id() == {"q1": 1.0, "q2": 1.0}
    assert a["recall@1"].by_id() == {"q1": 0.5, "q2": 1.0}
    assert "no_relevant=1" in r1.output and "not_in_qrels=1" in r1.output
    assert "ties:trec" in r1.output and "95% CI" in r1.output


def test_stable_ties_differ(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = invoke("--qrels", str(FIX / "qrels.txt"), "--run", str(FIX / "run.txt"),
               "--metrics", "mrr", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert EvalResult.from_dict(json.loads(out.read_text()))["mrr"].by_id()["q2"] == 0.5


def test_evalset_both_levels_csv_and_by_query(tmp_path: Path) -> None:
    out, per_query = tmp_path / "r.json", tmp_path / "q.csv"
    r = invoke("--evalset", str(FIX / "evalset.jsonl"), "-k", "1,3", "--level", "both",
               "--by-query", "--score-threshold", "0.5", "--out", str(out), "--csv", str(per_query))
    assert r.exit_code == 0, r.output
    res = EvalResult.from_dict(json.loads(out.read_text()))
    assert "hit_rate@1(level=doc)" in res.results and "negative_top_score" in res.results
    assert "negative_false_retrieval(threshold=0.5)" in res.results
    rows = list(csv.DictReader(per_query.open(encoding="utf-8")))
    assert [row["query"] for row in rows][:4] == ["q1", "q2", "q6", "q3"]
    q3 = next(row for row in rows if row["query"] == "q3")
    assert q3["hit_rate@1(level=chunk)"] == "" and q3["mrr(level=doc)"] == "0.5"
    assert "per query" in r.output and "missing_field:gold_chunk_ids" in r.output


def test_evalset_with_separate_run(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"q1": {"gk-572#0": 0.2, "zz#0": 0.9}, "q2": {"gk-196#1": 1.0}}))
    out = tmp_path / "r.json"
    r = invoke("--evalset", str(FIX / "evalset.jsonl"), "--run", str(run), "--metrics", "mrr",
               "--out", str(out))
    assert r.exit_code == 0, r.output
    res = EvalResult.from_dict(json.loads(out.read_text()))
    assert res["mrr"].by_id() == {"q1": 0.5, "q2": 1.0, "q6": 0.0, "q3": None}
    assert res.name == "run"


def test_text_match_samples() -> None:
    r = invoke("--samples", str(FIX / "text_samples.jsonl"), "--match", "text",
               "--metrics", "precision@10,recall@10")
    assert r.exit_code == 0, r.output
    assert "0.3000" in r.output and "1.0000" in r.output


def test_skip_invalid_reports_and_counts(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = invoke("--samples", str(FIX / "bad_samples.jsonl"), "--skip-invalid", "-k", "1",
               "--metrics", "doc_hit", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "skipped 6 invalid record(s)" in r.output
    res = EvalResult.from_dict(json.loads(out.read_text()))
    assert res["doc_hit@1"].counts["skipped_invalid"] == 6
    assert res["doc_hit@1"].by_id() == {"a": 1.0, "g": 0.0}


def test_bad_input_raises_data_error() -> None:
    r = invoke("--samples", str(FIX / "bad_samples.jsonl"))
    assert isinstance(r.exception, DataError)
    r = invoke("--qrels", str(FIX / "qrels.txt"))
    assert isinstance(r.exception, UsageError)


def test_entry_point_exit_code_and_message() -> None:
    proc = subprocess.run([sys.executable, "-m", "ragmeter", "score", "retrieval", "--evalset",
                           str(FIX / "bad_samples.jsonl")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert "bad_samples.jsonl:2 field 'gold_doc_ids'" in proc.stderr


def test_render_comparison_marks_regressions() -> None:
    from rich.console import Console

    from ragmeter.reports.console import render_comparison
    from ragmeter.results.records import compare_results
    from ragmeter.retrieval.evaluate import evaluate_retrieval

    qrels = {f"q{i}": {"a": 1} for i in range(40)}
    good = {q: {"a": 1.0, "b": 0.5} for q in qrels}
    bad = {q: {"b": 1.0, "a": 0.5} for q in qrels}
    a = evaluate_retrieval(qrels=qrels, run=good, metrics=["mrr", "hit_rate@2"], name="good")
    b = evaluate_retrieval(qrels=qrels, run=bad, metrics=["mrr", "hit_rate@2"], name="bad")
    console = Console(record=True, width=140)
    render_comparison(compare_results(a, b, n_resamples=500), console, name_a="good", name_b="bad")
    text = console.export_text()
    mrr_line = next(line for line in text.splitlines() if line.lstrip("│ ").startswith("mrr"))
    assert "-0.5000" in mrr_line and "regression" in mrr_line
    hit_line = next(line for line in text.splitlines() if "hit_rate@2" in line)
    assert "+0.0000" in hit_line and "regression" not in hit_line
    assert "resamples=500" in text


def test_doc_map_option(tmp_path: Path) -> None:
    qrels, run, mapping, out = (tmp_path / n for n in ("q.txt", "r.txt", "m.json", "o.json"))
    qrels.write_text("q1 0 law-1 1\n")
    run.write_text("q1 Q0 c17 1 0.9 t\nq1 Q0 c42 2 0.8 t\n")
    mapping.write_text(json.dumps({"c17": "law-9", "c42": "law-1"}))
    r = invoke("--qrels", str(qrels), "--run", str(run), "--metrics", "doc_mrr",
               "--doc-map", str(mapping), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert EvalResult.from_dict(json.loads(out.read_text()))["doc_mrr"].by_id() == {"q1": 0.5}
    mapping.write_text("[1, 2]")
    r = invoke("--qrels", str(qrels), "--run", str(run), "--doc-map", str(mapping))
    assert isinstance(r.exception, DataError)
