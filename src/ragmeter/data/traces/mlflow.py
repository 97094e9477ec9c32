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

from ragmeter.data.traces.spans import (
    BadValue,
    Doc,
    Problems,
    Span,
    count,
    docs_of,
    ident,
    iso_ns,
    text_of,
)

_SESSION = ("mlflow.trace.session", "session_id", "mlflow.trace.user_session")
_USER = ("mlflow.trace.user", "user_id")
LOOKED_FOR = {
    "user_input": "the root span's inputs (mlflow.spanInputs)",
    "response": "the root span's outputs (mlflow.spanOutputs)",
    "retrieved_ids": "RETRIEVER spans' outputs[].id / metadata.doc_uri / metadata.chunk_id",
    "retrieved_contexts": "RETRIEVER spans' outputs[].page_content",
    "retrieved_scores": "RETRIEVER spans' outputs[].score / metadata.score",
    "latency_ms": "start_time / end_time (start_time_unix_nano / end_time_unix_nano)",
    "model": "model among an LLM/CHAT_MODEL span's inputs",
    "session_id": "mlflow.trace.session (trace metadata or tags)",
    "user_id": "mlflow.trace.user (trace metadata or tags)",
    "tokens": "mlflow.chat.tokenUsage (span), mlflow.trace.tokenUsage (trace metadata)",
    "error": "span status / status_code, info.state / info.status",
}


def _cell(value: Any) -> Any:
    """MLflow 2 writes every span attribute JSON-encoded (``"\"RETRIEVER\""``)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _docs(outputs: Any, fld: str) -> list[Doc] | None:
    return docs_of(outputs, fld)


def _usage(value: Any, fld: str) -> dict[str, int | None]:
    u = _cell(value)
    out: dict[str, int | None] = {"tokens_in": None, "tokens_out": None, "tokens_total": None}
    if u in (None, "", {}):
        return out
    if not isinstance(u, Mapping):
        raise BadValue(fld, "expected {input_tokens, output_tokens, total_tokens}")
    for k, name in (("tokens_in", "input_tokens"), ("tokens_out", "output_tokens"),
                    ("tokens_total", "total_tokens")):
        out[k] = count(u.get(name), f"{fld}.{name}")
    return out


def _status(raw: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    status = raw.get("status")
    code = status.get("code") if isinstance(status, Mapping) else raw.get("status_code")
    if code is None:
        return None, None
    if not isinstance(code, str):
        raise BadValue("status.code", "expected OK, ERROR or UNSET")
    err_type = None
    for ev in raw.get("events") or []:
        if isinstance(ev, Mapping) and ev.get("name") == "exception" and isinstance(
                ev.get("attributes"), Mapping):
            t = ev["attributes"].get("exception.type")
            err_type = t if isinstance(t, str) else err_type
    if code.upper().removeprefix("STATUS_CODE_") == "ERROR":
        return True, err_type
    return False, None


def _span(raw: Mapping[str, Any], trace_id: str, who: tuple[str | None, str | None],
          line: int | None, where: str, problems: Problems) -> Span | None:
    ctx: Mapping[str, Any] = raw["context"] if isinstance(raw.get("context"), Mapping) else {}
    span_id = ctx.get("span_id") or raw.get("span_id")
    if not span_id:
        problems.add(line, f"{where}.span_id", "missing", trace_id)
        return None
    try:
        return _read_span(raw, str(span_id), trace_id, who, line, where)
    except BadValue as exc:
        problems.add(line, f"{where}.{exc.field}", exc.message, trace_id)
        return None


def _read_span(raw: Mapping[str, Any], span_id: str, trace_id: str,
               who: tuple[str | None, str | None], line: int | None, where: str) -> Span:
    attrs = raw.get("attributes")
    if attrs is None:
        attrs = {}
    if not isinstance(attrs, Mapping):
        raise BadValue("attributes", "expected an object")
    typ = _cell(attrs.get("mlflow.spanType")) or raw.get("span_type") or ""
    if not isinstance(typ, str):
        raise BadValue("attributes.mlflow.spanType", "expected text (LLM, RETRIEVER...)")
    typ = typ.upper()
    inputs = _cell(attrs.get("mlflow.spanInputs", raw.get("inputs")))
    outputs = _cell(attrs.get("mlflow.spanOutputs", raw.get("outputs")))
    kind = {"RETRIEVER": "retrieval", "LLM": "llm", "CHAT_MODEL": "llm"}.get(typ, "other")
    docs: list[Doc] = []
    if kind == "retrieval" and outputs is not None:
        found = _docs(outputs, "attributes.mlflow.spanOutputs")
        if found is None:
            raise BadValue("attributes.mlflow.spanOutputs",
                           "a RETRIEVER span's outputs must be a list of documents")
        docs = found
    start = raw.get("start_time", raw.get("start_time_unix_nano"))
    end = raw.get("end_time", raw.get("end_time_unix_nano"))
    model = inputs.get("model") if isinstance(inputs, Mapping) else None
    if model is not None and not isinstance(model, str):
        raise BadValue("attributes.mlflow.spanInputs.model", "expected text")
    parent = raw.get("parent_id") or raw.get("parent_span_id") or None
    error, error_type = _status(raw)
    field_in = "attributes.mlflow.spanInputs"
    return Span(trace_id=trace_id, span_id=span_id,
                parent_id=ident(parent, "parent_id"), name=str(raw.get("name") or ""),
                kind=kind, start_ns=iso_ns(start, "start_time"), end_ns=iso_ns(end, "end_time"),
                input_text=text_of(inputs, field_in),
                output_text=None if kind == "retrieval" else text_of(
                    outputs, "attributes.mlflow.spanOutputs"),
                model=model or None, docs=docs,
                query=text_of(inputs, field_in) if kind == "retrieval" else None,
                session_id=who[0], user_id=who[1], line=line, error=error,
                error_type=error_type,
                **_usage(attrs.get("mlflow.chat.tokenUsage"),
                         "attributes.mlflow.chat.tokenUsage"))


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
    if not isinstance(trace_id, str):
        problems.add(line, "info.trace_id", "expected an id (text)")
        return []
    data: Mapping[str, Any] = rec["data"] if isinstance(rec.get("data"), Mapping) else {}
    raw_spans = data.get("spans")
    if not isinstance(raw_spans, list):
        problems.add(line, "data.spans", "expected a list of spans", trace_id)
        return []
    meta: dict[str, Any] = {}
    for box in ("tags", "request_metadata", "trace_metadata"):
        value = info.get(box)
        if isinstance(value, Mapping):
            meta.update(value)
        elif value is not None:
            problems.add(line, f"info.{box}", "expected an object", trace_id)
            return []
    try:
        who = (next((ident(meta[k], f"info.trace_metadata.{k}") for k in _SESSION
                     if meta.get(k)), None),
               next((ident(meta[k], f"info.trace_metadata.{k}") for k in _USER
                     if meta.get(k)), None))
        usage = _usage(meta.get("mlflow.trace.tokenUsage"),
                       "info.trace_metadata.mlflow.trace.tokenUsage")
        state = info.get("state", info.get("status"))
        if state is not None and not isinstance(state, str):
            raise BadValue("info.state", "expected OK, ERROR or IN_PROGRESS")
    except BadValue as exc:
        problems.add(line, exc.field, exc.message, trace_id)
        return []
    spans: list[Span] = []
    for i, raw in enumerate(raw_spans):
        if not isinstance(raw, Mapping):
            problems.add(line, f"data.spans[{i}]", "expected a span object", trace_id)
            continue
        span = _span(raw, trace_id, who, line, f"data.spans[{i}]", problems)
        if span is not None:
            spans.append(span)
    roots = [s for s in spans if not s.parent_id]
    if roots:  # what the trace itself says: its token usage and its state
        root = roots[0]
        for k, v in usage.items():
            if getattr(root, k) is None and v is not None:
                setattr(root, k, v)
        if state is not None and root.error is None:
            root.error = state.upper() == "ERROR"
    return spans
