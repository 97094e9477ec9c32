"""Read jsonl / json / csv files into :class:`Sample` records, reporting every bad line at once.

``read_records`` turns a file into ``(line, dict)`` pairs; ``record_to_sample`` validates one
dict; ``load_samples`` does both and either raises one :class:`DataError` listing every problem
(file, line, field, message) or, with ``skip_invalid=True``, skips the bad records and keeps the
list in :attr:`LoadResult.skipped`.

Field names: RAGAS (``user_input``, ``retrieved_contexts``, ``response``, ``reference``,
``reference_contexts``) and seed-003 (``question`` → ``user_input``, ``id``, ``gold_doc_ids``,
``gold_chunk_ids``, ``type``; ``notes`` / ``source`` → ``metadata``). Unknown fields go to
``metadata`` unless they look like a typo of a known field (then they are an error).
CSV list fields are JSON arrays (``["a","b"]``) or ``|``-separated (``a|b``); empty cells are absent.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.grades import grade_problem
from ragmeter.data.sample import QUESTION_TYPES, Sample
from ragmeter.errors import ConfigError, DataError, RecordProblem

STR_FIELDS = ("user_input", "response", "reference", "type")
STR_LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "reference_contexts",
                   "gold_doc_ids", "gold_chunk_ids")
FLOAT_LIST_FIELDS = ("retrieved_scores",)
ALIASES = {"question": "user_input", "query": "user_input", "answer": "response",
           "ground_truth": "reference", "contexts": "retrieved_contexts",
           "context": "retrieved_contexts", "sample_id": "id", "qid": "id"}
#: aliases whose value may be one string instead of a list of strings
SINGLE_TEXT_ALIASES = ("context",)
META_FIELDS = ("notes", "source")
KNOWN = ("id", *STR_FIELDS, *STR_LIST_FIELDS, *FLOAT_LIST_FIELDS, "gold_grades", "metadata",
         *ALIASES, *META_FIELDS)

Validator = Callable[[Sample, Mapping[str, Any]], list[tuple[str | None, str]]]


@dataclass
class LoadResult:
    """Loaded samples, their source lines, and the records skipped with ``skip_invalid``."""

    samples: list[Sample]
    source: str
    lines: list[int | None] = field(default_factory=list)
    skipped: list[RecordProblem] = field(default_factory=list)
    n_records: int = 0

    @property
    def n_skipped(self) -> int:
        """Number of records (or unreadable lines) skipped."""
        return len({(p.line, p.source) for p in self.skipped})


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _json_array_items(text: str, start: int, source: str) -> list[tuple[int | None, Any]] | None:
    """Decode the JSON array starting at ``text[start] == '['`` item by item, with line numbers."""
    dec = json.JSONDecoder()
    items: list[tuple[int | None, Any]] = []
    ws = re.compile(r"[\s,]*")
    pos = start + 1
    while True:
        pos = ws.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            return None
        if text[pos] == "]":
            return items
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
        items.append((_line_of(text, pos), obj))
        pos = end


def read_records(path: str | Path) -> tuple[list[tuple[int | None, Any]], list[RecordProblem]]:
    """Read ``path`` (.jsonl/.ndjson, .json, .csv/.tsv) into ``(line, record)`` pairs + problems."""
    p = Path(path)
    source = str(p)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(RecordProblem(source, None, None, "file not found")) from None
    except UnicodeDecodeError as exc:
        raise DataError(RecordProblem(source, None, None, f"not UTF-8 text: {exc}")) from None
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return _read_csv(text, source, "\t" if suffix == ".tsv" else ",")
    if suffix == ".json":
        return _read_json(text, source)
    return _read_jsonl(text, source)


def _read_jsonl(text: str, source: str) -> tuple[list[tuple[int | None, Any]], list[RecordProblem]]:
    records: list[tuple[int | None, Any]] = []
    problems: list[RecordProblem] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(RecordProblem(source, lineno, None, f"invalid JSON: {exc.msg}"))
    return records, problems


def _read_json(text: str, source: str) -> tuple[list[tuple[int | None, Any]], list[RecordProblem]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [RecordProblem(source, exc.lineno, None, f"invalid JSON: {exc.msg}")]
    if isinstance(data, Mapping) and isinstance(data.get("samples"), list):
        items = data["samples"]
        m = re.search(r'"samples"\s*:\s*\[', text)
        start = m.end() - 1 if m else -1
    elif isinstance(data, list):
        items = data
        start = text.index("[")
    else:
        return [], [RecordProblem(source, None, None,
                                  "expected a list of records or {\"samples\": [...]}")]
    located = _json_array_items(text, start, source) if start >= 0 else None
    if located is None or [obj for _, obj in located] != items:
        return [(None, obj) for obj in items], []
    return located, []


def _read_csv(text: str, source: str, delimiter: str) -> tuple[list[tuple[int | None, Any]], list[RecordProblem]]:
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    records: list[tuple[int | None, Any]] = []
    problems: list[RecordProblem] = []
    start = 2
    try:
        for row in reader:
            if None in row:
                problems.append(RecordProblem(source, start, None, "more cells than header columns"))
            else:
                records.append((start, {k: v for k, v in row.items() if v not in (None, "")}))
            start = reader.line_num + 1
    except csv.Error as exc:
        problems.append(RecordProblem(source, reader.line_num, None, f"invalid CSV: {exc}"))
    return records, problems


def _csv_list(value: str) -> Any:
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return [part.strip() for part in text.split("|") if part.strip()]


def _csv_obj(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def record_to_sample(record: Any, *, source: str = "<data>", line: int | None = None,
                     index: int = 0, from_csv: bool = False) -> tuple[Sample | None, list[RecordProblem]]:
    """Validate one record and build its :class:`Sample`; returns ``(None, problems)`` if bad."""
    problems: list[RecordProblem] = []

    def bad(fld: str | None, msg: str) -> None:
        problems.append(RecordProblem(source, line, fld, msg))

    if not isinstance(record, Mapping):
        bad(None, f"a record must be a JSON object, got {type(record).__name__}")
        return None, problems
    values: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, value in record.items():
        name = ALIASES.get(key, key)
        if key in META_FIELDS:
            metadata[key] = value
            continue
        if name not in KNOWN:
            close = difflib.get_close_matches(key, KNOWN, n=1, cutoff=0.85)
            if close:
                bad(key, f"unknown field (did you mean '{close[0]}'?)")
            else:
                metadata[key] = value
            continue
        if key in SINGLE_TEXT_ALIASES and isinstance(value, str):
            value = [value]
        if name in values and values[name] != value:
            bad(key, f"conflicts with another spelling of '{name}'")
            continue
        values[name] = value
    if from_csv:
        for name in (*STR_LIST_FIELDS, *FLOAT_LIST_FIELDS):
            if isinstance(values.get(name), str):
                values[name] = _csv_list(values[name])
        for name in ("gold_grades", "metadata"):
            if isinstance(values.get(name), str):
                values[name] = _csv_obj(values[name])

    sid = values.get("id")
    if sid is None:
        sid = f"line{line}" if line is not None else f"#{index}"
    elif isinstance(sid, bool) or not isinstance(sid, (str, int)):
        bad("id", f"must be a string, got {type(sid).__name__}")
    elif str(sid).strip() == "":
        bad("id", "must not be empty")
    for name in STR_FIELDS:
        v = values.get(name)
        if v is not None and not isinstance(v, str):
            bad(name, f"must be a string, got {type(v).__name__}")
    for name in STR_LIST_FIELDS:
        v = values.get(name)
        if v is None:
            continue
        if not isinstance(v, list):
            bad(name, f"must be a list of strings, got {type(v).__name__}")
        else:
            wrong = [i for i, x in enumerate(v) if not isinstance(x, str)]
            if wrong:
                bad(name, f"must be a list of strings; item {wrong[0]} is "
                          f"{type(v[wrong[0]]).__name__}")
    scores = values.get("retrieved_scores")
    if scores is not None:
        if not isinstance(scores, list):
            bad("retrieved_scores", f"must be a list of numbers, got {type(scores).__name__}")
        else:
            try:
                values["retrieved_scores"] = [float(x) for x in scores if not isinstance(x, bool)]
                if len(values["retrieved_scores"]) != len(scores) or any(
                        math.isnan(x) for x in values["retrieved_scores"]):
                    raise ValueError
            except (TypeError, ValueError):
                bad("retrieved_scores", "must be a list of numbers (no NaN)")
            else:
                ids = values.get("retrieved_ids")
                if isinstance(ids, list) and len(ids) != len(scores):
                    bad("retrieved_scores", f"has {len(scores)} items but retrieved_ids has {len(ids)}")
    grades = values.get("gold_grades")
    if grades is not None and (not isinstance(grades, Mapping) or not all(
            isinstance(g, int) and not isinstance(g, bool) for g in grades.values())):
        bad("gold_grades", "must be an object {id: integer grade}")
    elif grades is not None:
        for doc, g in grades.items():
            if grade_problem(g) is not None:
                bad("gold_grades", f"doc '{doc}': {grade_problem(g)}")
    meta = values.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        bad("metadata", f"must be an object, got {type(meta).__name__}")
    qtype = values.get("type")
    if isinstance(qtype, str) and qtype not in QUESTION_TYPES:
        bad("type", f"unknown type '{qtype}' (allowed: {', '.join(QUESTION_TYPES)})")
    if problems:
        return None, problems
    sample = Sample(
        id=str(sid),
        user_input=values.get("user_input"),
        retrieved_contexts=values.get("retrieved_contexts"),
        retrieved_ids=values.get("retrieved_ids"),
        retrieved_scores=values.get("retrieved_scores"),
        response=values.get("response"),
        reference=values.get("reference"),
        reference_contexts=values.get("reference_contexts"),
        gold_doc_ids=values.get("gold_doc_ids"),
        gold_chunk_ids=values.get("gold_chunk_ids"),
        gold_grades=dict(grades) if grades is not None else None,
        type=qtype,
        metadata={**(dict(meta) if meta else {}), **metadata},
    )
    return sample, []


def load_samples(path: str | Path, *, skip_invalid: bool = False,
                 validate: Validator | None = None) -> LoadResult:
    """Load samples from jsonl / json / csv; ``validate(sample, record)`` adds ``(field, msg)`` checks.

    Raises one :class:`DataError` listing every problem, unless ``skip_invalid`` (then bad records
    are skipped and listed in ``LoadResult.skipped``). Duplicate ids are problems of the later line.
    """
    source = str(path)
    records, problems = read_records(path)
    n_unreadable = len(problems)
    from_csv = Path(path).suffix.lower() in (".csv", ".tsv")
    samples: list[Sample] = []
    lines: list[int | None] = []
    seen: dict[str, int | None] = {}
    for index, (line, rec) in enumerate(records):
        sample, probs = record_to_sample(rec, source=source, line=line, index=index,
                                         from_csv=from_csv)
        if sample is not None and validate is not None:
            probs = [RecordProblem(source, line, f, m) for f, m in validate(sample, rec)]
        if sample is not None and not probs and sample.id in seen:
            first = seen[sample.id]
            where = f"line {first}" if first is not None else "an earlier record"
            probs = [RecordProblem(source, line, "id", f"duplicate id '{sample.id}' (first on {where})")]
        if probs or sample is None:
            problems.extend(probs)
            continue
        seen[sample.id] = line
        samples.append(sample)
        lines.append(line)
    if problems and not skip_invalid:
        raise DataError(problems, hint="fix the lines above, or pass skip_invalid=True "
                                       "(--skip-invalid) to skip them and count them")
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return LoadResult(samples=samples, source=source, lines=lines, skipped=problems,
                      n_records=len(records) + n_unreadable)


# --- Streaming: records one at a time, with per-record size limits ------------------------------

#: Longest accepted JSON Lines record, in bytes (override: ``RAGMETER_MAX_RECORD_BYTES``).
MAX_RECORD_BYTES = 32 * 1024 * 1024
#: Most items accepted in one list field of a record (override: ``RAGMETER_MAX_LIST_ITEMS``).
MAX_LIST_ITEMS = 500_000
_STREAMED_SUFFIXES = (".csv", ".tsv", ".json")


def record_limits() -> tuple[int, int]:
    """``(max record bytes, max list items)``: the defaults or the environment's overrides."""
    import os

    def env(name: str, default: int) -> int:
        raw = os.environ.get(name)
        if raw is None or raw.strip() == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(name, f"must be a positive integer, got {raw!r}") from None
        if value < 1:
            raise ConfigError(name, f"must be a positive integer, got {raw!r}")
        return value

    return (env("RAGMETER_MAX_RECORD_BYTES", MAX_RECORD_BYTES),
            env("RAGMETER_MAX_LIST_ITEMS", MAX_LIST_ITEMS))


def record_limit_problems(record: Any, source: str, line: int | None,
                          max_items: int | None = None) -> list[RecordProblem]:
    """A :class:`RecordProblem` for every list field longer than ``max_items``."""
    if not isinstance(record, Mapping):
        return []
    limit = record_limits()[1] if max_items is None else max_items
    out = []
    for key, value in record.items():
        if isinstance(value, (list, dict)) and len(value) > limit:
            out.append(RecordProblem(source, line, str(key), (
                f"has {len(value):,} items, more than the limit of {limit:,} per field "
                "(raise it with RAGMETER_MAX_LIST_ITEMS if this is intended)")))
    return out


class SampleStream:
    """Samples of a file, one at a time; :attr:`result` holds what was skipped once consumed.

    JSON Lines files are read line by line (memory stays bounded by one record); other formats
    are parsed whole first. With ``skip_invalid=False`` every problem is raised together as one
    :class:`DataError` after the last record (so the caller's partial work is discarded).
    """

    def __init__(self, path: str | Path, *, skip_invalid: bool = False,
                 validate: Validator | None = None, max_record_bytes: int | None = None,
                 max_list_items: int | None = None) -> None:
        self.path = Path(path)
        self.skip_invalid = skip_invalid
        self.validate = validate
        default_bytes, default_items = record_limits()
        self.max_bytes = max_record_bytes or default_bytes
        self.max_items = max_list_items or default_items
        self.result = LoadResult(samples=[], source=str(path))

    def _records(self, problems: list[RecordProblem]) -> Iterator[tuple[int | None, Any]]:
        """``(line, record)`` pairs; each unreadable line adds one problem to ``problems``."""
        source = str(self.path)
        if self.path.suffix.lower() in _STREAMED_SUFFIXES:
            records, found = read_records(self.path)
            problems.extend(found)
            yield from records
            return
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise DataError(RecordProblem(source, None, None, "file not found")) from None
        with fh:
            lineno = 0
            while True:
                raw = fh.readline(self.max_bytes + 1)
                if not raw:
                    break
                lineno += 1
                if lineno == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")
                if len(raw) > self.max_bytes and not raw.endswith(b"\n"):
                    size = len(raw)
                    while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                        raw = fh.readline(1024 * 1024)
                        size += len(raw)
                    problems.append(RecordProblem(source, lineno, None, (
                        f"record of {size:,} bytes is longer than the limit of "
                        f"{self.max_bytes:,} (raise it with RAGMETER_MAX_RECORD_BYTES if "
                        "this is intended)")))
                    continue
                if not raw.strip():
                    continue
                try:
                    yield lineno, json.loads(raw)
                except json.JSONDecodeError as exc:
                    problems.append(RecordProblem(source, lineno, None, f"invalid JSON: {exc.msg}"))
                except UnicodeDecodeError as exc:
                    problems.append(RecordProblem(source, lineno, None, f"not UTF-8 text: {exc}"))
                except RecursionError:
                    problems.append(RecordProblem(source, lineno, None, "JSON nested too deeply"))

    def __iter__(self) -> Iterator[Sample]:
        source = str(self.path)
        problems: list[RecordProblem] = []
        from_csv = self.path.suffix.lower() in (".csv", ".tsv")
        seen: dict[str, int | None] = {}
        n_records = 0
        unreadable: list[RecordProblem] = []
        for index, (line, rec) in enumerate(self._records(unreadable)):
            n_records += 1
            probs = record_limit_problems(rec, source, line, self.max_items)
            sample = None
            if not probs:
                sample, probs = record_to_sample(rec, source=source, line=line, index=index,
                                                 from_csv=from_csv)
            if sample is not None and self.validate is not None:
                probs = [RecordProblem(source, line, f, m) for f, m in self.validate(sample, rec)]
            if sample is not None and not probs and sample.id in seen:
                first = seen[sample.id]
                where = f"line {first}" if first is not None else "an earlier record"
                probs = [RecordProblem(source, line, "id",
                                       f"duplicate id '{sample.id}' (first on {where})")]
            if probs or sample is None:
                problems.extend(probs)
                continue
            seen[sample.id] = line
            yield sample
        n_unreadable = len(unreadable)
        problems.extend(unreadable)
        if problems and not self.skip_invalid:
            raise DataError(problems, hint="fix the lines above, or pass skip_invalid=True "
                                           "(--skip-invalid) to skip them and count them")
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        self.result.skipped = problems
        self.result.n_records = n_records + n_unreadable


def iter_samples(path: str | Path, *, skip_invalid: bool = False,
                 validate: Validator | None = None) -> SampleStream:
    """Samples of ``path`` as a stream (see :class:`SampleStream`); iterate it once."""
    return SampleStream(path, skip_invalid=skip_invalid, validate=validate)
