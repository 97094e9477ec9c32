"""Trace exports (OTLP JSON with current and previous GenAI conventions, Langfuse JSON/CSV,
Phoenix JSON/Parquet, MLflow) become samples whose metrics equal the same data given as an
evalset; malformed and partial traces get file/line/field errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.cli import app as cli
from ragmeter.data import load_samples
from ragmeter.data.formats import detect_format
from ragmeter.data.loaders import iter_samples
from ragmeter.data.reading import read_table
from ragmeter.data.sample import Sample
from ragmeter.errors import EXIT_USAGE, DataError

FIX = Path(__file__).parent / "fixtures" / "traces"
EXPORTS = {"otlp_current.json": "otlp", "otlp_previous.jsonl": "otlp",
           "langfuse_traces.json": "langfuse", "langfuse_export.csv": "langfuse",
           "phoenix_spans.json": "phoenix", "mlflow_traces.json": "mlflow"}
RETRIEVAL = ["hit_rate@1(level=doc)", "mrr(level=doc)", "ndcg@10(level=doc)",
             "recall@2(level=doc)"]


def _evalset() -> dict[str, Sample]:
    return {s.user_input or "": s for s in load_samples(FIX / "same_as_evalset.jsonl").samples}


def _with_gold(samples: list[Sample]) -> list[Sample]:
    """The imported samples with the evalset's gold and reference (matched by question)."""
    gold = _evalset()
    for s in samples:
        g = gold[s.user_input or ""]
        s.gold_doc_ids, s.reference = g.gold_doc_ids, g.reference
    return sorted(samples, key=lambda s: s.user_input or "")


def _metric_values(samples: list[Sample]) -> dict[str, list[float]]:
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.retrieval.evaluate import evaluate_retrieval

    out = {m.metric: m.values.tolist() for m in evaluate_retrieval(samples, metrics=RETRIEVAL)}
    gen = evaluate_generation(samples, metrics=["rouge_l", "bleu"])
    out.update({m.metric: m.values.tolist() for m in gen})
    return out


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_export_round_trips_to_the_same_metrics_as_an_evalset(name: str) -> None:
    assert detect_format(read_table(FIX / name).records) == EXPORTS[name]
    imported = _with_gold(load_samples(FIX / name).samples)
    same = sorted(_evalset().values(), key=lambda s: s.user_input or "")
    assert [s.response for s in imported] == [s.response for s in same]
    assert [s.retrieved_ids for s in imported] == [s.retrieved_ids for s in same]
    assert [s.retrieved_contexts for s in imported] == [s.retrieved_contexts for s in same]
    assert [s.retrieved_scores for s in imported] == [s.retrieved_scores for s in same]
    got, want = _metric_values(imported), _metric_values(same)
    assert got.keys() == want.keys() and len(got) == len(RETRIEVAL) + 2
    for metric in want:
        np.testing.assert_allclose(got[metric], want[metric], err_msg=metric)
    assert any(v < 1 for v in want["mrr(level=doc)"])  # the comparison is not all ones


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_requests_carry_latency_model_hops_and_conversations(name: str) -> None:
    by_q = {s.user_input: s for s in load_samples(FIX / name, format=EXPORTS[name]).samples}
    first, second = by_q["Когда начинается зимняя сессия?"], by_q["А когда она заканчивается?"]
    lib = by_q["Where is the library?"]
    assert first.metadata["latency_ms"] == pytest.approx(1250.0)
    assert (first.metadata["model"], lib.metadata["model"]) == ("gpt-4o-mini", "gpt-4o")
    assert [h["ids"] for h in second.metadata["hops"]] == [["d1", "d3"], ["d2", "d1"]]
    assert second.metadata["hops"][1]["query"] == "дата окончания зимней сессии"
    assert second.metadata["hops"][0]["scores"] == [0.8, 0.5]
    assert first.metadata["session_id"] == second.metadata["session_id"] == "s-42"
    assert (first.metadata["turn"], second.metadata["turn"]) == (0, 1)
    assert second.history == [
        {"role": "user", "content": "Когда начинается зимняя сессия?"},
        {"role": "assistant", "content": "Зимняя сессия начинается 9 января."}]
    assert "session_id" not in lib.metadata and "turn" not in lib.metadata


def test_streamed_loading_converts_traces_too() -> None:
    streamed = [s.user_input for s in iter_samples(FIX / "otlp_previous.jsonl")]
    assert streamed == [s.user_input for s in load_samples(FIX / "otlp_previous.jsonl").samples]
    assert len(streamed) == 3


def test_phoenix_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from ragmeter.data.traces.spans import flatten

    rows = [flatten(r) for r in json.loads((FIX / "phoenix_spans.json").read_text("utf-8"))]
    cols = sorted({k for r in rows for k in r})
    for r in rows:  # the data frame's columns: every row has every column
        docs = r.get("attributes.retrieval.documents")
        if docs is not None:
            r["attributes.retrieval.documents"] = [flatten(d) for d in docs]
    table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
    pq.write_table(table, tmp_path / "spans.parquet")
    got = _with_gold(load_samples(tmp_path / "spans.parquet", format="phoenix").samples)
    want = _with_gold(load_samples(FIX / "phoenix_spans.json").samples)
    assert [s.to_dict() for s in got] == [s.to_dict() for s in want]


MALFORMED = {
    "otlp_malformed.jsonl": [
        (1, "resourceSpans[0].scopeSpans[0].spans[1].traceId", "missing"),
        (1, "resourceSpans[0].scopeSpans[0].spans[2].startTimeUnixNano", "integer time"),
        (1, "resourceSpans[0].scopeSpans[0].spans[3].attributes.gen_ai.retrieval.documents",
         "JSON list"),
        (2, "spans", "partial trace"),
        (3, "resourceSpans", "resourceSpans list")],
    "langfuse_malformed.json": [(2, "observations[0].output", "list of documents"),
                                (20, "id", "missing"), (25, "timestamp", "not a time")],
    "phoenix_malformed.json": [(2, "context.span_id", "missing"),
                               (14, "attributes.retrieval.documents", "expected a list")],
    "mlflow_malformed.json": [(2, "data.spans[0].attributes.mlflow.spanOutputs",
                               "list of documents"), (21, "data.spans", "list of spans"),
                              (27, "info.trace_id", "missing")],
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_traces_name_file_line_and_field(name: str) -> None:
    with pytest.raises(DataError) as info:
        load_samples(FIX / name)
    got = [(p.line, p.field) for p in info.value.problems]
    assert got == [(line, fld) for line, fld, _ in MALFORMED[name]]
    for p, (_, _, words) in zip(info.value.problems, MALFORMED[name], strict=True):
        assert p.source.endswith(name) and words in p.message


def test_a_trace_with_a_bad_span_is_skipped_whole() -> None:
    res = load_samples(FIX / "otlp_malformed.jsonl", skip_invalid=True)
    assert [s.id for s in res.samples] == ["aa01"]  # aa03/aa04 had a bad span, aa05 is empty
    assert res.samples[0].user_input == "Где библиотека?"
    assert res.n_skipped == 3  # lines 1 (three spans), 2 and 3


def test_cli_import_writes_samples_and_exits_2_on_bad_traces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "samples.jsonl"
    code = cli.run(["traces", "import", str(FIX / "otlp_current.json"), "--format", "otlp", "--out",
                    str(out), "--gold", str(FIX / "same_as_evalset.jsonl")])
    assert code == 0, capsys.readouterr()
    back = load_samples(out).samples
    assert len(back) == 3 and all(s.gold_doc_ids for s in back)
    meta = json.loads((tmp_path / "samples.import.json").read_text("utf-8"))
    assert meta["format"] == "otlp" and meta["gold"]["matched"] == 3
    capsys.readouterr()
    code = cli.run(["traces", "import", str(FIX / "mlflow_malformed.json"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "mlflow_malformed.json:21 field 'data.spans'" in err
    assert "Traceback" not in err
    code = cli.run(["traces", "import", str(FIX / "otlp_current.json"), "--format", "mlflow",
                    "--out",
                    str(out)])
    assert code == EXIT_USAGE and "--format otlp" in capsys.readouterr().err


def test_cli_import_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["traces", "import", str(FIX / "phoenix_spans.json"), "--out", "-"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3 and all(r["metadata"]["trace_id"] == r["id"] for r in rows)
    assert '"format": "phoenix"' in err
