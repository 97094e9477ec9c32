"""MLflow trace exports: ``Trace.to_dict()`` / ``to_json()`` documents (``{"info": {...},
"data": {"spans": [...]}}``), a list of them or one per line.

Spans in the MLflow 2 shape (``context.span_id``, ``parent_id``, ``start_time`` in ns, JSON
encoded ``attributes["mlflow.spanType"|"mlflow.spanInputs"|"mlflow.spanOutputs"]``) and the
MLflow 3 OpenTelemetry shape (``span_id``, ``parent_span_id``, ``start_time_unix_nano``) are
read; a ``RETRIEVER`` span's outputs are documents (``page_content``, ``id`` or
``metadata.doc_uri``/``chunk_id``, ``score``). Session: ``mlflow.trace.session`` in the trace's
metadata or tags; model: ``model`` among an LLM/CHAT_MODEL span's inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragmeter.data.traces.spans import Doc, Problems, Span, docs_of, iso_ns, text_of

_SESSION = ("mlflow.trace.session", "session_id", "mlflow.trace.user_session")


def _cell(value: Any) -> Any:
    """MLflow 2 writes every span attribute JSON-encoded (``"\"RETRIEVER\""``)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _docs(outputs: Any) -> list[Doc] | None:
    docs = docs_of(outputs, id_keys=("id", "metadata.doc_uri", "metadata.chunk_id",
                                     "metadata.id"),
                   text_keys=("page_content", "content", "text"),
                   score_keys=("score", "metadata.score", "metadata.relevance_score"))
    return docs


def _span(raw: Mapping[str, Any], trace_id: str, session: str | None, line: int | None,
          where: str, problems: Problems) -> Span | None:
    ctx: Mapping[str, Any] = raw["context"] if isinstance(raw.get("context"), Mapping) else {}
    span_id = ctx.get("span_id") or raw.get("span_id")
    if not span_id:
        problems.add(line, f"{where}.span_id", "missing", trace_id)
        return None
    attrs: Mapping[str, Any] = (raw["attributes"] if isinstance(raw.get("attributes"), Mapping)
                                else {})
    typ = str(_cell(attrs.get("mlflow.spanType")) or raw.get("span_type") or "").upper()
    inputs = _cell(attrs.get("mlflow.spanInputs", raw.get("inputs")))
    outputs = _cell(attrs.get("mlflow.spanOutputs", raw.get("outputs")))
    kind = {"RETRIEVER": "retrieval", "LLM": "llm", "CHAT_MODEL": "llm"}.get(typ, "other")
    docs: list[Doc] = []
    if kind == "retrieval" and outputs is not None:
        found = _docs(outputs)
        if found is None:
            problems.add(line, f"{where}.attributes.mlflow.spanOutputs",
                         "a RETRIEVER span's outputs must be a list of documents", trace_id)
            return None
        docs = found
    start = raw.get("start_time", raw.get("start_time_unix_nano"))
    end = raw.get("end_time", raw.get("end_time_unix_nano"))
    model = inputs.get("model") if isinstance(inputs, Mapping) else None
    return Span(trace_id=trace_id, span_id=str(span_id),
                parent_id=raw.get("parent_id") or raw.get("parent_span_id") or None,
                name=str(raw.get("name") or ""), kind=kind, start_ns=iso_ns(start),
                end_ns=iso_ns(end), input_text=text_of(inputs),
                output_text=None if kind == "retrieval" else text_of(outputs),
                model=str(model) if model else None, docs=docs,
                query=text_of(inputs) if kind == "retrieval" else None,
                session_id=session, line=line)


def read_mlflow(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """Spans of one exported MLflow trace."""
    if not isinstance(rec, Mapping) or not isinstance(rec.get("info"), Mapping):
        problems.add(line, "info", "expected an MLflow trace ({info, data: {spans}})")
        return []
    info = rec["info"]
    trace_id = info.get("trace_id") or info.get("request_id")
    if not trace_id:
        problems.add(line, "info.trace_id", "missing")
        return []
    data: Mapping[str, Any] = rec["data"] if isinstance(rec.get("data"), Mapping) else {}
    raw_spans = data.get("spans")
    if not isinstance(raw_spans, list):
        problems.add(line, "data.spans", "expected a list of spans")
        return []
    meta = {**(info.get("tags") or {}), **(info.get("request_metadata") or {}),
            **(info.get("trace_metadata") or {})}
    session = next((str(meta[k]) for k in _SESSION if meta.get(k)), None)
    spans: list[Span] = []
    for i, raw in enumerate(raw_spans):
        if not isinstance(raw, Mapping):
            problems.add(line, f"data.spans[{i}]", "expected a span object", str(trace_id))
            continue
        span = _span(raw, str(trace_id), session, line, f"data.spans[{i}]", problems)
        if span is not None:
            spans.append(span)
    return spans
