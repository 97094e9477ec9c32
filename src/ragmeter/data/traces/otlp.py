"""OTLP JSON traces (``{"resourceSpans": [...]}``, one document or one per line as the
OpenTelemetry file exporter writes them) with the GenAI semantic conventions.

Read, current and previous names alike:

- question / answer: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON messages with
  ``parts``); the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events with
  ``gen_ai.prompt`` / ``gen_ai.completion``; ``gen_ai.user.message`` / ``gen_ai.choice`` events;
  the indexed ``gen_ai.prompt.N.content`` / ``gen_ai.completion.N.content`` attributes; the
  OpenInference ``input.value`` / ``output.value`` and ``llm.input_messages.N.message.*``;
- retrieval: ``gen_ai.operation.name`` = ``retrieval`` (or an OpenInference ``RETRIEVER``
  span) with ``gen_ai.retrieval.documents`` (JSON list of ``{id, content, score}``) or the
  indexed ``retrieval.documents.N.document.{id,content,score}``; a vector-database client span
  (``db.system`` / ``db.system.name`` naming a vector store) with one ``db.query.result`` (or
  ``db.search.result``) event per document (``.id``, ``.document``, ``.score``,
  ``.distance``); its query from ``gen_ai.retrieval.query.text`` / ``gen_ai.retrieval.query`` /
  ``db.query.text`` / ``input.value``;
- model: ``gen_ai.request.model`` (else ``gen_ai.response.model``, ``llm.model_name``);
- session / user: ``gen_ai.conversation.id``, ``session.id`` or ``langfuse.session.id``;
  ``user.id``, ``enduser.id``;
- tokens: ``gen_ai.usage.input_tokens`` / ``output_tokens`` (``prompt_tokens`` /
  ``completion_tokens`` before), ``llm.token_count.prompt`` / ``completion`` / ``total``;
- failure: the span ``status`` (code 2 / ``STATUS_CODE_ERROR``), ``error.type``, an
  ``exception`` event's ``exception.type``.

Every attribute must have the type its convention gives it: a number where text belongs (an
answer ``true``), an object where an attribute list belongs, an integer too long or a time out
of range is an error naming the span and the field, never text made from another type.
"""

from __future__ import annotations

import re
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
    indexed_docs,
    number,
    text_of,
    unix_ns,
)
from ragmeter.data.traces.stream import BigInt, OtlpSpan

_INDEXED_MSG = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(role|content)$")
_OI_MSG = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(role|content)$")
SESSION_KEYS = ("gen_ai.conversation.id", "session.id", "langfuse.session.id",
                "gen_ai.session.id")
USER_KEYS = ("user.id", "enduser.id", "langfuse.user.id")
MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
TOKENS = {"tokens_in": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                        "llm.token_count.prompt", "llm.usage.prompt_tokens"),
          "tokens_out": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                         "llm.token_count.completion", "llm.usage.completion_tokens"),
          "tokens_total": ("llm.usage.total_tokens", "gen_ai.usage.total_tokens",
                           "llm.token_count.total")}
#: ``db.system`` values of vector stores (their client spans are retrievals)
VECTOR_DBS = ("chroma", "chromadb", "pinecone", "qdrant", "weaviate", "milvus", "lancedb",
              "marqo", "pgvector", "redis", "elasticsearch", "opensearch", "mongodb", "faiss",
              "vespa", "turbopuffer", "azure_search", "vertexai")
RESULT_EVENTS = ("db.query.result", "db.search.result")

#: what each documented field is read from (the import report names it when none has it)
LOOKED_FOR = {
    "user_input": "gen_ai.input.messages, gen_ai.prompt events, gen_ai.prompt.N.content, "
                  "input.value",
    "response": "gen_ai.output.messages, gen_ai.completion events, gen_ai.completion.N.content,"
                " output.value",
    "retrieved_ids": "gen_ai.retrieval.documents[].id, retrieval.documents.N.document.id, "
                     "db.query.result events' db.query.result.id",
    "retrieved_contexts": "gen_ai.retrieval.documents[].content, "
                          "retrieval.documents.N.document.content, db.query.result.document",
    "retrieved_scores": "gen_ai.retrieval.documents[].score, retrieval.documents.N.document."
                        "score, db.query.result.score",
    "latency_ms": "startTimeUnixNano / endTimeUnixNano",
    "model": ", ".join(MODEL_KEYS),
    "session_id": ", ".join(SESSION_KEYS) + " (span or resource attributes)",
    "user_id": ", ".join(USER_KEYS),
    "tokens": ", ".join(TOKENS["tokens_in"] + TOKENS["tokens_out"]),
    "error": "status.code, error.type, exception events",
}


def any_value(v: Any, fld: str) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value; a value of another shape is a
    :class:`BadValue` naming ``fld``."""
    if not isinstance(v, Mapping):
        if v is None or (isinstance(v, (str, bool, int, float)) and not isinstance(v, BigInt)):
            return v  # some exporters write plain values
        raise BadValue(fld, "expected an AnyValue object ({\"stringValue\": ...})")
    if not v:
        return None
    if "stringValue" in v:
        s = v["stringValue"]
        if not isinstance(s, str) or isinstance(s, BigInt):
            raise BadValue(fld, "stringValue must be text")
        return s
    if "intValue" in v:
        x = v["intValue"]
        if isinstance(x, str) and not isinstance(x, BigInt) and re.fullmatch(r"-?\d{1,19}",
                                                                            x.strip()):
            x = int(x)
        if isinstance(x, bool) or not isinstance(x, int) or not -2**63 <= x < 2**63:
            raise BadValue(fld, "intValue must be a 64-bit integer (a number or its decimal "
                                f"text), got {str(x)[:30]!r}")
        return x
    if "doubleValue" in v:
        return number(v["doubleValue"], fld)
    if "boolValue" in v:
        b = v["boolValue"]
        if not isinstance(b, bool):
            raise BadValue(fld, "boolValue must be true or false")
        return b
    if "bytesValue" in v:
        if not isinstance(v["bytesValue"], str):
            raise BadValue(fld, "bytesValue must be base64 text")
        return v["bytesValue"]
    if "arrayValue" in v:
        arr = v["arrayValue"] or {}
        values = arr.get("values", []) if isinstance(arr, Mapping) else None
        if not isinstance(values, list):
            raise BadValue(fld, "arrayValue must be {\"values\": [...]}")
        return [any_value(x, f"{fld}[{i}]") for i, x in enumerate(values)]
    if "kvlistValue" in v:
        kv = v["kvlistValue"] or {}
        values = kv.get("values", []) if isinstance(kv, Mapping) else None
        if not isinstance(values, list):
            raise BadValue(fld, "kvlistValue must be {\"values\": [{key, value}...]}")
        return attributes(values, fld)
    raise BadValue(fld, f"unknown AnyValue kind {sorted(v)[:3]}")


def attributes(items: Any, fld: str = "attributes") -> dict[str, Any]:
    """An OTLP attribute list (``[{"key": ..., "value": {...}}]``) as a dict."""
    if items is None:
        return {}
    if isinstance(items, Mapping):  # some exporters write a plain object
        return {str(k): any_value(v, f"{fld}.{k}") for k, v in items.items()}
    if not isinstance(items, list):
        raise BadValue(fld, "expected a list of {key, value} attributes")
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise BadValue(f"{fld}[{i}]", "expected a {key, value} attribute")
        out[item["key"]] = any_value(item.get("value"), f"{fld}.{item['key']}")
    return out


def resource_sessions(resource: Any) -> dict[str, Any]:
    """The session and user attributes of a ``resource`` object (the rest is not read)."""
    if not isinstance(resource, Mapping):
        raise BadValue("resource", "expected an object")
    attrs = attributes(resource.get("attributes"), "resource.attributes")
    return {k: v for k, v in attrs.items() if k in SESSION_KEYS or k in USER_KEYS}


def _indexed(attrs: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    msgs: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for k, v in attrs.items():
        m = _INDEXED_MSG.match(k)
        if m:
            msgs[m.group(1)].setdefault(int(m.group(2)), {})[m.group(3)] = v
            continue
        m = _OI_MSG.match(k)
        if m:
            side = "prompt" if m.group(1) == "input" else "completion"
            msgs[side].setdefault(10**6 + int(m.group(2)), {})[m.group(3)] = v
    return msgs


def _event_texts(events: list[tuple[str, dict[str, Any], Any]]
                 ) -> tuple[str | None, str | None]:
    question = answer = None
    for i, (name, attrs, body) in enumerate(events):
        where = f"events[{i}]"
        if name == "gen_ai.content.prompt":
            question = text_of(attrs.get("gen_ai.prompt"), f"{where}.gen_ai.prompt")
        elif name == "gen_ai.content.completion":
            answer = text_of(attrs.get("gen_ai.completion"), f"{where}.gen_ai.completion")
        elif name == "gen_ai.user.message":
            question = text_of(attrs.get("content") or body, f"{where}.content")
        elif name == "gen_ai.choice":
            answer = text_of(attrs.get("message") or attrs.get("content") or body,
                             f"{where}.message")
    return question, answer


def _result_docs(events: list[tuple[str, dict[str, Any], Any]]) -> list[Doc]:
    """The legacy vector-store shape: one ``db.query.result`` event per document."""
    out = []
    for i, (name, attrs, _) in enumerate(events):
        if name not in RESULT_EVENTS:
            continue
        pre = name  # db.query.result.id, db.search.result.id
        where = f"events[{i}].{pre}"
        text = attrs.get(f"{pre}.document", attrs.get(f"{pre}.entity"))
        if text is not None and not isinstance(text, str):
            text = text_of(text, f"{where}.document")
        out.append(Doc(ident(attrs.get(f"{pre}.id"), f"{where}.id"), text,
                       number(attrs.get(f"{pre}.score"), f"{where}.score"),
                       number(attrs.get(f"{pre}.distance"), f"{where}.distance")))
    return out


def _events(raw: Any) -> list[tuple[str, dict[str, Any], Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadValue("events", "expected a list of events")
    out = []
    for i, ev in enumerate(raw):
        if not isinstance(ev, Mapping):
            raise BadValue(f"events[{i}]", "expected an event object")
        name = ev.get("name")
        if name is not None and not isinstance(name, str):
            raise BadValue(f"events[{i}].name", "expected text")
        out.append((name or "", attributes(ev.get("attributes"), f"events[{i}].attributes"),
                    ev.get("body")))
    return out


def _kind(attrs: Mapping[str, Any], docs: list[Doc], vector_db: bool) -> str:
    op = attrs.get("gen_ai.operation.name")
    oi = attrs.get("openinference.span.kind")
    op = op.lower() if isinstance(op, str) else ""
    oi = oi.upper() if isinstance(oi, str) else ""
    if op in ("retrieval", "retrieve", "search") or oi == "RETRIEVER" or docs or vector_db:
        return "retrieval"
    if (op in ("chat", "text_completion", "generate_content", "completion") or oi == "LLM"
            or "gen_ai.system" in attrs or "gen_ai.request.model" in attrs):
        return "llm"
    return "other"


def _status(raw: Mapping[str, Any], attrs: Mapping[str, Any],
            events: list[tuple[str, dict[str, Any], Any]]) -> tuple[bool | None, str | None]:
    status = raw.get("status")
    code: Any = None
    if status is not None:
        if not isinstance(status, Mapping):
            raise BadValue("status", "expected an object {code, message}")
        code = status.get("code")
    err_type = attrs.get("error.type") or attrs.get("exception.type")
    exc = next((a.get("exception.type") for n, a, _ in events if n == "exception"), None)
    err_type = err_type or exc
    if err_type is not None and not isinstance(err_type, str):
        raise BadValue("attributes.error.type", "expected text")
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR") or err_type:
        return True, err_type
    if code in (1, "1", "STATUS_CODE_OK", "OK", 0, "0", "STATUS_CODE_UNSET", "UNSET"):
        return False, None
    if code is not None:
        raise BadValue("status.code", f"unknown status code {str(code)[:30]!r}")
    return None, None


def read_span(raw: Mapping[str, Any], resource: Mapping[str, Any], line: int | None,
              where: str, problems: Problems) -> Span | None:
    """One OTLP span; a missing id or a value of the wrong type is a problem naming the span
    and the field (its whole trace is then left out)."""
    trace_id, span_id = raw.get("traceId"), raw.get("spanId")
    if not isinstance(trace_id, str) or not trace_id:
        problems.add(line, f"{where}.traceId", "missing (every span needs traceId and spanId)"
                     if trace_id in (None, "") else "expected a hex id (text)")
        problems.orphan(line, raw.get("parentSpanId"), span_id)
        return None
    if not isinstance(span_id, str) or not span_id:
        problems.add(line, f"{where}.spanId", "missing (every span needs traceId and spanId)"
                     if span_id in (None, "") else "expected a hex id (text)", trace_id)
        return None
    try:
        return _span(raw, trace_id, span_id, resource, line)
    except BadValue as exc:
        problems.add(line, f"{where}.{exc.field}", exc.message, trace_id)
        return None


def _span(raw: Mapping[str, Any], trace_id: str, span_id: str, resource: Mapping[str, Any],
          line: int | None) -> Span:
    attrs = {**resource, **attributes(raw.get("attributes"))}
    events = _events(raw.get("events"))
    docs = docs_of(attrs.get("gen_ai.retrieval.documents"),
                   "attributes.gen_ai.retrieval.documents")
    if attrs.get("gen_ai.retrieval.documents") is not None and docs is None:
        raise BadValue("attributes.gen_ai.retrieval.documents",
                       "expected a JSON list of {id, content, score} objects")
    docs = docs or indexed_docs(attrs, "attributes.retrieval.documents")
    system = attrs.get("db.system", attrs.get("db.system.name"))
    vector_db = isinstance(system, str) and system.lower() in VECTOR_DBS and (
        any(n in RESULT_EVENTS for n, _, _ in events) or "db.vector.query.top_k" in attrs
        or any(k.startswith(f"db.{system.lower()}.query") for k in attrs))
    docs = docs or _result_docs(events)
    msgs = _indexed(attrs)
    q_event, a_event = _event_texts(events)
    question = (text_of(attrs.get("gen_ai.input.messages"), "attributes.gen_ai.input.messages")
                or q_event or _last(msgs["prompt"], "user")
                or text_of(attrs.get("input.value"), "attributes.input.value"))
    answer = (text_of(attrs.get("gen_ai.output.messages"), "attributes.gen_ai.output.messages")
              or a_event or _last(msgs["completion"], None)
              or text_of(attrs.get("output.value"), "attributes.output.value"))
    start = unix_ns(raw.get("startTimeUnixNano"), "startTimeUnixNano")
    end = unix_ns(raw.get("endTimeUnixNano"), "endTimeUnixNano")
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise BadValue("name", "expected text")
    parent = raw.get("parentSpanId")
    if parent not in (None, "") and not isinstance(parent, str):
        raise BadValue("parentSpanId", "expected a hex id (text)")
    kind = _kind(attrs, docs, vector_db)
    query = None
    if kind == "retrieval":
        for key in ("gen_ai.retrieval.query.text", "gen_ai.retrieval.query", "db.query.text"):
            if attrs.get(key) is not None:
                query = text_of(attrs[key], f"attributes.{key}")
                break
    error, error_type = _status(raw, attrs, events)
    tokens = {k: next((count(attrs[a], f"attributes.{a}") for a in keys
                       if attrs.get(a) is not None), None) for k, keys in TOKENS.items()}
    return Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent or None, name=name or "",
        kind=kind, start_ns=start, end_ns=end, input_text=question,
        output_text=answer if kind != "retrieval" else None,
        model=next((_text_attr(attrs, k) for k in MODEL_KEYS if attrs.get(k)), None),
        docs=docs, query=query,
        session_id=next((ident(attrs[k], f"attributes.{k}") for k in SESSION_KEYS
                         if attrs.get(k)), None),
        user_id=next((ident(attrs[k], f"attributes.{k}") for k in USER_KEYS if attrs.get(k)),
                     None),
        line=line, error=error, error_type=error_type, **tokens)


def _text_attr(attrs: Mapping[str, Any], key: str) -> str:
    v = attrs[key]
    if not isinstance(v, str):
        raise BadValue(f"attributes.{key}", f"expected text, got {type(v).__name__}")
    return v


def _last(msgs: dict[int, dict[str, Any]], role: str | None) -> str | None:
    items = [m for _, m in sorted(msgs.items()) if role is None or m.get("role") == role]
    return text_of(items[-1].get("content"), "attributes.messages.content") if items else None


def read_otlp(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """Spans of one OTLP JSON document (or one span of a document read span by span)."""
    if isinstance(rec, OtlpSpan):
        return _streamed(rec, line, problems)
    if not isinstance(rec, Mapping) or not isinstance(rec.get("resourceSpans"), list):
        problems.add(line, "resourceSpans", "expected an OTLP JSON document with a "
                                            "resourceSpans list")
        return []
    spans: list[Span] = []
    bad_doc = False
    for i, rs in enumerate(rec["resourceSpans"]):
        if not isinstance(rs, Mapping):
            problems.add(line, f"resourceSpans[{i}]", "expected an object")
            bad_doc = True
            continue
        try:
            resource = resource_sessions(rs.get("resource") or {})
        except BadValue as exc:
            problems.add(line, f"resourceSpans[{i}].{exc.field}", exc.message)
            bad_doc = True
            continue
        scopes = rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []
        if not isinstance(scopes, list):
            problems.add(line, f"resourceSpans[{i}].scopeSpans", "expected a list")
            bad_doc = True
            continue
        for j, ss in enumerate(scopes):
            raw_spans = ss.get("spans") if isinstance(ss, Mapping) else None
            if not isinstance(raw_spans, list):
                if ss is not None and not (isinstance(ss, Mapping) and raw_spans is None):
                    problems.add(line, f"resourceSpans[{i}].scopeSpans[{j}]",
                                 "expected an object with a spans list")
                    bad_doc = True
                continue
            for k, raw in enumerate(raw_spans):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if not isinstance(raw, Mapping):
                    problems.add(line, where, "expected a span object")
                    bad_doc = True
                    continue
                span = read_span(raw, resource, line, where, problems)
                if span is not None:
                    spans.append(span)
    if bad_doc:
        # a part of this document names no trace: every trace it holds may have lost a span
        problems.bad_traces.update(s.trace_id for s in spans)
    return spans


def _streamed(item: OtlpSpan, line: int | None, problems: Problems) -> list[Span]:
    raw = item.raw
    if not isinstance(raw, Mapping):
        problems.add(line, item.where, "expected a span object")
        problems.orphan(line, None, None)
        return []
    cache = item.resource
    try:
        if "parsed" not in cache:
            cache["parsed"] = resource_sessions(cache.get("raw") or {})
        resource = cache["parsed"]
    except BadValue as exc:
        problems.add(line, f"{item.where.split('.scopeSpans')[0]}.{exc.field}", exc.message)
        problems.orphan(line, None, None)
        return []
    span = read_span(raw, resource, line, item.where, problems)
    return [span] if span is not None else []
