"""OTLP JSON traces (``{"resourceSpans": [...]}``, one document or one per line as the
OpenTelemetry file exporter writes them) with the GenAI semantic conventions.

Read, current and previous names alike:

- question / answer: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON messages with
  ``parts``); the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events with
  ``gen_ai.prompt`` / ``gen_ai.completion``; ``gen_ai.user.message`` / ``gen_ai.choice`` events;
  the indexed ``gen_ai.prompt.N.content`` / ``gen_ai.completion.N.content`` attributes; the
  OpenInference ``input.value`` / ``output.value``;
- retrieval: ``gen_ai.operation.name`` = ``retrieval`` (or an OpenInference ``RETRIEVER``
  span) with ``gen_ai.retrieval.documents`` (JSON list of ``{id, content, score}``) or the
  indexed ``retrieval.documents.N.document.{id,content,score}``; its query from
  ``gen_ai.retrieval.query.text`` / ``gen_ai.retrieval.query`` / ``input.value``;
- model: ``gen_ai.request.model`` (else ``gen_ai.response.model``, ``llm.model_name``);
- session: ``gen_ai.conversation.id``, ``session.id`` or ``langfuse.session.id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragmeter.data.traces.spans import Doc, Problems, Span, docs_of, number, text_of

_VALUE_KEYS = ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue")
_INDEXED_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content|score)$")
_INDEXED_MSG = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(role|content)$")
SESSION_KEYS = ("gen_ai.conversation.id", "session.id", "langfuse.session.id",
                "gen_ai.session.id")
MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value."""
    if not isinstance(v, Mapping):
        return v
    for k in _VALUE_KEYS:
        if k in v:
            return int(v[k]) if k == "intValue" else v[k]
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    return None


def attributes(items: Any) -> dict[str, Any]:
    """An OTLP attribute list (``[{"key": ..., "value": {...}}]``) as a dict."""
    if isinstance(items, Mapping):  # some exporters write a plain object
        return dict(items)
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, Mapping) and "key" in item:
            out[str(item["key"])] = any_value(item.get("value"))
    return out


def _indexed(attrs: Mapping[str, Any]) -> tuple[list[Doc], dict[str, dict[int, dict[str, Any]]]]:
    docs: dict[int, dict[str, Any]] = {}
    msgs: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for k, v in attrs.items():
        m = _INDEXED_DOC.match(k)
        if m:
            docs.setdefault(int(m.group(1)), {})[m.group(2)] = v
            continue
        m = _INDEXED_MSG.match(k)
        if m:
            msgs[m.group(1)].setdefault(int(m.group(2)), {})[m.group(3)] = v
    out = [Doc(None if d.get("id") is None else str(d["id"]), d.get("content"),
               number(d.get("score"))) for _, d in sorted(docs.items())]
    return out, msgs


def _event_texts(events: Any) -> tuple[str | None, str | None]:
    question = answer = None
    for ev in events or []:
        if not isinstance(ev, Mapping):
            continue
        name = ev.get("name")
        attrs = attributes(ev.get("attributes"))
        if name == "gen_ai.content.prompt":
            question = text_of(attrs.get("gen_ai.prompt"))
        elif name == "gen_ai.content.completion":
            answer = text_of(attrs.get("gen_ai.completion"))
        elif name == "gen_ai.user.message":
            question = text_of(attrs.get("content") or ev.get("body"))
        elif name == "gen_ai.choice":
            answer = text_of(attrs.get("message") or attrs.get("content") or ev.get("body"))
    return question, answer


def _kind(name: str, attrs: Mapping[str, Any], docs: list[Doc]) -> str:
    op = str(attrs.get("gen_ai.operation.name") or "").lower()
    oi = str(attrs.get("openinference.span.kind") or "").upper()
    if op in ("retrieval", "retrieve", "search") or oi == "RETRIEVER" or docs:
        return "retrieval"
    if (op in ("chat", "text_completion", "generate_content", "completion") or oi == "LLM"
            or "gen_ai.system" in attrs or "gen_ai.request.model" in attrs):
        return "llm"
    return "other"


def read_span(raw: Mapping[str, Any], resource: Mapping[str, Any], line: int | None,
              where: str, problems: Problems) -> Span | None:
    """One OTLP span; a missing id or a bad time is a problem naming the span."""
    trace_id, span_id = raw.get("traceId"), raw.get("spanId")
    if not trace_id or not span_id:
        problems.add(line, f"{where}.traceId" if not trace_id else f"{where}.spanId",
                     "missing (every span needs traceId and spanId)",
                     str(trace_id) if trace_id else None)
        return None
    attrs = {**resource, **attributes(raw.get("attributes"))}
    docs = docs_of(attrs.get("gen_ai.retrieval.documents"))
    if attrs.get("gen_ai.retrieval.documents") is not None and docs is None:
        problems.add(line, f"{where}.attributes.gen_ai.retrieval.documents",
                     "expected a JSON list of {id, content, score} objects", str(trace_id))
        return None
    indexed_docs, msgs = _indexed(attrs)
    docs = docs or indexed_docs
    q_event, a_event = _event_texts(raw.get("events"))
    question = (text_of(attrs.get("gen_ai.input.messages")) or q_event
                or _last(msgs["prompt"], "user") or text_of(attrs.get("input.value")))
    answer = (text_of(attrs.get("gen_ai.output.messages")) or a_event
              or _last(msgs["completion"], None) or text_of(attrs.get("output.value")))
    start, end = raw.get("startTimeUnixNano"), raw.get("endTimeUnixNano")
    try:
        start_ns = None if start is None else int(start)
        end_ns = None if end is None else int(end)
    except (TypeError, ValueError):
        problems.add(line, f"{where}.startTimeUnixNano", "expected an integer time in ns",
                     str(trace_id))
        return None
    name = str(raw.get("name") or "")
    kind = _kind(name, attrs, docs)
    query = text_of(attrs.get("gen_ai.retrieval.query.text") or attrs.get(
        "gen_ai.retrieval.query")) if kind == "retrieval" else None
    return Span(
        trace_id=str(trace_id), span_id=str(span_id), parent_id=raw.get("parentSpanId") or None,
        name=name, kind=kind, start_ns=start_ns, end_ns=end_ns, input_text=question,
        output_text=answer if kind != "retrieval" else None,
        model=next((str(attrs[k]) for k in MODEL_KEYS if attrs.get(k)), None), docs=docs,
        query=query, session_id=next((str(attrs[k]) for k in SESSION_KEYS if attrs.get(k)),
                                     None),
        user_id=str(attrs["user.id"]) if attrs.get("user.id") else None, line=line)


def _last(msgs: dict[int, dict[str, Any]], role: str | None) -> str | None:
    items = [m for _, m in sorted(msgs.items()) if role is None or m.get("role") == role]
    return text_of(items[-1].get("content")) if items else None


def read_otlp(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """Spans of one OTLP JSON document."""
    if not isinstance(rec, Mapping) or not isinstance(rec.get("resourceSpans"), list):
        problems.add(line, "resourceSpans", "expected an OTLP JSON document with a "
                                            "resourceSpans list")
        return []
    spans: list[Span] = []
    for i, rs in enumerate(rec["resourceSpans"]):
        if not isinstance(rs, Mapping):
            problems.add(line, f"resourceSpans[{i}]", "expected an object")
            continue
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        resource = {k: v for k, v in resource.items() if k in SESSION_KEYS}
        for j, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")
                               or []):
            for k, raw in enumerate((ss or {}).get("spans") or []):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if not isinstance(raw, Mapping):
                    problems.add(line, where, "expected a span object")
                    continue
                span = read_span(raw, resource, line, where, problems)
                if span is not None:
                    spans.append(span)
    return spans
