"""Arize Phoenix span exports: the spans data frame written as JSON records or Parquet, or
Phoenix's span JSON with nested ``context`` / ``attributes`` objects (both are read through
their dotted names: ``context.trace_id``, ``attributes.input.value``…).

OpenInference attributes: ``span_kind`` (``RETRIEVER``, ``LLM``, ``CHAIN``…),
``attributes.input.value`` / ``attributes.output.value``, ``attributes.retrieval.documents``
(a list of ``{document.id, document.content, document.score}``), ``attributes.llm.model_name``,
``attributes.session.id``, ``attributes.user.id``; times ``start_time`` / ``end_time``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.data.traces.langfuse import _cell
from ragmeter.data.traces.spans import Problems, Span, docs_of, flatten, iso_ns, text_of

_KINDS = {"RETRIEVER": "retrieval", "LLM": "llm"}


def _get(flat: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        for prefix in ("attributes.", ""):
            if flat.get(prefix + k) not in (None, ""):
                return _cell(flat[prefix + k])
    return None


def read_phoenix(rec: Any, line: int | None, problems: Problems) -> list[Span]:
    """The span of one Phoenix record."""
    if not isinstance(rec, Mapping):
        problems.add(line, None, "expected a Phoenix span object")
        return []
    flat = flatten(rec)
    trace_id, span_id = flat.get("context.trace_id"), flat.get("context.span_id")
    if not trace_id or not span_id:
        problems.add(line, "context.trace_id" if not trace_id else "context.span_id",
                     "missing (every span needs its trace and span id)",
                     str(trace_id) if trace_id else None)
        return []
    kind = _KINDS.get(str(flat.get("span_kind") or _get(flat, "openinference.span.kind")
                          or "").upper(), "other")
    raw_docs = _get(flat, "retrieval.documents")
    docs = docs_of(raw_docs) if raw_docs is not None else []
    if docs is None:
        problems.add(line, "attributes.retrieval.documents",
                     "expected a list of {document.id, document.content, document.score}",
                     str(trace_id))
        return []
    start = iso_ns(flat.get("start_time"))
    if flat.get("start_time") not in (None, "") and start is None:
        problems.add(line, "start_time", f"not a time: {flat.get('start_time')!r}",
                     str(trace_id))
        return []
    if docs:
        kind = "retrieval"
    session = _get(flat, "session.id")
    user = _get(flat, "user.id")
    return [Span(trace_id=str(trace_id), span_id=str(span_id),
                 parent_id=str(flat["parent_id"]) if flat.get("parent_id") else None,
                 name=str(flat.get("name") or ""), kind=kind, start_ns=start,
                 end_ns=iso_ns(flat.get("end_time")),
                 input_text=text_of(_get(flat, "input.value")),
                 output_text=None if kind == "retrieval" else text_of(_get(flat, "output.value")),
                 model=_get(flat, "llm.model_name"), docs=docs,
                 query=text_of(_get(flat, "input.value")) if kind == "retrieval" else None,
                 session_id=None if session is None else str(session),
                 user_id=None if user is None else str(user), line=line)]
