"""Sample layouts ("input formats"): one declaration each, in one table.

A layout is a :class:`Format` registered in :data:`FORMATS`: its name, what it is, how it is
recognised by content and how its columns map onto ragmeter's fields. Detection
(``--format auto``), the ``--format`` choices and their errors, ``load_samples(format=...)``,
streamed loading and the reference in ``docs/formats.md`` all read this table, so a new layout
is one declaration::

    declare_format(Format(
        "helpdesk", "a help-desk export",
        fields={"ticket_text": "user_input", "agent_reply": "reference"},
        requires=("ticket_text",)))

Detection looks at the keys of the first records: the declared layouts are tried in
``priority`` order (then declaration order); records no layout claims are ``samples``.
``column_map`` (``--map target=source``) renames a source column to a ragmeter field first.
Regenerate the reference after a change: ``python -m ragmeter.data.format_reference``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ragmeter.errors import ConfigError, DataError, RecordProblem, UsageError
from ragmeter.registry import Registry

if TYPE_CHECKING:
    from ragmeter.data.reading import Table

#: ragmeter fields a --map (or a layout's field mapping) may target
TARGETS = ("id", "user_input", "response", "reference", "type", "retrieved_contexts",
           "retrieved_ids", "reference_contexts", "gold_doc_ids", "gold_chunk_ids",
           "retrieved_scores", "gold_grades", "metadata")
_LIST_TARGETS = ("retrieved_contexts", "retrieved_ids", "reference_contexts", "gold_doc_ids",
                 "gold_chunk_ids")
#: list fields whose items are ids: an integer id (``"chunk_id": 17``) is read as text
ID_LIST_FIELDS = ("retrieved_ids", "gold_doc_ids", "gold_chunk_ids")
#: keys the generic reader keeps in ``metadata`` under their own name
META_KEYS = ("notes", "source")
#: the layout of records that no declared layout claims
FALLBACK = "samples"

#: ``validate(sample, record) -> [(field, message)]``: a layout's own rules
Validator = Callable[[Any, Mapping[str, Any]], list[tuple[str | None, str]]]
#: ``convert(table) -> table``: a file whose records are not samples (nested trace spans) turned
#: into flat sample records with ragmeter field names, its problems naming file/line/field
Converter = Callable[["Table"], "Table"]


@dataclass(frozen=True)
class Format:
    """One sample layout.

    ``fields`` maps a source column to a ragmeter field (a native ragmeter name in the record
    wins over a renamed column; the loser is kept in ``metadata``). ``others``: what happens to
    the remaining columns — ``fields`` (read by the generic reader, its aliases included) or
    ``metadata``. ``list_sep``: how a CSV/TSV text cell of a list field is split (a JSON list
    cell is always read as one); without it a text cell is one item. Recognised by content when
    every key of ``requires`` and at least one of ``requires_any`` occur in the first records,
    or by ``detect(keys)``; a layout with none of the three is chosen explicitly only.
    ``refuses``: detected layouts this one must not be forced onto (besides every layout that
    renames columns). ``validate``: extra rules applied when a benchmark dataset has this
    layout. ``convert``: for files whose records are not one sample each (trace exports: spans
    nested in requests and sessions), turns the whole file into flat sample records first.
    ``doc`` is a noun phrase ("DeepEval test cases"); ``columns`` the columns shown
    in messages and docs (default: ``fields``' sources); ``note``: one more line for the docs.
    """

    name: str
    doc: str
    fields: Mapping[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    requires_any: tuple[str, ...] = ()
    detect: Callable[[frozenset[str]], bool] | None = field(default=None, compare=False)
    priority: int = 50
    others: Literal["fields", "metadata"] = "fields"
    list_sep: str | None = None
    refuses: tuple[str, ...] = ()
    validate: Validator | None = field(default=None, compare=False)
    convert: Converter | None = field(default=None, compare=False)
    columns: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        bad = sorted(set(self.fields.values()) - set(TARGETS))
        if bad:
            raise ValueError(f"format {self.name!r} maps to unknown field(s) {bad}")

    @property
    def detectable(self) -> bool:
        return bool(self.requires or self.requires_any or self.detect)

    def matches(self, keys: frozenset[str]) -> bool:
        """Whether records with these keys have this layout."""
        if self.detect is not None:
            return self.detect(keys)
        if not (self.requires or self.requires_any):
            return False
        return all(k in keys for k in self.requires) and (
            not self.requires_any or any(k in keys for k in self.requires_any))

    def shown_columns(self) -> tuple[str, ...]:
        return self.columns or tuple(self.fields)

    def describe(self) -> str:
        """``DeepEval test cases (input, actual_output, ...)``: for messages."""
        cols = self.shown_columns()
        return f"{self.doc} ({', '.join(cols)})" if cols else self.doc

    def apply(self, rec: Mapping[str, Any], *, tabular: bool = False) -> dict[str, Any]:
        """``rec`` with ragmeter field names (see the class docstring)."""
        if not self.fields and self.others == "fields":
            return dict(rec)
        mapped: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for k, v in rec.items():  # native names first: they win over a renamed column
            if k in self.fields:
                continue
            if self.others == "fields" or k in TARGETS or k in META_KEYS:
                mapped[k] = v
            elif v is not None:
                meta[k] = v
        for k, v in rec.items():
            target = self.fields.get(k)
            if target is None:
                continue
            if target == "metadata" and isinstance(v, Mapping):
                meta.update(v)
            elif target in mapped or target == "metadata":
                if v is not None:
                    meta[k] = v
            else:
                mapped[target] = self._cell(target, v, tabular)
        if meta:
            base = mapped.get("metadata")
            mapped["metadata"] = {**meta, **(dict(base) if isinstance(base, Mapping) else {})}
        return mapped

    def _cell(self, target: str, value: Any, tabular: bool) -> Any:
        if target not in _LIST_TARGETS:
            return value
        if isinstance(value, str):
            if tabular and self.list_sep and not value.lstrip().startswith("["):
                return [part.strip() for part in value.split(self.list_sep) if part.strip()]
            if not (tabular and self.list_sep):
                return [value]
        if target in ID_LIST_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            return [str(value)]
        return value


FORMATS: Registry[Format] = Registry("format", key="format")


def declare_format(fmt: Format) -> Format:
    """Add ``fmt`` to :data:`FORMATS` under its name (a taken name is a programming error)."""
    return FORMATS.register(fmt.name, fmt)


def _evalset_rules(sample: Any, record: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    from ragmeter.data.evalset import check_evalset_sample

    return check_evalset_sample(sample, record)


# --- the layouts ------------------------------------------------------------------------------
declare_format(Format(
    "auto", "the layout detected by content: the first layout below whose columns occur in the "
    "first records, else samples"))
declare_format(Format(
    "samples", "generic records", columns=("id", "user_input", "response", "reference",
                                           "retrieved_contexts", "retrieved_ids",
                                           "reference_contexts", "gold_doc_ids",
                                           "gold_chunk_ids", "type", "metadata"),
    note="ragmeter's field names, RAGAS names or their aliases (question, query, answer, "
         "ground_truth, contexts, …); any other column goes to metadata"))
declare_format(Format(
    "ragas", "a RAGAS EvaluationDataset", requires=("user_input",), priority=20,
    columns=("user_input", "retrieved_contexts", "response", "reference", "reference_contexts"),
    note="native names; the older question/answer/contexts/ground_truth are read too; "
         "to_csv's Python-list cells are parsed"))
declare_format(Format(
    "deepeval", "DeepEval test cases", priority=10, others="metadata", list_sep=";",
    fields={"input": "user_input", "actual_output": "response",
            "expected_output": "reference", "retrieval_context": "retrieved_contexts",
            "context": "reference_contexts", "additional_metadata": "metadata", "name": "id"},
    requires=("input",), requires_any=("actual_output", "expected_output", "retrieval_context"),
    columns=("input", "actual_output", "expected_output", "retrieval_context", "context"),
    note="DeepEval's context is the gold context; CSV list cells are `;`-joined; other "
         "columns go to metadata"))
declare_format(Format(
    "hf", "Hugging Face datasets exports (JSON Lines, Parquet) and pandas frames",
    note="plain records, read as samples; ragmeter.data.from_pandas(df), from_records(rows)"))
declare_format(Format(
    "synthetic", "a synthetic question set (one question per gold chunk)", priority=40,
    fields={"question": "user_input", "chunk_id": "gold_chunk_ids",
            "chunk_ids": "gold_chunk_ids", "confluence_url": "gold_doc_ids",
            "source_url": "gold_doc_ids", "url": "gold_doc_ids", "doc_id": "gold_doc_ids",
            "chunk_text": "reference_contexts", "chunk": "reference_contexts",
            "context": "reference_contexts", "answer": "reference",
            "expected_answer": "reference", "ground_truth_answer": "reference"},
    requires=("question",),
    requires_any=("chunk_id", "confluence_url", "source_url", "chunk_text"),
    columns=("question", "chunk_id", "confluence_url/url", "chunk_text",
             "answer/ground_truth_answer"),
    note="often a compact JSON array without ids; integer chunk ids are read as text"))
declare_format(Format(
    "evalset", "an evalset", requires_any=("gold_doc_ids", "gold_chunk_ids"), priority=30,
    refuses=("ragas",), validate=_evalset_rules,
    columns=("id", "question", "gold_doc_ids", "gold_chunk_ids", "type", "notes", "source"),
    note="as a benchmark dataset: ids, questions and gold ids of non-negative questions "
         "required"))


# --- using the table ---------------------------------------------------------------------------
def format_names() -> list[str]:
    """Every ``--format`` choice (``auto`` first)."""
    return FORMATS.names()


def get_format(name: str, *, key: str = "format") -> Format:
    """The declaration of ``name``; an unknown name is a ConfigError under ``key``."""
    return FORMATS.get(name, key=key)


def _keys(records: Iterable[tuple[int | None, Any]], n: int = 50) -> set[str]:
    out: set[str] = set()
    for i, (_, rec) in enumerate(records):
        if i >= n:
            break
        if isinstance(rec, Mapping):
            out.update(str(k) for k in rec)
    return out


def detect_format(records: Sequence[tuple[int | None, Any]]) -> str:
    """The layout of ``records`` by the keys of the first ones (see :data:`FORMATS`)."""
    keys = frozenset(_keys(records))
    ranked = sorted((f for f in FORMATS if f.detectable), key=lambda f: f.priority)
    return next((f.name for f in ranked if f.matches(keys)), FALLBACK)


def check_explicit_format(fmt: str, records: Sequence[tuple[int | None, Any]],
                          source: str) -> None:
    """An explicit ``fmt`` must not be applied to records of another layout that renames
    columns or converts them (DeepEval's gold ``context`` read as retrieved contexts under
    ``samples``, trace spans read as samples…), nor to
    one it refuses (RAGAS names under ``evalset``). Raises a :class:`DataError` naming the
    likely format."""
    looks = detect_format(records)
    if looks in (fmt, FALLBACK):
        return
    seen = get_format(looks)
    if seen.fields or seen.convert or looks in get_format(fmt).refuses:
        raise DataError(RecordProblem(source, None, None,
                                      f"format '{fmt}' was given, but the records look like "
                                      f"{seen.describe()}"),
                        hint=f"use format '{looks}' (--format {looks}), or --format auto")


def apply_format(rec: Mapping[str, Any], fmt: str | Format,
                 column_map: Mapping[str, str] | None = None, *,
                 tabular: bool = False) -> dict[str, Any]:
    """``rec`` with ragmeter field names for layout ``fmt`` (after ``column_map``)."""
    out: dict[str, Any] = dict(rec)
    if column_map:
        for target, src in column_map.items():
            if src in out:
                value = out.pop(src)
                out.pop(target, None)
                out[target] = value
    decl = get_format(fmt) if isinstance(fmt, str) else fmt
    return decl.apply(out, tabular=tabular)


def other_kind_hint(records: Sequence[tuple[int | None, Any]]) -> str | None:
    """A hint when the records look like another ragmeter input rather than samples."""
    keys = _keys(records)
    if "ground_truth_show" in keys:
        return ("these look like labelled production-judge items: use "
                "`ragmeter judge pipeline FILE`")
    if "turns" in keys and "session_id" in keys:
        return "these look like UX sessions: use `ragmeter score ux --sessions FILE`"
    if "_id" in keys and "text" in keys:
        return ("these look like a BEIR corpus or queries file: use "
                "ragmeter.data.beir.load_beir(folder) (corpus.jsonl, queries.jsonl, qrels/*.tsv)")
    if "doc_id" in keys and "text" in keys and "question" not in keys:
        return "these look like a corpus (doc_id, text): use it as --corpus"
    if "query-id" in keys and "corpus-id" in keys:
        return "this looks like a BEIR qrels TSV: use --qrels FILE"
    return None


def parse_map(items: Iterable[str] | None) -> dict[str, str]:
    """``["user_input=prompt", "response=output"]`` → ``{"user_input": "prompt", ...}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            target, eq, source = part.partition("=")
            target, source = target.strip(), source.strip()
            if not eq or not target or not source:
                raise UsageError("--map", f"expected TARGET=SOURCE, got {part!r}")
            if target not in TARGETS:
                raise UsageError("--map", f"unknown target field {target!r} (allowed: "
                                          f"{', '.join(TARGETS)})")
            if target in out:
                raise UsageError("--map", f"target {target!r} mapped twice")
            out[target] = source
    return out


def check_map(column_map: Mapping[str, str], records: Sequence[tuple[int | None, Any]],
              source: str) -> None:
    """Every mapped source column must occur in the data."""
    keys = _keys(records, n=len(records))
    missing = [s for s in column_map.values() if s not in keys]
    if missing and records:
        raise ConfigError("column_map", f"column(s) {', '.join(map(repr, missing))} not found "
                                        f"in {source} (columns: {', '.join(sorted(keys)[:40])})")


def plain_value(value: Any) -> Any:
    """numpy arrays / scalars and pandas NA values → plain Python (lists, floats, None)."""
    if value is None:
        return None
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        return plain_value(tolist())
    if isinstance(value, float) and value != value:  # NaN cell = missing
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    return value


# the trace layouts (OTLP, Langfuse, Phoenix, MLflow) declare themselves on import
import ragmeter.data.traces.formats  # noqa: E402,F401
