"""ragmeter's per-sample scores back into the tools teams watch: OpenTelemetry
``gen_ai.evaluation.result`` events (OTLP JSON log records, parented to the evaluated request's
span) and Langfuse scores (the score API's fields, as JSON or CSV).

Scores come from a result file (``--out`` of any command: every object holding ``metric`` and
``per_sample``); sample ids are mapped to trace and span ids through the imported samples file
(``metadata.trace_id`` / ``span_id``), else the sample id is taken as the trace id. An unscored
sample becomes an event with ``error.type`` = its reason (OTel) and is left out of the Langfuse
scores (Langfuse needs a value), counted in both cases.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem

TARGETS = ("otlp", "langfuse", "langfuse-csv")
LANGFUSE_COLUMNS = ("id", "traceId", "observationId", "name", "value", "dataType", "comment")


@dataclass(frozen=True)
class Score:
    """One sample's value for one metric."""

    metric: str
    sample_id: str
    value: float | None
    reason: str | None
    signature: str


def scores_of(result: Any) -> Iterator[Score]:
    """Every per-sample score in a result document (nested tiers included)."""
    if isinstance(result, Mapping):
        if "metric" in result and isinstance(result.get("per_sample"), list):
            sig = str(result.get("signature") or "")
            for row in result["per_sample"]:
                if isinstance(row, Mapping) and "sample_id" in row:
                    v = row.get("value")
                    yield Score(str(result["metric"]), str(row["sample_id"]),
                                None if v is None else float(v), row.get("reason"), sig)
            return
        for v in result.values():
            yield from scores_of(v)
    elif isinstance(result, list):
        for v in result:
            yield from scores_of(v)


def load_scores(path: str | Path) -> list[Score]:
    """The scores of a result JSON file (a clear error when it holds none)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise DataError(RecordProblem(str(p), None, None, "file not found")) from None
    except ValueError as exc:
        raise DataError(RecordProblem(str(p), None, None, f"not a JSON result: {exc}")) from None
    out = list(scores_of(doc))
    if not out:
        raise DataError(RecordProblem(str(p), None, "per_sample", "no per-sample scores (write "
                                      "the result with --out; per-sample values are kept)"))
    return out


def trace_ids(samples_path: str | Path | None) -> dict[str, tuple[str, str | None]]:
    """``sample id → (trace id, span id)`` from an imported samples file."""
    if samples_path is None:
        return {}
    from ragmeter.data.loaders import load_samples

    out = {}
    for s in load_samples(samples_path).samples:
        tid = s.metadata.get("trace_id")
        if tid:
            out[s.id] = (str(tid), s.metadata.get("span_id"))
    return out


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def to_otlp(scores: list[Score], ids: Mapping[str, tuple[str, str | None]],
            now_ns: int | None = None) -> dict[str, Any]:
    """OTLP JSON logs: one ``gen_ai.evaluation.result`` event per score."""
    now = now_ns if now_ns is not None else time.time_ns()
    records = []
    for s in scores:
        trace, span = ids.get(s.sample_id, (s.sample_id, None))
        attrs = [_attr("gen_ai.evaluation.name", s.metric)]
        if s.value is not None:
            attrs.append(_attr("gen_ai.evaluation.score.value", s.value))
        else:
            attrs.append(_attr("error.type", s.reason or "unscored"))
        attrs += [_attr("ragmeter.sample_id", s.sample_id),
                  _attr("ragmeter.signature", s.signature)]
        rec: dict[str, Any] = {"timeUnixNano": str(now), "observedTimeUnixNano": str(now),
                               "eventName": "gen_ai.evaluation.result",
                               "attributes": attrs, "traceId": trace}
        if span:
            rec["spanId"] = span
        records.append(rec)
    return {"resourceLogs": [{"resource": {"attributes": [_attr("service.name", "ragmeter")]},
                              "scopeLogs": [{"scope": {"name": "ragmeter"},
                                             "logRecords": records}]}]}


def to_langfuse(scores: list[Score], ids: Mapping[str, tuple[str, str | None]]
                ) -> list[dict[str, Any]]:
    """Langfuse score objects (``POST /api/public/scores`` fields) of the scored samples."""
    out = []
    for s in scores:
        if s.value is None:
            continue
        trace, _ = ids.get(s.sample_id, (s.sample_id, None))
        out.append({"id": f"ragmeter-{trace}-{s.metric}", "traceId": trace,
                    "observationId": None, "name": s.metric, "value": s.value,
                    "dataType": "NUMERIC", "comment": s.signature})
    return out


def render(scores: list[Score], target: str, ids: Mapping[str, tuple[str, str | None]]) -> str:
    """The export document for ``target`` (``otlp``, ``langfuse`` JSON, ``langfuse-csv``)."""
    if target == "otlp":
        return json.dumps(to_otlp(scores, ids), ensure_ascii=False, indent=1) + "\n"
    rows = to_langfuse(scores, ids)
    if target == "langfuse":
        return json.dumps(rows, ensure_ascii=False, indent=1) + "\n"
    buf = io.StringIO()
    w = csv.DictWriter(buf, LANGFUSE_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if r[k] is None else r[k] for k in LANGFUSE_COLUMNS})
    return buf.getvalue()
