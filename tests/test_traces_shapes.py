"""Trace shapes written from each tool's published schema import every document they carry;
what an import could not read is said (report, warnings, ``--strict``); cut, hostile and
wrongly typed files are one clean error naming the field; ``--skip-invalid`` never imports a
request with a span missing; history is referenced, so a conversation's output grows linearly.

Fixtures under ``fixtures/traces/shapes`` were written by hand from the published schemas
(versions in docs/traces.md); the CLI runs in a child process where exit codes matter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data import load_samples
from ragmeter.data.traces.importing import import_samples

SRC = Path(__file__).resolve().parents[1] / "src"
FIX = Path(__file__).parent / "fixtures" / "traces"
SHAPES = FIX / "shapes"


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "ragmeter.cli.app", "traces", "import", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


# --- every shape, every document ------------------------------------------------------------
#: file, format, then per request: ids, scores, session, user, tokens in/out, error, error type
EXPECTED: dict[str, tuple[str, list[tuple[Any, ...]]]] = {
    "otlp_chroma_events.json": ("otlp", [
        (["kb-12", "kb-40", "kb-03"], None, "conv-1", None, 812, 27, None, None),
        (["kb-40", "kb-12"], None, "conv-1", None, 812, 27, True, "openai.APITimeoutError")]),
    "phoenix_flat.jsonl": ("phoenix", [
        (["faq-renew", "faq-fines"], [0.83, 0.41], "web-77", "reader-9", 640, 12, False, None),
        (["faq-renew"], [0.77], "web-77", "reader-9", None, None, True, "ValueError")]),
    "phoenix_string_docs.jsonl": ("phoenix", [
        (["net-1", "net-2"], [0.9, 0.2], None, None, None, None, False, None)]),
    "langfuse_observations.csv": ("langfuse", [
        (["arch-1", "arch-2"], [0.71, 0.55], "chat-5", "u-31", 410, 6, False, None),
        (["arch-3"], [0.8], "chat-5", "u-31", None, None, True, "RateLimitError: 429")]),
    "mlflow3_traces.jsonl": ("mlflow", [
        (["hist-1", "hist-2"], None, "nb-3", "analyst-4", 300, 9, False, None),
        (["hist-2"], None, "nb-3", "analyst-4", None, None, True,
         "mlflow.exceptions.MlflowException")]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_published_shape_imports_every_document(name: str) -> None:
    fmt, want = EXPECTED[name]
    samples = load_samples(SHAPES / name).samples  # the layout is detected
    got = [(s.retrieved_ids, s.retrieved_scores, s.metadata.get("session_id"),
            s.metadata.get("user_id"), s.metadata.get("tokens_in"),
            s.metadata.get("tokens_out"), s.metadata.get("error"),
            s.metadata.get("error_type")) for s in samples]
    assert got == want
    assert all(s.retrieved_contexts and len(s.retrieved_contexts) == len(s.retrieved_ids or [])
               for s in samples)
    if want[0][2] is not None:  # a conversation: the second turn's history is the first turn
        assert samples[1].history is not None
        assert samples[1].history[0] == {"role": "user", "content": samples[0].user_input}
    with import_samples(SHAPES / name) as imp:
        assert imp.format == fmt
        assert imp.report is not None
        assert imp.report.documents == sum(len(w[0]) for w in want)


def test_vector_store_distances_are_kept_apart_from_scores() -> None:
    s = load_samples(SHAPES / "otlp_chroma_events.json").samples[0]
    hop = s.metadata["hops"][0]
    assert hop["distances"] == [0.21, 0.35, 0.52] and hop["scores"] == [None, None, None]
    assert s.retrieved_contexts == ["The reading room is on the second floor.",
                                    "Opening hours: 9-18.", "The cafe is in the basement."]


# --- the import report ----------------------------------------------------------------------
def test_import_report_counts_and_field_shares(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    proc = _cli(str(SHAPES / "phoenix_flat.jsonl"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "s.import.json").read_text("utf-8"))["report"]
    assert (report["requests"], report["documents"], report["hops"], report["sessions"]) == (
        2, 3, 2, 1)
    assert report["fields"]["retrieved_scores"] == 1.0
    assert report["fields"]["response"] == 0.5 and report["fields"]["tokens"] == 0.5
    assert "2 request(s), 3 document(s), 2 hop(s), 1 session(s)" in proc.stdout


def _otlp_doc(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}


def _a(key: str, value: Any) -> dict[str, Any]:
    kind = {bool: "boolValue", int: "intValue", float: "doubleValue"}.get(type(value),
                                                                          "stringValue")
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _request(tid: str, *, docs_attr: str = "gen_ai.retrieval.documents",
             answer: Any = "Ten.", score: Any = 0.9) -> list[dict[str, Any]]:
    docs = json.dumps([{"id": "d1", "content": "ten", "score": score}])
    return [
        {"traceId": tid, "spanId": f"{tid}-r", "name": "rag", "startTimeUnixNano": "1000",
         "endTimeUnixNano": "5000", "attributes": [_a("input.value", "How many?"),
                                                   _a("output.value", answer)]},
        {"traceId": tid, "spanId": f"{tid}-s", "parentSpanId": f"{tid}-r", "name": "search",
         "startTimeUnixNano": "2000", "endTimeUnixNano": "3000",
         "attributes": [_a("gen_ai.operation.name", "retrieval"), _a(docs_attr, docs)]}]


def test_retrieval_spans_without_documents_warn_and_strict_exits_3(tmp_path: Path) -> None:
    src = tmp_path / "otel.json"
    src.write_text(json.dumps(_otlp_doc(_request("t1", docs_attr="my.docs")
                                        + _request("t2", docs_attr="my.docs"))), "utf-8")
    out = tmp_path / "s.jsonl"
    proc = _cli(str(src), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "2 retrieval span(s) but no document in any request: looked for " \
           "gen_ai.retrieval.documents" in proc.stdout
    meta = json.loads((tmp_path / "s.import.json").read_text("utf-8"))
    assert any("no document" in w for w in meta["report"]["warnings"])
    strict = _cli(str(src), "--out", str(out), "--strict")
    assert strict.returncode == 3, strict.stderr
    assert "gen_ai.retrieval.documents" in strict.stderr


# --- cut files --------------------------------------------------------------------------------
def test_a_json_file_cut_short_is_one_truncation_error(tmp_path: Path) -> None:
    text = (FIX / "phoenix_spans.json").read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[:int(len(text) * 0.6)])
    for extra in ([], ["--skip-invalid"]):
        proc = _cli(str(cut), "--format", "phoenix", "--out", str(tmp_path / "s.jsonl"),
                    *extra)
        assert proc.returncode == 2, proc.stderr
        assert "1 problem(s)" in proc.stderr
        assert f"truncated at byte {cut.stat().st_size}" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_json_lines_file_cut_inside_its_last_line_is_truncated(tmp_path: Path) -> None:
    text = (SHAPES / "phoenix_flat.jsonl").read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(text[:len(text) - 40])
    proc = _cli(str(cut), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 2 and f"truncated at byte {cut.stat().st_size}" in proc.stderr


def test_a_csv_cut_inside_a_quoted_cell_is_exit_2(tmp_path: Path) -> None:
    text = (FIX / "langfuse_export.csv").read_text("utf-8")
    at = text.index('"{""question"": ""А когда') + 8  # inside the quoted input cell
    cut = tmp_path / "cut.csv"
    cut.write_text(text[:at], "utf-8")
    proc = _cli(str(cut), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2, proc.stdout
    assert "truncated at byte" in proc.stderr and "quoted cell (column 'input')" in proc.stderr
    assert not (tmp_path / "s.jsonl").exists() or '{"q' not in (tmp_path / "s.jsonl").read_text()


# --- wrong types ------------------------------------------------------------------------------
def test_a_non_numeric_score_names_the_field_or_skips_its_request(tmp_path: Path) -> None:
    src = tmp_path / "otel.json"
    src.write_text(json.dumps(_otlp_doc(_request("t1", score="high") + _request("t2"))),
                   "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2
    assert "attributes.gen_ai.retrieval.documents[0].score" in proc.stderr
    assert "expected a number" in proc.stderr
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text("utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["t2"] and rows[0]["retrieved_scores"] == [0.9]
    assert "1 skipped" in proc.stdout


def test_a_wrongly_typed_answer_is_an_error_never_text(tmp_path: Path) -> None:
    src = tmp_path / "otel.json"
    src.write_text(json.dumps(_otlp_doc(_request("t1", answer=True))), "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2
    assert "attributes.output.value" in proc.stderr and "expected text" in proc.stderr
    assert "True" not in (tmp_path / "s.jsonl").read_text() if (
        tmp_path / "s.jsonl").exists() else True


HOSTILE = {
    "attributes_int": ({"attributes": 12345}, "attributes"),
    "int_value_object": ({"attributes": [{"key": "gen_ai.usage.input_tokens",
                                          "value": {"intValue": {}}}]},
                         "attributes.gen_ai.usage.input_tokens"),
    "kvlist_text": ({"attributes": [{"key": "x", "value": {"kvlistValue": "x"}}]},
                    "attributes.x"),
    "int_value_digits": ({"attributes": [{"key": "n", "value": {"intValue": "9" * 5000}}]},
                         "attributes.n"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_otlp_values_are_clean_errors(case: str, tmp_path: Path) -> None:
    patch, fld = HOSTILE[case]
    spans = _request("t1")
    spans[1].update(patch)
    src = tmp_path / "otel.json"
    src.write_text(json.dumps(_otlp_doc(spans)), "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr.lower()
    assert f"spans[1].{fld}'" in proc.stderr


def test_a_number_of_5000_digits_and_a_time_of_minus_1e308_are_clean_errors(
        tmp_path: Path) -> None:
    spans = _request("t1")
    text = json.dumps(_otlp_doc(spans)).replace('"endTimeUnixNano": "3000"',
                                               '"endTimeUnixNano": ' + "7" * 5000)
    src = tmp_path / "otel.json"
    src.write_text(text, "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "spans[1].endTimeUnixNano" in proc.stderr
    trace = json.loads((SHAPES / "mlflow3_traces.jsonl").read_text("utf-8").splitlines()[0])
    trace["data"]["spans"][1]["end_time_unix_nano"] = -1e308
    src = tmp_path / "mlflow.json"
    src.write_text(json.dumps(trace), "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "data.spans[1].end_time" in proc.stderr


# --- --skip-invalid never imports a request with a span missing -------------------------------
def test_a_span_without_its_trace_id_takes_its_request_with_it(tmp_path: Path) -> None:
    spans = _request("t1") + _request("t2")
    del spans[1]["traceId"]  # t1's retrieval: tied to t1 by its parentSpanId
    src = tmp_path / "otel.jsonl"
    src.write_text(json.dumps(_otlp_doc(spans)) + "\n", "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    ids = [json.loads(x)["id"] for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert ids == ["t2"]


def test_a_request_whose_root_lost_its_trace_id_is_left_out(tmp_path: Path) -> None:
    spans = _request("t1") + _request("t2")
    del spans[0]["traceId"]  # t1's root: its child points at it
    src = tmp_path / "otel.json"
    src.write_text(json.dumps(_otlp_doc(spans), indent=1), "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    ids = [json.loads(x)["id"] for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert ids == ["t2"]


def test_an_unreadable_span_naming_no_trace_stops_the_import(tmp_path: Path) -> None:
    lines = (SHAPES / "phoenix_flat.jsonl").read_text("utf-8").splitlines()
    broken = lines[:]
    broken[1] = broken[1].replace('"RETRIEVER"', "RETRIEVER", 1)  # invalid JSON; its trace
    assert broken[1] != lines[1] and "5b8aa5a2d2c872e8321cf37308d69df2" in broken[1]  # id kept
    src = tmp_path / "p.jsonl"
    src.write_text("\n".join(broken) + "\n", "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    ids = [json.loads(x)["id"] for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert ids == ["6c9bb6b3e3d983f9432d048419e7ae03"]  # the first request lost a span
    broken[1] = '{"name": "retrieve", "span_kind": "RETRIEVER", oops}'
    src.write_text("\n".join(broken) + "\n", "utf-8")
    proc = _cli(str(src), "--out", str(tmp_path / "s.jsonl"), "--skip-invalid")
    assert proc.returncode == 2 and "name no trace" in proc.stderr


# --- bounded memory, linear conversations -----------------------------------------------------
def test_spilling_to_disk_gives_the_same_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.data.traces import store

    def ids(name: str) -> list[Any]:
        with import_samples(FIX / name) as imp:
            return [(s.id, s.retrieved_ids, s.history) for s in imp.iter_samples()]

    names = ["otlp_current.json", "phoenix_spans.json", "langfuse_export.csv"]
    in_memory = [ids(n) for n in names]
    monkeypatch.setattr(store, "MEMORY_SPANS", 2)
    assert [ids(n) for n in names] == in_memory


def _session(path: Path, turns: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(turns):
            root = {"traceId": f"c{i:07d}", "spanId": f"s{i}", "name": "turn",
                    "startTimeUnixNano": str(10**18 + i * 10**9),
                    "endTimeUnixNano": str(10**18 + i * 10**9 + 5),
                    "attributes": [_a("input.value", f"question {i} " + "x" * 200),
                                   _a("output.value", f"answer {i} " + "y" * 200),
                                   _a("session.id", "long")]}
            fh.write(json.dumps(_otlp_doc([root])) + "\n")


def test_a_conversation_is_written_in_linear_size_and_reads_back_whole(tmp_path: Path) -> None:
    sizes = {}
    for turns in (50, 200):
        src = tmp_path / f"s{turns}.jsonl"
        _session(src, turns)
        out = tmp_path / f"out{turns}.jsonl"
        proc = _cli(str(src), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        sizes[turns] = out.stat().st_size
    assert sizes[200] / sizes[50] < 4.5  # linear: 4x the turns, about 4x the bytes
    back = load_samples(tmp_path / "out200.jsonl").samples
    last = back[-1]
    assert last.metadata["turn"] == 199 and len(last.history or []) == 2 * 199
    assert last.history[-2]["content"].startswith("question 198 ")
    assert back[1].history == [{"role": "user", "content": back[0].user_input},
                               {"role": "assistant", "content": back[0].response}]


def test_a_sampled_conversation_keeps_the_turns_left_out_in_its_history(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    _session(src, 30)
    full = load_samples(src).samples
    out = tmp_path / "o.jsonl"
    proc = _cli(str(src), "--out", str(out), "--sample", "5", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    back = load_samples(out).samples
    by_id = {s.id: s for s in full}
    assert len(back) == 5
    for s in back:
        assert s.history == by_id[s.id].history  # the same history as the whole file gives


def test_import_of_60k_spans_stays_under_300_mb(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_import.py"
    proc = subprocess.run([sys.executable, str(bench), "--spans", "60000", "--only", "otlp",
                           "--workdir", str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=900)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout[proc.stdout.index("{"):])
    (row,) = figures.values()
    assert row["output_mb"] > 10  # 15,000 requests were written
    assert row["peak_rss_mb"] < 300, row


def test_loading_a_cut_json_document_directly_is_one_truncation_error(tmp_path: Path) -> None:
    from ragmeter.errors import DataError

    for name in ("otlp_current.json", "phoenix_spans.json"):
        text = (FIX / name).read_bytes()
        cut = tmp_path / name
        cut.write_bytes(text[:int(len(text) * 0.6)])
        with pytest.raises(DataError) as info:
            load_samples(cut)
        assert len(info.value.problems) == 1
        assert f"truncated at byte {cut.stat().st_size}" in info.value.problems[0].message


def test_an_imported_file_imports_again_with_its_history(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    _session(src, 12)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _cli(str(src), "--out", str(first)).returncode == 0
    proc = _cli(str(first), "--out", str(second), "--sample", "4")
    assert proc.returncode == 0, proc.stderr
    whole = {s.id: s.history for s in load_samples(first).samples}
    again = load_samples(second).samples
    assert len(again) == 4 and all(s.history == whole[s.id] for s in again)
