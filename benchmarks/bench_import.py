"""Trace import at scale: CPU seconds, peak RSS and output size of ``ragmeter traces import``.

Generates its own files (nothing downloaded):

- OTLP JSON, one document on one line (``json.dump`` of ``{"resourceSpans": [...]}``), N spans:
  requests of 4 spans (root, retrieval with 5 documents, model call, tool), traces interleaved;
- Phoenix span JSON Lines, N spans of the same requests, flattened OpenInference attributes;
- one conversation of T turns (OTLP JSON Lines), to show the output growing linearly.

Each import runs ``python -m ragmeter.cli.app import`` in a child process; its CPU time and
peak RSS come from ``resource.getrusage(RUSAGE_CHILDREN)`` (ru_maxrss), so the figures are the
import's own, not this script's.

    python benchmarks/bench_import.py --spans 1000000 --turns 4000 --workdir /tmp/bench-import
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

T0 = 1_767_258_000_000_000_000
SPANS_PER_REQUEST = 4


def _attr(key: str, value: object) -> dict[str, object]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _request_spans(i: int, rng: random.Random) -> list[dict[str, object]]:
    trace = f"{i:032x}"
    t = T0 + i * 1_000_000_000
    docs = [{"id": f"doc-{rng.randrange(100000)}", "content": f"passage {i}-{k} " * 8,
             "score": round(1 - k * 0.1, 3)} for k in range(5)]
    root = {"traceId": trace, "spanId": f"{i:012x}0001", "name": "rag_request",
            "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 900_000_000),
            "attributes": [_attr("input.value", f"question number {i} about the archive?"),
                           _attr("output.value", f"answer number {i}."),
                           _attr("session.id", f"s-{i % 5000}")]}
    retrieval = {"traceId": trace, "spanId": f"{i:012x}0002", "parentSpanId": root["spanId"],
                 "name": "retrieve", "startTimeUnixNano": str(t + 10_000_000),
                 "endTimeUnixNano": str(t + 90_000_000),
                 "attributes": [_attr("gen_ai.operation.name", "retrieval"),
                                _attr("gen_ai.retrieval.query.text", f"question {i}"),
                                _attr("gen_ai.retrieval.documents", json.dumps(docs))]}
    llm = {"traceId": trace, "spanId": f"{i:012x}0003", "parentSpanId": root["spanId"],
           "name": "chat", "startTimeUnixNano": str(t + 100_000_000),
           "endTimeUnixNano": str(t + 850_000_000),
           "attributes": [_attr("gen_ai.operation.name", "chat"),
                          _attr("gen_ai.request.model", "gpt-4o-mini"),
                          _attr("gen_ai.usage.input_tokens", 900),
                          _attr("gen_ai.usage.output_tokens", 40)],
           "status": {"code": 1}}
    tool = {"traceId": trace, "spanId": f"{i:012x}0004", "parentSpanId": root["spanId"],
            "name": "format", "startTimeUnixNano": str(t + 860_000_000),
            "endTimeUnixNano": str(t + 880_000_000), "attributes": []}
    return [root, retrieval, llm, tool]


def _interleaved(n_spans: int, seed: int = 7):  # type: ignore[no-untyped-def]
    """Spans of consecutive requests interleaved in windows of 8 requests."""
    rng = random.Random(seed)
    n_req = n_spans // SPANS_PER_REQUEST
    for base in range(0, n_req, 8):
        window = [s for i in range(base, min(base + 8, n_req)) for s in _request_spans(i, rng)]
        rng.shuffle(window)
        yield from window


def write_otlp(path: Path, n_spans: int) -> None:
    """One OTLP JSON document on one line, its spans written as they are generated."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", '
                 '"value": {"stringValue": "bench"}}]}, "scopeSpans": [{"scope": {"name": '
                 '"bench"}, "spans": [')
        for k, span in enumerate(_interleaved(n_spans)):
            fh.write(("," if k else "") + json.dumps(span, ensure_ascii=False))
        fh.write("]}]}]}")


def _phoenix(span: dict[str, object]) -> dict[str, object]:
    attrs = {a["key"]: next(iter(a["value"].values()))  # type: ignore[index]
             for a in span["attributes"]}  # type: ignore[union-attr]
    out_attrs: dict[str, object] = {}
    kind = "CHAIN"
    for k, v in attrs.items():
        if k == "gen_ai.retrieval.documents":
            kind = "RETRIEVER"
            for n, d in enumerate(json.loads(str(v))):
                for f in ("id", "content", "score"):
                    out_attrs[f"retrieval.documents.{n}.document.{f}"] = d[f]
        elif k == "gen_ai.request.model":
            kind = "LLM"
            out_attrs["llm.model_name"] = v
        elif k == "gen_ai.usage.input_tokens":
            out_attrs["llm.token_count.prompt"] = int(str(v))
        elif k == "gen_ai.usage.output_tokens":
            out_attrs["llm.token_count.completion"] = int(str(v))
        elif k in ("input.value", "output.value", "session.id"):
            out_attrs[k] = v
    return {"name": span["name"], "span_kind": kind,
            "parent_id": span.get("parentSpanId"),
            "start_time": int(str(span["startTimeUnixNano"])) / 1e9,
            "end_time": int(str(span["endTimeUnixNano"])) / 1e9,
            "status_code": "OK",
            "context": {"trace_id": span["traceId"], "span_id": span["spanId"]},
            "attributes": out_attrs}


def write_phoenix(path: Path, n_spans: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for span in _interleaved(n_spans):
            fh.write(json.dumps(_phoenix(span), ensure_ascii=False) + "\n")


def write_session(path: Path, turns: int) -> None:
    """One conversation of ``turns`` requests (OTLP JSON Lines, one request a line)."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(turns):
            t = T0 + i * 60_000_000_000
            root = {"traceId": f"c{i:031x}", "spanId": f"{i:012x}0001", "name": "turn",
                    "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 500_000_000),
                    "attributes": [_attr("input.value", f"turn {i}: and what about item {i}? "
                                                        + "context " * 40),
                                   _attr("output.value", f"item {i} is fine. " + "detail " * 40),
                                   _attr("session.id", "s-long")]}
            doc = {"resourceSpans": [{"scopeSpans": [{"spans": [root]}]}]}
            fh.write(json.dumps(doc) + "\n")


def run_import(src: Path, out: Path, fmt: str) -> dict[str, float]:
    """``ragmeter traces import`` in a child; its own CPU seconds and peak RSS (``os.wait4`` gives the
    rusage of that child alone) and the output's size."""
    t = time.perf_counter()
    err = out.with_suffix(".stderr")
    with err.open("w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "ragmeter.cli.app", "traces", "import",
                                 str(src),
                                 "--format", fmt, "--out", str(out)], stdout=fh, stderr=fh,
                                env={**os.environ, "PYTHONPATH": str(
                                    Path(__file__).resolve().parents[1] / "src")})
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import of {src} failed:\n{err.read_text()[-2000:]}")
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "wall_s": round(wall, 1),
            "input_mb": round(src.stat().st_size / 2**20, 1),
            "output_mb": round(out.stat().st_size / 2**20, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--turns", type=int, default=4000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/ragmeter-bench-import"))
    ap.add_argument("--only", choices=("otlp", "phoenix", "session"), action="append")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    only = set(args.only or ("otlp", "phoenix", "session"))
    rows = []
    if "otlp" in only:
        src = args.workdir / f"otlp_{args.spans}.json"
        if not src.exists():
            write_otlp(src, args.spans)
        rows.append((f"OTLP JSON, one document, {args.spans:,} spans",
                     run_import(src, args.workdir / "otlp.samples.jsonl", "otlp")))
    if "phoenix" in only:
        src = args.workdir / f"phoenix_{args.spans}.jsonl"
        if not src.exists():
            write_phoenix(src, args.spans)
        rows.append((f"Phoenix JSON Lines, {args.spans:,} spans",
                     run_import(src, args.workdir / "phoenix.samples.jsonl", "phoenix")))
    if "session" in only:
        for turns in (args.turns // 4, args.turns):
            src = args.workdir / f"session_{turns}.jsonl"
            write_session(src, turns)
            rows.append((f"one session of {turns:,} turns",
                         run_import(src, args.workdir / f"session_{turns}.samples.jsonl",
                                    "otlp")))
    print(f"{'input':44} {'in MB':>8} {'out MB':>8} {'CPU s':>7} {'peak RSS MB':>12}")
    for name, r in rows:
        print(f"{name:44} {r['input_mb']:8.1f} {r['output_mb']:8.2f} {r['cpu_s']:7.1f} "
              f"{r['peak_rss_mb']:12.1f}")
    print(json.dumps(dict(rows), indent=1))


if __name__ == "__main__":
    main()
