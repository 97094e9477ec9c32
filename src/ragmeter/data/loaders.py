"""Read jsonl / json / csv files into :class:`Sample` records, reporting every bad line at once.

``read_records`` turns a file into ``(line, dict)`` pairs; ``record_to_sample`` validates one
dict; ``load_samples`` does both and either raises one :class:`DataError` listing every problem
(file, line, field, message) or, with ``skip_invalid=True``, skips the bad records and keeps the
list in :attr:`LoadResult.skipped`.

Field names: RAGAS (``user_input``, ``retrieved_contexts``, ``response``, ``reference``,
``reference_contexts``) and the evalset format (``question`` → ``user_input``, ``id``, ``gold_doc_ids``,
``gold_chunk_ids``, ``type``; ``notes`` / ``source`` → ``metadata``). Unknown fields go to
``metadata`` unless they look like a typo of a known field (then they are an error).
CSV list fields are JSON arrays (``["a","b"]``) or ``|``-separated (``a|b``); empty cells are absent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.formats import (
    Validator,
    apply_format,
    check_explicit_format,
    check_map,
    detect_format,
    get_format,
    other_kind_hint,
    plain_value,
)
from ragmeter.data.history_refs import HistoryLinks
from ragmeter.data.reading import ARRAY_KEYS, Table, parse_json_line, read_table
from ragmeter.data.records import record_to_sample
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, DataError, RecordProblem

__all__ = ["LoadResult", "SampleStream", "Validator", "from_pandas", "from_records",
           "iter_samples", "load_dataset_file", "load_samples", "load_table", "read_records",
           "record_to_sample"]


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

    # a LoadResult is its samples wherever samples are taken (evaluate_generation, ...)
    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Sample:
        return self.samples[index]


def read_records(path: str | Path) -> tuple[list[tuple[int | None, Any]], list[RecordProblem]]:
    """Read ``path`` (JSON Lines, JSON, CSV, TSV or Parquet, detected by content) into
    ``(line, record)`` pairs + problems. CSV cells stay text (see :func:`load_samples`)."""
    t = read_table(path)
    return t.records, t.problems


def load_samples(path: str | Path, *, skip_invalid: bool = False,
                 validate: Validator | None = None, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> LoadResult:
    """Load samples from any container (JSON Lines, JSON, CSV, TSV, Parquet; by content) in any
    declared layout (``format``: ``auto`` or a name of
    :data:`ragmeter.data.formats.FORMATS`); ``column_map`` is ``{ragmeter_field: source_column}``.

    ``validate(sample, record)`` adds ``(field, msg)`` checks. Raises one :class:`DataError`
    listing every problem, unless ``skip_invalid`` (then bad records are skipped and listed in
    ``LoadResult.skipped``). Duplicate ids are problems of the later record. Records without an
    id get ``#<index>`` (0-based record index) in every container — JSON Lines, JSON, CSV,
    Parquet, records — so the same data written as JSONL or CSV, or reformatted, keeps its ids;
    line numbers only appear in error messages.
    """
    table = read_table(path)
    return load_table(table, skip_invalid=skip_invalid, validate=validate, format=format,
                      column_map=column_map)


def from_records(records: Sequence[Mapping[str, Any]], *, format: str = "auto",
                 column_map: Mapping[str, str] | None = None, skip_invalid: bool = False,
                 source: str = "<records>") -> LoadResult:
    """Samples from a list of dicts (Python API); list cells may be lists or numpy arrays."""
    if isinstance(records, Mapping) or not hasattr(records, "__iter__"):
        raise DataError(RecordProblem(source, None, None, "expected a list of dicts, got "
                                                          f"{type(records).__name__}"))
    recs: list[tuple[int | None, Any]] = [
        (None, {str(k): plain_value(v) for k, v in r.items() if plain_value(v) is not None}
         if isinstance(r, Mapping) else r) for r in records]
    return load_table(Table(recs, container="records", source=source), skip_invalid=skip_invalid,
                      format=format, column_map=column_map)


def from_pandas(df: Any, *, format: str = "auto", column_map: Mapping[str, str] | None = None,
                skip_invalid: bool = False, source: str = "<DataFrame>") -> LoadResult:
    """Samples from a pandas DataFrame (a Hugging Face ``Dataset`` works via ``.to_pandas()``);
    NaN cells are missing, numpy-array cells become lists."""
    to_dict = getattr(df, "to_dict", None)
    if not callable(to_dict):
        to_pandas = getattr(df, "to_pandas", None)
        if callable(to_pandas):
            df = to_pandas()
            to_dict = df.to_dict
        else:
            raise DataError(RecordProblem(source, None, None, "expected a pandas DataFrame, got "
                                                              f"{type(df).__name__}"))
    return from_records(to_dict(orient="records"), format=format, column_map=column_map,
                        skip_invalid=skip_invalid, source=source)


def load_table(table: Table, *, skip_invalid: bool = False, validate: Validator | None = None,
               format: str = "auto", column_map: Mapping[str, str] | None = None) -> LoadResult:
    """Validate the records of a :class:`~ragmeter.data.reading.Table` into samples."""
    get_format(format)
    source = table.source
    records, problems = table.records, list(table.problems)
    n_unreadable = len(problems)
    if column_map:
        check_map(column_map, records, source)
    if format != "auto":
        check_explicit_format(format, records, source)
    fmt = get_format(detect_format(records) if format == "auto" else format)
    if fmt.convert is not None:  # nested traces: flat sample records first
        table = fmt.convert(table)
        records, problems = table.records, list(table.problems)
    samples: list[Sample] = []
    lines: list[int | None] = []
    seen: dict[str, int | None] = {}
    links = HistoryLinks(source)
    for index, (line, rec) in enumerate(records):
        probs: list[RecordProblem] = []
        written = rec
        if isinstance(rec, Mapping):
            rec = written = apply_format(rec, fmt, column_map, tabular=table.tabular)
            rec, probs = links.resolve(rec, line)
        sample, more = record_to_sample(rec, source=source, line=line, index=index,
                                        from_csv=table.tabular)
        probs = probs + more
        if probs:
            sample = None
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
        links.remember(sample, written)
        samples.append(sample)
        lines.append(line)
    hint = table.hint
    if problems and not samples and hint is None:
        hint = other_kind_hint(records)
    if samples and not any(s.user_input or s.response or s.retrieved_ids or s.retrieved_contexts
                           or s.gold_doc_ids or s.gold_chunk_ids for s in samples):
        known = ("user_input/question, response/answer, retrieved_contexts, retrieved_ids, "
                 "gold_doc_ids")
        raise DataError(RecordProblem(source, None, None, f"no record has any sample field "
                                      f"({known})"),
                        hint=other_kind_hint(records) or "name the columns with --map "
                                                         "TARGET=SOURCE or --format")
    if not records and not problems:
        problems.append(RecordProblem(source, None, None, "no records"))
    if problems and (not skip_invalid or (not samples and hint)):
        raise DataError(problems, hint=hint or "fix the lines above, or pass skip_invalid=True "
                                               "(--skip-invalid) to skip them and count them")
    if problems and not samples:  # skipping every record leaves nothing to evaluate
        raise DataError(problems, hint=f"every one of the {len(problems)} record(s) is invalid, "
                                       "so skipping them (--skip-invalid) leaves no sample")
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return LoadResult(samples=samples, source=source, lines=lines, skipped=problems,
                      n_records=len(records) + n_unreadable)


def load_dataset_file(path: str | Path, *, format: str = "auto", skip_invalid: bool = False,
                      column_map: Mapping[str, str] | None = None) -> LoadResult:
    """A dataset of a benchmark config: the layout is detected by content (never by the file
    name) and its own rules apply (an evalset's: ids, questions, gold ids of non-negative
    questions; see :class:`~ragmeter.data.formats.Format`)."""
    get_format(format)
    table = read_table(path)
    fmt = detect_format(table.records) if format == "auto" else format
    return load_table(table, skip_invalid=skip_invalid, validate=get_format(fmt).validate,
                      format=fmt, column_map=column_map)


# --- Streaming: records one at a time, with per-record size limits ------------------------------

#: Longest accepted JSON Lines record, in bytes (override: ``RAGMETER_MAX_RECORD_BYTES``).
MAX_RECORD_BYTES = 32 * 1024 * 1024
#: Most items accepted in one list field of a record (override: ``RAGMETER_MAX_LIST_ITEMS``).
MAX_LIST_ITEMS = 500_000
#: records looked at to detect the layout of a streamed file (``format="auto"``)
DETECT_RECORDS = 200


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
                 max_list_items: int | None = None, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> None:
        get_format(format)
        self.path = Path(path)
        self.format = format
        self.column_map = dict(column_map) if column_map else None
        self.container = "jsonl"
        self.skip_invalid = skip_invalid
        self.validate = validate
        default_bytes, default_items = record_limits()
        self.max_bytes = max_record_bytes or default_bytes
        self.max_items = max_list_items or default_items
        self.result = LoadResult(samples=[], source=str(path))

    def _records(self, problems: list[RecordProblem]) -> Iterator[tuple[int | None, Any]]:
        """``(line, record)`` pairs; each unreadable line adds one problem to ``problems``."""
        source = str(self.path)
        self.container = _sniff_container(self.path)
        if self.container != "jsonl":  # JSON arrays, CSV/TSV, Parquet: parsed whole
            table = read_table(self.path)
            self.container = table.container
            problems.extend(table.problems)
            yield from table.records
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
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(RecordProblem(source, lineno, None, (
                        f"not UTF-8 text (byte 0x{raw[exc.start:exc.start + 1].hex()}); "
                        "save the file as UTF-8")))
                    continue
                obj, found = parse_json_line(text, source, lineno)
                if found:
                    problems.extend(found)
                    continue
                yield lineno, obj

    def __iter__(self) -> Iterator[Sample]:
        source = str(self.path)
        problems: list[RecordProblem] = []
        seen: dict[str, int | None] = {}
        n_records = 0
        unreadable: list[RecordProblem] = []
        records = self._records(unreadable)
        # the layout (RAGAS, DeepEval, evalset, ...) is detected on the first records
        head = list(itertools.islice(records, DETECT_RECORDS))
        if self.column_map:
            check_map(self.column_map, head, source)
        if self.format != "auto":
            check_explicit_format(self.format, head, source)
        fmt = get_format(detect_format(head) if self.format == "auto" else self.format)
        tabular = self.container in ("csv", "tsv")
        if fmt.convert is not None:  # nested traces: the whole file, converted to flat records
            flat = fmt.convert(Table([*head, *records], list(unreadable), self.container, source))
            records, head, tabular = iter(flat.records), [], False
            unreadable[:] = flat.problems
        links = HistoryLinks(source)
        for index, (line, rec) in enumerate(itertools.chain(head, records)):
            n_records += 1
            probs = record_limit_problems(rec, source, line, self.max_items)
            sample = None
            written = rec
            if not probs and isinstance(rec, Mapping):
                rec = written = apply_format(rec, fmt, self.column_map, tabular=tabular)
                rec, probs = links.resolve(rec, line)
            if not probs:
                sample, probs = record_to_sample(rec, source=source, line=line, index=index,
                                                 from_csv=tabular)
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
            links.remember(sample, written)
            yield sample
        n_unreadable = len(unreadable)
        problems.extend(unreadable)
        if problems and not self.skip_invalid:
            raise DataError(problems, hint="fix the lines above, or pass skip_invalid=True "
                                           "(--skip-invalid) to skip them and count them")
        if not n_records and not problems:  # an empty file or a header-only CSV
            raise DataError(RecordProblem(source, None, None, "no records"))
        if problems and not seen:  # skipping every record leaves nothing to evaluate
            raise DataError(problems, hint=f"every one of the {len(problems)} record(s) is "
                                           "invalid, so skipping them (--skip-invalid) leaves "
                                           "no sample")
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        self.result.skipped = problems
        self.result.n_records = n_records + n_unreadable


def iter_samples(path: str | Path, *, skip_invalid: bool = False,
                 validate: Validator | None = None, format: str = "auto",
                 column_map: Mapping[str, str] | None = None) -> SampleStream:
    """Samples of ``path`` as a stream (see :class:`SampleStream`); iterate it once. The
    layout and column map work as in :func:`load_samples`."""
    return SampleStream(path, skip_invalid=skip_invalid, validate=validate, format=format,
                        column_map=column_map)


def _sniff_container(path: Path) -> str:
    """``jsonl`` when the file's first non-blank line is one whole JSON value (streamed line by
    line); anything else is read whole by :func:`~ragmeter.data.reading.read_table`."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                raw = raw.removeprefix(b"\xef\xbb\xbf").strip()
                if not raw:
                    continue
                if raw[:1] != b"{":
                    return "other"
                try:
                    first = json.loads(raw)
                except (ValueError, RecursionError):
                    return "other"
                if isinstance(first, dict) and any(isinstance(first.get(k), list)
                                                   for k in ARRAY_KEYS):
                    return "other"   # {"samples": [...]} on one line: read whole, unwrapped
                return "jsonl"
    except FileNotFoundError:
        raise DataError(RecordProblem(str(path), None, None, "file not found")) from None
    return "other"
