"""Spans of any trace export → flat sample records (one per request, sessions as conversations).

Each importer turns its file into :class:`Span` objects (what a request did: a retrieval, a
model call, the request itself); :func:`assemble` groups them by trace, picks the request's
question and answer, gathers every retrieval span as a *hop* and orders the requests of one
session into a conversation. The records use ragmeter's field names, so the generic reader
validates them like any other samples file.
"""

from __future__ import annotations

import json
import math
import re
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
    """One retrieved document of a retrieval span (``distance``: a vector store's distance,
    lower is closer; kept apart from ``score``, where higher is better)."""

    id: str | None = None
    text: str | None = None
    score: float | None = None
    distance: float | None = None


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
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_total: int | None = None
    #: the span says whether it failed (None: the export carries no status for it)
    error: bool | None = None
    error_type: str | None = None


class BadValue(Exception):
    """A value of the wrong type or form; ``field`` is its path inside the span."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class Problems:
    """Problems of one file, each naming its line and field (the first :data:`KEEP` kept,
    all counted)."""

    KEEP = 1000

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[RecordProblem] = []
        self.count = 0
        #: traces with a bad span: left out whole, never imported with a span missing
        self.bad_traces: set[str] = set()
        #: spans that could not be read and name no trace: (line, parent span id, span id)
        self.orphans: list[tuple[int | None, str | None, str | None]] = []
        #: span ids through which an orphan was tied to its trace
        self.tied: set[str] = set()

    def add(self, line: int | None, fld: str | None, message: str,
            trace: str | None = None) -> None:
        self.count += 1
        if len(self.items) < self.KEEP:
            self.items.append(RecordProblem(self.source, line, fld, message))
        if trace is not None:
            self.bad_traces.add(trace)

    def untied(self) -> list[tuple[int | None, str | None, str | None]]:
        """Unreadable spans that name no trace and no span: no request can be said to be
        whole while one exists (an orphan with ids and no span of the file pointing at it
        or at its parent was a request of its own)."""
        return [o for o in self.orphans if o[1] is None and o[2] is None]

    def orphan(self, line: int | None, parent: Any, span: Any) -> None:
        """A span without its trace id: tied to its trace later by its parent or own id."""
        self.orphans.append((line, parent if isinstance(parent, str) and parent else None,
                             span if isinstance(span, str) and span else None))


def _type_name(value: Any) -> str:
    from ragmeter.data.traces.stream import BigInt

    if isinstance(value, BigInt):
        return f"an integer of {len(value)} digits"
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "an object", str: "text"}.get(type(value), type(value).__name__)


def text_of(value: Any, fld: str = "value") -> str | None:
    """A message-ish value as plain text: strings as they are, chat messages by their content
    (the last user message of an input list), other JSON objects compactly. A number or a
    boolean where text belongs is a :class:`BadValue` (never turned into text)."""
    from ragmeter.data.traces.stream import BigInt

    if value is None:
        return None
    if isinstance(value, str) and not isinstance(value, BigInt):
        stripped = value.strip()
        if stripped[:1] in "[{":
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            if isinstance(parsed, (Mapping, list)):
                try:
                    return _structured_text(parsed, fld) or value
                except BadValue:  # text that merely looks like JSON ("[42]") stays text
                    return value
        return value
    if isinstance(value, (Mapping, list)):
        return _structured_text(value, fld)
    raise BadValue(fld, f"expected text, got {_type_name(value)}: {str(value)[:40]!r}")


def _structured_text(value: Any, fld: str) -> str | None:
    if isinstance(value, Mapping):
        for key in ("content", "text", "value", "question", "query", "input", "output",
                    "answer", "response"):
            if key in value:
                return text_of(value[key], fld)
        for key in ("parts", "messages", "choices", "message"):
            if key in value:
                return text_of(value[key], fld)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if value and all(isinstance(v, Mapping) and "role" in v for v in value):
        users = [v for v in value if v.get("role") == "user"]
        return text_of((users or value)[-1], fld)
    if value and all(isinstance(v, Mapping) and v.get("type") == "text" for v in value):
        return "".join(text_of(v, fld) or "" for v in value)
    if len(value) == 1:
        return text_of(value[0], fld)
    return json.dumps(value, ensure_ascii=False)


def number(value: Any, fld: str = "value") -> float | None:
    """A score as a float (a number, or text holding one); None when absent. Anything else
    (a word, a boolean, NaN, an infinity) is a :class:`BadValue` naming ``fld``."""
    from ragmeter.data.traces.stream import BigInt

    if value is None or value == "":
        return None
    if isinstance(value, (bool, BigInt)) or not isinstance(
            value, (int, float, str)):
        raise BadValue(fld, f"expected a number, got {_type_name(value)}")
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        raise BadValue(fld, f"expected a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(out):
        raise BadValue(fld, f"expected a finite number, got {value!r}")
    return out


def count(value: Any, fld: str) -> int | None:
    """A token count: a whole number >= 0 (or text holding one)."""
    x = number(value, fld)
    if x is None:
        return None
    if x < 0 or x != int(x) or x > 2**53:
        raise BadValue(fld, f"expected a whole number of tokens, got {value!r}")
    return int(x)


def ident(value: Any, fld: str) -> str | None:
    """An id: text, or an integer written as a number (never a boolean or an object)."""
    from ragmeter.data.traces.stream import BigInt

    if value is None or value == "":
        return None
    if isinstance(value, str) and not isinstance(value, BigInt):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise BadValue(fld, f"expected an id (text), got {_type_name(value)}")


#: times accepted: 1970 to 2262 in nanoseconds (what fits in a signed 64-bit count)
_MAX_NS = 2**63 - 1


def unix_ns(value: Any, fld: str) -> int | None:
    """An OTLP ``*TimeUnixNano``: an integer (or its decimal text) of nanoseconds."""
    from ragmeter.data.traces.stream import BigInt

    if value is None or value == "":
        return None
    if isinstance(value, str) and not isinstance(value, BigInt) and value.strip().isdigit() \
            and len(value.strip()) <= 19:
        out = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        out = value
    else:
        raise BadValue(fld, f"expected an integer time in ns, got {_type_name(value)}"
                            f" {str(value)[:30]!r}")
    if not 0 <= out <= _MAX_NS:
        raise BadValue(fld, f"expected an integer time in ns, got {str(value)[:30]!r} (out of "
                            "range)")
    return out


def iso_ns(value: Any, fld: str = "time") -> int | None:
    """An ISO-8601 time (``2025-01-31T10:00:00.123Z``) or an epoch number (seconds,
    milliseconds, microseconds or nanoseconds by magnitude) as nanoseconds."""
    import datetime as dt

    from ragmeter.data.traces.stream import BigInt

    if value is None or value == "":
        return None
    if isinstance(value, (bool, BigInt)):
        raise BadValue(fld, f"not a time: {_type_name(value)}")
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v) or v < 0:
            raise BadValue(fld, f"not a time: {value!r}")
        scale = 1e9 if v < 1e11 else 1e6 if v < 1e14 else 1e3 if v < 1e17 else 1.0
        out = int(v * scale) if v * scale <= _MAX_NS else None
        if out is None:
            raise BadValue(fld, f"not a time: {value!r} (out of range)")
        return out
    if not isinstance(value, str):
        raise BadValue(fld, f"not a time: {_type_name(value)}")
    text = value.strip()
    if text.isdigit() and len(text) <= 19:
        return iso_ns(int(text), fld)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadValue(fld, f"not a time: {value[:40]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1e6) * 1000


_ID_KEYS = ("id", "document.id", "doc_id", "metadata.id", "metadata.doc_id",
            "metadata.doc_uri", "metadata.chunk_id", "metadata.source")
_TEXT_KEYS = ("content", "document.content", "text", "page_content")
_SCORE_KEYS = ("score", "document.score", "relevance_score", "metadata.score",
               "metadata.relevance_score", "document.metadata.score")


def docs_of(value: Any, fld: str = "documents", *, id_keys: Sequence[str] = _ID_KEYS,
            text_keys: Sequence[str] = _TEXT_KEYS, score_keys: Sequence[str] = _SCORE_KEYS
            ) -> list[Doc] | None:
    """Retrieved documents written as a list of objects (or its JSON text): OpenInference
    ``{document.id, document.content, document.score}`` (nested or dotted), ``{id, content,
    score}``, LangChain ``Document`` (``page_content``, ``metadata.score``/``doc_uri``, also
    in its serialised ``{"lc": 1, "kwargs": {...}}`` form). None when the value is not such a
    list; a score that is not a number is a :class:`BadValue` naming the document."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping) and isinstance(value.get("documents"), list):
        value = value["documents"]
    if not isinstance(value, list):
        return None
    out: list[Doc] = []
    for i, item in enumerate(value):
        if isinstance(item, str):  # a list of JSON-encoded documents
            try:
                item = json.loads(item)
            except (ValueError, RecursionError):
                return None
        if not isinstance(item, Mapping):
            return None
        if isinstance(item.get("kwargs"), Mapping) and item.get("lc") is not None:
            item = item["kwargs"]  # LangChain's serialised form
        flat = flatten(item)
        meta = flat.get("metadata") or flat.get("document.metadata")
        if isinstance(meta, str):  # OpenInference: document.metadata is a JSON string
            try:
                parsed = json.loads(meta)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, Mapping):
                flat.update(flatten(parsed, "metadata."))
        where = f"{fld}[{i}]"
        id_key = next((k for k in id_keys if flat.get(k) not in (None, "")), None)
        text_key = next((k for k in text_keys if flat.get(k) is not None), None)
        score_key = next((k for k in score_keys if flat.get(k) is not None), None)
        doc_id = ident(flat[id_key], f"{where}.{id_key}") if id_key else None
        text = flat[text_key] if text_key else None
        if text is not None and not isinstance(text, str):
            raise BadValue(f"{where}.{text_key}", f"expected text, got {_type_name(text)}")
        score = number(flat[score_key], f"{where}.{score_key}") if score_key else None
        out.append(Doc(doc_id, text, score))
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


_INDEXED_DOC = re.compile(r"^(.*?)retrieval\.documents\.(\d+)\.document\.(id|content|score|"
                          r"metadata)(?:\.(.+))?$")


def indexed_docs(flat: Mapping[str, Any], fld: str = "retrieval.documents") -> list[Doc]:
    """OpenInference's flattened ``retrieval.documents.N.document.{id,content,score}`` keys
    (any prefix, e.g. ``attributes.``) as documents in index order."""
    docs: dict[int, dict[str, Any]] = {}
    for k, v in flat.items():
        if "retrieval.documents." not in k:
            continue
        m = _INDEXED_DOC.match(k)
        if m:
            part = m.group(3) if m.group(4) is None else f"metadata.{m.group(4)}"
            docs.setdefault(int(m.group(2)), {})[part] = v
    out = []
    for n, d in sorted(docs.items()):
        where = f"{fld}.{n}.document"
        meta = d.get("metadata")
        if isinstance(meta, str):
            try:
                parsed = json.loads(meta)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, Mapping):
                d.update({f"metadata.{k}": v for k, v in flatten(parsed).items()})
        doc_id = ident(d.get("id"), f"{where}.id")
        if doc_id is None:
            doc_id = next((ident(d[k], f"{where}.{k}") for k in (
                "metadata.doc_uri", "metadata.id", "metadata.source") if d.get(k)), None)
        text = d.get("content")
        if text is not None and not isinstance(text, str):
            raise BadValue(f"{where}.content", f"expected text, got {_type_name(text)}")
        score = number(d.get("score"), f"{where}.score")
        if score is None and d.get("metadata.score") is not None:
            score = number(d.get("metadata.score"), f"{where}.metadata.score")
        out.append(Doc(doc_id, text, score))
    return out


# --- spans → sample records --------------------------------------------------------------------
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
        if any(d.distance is not None for d in s.docs):
            hop["distances"] = [d.distance for d in s.docs]
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


def _tokens(group: list[Span], root: Span) -> dict[str, int]:
    """Token counts: the model calls' sum, else what the request itself reports."""
    out: dict[str, int] = {}
    for key in ("tokens_in", "tokens_out", "tokens_total"):
        calls = [getattr(s, key) for s in group if s.kind == "llm" and getattr(s, key) is not None]
        if calls:
            out[key] = sum(calls)
        elif getattr(root, key) is not None:
            out[key] = getattr(root, key)
        else:
            other = next((getattr(s, key) for s in group if getattr(s, key) is not None), None)
            if other is not None:
                out[key] = other
    return out


def request_record(group: list[Span]) -> dict[str, Any]:
    """One request (the spans of one trace, in start order) as a sample record."""
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
    if starts:
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
    meta.update(_tokens(group, root))
    failed = [s for s in group if s.error]
    if failed:
        meta["error"] = True
        kind = next((s.error_type for s in failed if s.error_type), None)
        if kind:
            meta["error_type"] = kind
    elif any(s.error is False for s in group):
        meta["error"] = False
    rec["metadata"] = meta
    return rec


def is_partial(rec: Mapping[str, Any]) -> bool:
    return not any(k in rec for k in ("user_input", "response", "retrieved_ids",
                                      "retrieved_contexts"))


def partial_message(trace_id: str) -> str:
    return (f"trace '{trace_id}' has no question, answer or retrieved documents "
            "(a partial trace?)")


def conversations(records: list[Any]) -> None:
    """Requests of one session in time order: ``metadata.turn``, and a ``history`` that refers
    to the turn before (:mod:`ragmeter.data.history_refs`). The turns of a session take the
    places its requests held in ``records`` (``(line, record)`` pairs), in turn order, so a
    turn always comes after the one it refers to."""
    from ragmeter.data.history_refs import ref

    sessions: dict[str, list[int]] = defaultdict(list)
    for i, (_, rec) in enumerate(records):
        sid = rec["metadata"].get("session_id")
        if sid:
            sessions[sid].append(i)
    for slots in sessions.values():
        turns = sorted((records[i] for i in slots),
                       key=lambda lr: lr[1]["metadata"].get("start_ns") or 0)
        prev = None
        for k, (slot, (line, rec)) in enumerate(zip(slots, turns, strict=True)):
            rec["metadata"]["turn"] = k
            if prev is not None:
                rec["history"] = ref(prev, [])
            prev = rec["id"]
            records[slot] = (line, rec)


def turn_messages(rec: Mapping[str, Any]) -> list[dict[str, str]]:
    """The messages one request adds to its conversation."""
    out = []
    if rec.get("user_input") is not None:
        out.append({"role": "user", "content": rec["user_input"]})
    if rec.get("response") is not None:
        out.append({"role": "assistant", "content": rec["response"]})
    return out


Reader = Callable[[Any, int | None, Problems], list[Span]]


def assemble(spans: Iterable[Span], problems: Problems) -> Table:
    """Sample records of ``spans`` (one per trace, in the order traces first appear),
    conversations ordered within sessions. A trace without a question, answer and retrieved
    documents is a problem of its line."""
    from ragmeter.data.traces.store import SpanStore

    with SpanStore() as store:
        for s in spans:
            store.add(s)
        records = list(requests_of(store, problems))
    conversations(records)
    for _, rec in records:
        rec["metadata"].pop("start_ns", None)
    problems.items.sort(key=lambda p: (p.line is None, p.line or 0))
    return Table(records, problems.items, container="records", source=problems.source)


def requests_of(store: Any, problems: Problems) -> Iterable[tuple[int | None, dict[str, Any]]]:
    """``(line, record)`` of each request of ``store`` whose spans were all read: a trace with a
    bad span, or tied to a span that named no trace, is left out (its problem says why)."""
    parents = {p for _, p, _ in problems.orphans if p}
    own = {s for _, _, s in problems.orphans if s}
    for trace_id, line, group in store.traces():
        if trace_id in problems.bad_traces:
            continue
        if parents or own:
            hit = [s for s in group if s.span_id in parents or s.parent_id in own
                   or s.parent_id in parents]
            if hit:
                for s in hit:
                    problems.tied.update({s.span_id, s.parent_id} - {None})
                problems.bad_traces.add(trace_id)
                continue
        group.sort(key=lambda s: (s.start_ns is None, s.start_ns or 0, s.line or 0))
        rec = request_record(group)
        if is_partial(rec):
            problems.add(line, "spans", partial_message(trace_id))
            continue
        yield line, rec


def read_all(read: Reader, records: Iterable[tuple[int | None, Any]], problems: Problems
             ) -> Iterable[Span]:
    """Every span of ``records`` read with ``read``."""
    for line, rec in records:
        yield from read(rec, line, problems)


def convert_with(read: Reader) -> Callable[[Table], Table]:
    """A :class:`~ragmeter.data.formats.Format` ``convert`` from a reader of one record."""

    def convert(table: Table) -> Table:
        problems = Problems(table.source)
        for p in table.problems:
            problems.add(p.line, p.field, p.message)
        return assemble(read_all(read, table.records, problems), problems)

    return convert
