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

from ragmeter.data.traces.spans import (
    BadValue,
    Doc,
    Problems,
    Span,
    count,
    docs_of,
    ident,
    iso_ns,
    number,
    text_of,
)

LOOKED_FOR = {
    "user_input": "input (trace row, else the first GENERATION's input)",
    "response": "output",
    "retrieved_ids": "a RETRIEVER observation's output[].id (or metadata.doc_uri / id)",
    "retrieved_contexts": "output[].content / page_content",
    "retrieved_scores": "output[].score / metadata.score",
    "latency_ms": "timestamp + latency, startTime / endTime",
    "model": "model of GENERATION observations",
    "session_id": "sessionId / session_id",
    "user_id": "userId / user_id",
    "tokens": "usage / usageDetails {input, output, total}, promptTokens / completionTokens",
    "error": "level (ERROR), statusMessage",
}


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _docs(output: Any, fld: str) -> list[Doc] | None:
    output = _cell(output)
    if isinstance(output, Mapping):
        output = output.get("documents", output.get("docs"))
    return docs_of(output, fld) if isinstance(output, list) and output else None


def _either(o: Mapping[str, Any], *keys: str) -> tuple[str, Any]:
    for k in keys:
        if o.get(k) not in (None, ""):
            return k, o[k]
    return keys[0], None


def _usage(o: Mapping[str, Any]) -> dict[str, int | None]:
    out: dict[str, int | None] = {"tokens_in": None, "tokens_out": None, "tokens_total": None}
    for box in ("usageDetails", "usage"):
        u = _cell(o.get(box))
        if u in (None, "", {}):
            continue
        if not isinstance(u, Mapping):
            raise BadValue(box, "expected an object {input, output, total}")
        for k, names in (("tokens_in", ("input", "promptTokens", "prompt_tokens")),
                         ("tokens_out", ("output", "completionTokens", "completion_tokens")),
                         ("tokens_total", ("total", "totalTokens", "total_tokens"))):
            name, value = _either(u, *names)
            if out[k] is None and value is not None:
                out[k] = count(value, f"{box}.{name}")
    for k, top in (("tokens_in", ("promptTokens", "inputUsage")),
                   ("tokens_out", ("completionTokens", "outputUsage")),
                   ("tokens_total", ("totalTokens", "totalUsage"))):
        name, value = _either(o, *top)
        if out[k] is None and value is not None:
            out[k] = count(value, name)
    return out


def _error(o: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    level = o.get("level")
    if level in (None, ""):
        return None, None
    if not isinstance(level, str):
        raise BadValue("level", "expected DEBUG, DEFAULT, WARNING or ERROR")
    if level.upper() == "ERROR":
        msg = o.get("statusMessage")
        return True, msg[:200] if isinstance(msg, str) and msg else None
    return False, None


def _who(o: Mapping[str, Any]) -> tuple[str | None, str | None]:
    return (ident(*reversed(_either(o, "sessionId", "session_id"))),
            ident(*reversed(_either(o, "userId", "user_id"))))


def _observation(o: Mapping[str, Any], trace_id: str, line: int | None, where: str,
                 problems: Problems) -> Span | None:
    obs_id = o.get("id")
    if obs_id in (None, ""):
        problems.add(line, f"{where}.id", "missing (every observation needs an id)", trace_id)
        return None
    try:
        return _read_observation(o, trace_id, line, where)
    except BadValue as exc:
        problems.add(line, f"{where}.{exc.field}", exc.message, trace_id)
        return None


def _read_observation(o: Mapping[str, Any], trace_id: str, line: int | None, where: str
                      ) -> Span:
    obs_id = ident(o.get("id"), "id")
    typ = o.get("type")
    if typ is not None and not isinstance(typ, str):
        raise BadValue("type", "expected text (GENERATION, RETRIEVER, SPAN...)")
    typ = (typ or "").upper()
    name = o.get("name")
    if name is not None and not isinstance(name, str):
        raise BadValue("name", "expected text")
    name = name or ""
    docs = _docs(o.get("output"), "output")
    retrieval = typ == "RETRIEVER" or ("retriev" in name.lower() and docs is not None)
    if typ == "RETRIEVER" and docs is None and o.get("output") not in (None, "", []):
        raise BadValue("output", "a RETRIEVER observation's output must be a list of documents "
                                 "({id, content, score})")
    kind = "retrieval" if retrieval else "llm" if typ == "GENERATION" else "other"
    start = iso_ns(o.get("startTime"), "startTime")
    end = iso_ns(o.get("endTime"), "endTime")
    model_key, model = _either(o, "model", "providedModelName")
    if model is not None and not isinstance(model, str):
        raise BadValue(model_key, "expected text")
    parent = o.get("parentObservationId")
    session, user = _who(o)
    error, error_type = _error(o)
    usage = _usage(o)
    return Span(trace_id=trace_id, span_id=str(obs_id),
                parent_id=ident(parent, "parentObservationId") or trace_id, name=name,
                kind=kind, start_ns=start, end_ns=end,
                input_text=text_of(_cell(o.get("input")), "input"),
                output_text=None if retrieval else text_of(_cell(o.get("output")), "output"),
                model=model or None, docs=(docs or []) if retrieval else [],
                query=text_of(_cell(o.get("input")), "input") if retrieval else None,
                session_id=session, user_id=user, line=line, error=error,
                error_type=error_type, tokens_in=usage["tokens_in"],
                tokens_out=usage["tokens_out"], tokens_total=usage["tokens_total"])


def _trace(t: Mapping[str, Any], line: int | None, problems: Problems) -> list[Span]:
    trace_id = ident(t["id"], "id") or ""
    try:
        start = iso_ns(t.get("timestamp"), "timestamp")
        latency = t.get("latency")
        end = None
        if start is not None and latency not in (None, ""):
            seconds = number(latency, "latency")  # Langfuse reports latency in seconds
            end = start + int((seconds or 0) * 1e9) if seconds is not None and \
                0 <= seconds < 1e9 else None
            if end is None:
                raise BadValue("latency", f"not a duration in seconds: {latency!r}")
        session, user = _who(t)
        name = t.get("name")
        if name is not None and not isinstance(name, str):
            raise BadValue("name", "expected text")
        error, error_type = _error(t)
        usage = _usage(t)
        spans = [Span(trace_id=trace_id, span_id=trace_id, name=name or "",
                      kind="request", start_ns=start, end_ns=end,
                      input_text=text_of(_cell(t.get("input")), "input"),
                      output_text=text_of(_cell(t.get("output")), "output"),
                      session_id=session, user_id=user, line=line, error=error,
                      error_type=error_type, tokens_in=usage["tokens_in"],
                      tokens_out=usage["tokens_out"], tokens_total=usage["tokens_total"])]
    except BadValue as exc:
        problems.add(line, exc.field, exc.message, trace_id)
        return []
    observations = _cell(t.get("observations"))
    if observations is None:
        return spans
    if not isinstance(observations, list):
        problems.add(line, "observations", "expected a list of observation objects", trace_id)
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
        problems.orphan(line, None, None)
        return []
    if rec.get("traceId") not in (None, ""):
        if not isinstance(rec["traceId"], str):
            problems.add(line, "traceId", "expected an id (text)")
            problems.orphan(line, rec.get("parentObservationId"), rec.get("id"))
            return []
        span = _observation(rec, rec["traceId"], line, "observation", problems)
        return [span] if span is not None else []
    if rec.get("id") in (None, ""):
        problems.add(line, "id", "missing (a Langfuse trace needs its id; an observation "
                                 "its traceId)")
        if not isinstance(rec.get("observations"), list):
            problems.orphan(line, None, None)  # its observation rows cannot be told apart
        return []
    if not isinstance(rec["id"], str):
        problems.add(line, "id", "expected an id (text)")
        return []
    return _trace(rec, line, problems)
