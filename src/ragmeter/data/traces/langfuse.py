"""Langfuse exports (JSON or CSV): traces, with their observations nested or as their own rows.

A trace (``id``, ``name``, ``input``, ``output``, ``sessionId``, ``userId``, ``timestamp``,
optional ``observations``) is the request; an observation (``id``, ``traceId``, ``type``,
``parentObservationId``, ``startTime``, ``endTime``, ``input``, ``output``, ``model``) is one
step: a ``GENERATION`` is a model call, a ``RETRIEVER`` (or a span named ``retriev…`` whose
output is a list of documents) is a retrieval. CSV cells holding JSON are parsed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragmeter.data.traces.spans import Doc, Problems, Span, docs_of, iso_ns, text_of


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _docs(output: Any) -> list[Doc] | None:
    output = _cell(output)
    if isinstance(output, Mapping):
        output = output.get("documents", output.get("docs"))
    return docs_of(output) if isinstance(output, list) and output else None


def _observation(o: Mapping[str, Any], trace_id: str, line: int | None, where: str,
                 problems: Problems) -> Span | None:
    if not o.get("id"):
        problems.add(line, f"{where}.id", "missing (every observation needs an id)", trace_id)
        return None
    typ = str(o.get("type") or "").upper()
    name = str(o.get("name") or "")
    docs = _docs(o.get("output"))
    retrieval = typ == "RETRIEVER" or ("retriev" in name.lower() and docs is not None)
    if typ == "RETRIEVER" and docs is None and o.get("output") not in (None, "", []):
        problems.add(line, f"{where}.output", "a RETRIEVER observation's output must be a list "
                                              "of documents ({id, content, score})", trace_id)
        return None
    kind = "retrieval" if retrieval else "llm" if typ == "GENERATION" else "other"
    start = iso_ns(o.get("startTime"))
    if o.get("startTime") not in (None, "") and start is None:
        problems.add(line, f"{where}.startTime", f"not a time: {o.get('startTime')!r}",
                     trace_id)
        return None
    return Span(trace_id=trace_id, span_id=str(o["id"]),
                parent_id=str(o.get("parentObservationId") or trace_id), name=name, kind=kind,
                start_ns=start, end_ns=iso_ns(o.get("endTime")),
                input_text=text_of(_cell(o.get("input"))),
                output_text=None if retrieval else text_of(_cell(o.get("output"))),
                model=o.get("model") or None, docs=(docs or []) if retrieval else [],
                query=text_of(_cell(o.get("input"))) if retrieval else None, line=line)


def _trace(t: Mapping[str, Any], line: int | None, problems: Problems) -> list[Span]:
    trace_id = str(t["id"])
    start = iso_ns(t.get("timestamp"))
    if t.get("timestamp") not in (None, "") and start is None:
        problems.add(line, "timestamp", f"not a time: {t.get('timestamp')!r}")
        return []
    latency = t.get("latency")
    end = None
    if start is not None and isinstance(latency, (int, float, str)) and str(latency).strip():
        try:
            end = start + int(float(latency) * 1e9)  # Langfuse reports latency in seconds
        except ValueError:
            problems.add(line, "latency", f"not a number: {latency!r}", trace_id)
    spans = [Span(trace_id=trace_id, span_id=trace_id, name=str(t.get("name") or ""),
                  kind="request", start_ns=start, end_ns=end,
                  input_text=text_of(_cell(t.get("input"))),
                  output_text=text_of(_cell(t.get("output"))),
                  session_id=str(t["sessionId"]) if t.get("sessionId") else None,
                  user_id=str(t["userId"]) if t.get("userId") else None, line=line)]
    observations = _cell(t.get("observations"))
    if observations is None:
        return spans
    if not isinstance(observations, list):
        problems.add(line, "observations", "expected a list of observation objects")
        return []
    for i, o in enumerate(observations):
        if isinstance(o, str):  # the API's trace list gives observation ids only
            continue
        if not isinstance(o, Mapping):
            problems.add(line, f"observations[{i}]", "expected an observation object",
                         trace_id)
            continue
        span = _observation(o, trace_id, line, f"observations[{i}]", problems)
        if span is not None:
            spans.append(span)
    return spans


def read_langfuse(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """Spans of one exported trace or observation row."""
    if not isinstance(rec, Mapping):
        problems.add(line, None, "expected a Langfuse trace or observation object")
        return []
    if rec.get("traceId"):
        span = _observation(rec, str(rec["traceId"]), line, "observation", problems)
        return [span] if span is not None else []
    if not rec.get("id"):
        problems.add(line, "id", "missing (a Langfuse trace needs its id; an observation "
                                 "its traceId)")
        return []
    return _trace(rec, line, problems)
