"""Turn a file into ``(line, record)`` pairs, whatever container it is — detected by content.

Containers: JSON Lines, a JSON array (or an object holding one under ``samples``, ``test_cases``,
``data``, ``examples``, ``items`` or ``rows``), CSV, TSV and Parquet (``PAR1`` magic; needs
``ragmeter[parquet]``). The file name is never used to decide.

Encodings: UTF-8 with or without a byte-order mark. UTF-16/32 files, files that are not UTF-8
(e.g. cp1251) and binary files get one clear error naming the file and, where it helps, the line.
Line endings: ``\\n``, ``\\r\\n`` and a lone ``\\r`` (old Mac files) each end a line; raw
U+2028 / U+2029 / U+0085 inside JSON strings do not split records. Every reader of a text input
goes through here (:func:`read_text`, :func:`read_lines`, :func:`read_table`), so a BOM or a line
ending is accepted everywhere or nowhere. A string holding a lone surrogate (``"\\ud800"``) is
reported for its record. Repeated keys inside one JSON object and repeated CSV header columns are
problems, never silently resolved.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data import jsontext
from ragmeter.errors import DataError, RecordProblem

ARRAY_KEYS = ("samples", "test_cases", "data", "examples", "items", "rows")
#: largest CSV cell accepted (contexts can be long)
CSV_FIELD_LIMIT = 64 * 1024 * 1024
_TREC_LINE = re.compile(r"^\s*\S+\s+(?:0|Q0|q0)\s+\S+\s+-?\d+(?:\s|$)")
_LINE_END = re.compile(r"\r\n?|\n")


_log = logging.getLogger("ragmeter.data")


@dataclass
class Table:
    """Records of one file and where they came from."""

    records: list[tuple[int | None, Any]]
    problems: list[RecordProblem] = field(default_factory=list)
    #: jsonl | json | csv | tsv | parquet | records
    container: str = "jsonl"
    source: str = "<data>"
    hint: str | None = None

    @property
    def tabular(self) -> bool:
        """Cells are text (CSV/TSV): list and object cells need parsing."""
        return self.container in ("csv", "tsv")


def decode_text(raw: bytes, source: str) -> str:
    """UTF-8 text of ``raw`` (BOM dropped) or a :class:`DataError` saying what the file is."""
    if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        raise DataError(RecordProblem(source, None, None, "file is UTF-32 encoded; save it as "
                                                          "UTF-8"))
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(RecordProblem(source, None, None, "file is UTF-16 encoded; save it as "
                                                          "UTF-8 (e.g. iconv -f utf-16 -t utf-8)"))
    if b"\x00" in raw[:8192]:
        raise DataError(RecordProblem(source, None, None, "binary file (NUL bytes), not text; "
                                                          "expected JSON Lines, JSON, CSV, TSV "
                                                          "or Parquet"))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = raw[exc.start:exc.start + 1].hex()
        raise DataError(RecordProblem(
            source, line, None,
            f"not UTF-8 text: byte 0x{byte} at column {col}; the file may be in a legacy "
            f"encoding such as cp1251 — convert it, e.g. iconv -f cp1251 -t utf-8")) from None


def read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    source = str(p)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise DataError(RecordProblem(source, None, None, "file not found")) from None
    except IsADirectoryError:
        raise DataError(RecordProblem(source, None, None, "is a folder, expected a file (for a "
                                      "BEIR folder use ragmeter.data.beir.load_beir)")) from None
    except PermissionError:
        raise DataError(RecordProblem(source, None, None, "permission denied")) from None
    except OSError as exc:
        raise DataError(RecordProblem(source, None, None, f"cannot read: {exc.strerror}")) from None


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8, BOM dropped) with clear errors."""
    raw = read_bytes(path)
    _log.debug("read %s (%d bytes)", path, len(raw))
    return decode_text(raw, str(path))


def split_lines(text: str) -> list[str]:
    """``text`` split at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (never at U+2028, U+0085…)."""
    if "\r" not in text:
        return text.split("\n")
    return _LINE_END.split(text)


def read_lines(path: str | Path) -> list[tuple[int, str]]:
    """The non-blank lines of a text file with their line numbers, read the one way: UTF-8 with
    or without a BOM (anything else is a clear :class:`DataError`), any line ending."""
    return [(n, line) for n, line in enumerate(split_lines(read_text(path)), start=1)
            if line.strip()]


def _line_sep(text: str) -> str:
    """The character that ends lines in ``text``: ``\\r`` in an old-Mac (CR-only) file."""
    return "\r" if "\n" not in text and "\r" in text else "\n"


def has_lone_surrogate(obj: Any, _depth: int = 0) -> bool:
    """Whether a string anywhere in ``obj`` holds an unpaired surrogate (not valid Unicode)."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if _depth > 50:
        return False
    if isinstance(obj, Mapping):
        return any(has_lone_surrogate(k, _depth + 1) or has_lone_surrogate(v, _depth + 1)
                   for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return any(has_lone_surrogate(v, _depth + 1) for v in obj)
    return False


class _Dupes:
    """``object_pairs_hook`` that remembers repeated keys."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in pairs:
            if k in d:
                self.keys.append(k)
            d[k] = v
        return d


def _loads(text: str) -> tuple[Any, list[str]]:
    hook = _Dupes()
    return jsontext.loads(text, object_pairs_hook=hook), hook.keys


def _line_of(text: str, pos: int, sep: str = "\n") -> int:
    return text.count(sep, 0, pos) + 1


def _record_problems(source: str, line: int | None, obj: Any, dupes: list[str]
                     ) -> list[RecordProblem]:
    out = [RecordProblem(source, line, k, f"key '{k}' repeated in one object") for k in
           dict.fromkeys(dupes)]
    if has_lone_surrogate(obj):
        out.append(RecordProblem(source, line, None, "holds a lone surrogate (e.g. \\ud800): "
                                                     "not valid Unicode text"))
    return out


def _read_jsonl(text: str, source: str) -> Table:
    t = Table([], container="jsonl", source=source)
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        obj, probs = parse_json_line(line, source, lineno)
        if probs:
            t.problems.extend(probs)
            continue
        t.records.append((lineno, obj))
    return t


def parse_json_line(line: str, source: str, lineno: int | None
                    ) -> tuple[Any, list[RecordProblem]]:
    """One JSON Lines record: ``(object, [])``, or ``(None, problems)`` for invalid JSON, a key
    repeated in one object, a lone surrogate or nesting too deep."""
    try:
        obj, dupes = _loads(line)
    except json.JSONDecodeError as exc:
        return None, [RecordProblem(source, lineno, None,
                                    f"invalid JSON at column {exc.colno}: {exc.msg}")]
    except RecursionError:
        return None, [RecordProblem(source, lineno, None, "JSON nested too deeply")]
    probs = _record_problems(source, lineno, obj, dupes)
    return (None, probs) if probs else (obj, [])


def _json_items(text: str, start: int) -> list[tuple[int, Any, list[str]]] | None:
    """Decode the JSON array at ``text[start] == '['`` item by item with line numbers."""
    items: list[tuple[int, Any, list[str]]] = []
    ws = re.compile(r"[\s,]*")
    sep = _line_sep(text)
    pos = start + 1
    while True:
        m = ws.match(text, pos)
        pos = m.end() if m else pos
        if pos >= len(text):
            return None
        if text[pos] == "]":
            return items
        hook = _Dupes()
        dec = json.JSONDecoder(object_pairs_hook=hook)
        try:
            obj, end = dec.raw_decode(text, pos)
        except (ValueError, RecursionError):  # a JSONDecodeError, or an over-long integer
            return None
        items.append((_line_of(text, pos, sep), obj, hook.keys))
        pos = end


def _read_json(text: str, source: str) -> Table:
    t = Table([], container="json", source=source)
    try:
        data, dupes = _loads(text)
    except json.JSONDecodeError as exc:
        line = _line_of(text, exc.pos, _line_sep(text))
        col = exc.pos - max(text.rfind("\n", 0, exc.pos), text.rfind("\r", 0, exc.pos))
        msg = f"invalid JSON at column {col}: {exc.msg}"
        if _cut_short(text, exc):
            msg = (f"truncated at byte {len(text.encode('utf-8', 'surrogatepass'))}: the JSON "
                   "document is not closed")
        t.problems.append(RecordProblem(source, line, None, msg))
        return t
    except RecursionError:
        t.problems.append(RecordProblem(source, None, None, "JSON nested too deeply"))
        return t
    start = -1
    if isinstance(data, Mapping):
        key = next((k for k in ARRAY_KEYS if isinstance(data.get(k), list)), None)
        if key is None:  # one object: one record
            t.container = "jsonl"
            probs = _record_problems(source, 1, data, dupes)
            t.problems.extend(probs)
            if not probs:
                t.records.append((_line_of(text, text.index("{"), _line_sep(text)), data))
            return t
        items = data[key]
        m = re.search(r'"' + key + r'"\s*:\s*\[', text)
        start = m.end() - 1 if m else -1
    elif isinstance(data, list):
        items = data
        start = text.index("[")
    else:
        t.problems.append(RecordProblem(source, None, None, "expected a list of records (a JSON "
                                        "array, JSON Lines, or {\"samples\": [...]}), got "
                                        f"{type(data).__name__}"))
        return t
    located = _json_items(text, start) if start >= 0 else None
    if located is None or len(located) != len(items):
        located = [(None, obj, []) for obj in items]  # type: ignore[misc]
    for line, obj, dk in located:
        probs = _record_problems(source, line, obj, dk)
        if probs:
            t.problems.extend(probs)
        else:
            t.records.append((line, obj))
    return t


def _read_csv(text: str, source: str, delimiter: str) -> Table:
    t = Table([], container="tsv" if delimiter == "\t" else "csv", source=source)
    csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return t
    except csv.Error as exc:
        t.problems.append(RecordProblem(source, 1, None, f"invalid CSV header: {exc}"))
        return t
    header = [h.strip() for h in header]
    seen: set[str] = set()
    for h in header:
        if h in seen:
            t.problems.append(RecordProblem(source, 1, h, f"column '{h}' repeated in the header"))
        seen.add(h)
    if t.problems:
        return t
    start = reader.line_num + 1
    try:
        for row in reader:
            if not any(c.strip() for c in row):
                start = reader.line_num + 1
                continue
            if len(row) > len(header):
                t.problems.append(RecordProblem(source, start, None,
                                                f"{len(row)} cells but {len(header)} header "
                                                f"columns"))
            else:
                rec = {k: v for k, v in zip(header, row, strict=False) if v != "" and k}
                if has_lone_surrogate(rec):
                    t.problems.append(RecordProblem(source, start, None,
                                                    "holds a lone surrogate"))
                else:
                    t.records.append((start, rec))
            start = reader.line_num + 1
    except csv.Error as exc:
        t.problems.append(RecordProblem(source, reader.line_num, None, f"invalid CSV: {exc}"))
    return t


def _read_parquet(path: Path, source: str) -> Table:
    from ragmeter.errors import require

    pq: Any = require("pyarrow.parquet", "parquet", "Parquet files")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own error types
        raise DataError(RecordProblem(source, None, None,
                                      f"unreadable Parquet file: {type(exc).__name__}: {exc}")
                        ) from None
    t = Table([], container="parquet", source=source)
    for i, row in enumerate(rows, start=1):
        rec = {k: v for k, v in row.items() if v is not None}
        t.records.append((i, rec))
    return t


def looks_like_trec(text: str) -> bool:
    """Whether the first data lines are TREC qrels/run lines (``qid 0|Q0 doc n ...``)."""
    lines = [ln for ln in split_lines(text[:65536])[:20]
             if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(lines) and all(_TREC_LINE.match(ln) for ln in lines[:5])


def read_table(path: str | Path) -> Table:
    """Read any supported container, detected by content."""
    import time

    p = Path(path)
    source = str(p)
    t0 = time.perf_counter()
    raw = read_bytes(p)
    if raw.startswith(b"PAR1"):
        table = _read_parquet(p, source)
    else:
        table = parse_text(decode_text(raw, source), source)
    _log.info("read %s: %d record(s) from %s (%d bytes) in %.3f s%s", source,
              len(table.records), table.container, len(raw), time.perf_counter() - t0,
              f", {len(table.problems)} problem(s)" if table.problems else "")
    return table


def parse_text(text: str, source: str = "<data>") -> Table:
    """Records of a text (JSON Lines, JSON, CSV or TSV), detected by content."""
    body = text.lstrip()
    if not body:
        t = Table([], container="jsonl", source=source)
        t.problems.append(RecordProblem(source, None, None, "empty file: no records"))
        return t
    if body[0] == "[":
        return _read_json(text, source)
    if body[0] == "{":
        # a JSON document (one object, or an object holding the records) or JSON Lines
        try:
            data, _ = _loads(text)
        except json.JSONDecodeError as exc:
            first = split_lines(body)[0]
            if _json_value(first) or not _cut_short(text, exc):
                return _read_jsonl(text, source)
            # one JSON document cut short: one problem, not one per line
            t = Table([], container="json", source=source)
            t.problems.append(RecordProblem(source, _line_of(text, exc.pos, _line_sep(text)),
                                            None, f"truncated at byte "
                                            f"{len(text.encode('utf-8', 'surrogatepass'))}: "
                                            "the JSON document is not closed"))
            return t
        except RecursionError:
            return _read_jsonl(text, source)
        if isinstance(data, Mapping):  # records under a key, or one (pretty-printed) record
            return _read_json(text, source)
        return _read_jsonl(text, source)
    if "\n" not in body.strip() and body[0] in '"-0123456789tfn':
        try:
            scalar = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            pass
        else:
            t = Table([], container="json", source=source)
            t.problems.append(RecordProblem(source, None, None, "expected a list of records "
                                            "(a JSON array, JSON Lines, or {\"samples\": [...]}), "
                                            f"got a JSON {type(scalar).__name__}"))
            return t
    first = split_lines(body[:65536])[0]
    if looks_like_trec(text):
        t = Table([], container="csv", source=source)
        t.problems.append(RecordProblem(source, None, None, "looks like a TREC qrels/run file, "
                                        "not a samples file"))
        t.hint = "load it with --qrels FILE / --run FILE (ragmeter.data.load_qrels / load_run)"
        return t
    delimiter = "\t" if first.count("\t") > first.count(",") else ","
    return _read_csv(text, source, delimiter)


def _json_value(line: str) -> bool:
    """Whether ``line`` is one whole JSON value (the first line of a JSON Lines file)."""
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether a JSON text failed because it ended (a document cut short)."""
    body = text.rstrip()
    return exc.pos >= len(body) - 1 or exc.msg.startswith("Unterminated string") or (
        exc.msg == "Expecting value" and body[exc.pos:].isalpha())


def cell_list(value: str) -> Any:
    """A list written in one CSV cell: JSON (``["a", "b"]``), a Python repr (``['a', 'b']``, as
    pandas/RAGAS ``to_csv`` write it; read with :func:`ast.literal_eval`, literals only) or
    ``a|b``. Anything else is returned unchanged (then validation names the field)."""
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            pass
        if len(text) <= CSV_FIELD_LIMIT:
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return value
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
        return value
    return [part.strip() for part in text.split("|") if part.strip()]


def cell_obj(value: str) -> Any:
    """A JSON (or Python-literal) object in one CSV cell."""
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value
