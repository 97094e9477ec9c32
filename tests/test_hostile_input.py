"""Hostile input stays bounded: YAML alias bombs, regex backtracking, huge grades; generation
results are written batch by batch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ragmeter.data.trec import load_qrels
from ragmeter.errors import ConfigError, DataError, read_yaml_file
from ragmeter.metrics.registry import parse_metric
from ragmeter.metrics.registry import parse_metrics as expand_metrics
from ragmeter.retrieval.evaluate import evaluate_retrieval

BOMB = """a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.timeout(20)
def test_yaml_alias_bomb_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(ConfigError, match=r"bomb\.yaml expands to more than 1,000,000 nodes"):
        read_yaml_file(path)


@pytest.mark.timeout(20)
def test_yaml_recursive_alias_and_deep_nesting_are_refused(tmp_path):
    rec = tmp_path / "rec.yaml"
    rec.write_text("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="recursive alias"):
        read_yaml_file(rec)
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 300 + "]" * 300 + "\n")
    with pytest.raises(ConfigError, match="deeper than 200"):
        read_yaml_file(deep)


def test_yaml_with_ordinary_aliases_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {model: m, timeout: 5}\njudges:\n  - *b\n  - {<<: *b, model: n}\n")
    data = read_yaml_file(path)
    assert data["judges"][1] == {"model": "n", "timeout": 5}


@pytest.mark.timeout(20)
def test_metric_name_regexes_are_linear():
    hostile = "ndcg@1" + " " * 200_000 + "!"
    with pytest.raises(Exception):  # noqa: B017 - any parse error, but quickly
        parse_metric(hostile)
    with pytest.raises(Exception):  # noqa: B017
        expand_metrics(["ndcg@1,2" + " " * 200_000 + "!"])
    assert [str(m) for m in expand_metrics(["ndcg@5,10 "])] == ["ndcg@5", "ndcg@10"]


def test_qrels_grades_beyond_int32_name_line_and_field(tmp_path):
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 2147483648\nq1 0 d3 99999999999999999999\n")
    with pytest.raises(DataError) as err:
        load_qrels(trec)
    text = str(err.value)
    assert f"{trec}:2 field 'rel': grade 2147483648 is out of range" in text
    assert f"{trec}:3 field 'rel'" in text
    js = tmp_path / "qrels.json"
    js.write_text(json.dumps({"q1": {"d1": 2**63}}))
    with pytest.raises(DataError, match=r"field 'q1/d1': query 'q1', doc 'd1': grade"):
        load_qrels(js)


def test_grades_beyond_int32_never_wrap_in_metrics():
    run = {"q1": {"d1": 0.9, "d2": 0.5}}
    ok = evaluate_retrieval(qrels={"q1": {"d1": 1, "d2": 2**31 - 1}}, run=run, metrics=["ndcg"])
    assert 0 < ok["ndcg"].values[0] < 1  # the big grade ranked second: below 1, not wrapped
    for g in (2**31, 2**63):
        with pytest.raises(DataError, match="query 'q1', doc 'd2'"):
            evaluate_retrieval(qrels={"q1": {"d1": 1, "d2": g}}, run=run, metrics=["ndcg"])


def test_sample_gold_grades_beyond_int32_are_a_record_problem(tmp_path):
    from ragmeter.data.loaders import load_samples

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "a", "gold_chunk_ids": ["c"], "gold_grades": {"c": 2**40}})
                    + "\n")
    with pytest.raises(DataError, match=r":1 field 'gold_grades': doc 'c': grade 1099511627776"):
        load_samples(path)


def test_generation_out_is_written_batch_by_batch(tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
    from fake_judge import make_script

    from ragmeter.cli.app import app
    from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

    script = make_script()
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    data = tmp_path / "s.jsonl"
    rows = [{"id": str(i), "user_input": f"Где город {i}?", "response": f"Город {i} во Франции.",
             "reference": "Город во Франции.", "retrieved_contexts": [f"Город {i} во Франции."]}
            for i in range(5)]
    rows[3].pop("retrieved_contexts")
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    results = {}
    for batch in ("2", "100"):
        out = tmp_path / f"res{batch}.json"
        with MockJudgeServer(MockConfig(reply_fn=lambda body, schema: script(
                SimpleNamespace(schema=schema, messages=body["messages"])))) as srv:
            res = CliRunner().invoke(app, [
                "score", "generation", "--samples", str(data), "--metrics", "rouge_1,faithfulness",
                "--judge-url", srv.base_url, "--judge-model", "m", "--judge-key-env", "",
                "--out", str(out), "--batch-size", batch])
        assert res.exit_code == 0, res.output
        lines = [json.loads(x) for x in (tmp_path / f"res{batch}.samples.jsonl").read_text(
            "utf-8").splitlines()]
        assert [x["id"] for x in lines] == ["0", "1", "2", "3", "4"]
        assert lines[3]["unscored"]["faithfulness"].startswith("missing_field")
        saved = json.loads(out.read_text("utf-8"))
        for r in saved["results"].values():
            r.pop("timings_s", None)
        saved["meta"].pop("timings_s", None)
        results[batch] = saved
    assert results["2"]["results"] == results["100"]["results"]
    assert results["2"]["meta"]["judge_calls"]["total"] == \
        results["100"]["meta"]["judge_calls"]["total"]
