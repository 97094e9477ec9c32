"""``ragmeter score retrieval --out/--csv/--by-query`` stream the per-query records: the written
documents equal ``to_json`` / the per-query table, without building them whole in memory."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.cli import app as cli
from ragmeter.reports.console import per_query_rows
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.streaming import write_per_query_csv, write_result_json


def _result() -> EvalResult:
    res = EvalResult("sys", meta={"tier": "retrieval", "note": "ключ"})
    sig = Signature.make(metric="m")
    res.add(MetricResult("a", ["q1", "q2", 'q"3'], np.array([0.5, np.nan, 1 / 3]), sig,
                         reasons={1: "missing_field:gold_chunk_ids"}))
    res.add(MetricResult("b", ["q2", "q4"], np.array([1.0, 0.0]), sig,
                         details=[{"x": 1}, None]))
    return res


def test_streamed_json_equals_to_json() -> None:
    res = _result()
    buf = io.StringIO()
    write_result_json(res, buf)
    assert json.loads(buf.getvalue()) == json.loads(res.to_json())


def test_streamed_csv_equals_per_query_rows() -> None:
    res = _result()
    buf = io.StringIO()
    write_per_query_csv(res, buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    want = per_query_rows(res)
    assert [r["query"] for r in rows] == [w["query"] for w in want]
    for got, exp in zip(rows, want, strict=True):
        for key in ("a", "b"):
            v = exp.get(key)
            assert got[key] == ("" if v is None else repr(v))


def test_out_csv_by_query_never_build_the_whole_document(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the whole document was built in memory")

    monkeypatch.setattr(EvalResult, "to_json", refuse)
    monkeypatch.setattr(MetricResult, "to_dict", refuse)
    monkeypatch.setattr("ragmeter.reports.console.per_query_rows", lambda r: refuse()
                        if sum(len(m.sample_ids) for m in r) > 1000 else per_query_rows(r))
    path = tmp_path / "e.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(600):
            fh.write(json.dumps({"id": f"q{i}", "question": "q?", "gold_doc_ids": ["d1"],
                                 "gold_chunk_ids": ["d1#0"],
                                 "retrieved_ids": ["d1#0" if i % 2 else "d2#0"]}) + "\n")
    out, qcsv = tmp_path / "r.json", tmp_path / "q.csv"
    code = cli.run(["score", "retrieval", "--evalset", str(path), "--metrics", "hit_rate@1,mrr",
                    "--out", str(out), "--csv", str(qcsv), "--by-query"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "400 more queries" in printed
    monkeypatch.undo()
    back = EvalResult.from_dict(json.loads(out.read_text(encoding="utf-8")))
    assert back["hit_rate@1"].aggregate.n == 600
    assert back["hit_rate@1"].values[:2].tolist() == [0.0, 1.0]
    assert len(list(csv.DictReader(qcsv.open(encoding="utf-8")))) == 600
