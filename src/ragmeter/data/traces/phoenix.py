"""Arize Phoenix span exports: the spans data frame written as JSON records, JSON Lines or
Parquet (dotted columns: ``context.trace_id``, ``attributes.input.value``…), or Phoenix's span
JSON with nested ``context`` / ``attributes`` objects; attributes nested
(``{"retrieval": {"documents": [{"document": {...}}]}}``) or flattened as OpenInference
writes them on the wire (``"retrieval.documents.0.document.id"``) are read alike.

OpenInference attributes: ``span_kind`` / ``openinference.span.kind`` (``RETRIEVER``, ``LLM``,
``CHAIN``…), ``input.value`` / ``output.value``, ``retrieval.documents`` (a list of
``{document.id, document.content, document.score}``, its JSON text, or the flattened
``retrieval.documents.N.document.*`` keys), ``llm.model_name``, ``session.id``, ``user.id``,
``llm.token_count.prompt|completion|total``; times ``start_time`` / ``end_time``; failure
``status_code`` = ``ERROR`` and ``exception`` events (``exception.type``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragmeter.data.traces.spans import (
    BadValue,
    Problems,
    Span,
    count,
    docs_of,
    flatten,
    ident,
    indexed_docs,
    iso_ns,
    text_of,
)

_KINDS = {"RETRIEVER": "retrieval", "LLM": "llm"}
TOKENS = {"tokens_in": "llm.token_count.prompt", "tokens_out": "llm.token_count.completion",
          "tokens_total": "llm.token_count.total"}
LOOKED_FOR = {
    "user_input": "attributes.input.value (root span or LLM span)",
    "response": "attributes.output.value",
    "retrieved_ids": "attributes.retrieval.documents[].document.id or "
                     "attributes.retrieval.documents.N.document.id",
    "retrieved_contexts": "attributes.retrieval.documents[].document.content",
    "retrieved_scores": "attributes.retrieval.documents[].document.score",
    "latency_ms": "start_time / end_time",
    "model": "attributes.llm.model_name",
    "session_id": "attributes.session.id",
    "user_id": "attributes.user.id",
    "tokens": "attributes.llm.token_count.prompt / completion / total",
    "error": "status_code, exception events",
}


def _get(flat: Mapping[str, Any], key: str) -> tuple[str, Any]:
    """``(field name, value)`` of an attribute, with or without the ``attributes.`` prefix."""
    for name in ("attributes." + key, key):
        if flat.get(name) not in (None, ""):
            return name, flat[name]
    return "attributes." + key, None


def _json_cell(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def read_phoenix(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """The span of one Phoenix record."""
    if not isinstance(rec, Mapping):
        problems.add(line, None, "expected a Phoenix span object")
        problems.orphan(line, None, None)
        return []
    flat = flatten(rec)
    trace_id, span_id = flat.get("context.trace_id"), flat.get("context.span_id")
    if not isinstance(trace_id, str) or not trace_id:
        problems.add(line, "context.trace_id", "missing (every span needs its trace and span "
                     "id)" if trace_id in (None, "") else "expected an id (text)")
        problems.orphan(line, flat.get("parent_id"), span_id)
        return []
    if not isinstance(span_id, str) or not span_id:
        problems.add(line, "context.span_id", "missing (every span needs its trace and span "
                     "id)" if span_id in (None, "") else "expected an id (text)", trace_id)
        return []
    try:
        return [_span(flat, trace_id, span_id, line)]
    except BadValue as exc:
        problems.add(line, exc.field, exc.message, trace_id)
        return []


def _span(flat: dict[str, Any], trace_id: str, span_id: str, line: int | None) -> Span:
    kind_name, kind_value = "span_kind", flat.get("span_kind")
    if kind_value in (None, ""):
        kind_name, kind_value = _get(flat, "openinference.span.kind")
    if kind_value is not None and not isinstance(kind_value, str):
        raise BadValue(kind_name, "expected text (LLM, RETRIEVER, CHAIN...)")
    kind = _KINDS.get((kind_value or "").upper(), "other")
    docs_name, raw_docs = _get(flat, "retrieval.documents")
    docs = docs_of(_json_cell(raw_docs), docs_name) if raw_docs is not None else []
    if docs is None:
        raise BadValue(docs_name, "expected a list of {document.id, document.content, "
                                  "document.score}")
    if not docs:
        docs = indexed_docs(flat, "attributes.retrieval.documents")
    start = iso_ns(flat.get("start_time"), "start_time")
    end = iso_ns(flat.get("end_time"), "end_time")
    if docs:
        kind = "retrieval"
    texts = {}
    for key in ("input.value", "output.value"):
        name, value = _get(flat, key)
        texts[key] = text_of(value, name)
    model_name, model = _get(flat, "llm.model_name")
    if model is not None and not isinstance(model, str):
        raise BadValue(model_name, "expected text")
    session = ident(*reversed(_get(flat, "session.id")))
    user = ident(*reversed(_get(flat, "user.id")))
    error, error_type = _status(flat)
    tokens = {}
    for k, attr in TOKENS.items():
        name, value = _get(flat, attr)
        tokens[k] = count(value, name)
    parent = flat.get("parent_id")
    if parent not in (None, "") and not isinstance(parent, str):
        raise BadValue("parent_id", "expected an id (text)")
    span_name = flat.get("name")
    if span_name is not None and not isinstance(span_name, str):
        raise BadValue("name", "expected text")
    return Span(trace_id=trace_id, span_id=span_id, parent_id=parent or None,
                name=span_name or "", kind=kind, start_ns=start, end_ns=end,
                input_text=texts["input.value"],
                output_text=None if kind == "retrieval" else texts["output.value"],
                model=model, docs=docs,
                query=texts["input.value"] if kind == "retrieval" else None,
                session_id=session, user_id=user, line=line, error=error,
                error_type=error_type, **tokens)


def _status(flat: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    code = flat.get("status_code")
    events = _json_cell(flat.get("events"))
    exc_type = None
    if isinstance(events, list):
        for ev in events:
            if isinstance(ev, Mapping) and ev.get("name") == "exception":
                attrs = flatten(ev.get("attributes") or {}) if isinstance(
                    ev.get("attributes"), Mapping) else {}
                exc_type = attrs.get("exception.type") or exc_type
    elif events is not None and events != []:
        raise BadValue("events", "expected a list of events")
    if exc_type is not None and not isinstance(exc_type, str):
        raise BadValue("events.exception.type", "expected text")
    if code is not None and not isinstance(code, str):
        raise BadValue("status_code", "expected OK, ERROR or UNSET")
    if (code or "").upper() == "ERROR" or exc_type:
        return True, exc_type or (flat.get("status_message") or None
                                  if isinstance(flat.get("status_message"), str) else None)
    if (code or "").upper() in ("OK", "UNSET"):
        return False, None
    if code:
        raise BadValue("status_code", f"expected OK, ERROR or UNSET, got {code[:30]!r}")
    return None, None
