"""Spans of any trace export → flat sample records (one per request, sessions as conversations).

Each importer turns its file into :class:`Span` objects (what a request did: a retrieval, a
model call, the request itself); :func:`assemble` groups them by trace, picks the request's
question and answer, gathers every retrieval span as a *hop* and orders the requests of one
session into a conversation. The records use ragmeter's field names, so the generic reader
validates them like any other samples file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.reading import Table
from ragmeter.errors import RecordProblem

#: span kinds the importers map onto
KINDS = ("request", "llm", "retrieval", "other")


@dataclass
class Doc:
    """One retrieved document of a retrieval span."""

    id: str | None = None
    text: str | None = None
    score: float | None = None


@dataclass
class Span:
    """What an importer reads from one span (times in nanoseconds since the epoch)."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str = ""
    kind: str = "other"
    start_ns: int | None = None
    end_ns: int | None = None
    input_text: str | None = None
    output_text: str | None = None
    model: str | None = None
    docs: list[Doc] = field(default_factory=list)
    query: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    line: int | None = None


class Problems:
    """Problems of one file, each naming its line and field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[RecordProblem] = []
        #: traces with a bad span: left out whole, never imported with a span missing
        self.bad_traces: set[str] = set()

    def add(self, line: int | None, fld: str | None, message: str,
            trace: str | None = None) -> None:
        self.items.append(RecordProblem(self.source, line, fld, message))
        if trace is not None:
            self.bad_traces.add(trace)


def text_of(value: Any) -> str | None:
    """A message-ish value as plain text: strings as they are, chat messages by their content
    (the last user message of an input list), other JSON compactly."""
    if value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "[{":
            try:
                parsed = json.loads(stripped)
            except ValueError:
                return value
            return text_of(parsed)
        return value
    if isinstance(value, Mapping):
        for key in ("content", "text", "value", "question", "query", "input", "output",
                    "answer", "response"):
            if key in value:
                return text_of(value[key])
        if "parts" in value:
            return text_of(value["parts"])
        if "messages" in value:
            return text_of(value["messages"])
        if "choices" in value:
            return text_of(value["choices"])
        if "message" in value:
            return text_of(value["message"])
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, list):
        if value and all(isinstance(v, Mapping) and "role" in v for v in value):
            users = [v for v in value if v.get("role") == "user"]
            return text_of((users or value)[-1])
        if value and all(isinstance(v, Mapping) and v.get("type") == "text" for v in value):
            return "".join(text_of(v) or "" for v in value)
        if len(value) == 1:
            return text_of(value[0])
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def number(value: Any) -> float | None:
    """A score or a time as a float; None when absent or not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None


def iso_ns(value: Any) -> int | None:
    """An ISO-8601 time (``2025-01-31T10:00:00.123Z``) or epoch number as nanoseconds."""
    import datetime as dt

    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)  # seconds, milliseconds, microseconds or nanoseconds by magnitude
        scale = 1e9 if v < 1e11 else 1e6 if v < 1e14 else 1e3 if v < 1e17 else 1.0
        return int(v * scale)
    text = str(value).strip()
    if text.isdigit():
        return iso_ns(int(text))
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1e6) * 1000


def docs_of(value: Any, *, id_keys: Sequence[str] = ("id", "document.id", "doc_id"),
            text_keys: Sequence[str] = ("content", "document.content", "text", "page_content"),
            score_keys: Sequence[str] = ("score", "document.score", "relevance_score")
            ) -> list[Doc] | None:
    """Retrieved documents written as a list of objects (or its JSON text); None when the value
    is not such a list."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping) and isinstance(value.get("documents"), list):
        value = value["documents"]
    if not isinstance(value, list):
        return None
    out: list[Doc] = []
    for item in value:
        if not isinstance(item, Mapping):
            return None
        item = flatten(item)
        meta = {k.split(".")[-1]: v for k, v in item.items() if "metadata" in k}
        doc_id = next((item[k] for k in id_keys if item.get(k) is not None), None)
        if doc_id is None:
            doc_id = meta.get("id") or meta.get("doc_id") or meta.get("source")
        text = next((item[k] for k in text_keys if item.get(k) is not None), None)
        score = next((item[k] for k in score_keys if item.get(k) is not None), None)
        out.append(Doc(None if doc_id is None else str(doc_id),
                       None if text is None else str(text), number(score)))
    return out


def flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}`` (lists stay values)."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


# --- spans → sample records --------------------------------------------------------------------
def _by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        traces[s.trace_id].append(s)
    for group in traces.values():
        group.sort(key=lambda s: (s.start_ns is None, s.start_ns or 0, s.line or 0))
    return traces


def _root(group: list[Span]) -> Span:
    ids = {s.span_id for s in group}
    roots = [s for s in group if not s.parent_id or s.parent_id not in ids]
    return roots[0] if roots else group[0]


def _hops(group: list[Span]) -> list[dict[str, Any]]:
    hops = []
    for s in group:
        if s.kind != "retrieval" and not s.docs:
            continue
        hop: dict[str, Any] = {"ids": [d.id for d in s.docs], "texts": [d.text for d in s.docs],
                               "scores": [d.score for d in s.docs], "span": s.name}
        if s.query or s.input_text:
            hop["query"] = s.query or s.input_text
        hops.append(hop)
    return hops


def _retrieved(hops: list[dict[str, Any]]) -> dict[str, Any]:
    """Every hop's documents in order, an id retrieved twice kept once (its first place)."""
    ids: list[str] = []
    texts: list[str | None] = []
    scores: list[float | None] = []
    seen: set[str] = set()
    for hop in hops:
        for i, t, s in zip(hop["ids"], hop["texts"], hop["scores"], strict=True):
            if i is not None and i in seen:
                continue
            if i is not None:
                seen.add(i)
            ids.append(i)
            texts.append(t)
            scores.append(s)
    out: dict[str, Any] = {}
    if ids and all(i is not None for i in ids):
        out["retrieved_ids"] = ids
    if texts and all(t is not None for t in texts):
        out["retrieved_contexts"] = texts
    if "retrieved_ids" in out and scores and all(s is not None for s in scores):
        out["retrieved_scores"] = scores
    return out


def request_record(group: list[Span]) -> dict[str, Any]:
    """One request (the spans of one trace) as a sample record."""
    root = _root(group)
    llms = [s for s in group if s.kind == "llm"]
    question = root.input_text if root.kind != "retrieval" else None
    if question is None:
        question = next((s.input_text for s in llms if s.input_text), None)
    answer = root.output_text if root.kind not in ("retrieval",) else None
    if answer is None:
        answer = next((s.output_text for s in reversed(llms) if s.output_text), None)
    hops = _hops(group)
    rec: dict[str, Any] = {"id": root.trace_id}
    if question is not None:
        rec["user_input"] = question
    if answer is not None:
        rec["response"] = answer
    rec.update(_retrieved(hops))
    meta: dict[str, Any] = {"trace_id": root.trace_id, "span_id": root.span_id}
    starts = [s.start_ns for s in group if s.start_ns is not None]
    ends = [s.end_ns for s in group if s.end_ns is not None]
    if starts and ends:
        meta["latency_ms"] = round((max(ends) - min(starts)) / 1e6, 3)
        meta["start_ns"] = min(starts)
    model = next((s.model for s in group if s.model), None)
    if model:
        meta["model"] = model
    if hops:
        meta["hops"] = hops
    session = next((s.session_id for s in group if s.session_id), None)
    if session:
        meta["session_id"] = session
    user = next((s.user_id for s in group if s.user_id), None)
    if user:
        meta["user_id"] = user
    rec["metadata"] = meta
    return rec


def _conversations(records: list[dict[str, Any]]) -> None:
    """Requests of one session in time order: ``turn`` index and the ``history`` before it."""
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        sid = rec["metadata"].get("session_id")
        if sid:
            sessions[sid].append(rec)
    for turns in sessions.values():
        turns.sort(key=lambda r: r["metadata"].get("start_ns") or 0)
        history: list[dict[str, str]] = []
        for i, rec in enumerate(turns):
            rec["metadata"]["turn"] = i
            rec["metadata"]["history"] = list(history)
            if rec.get("user_input") is not None:
                history.append({"role": "user", "content": rec["user_input"]})
            if rec.get("response") is not None:
                history.append({"role": "assistant", "content": rec["response"]})


def assemble(spans: list[Span], problems: Problems, line_of: Mapping[str, int | None]
             ) -> Table:
    """Sample records of ``spans`` (one per trace), conversations ordered within sessions.
    A trace without a question and answer and retrieved documents is a problem of its line."""
    records: list[tuple[int | None, Any]] = []
    for trace_id, group in _by_trace(spans).items():
        if trace_id in problems.bad_traces:
            continue
        rec = request_record(group)
        line = line_of.get(trace_id, group[0].line)
        if not any(k in rec for k in ("user_input", "response", "retrieved_ids",
                                      "retrieved_contexts")):
            problems.add(line, "spans", f"trace '{trace_id}' has no question, answer or "
                                        "retrieved documents (a partial trace?)")
            continue
        records.append((line, rec))
    _conversations([r for _, r in records])
    for _, rec in records:
        rec["metadata"].pop("start_ns", None)
    problems.items.sort(key=lambda p: (p.line is None, p.line or 0))
    return Table(records, problems.items, container="records", source=problems.source)


Reader = Callable[[Any, int | None, Problems], list[Span]]


def convert_with(read: Reader) -> Callable[[Table], Table]:
    """A :class:`~ragmeter.data.formats.Format` ``convert`` from a reader of one record."""

    def convert(table: Table) -> Table:
        problems = Problems(table.source)
        problems.items.extend(table.problems)
        spans: list[Span] = []
        line_of: dict[str, int | None] = {}
        for line, rec in table.records:
            for s in read(rec, line, problems):
                spans.append(s)
                line_of.setdefault(s.trace_id, s.line if s.line is not None else line)
        return assemble(spans, problems, line_of)

    return convert
