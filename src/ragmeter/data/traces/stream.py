"""A trace export's records, read in a bounded window whatever the file's size.

Containers, detected by content: JSON Lines (one record a line), a JSON document (a list of
records, an object holding one under a records key, or OTLP's ``{"resourceSpans": [...]}``
whose spans are read one at a time however the document is laid out, one line or many),
CSV/TSV and Parquet (row batches). Memory holds one record (a span, a trace, a CSV row) at a
time plus a read buffer; nothing reads the whole file.

A file that ends inside a record (a JSON value not closed, a CSV quoted cell not closed) is one
:class:`~ragmeter.errors.DataError` saying ``truncated at byte N``: a cut file cannot say which
requests lost spans, so it is never imported in part.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ragmeter.data.reading import ARRAY_KEYS, CSV_FIELD_LIMIT, decode_text
from ragmeter.errors import DataError, RecordProblem

#: characters read at a time from a JSON document
CHUNK = 1 << 20
#: the first line of a file longer than this is read as one JSON document, not JSON Lines
SNIFF = 1 << 20
#: the most digits of an integer literal converted (Python's own guard is 4,300)
MAX_INT_DIGITS = 4000


class BigInt(str):
    """An integer literal too long to convert: kept as its digits, refused where read."""


def _parse_int(text: str) -> int | BigInt:
    return BigInt(text) if len(text) > MAX_INT_DIGITS else int(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


@dataclass
class OtlpSpan:
    """One span of a streamed OTLP document with what it inherits: its resource's attributes
    (as read so far), its scope and where it sits (``resourceSpans[i].scopeSpans[j].spans[k]``)."""

    raw: Any
    resource: dict[str, Any]
    where: str
    #: the record (OTLP document) it came from: spans of one document share it
    doc: int = 0


@dataclass
class Records:
    """The records of one file, one at a time (iterate once)."""

    path: Path
    container: str = "jsonl"
    #: unreadable records (invalid JSON lines...), each a problem of its line
    problems: list[RecordProblem] = field(default_factory=list)
    #: raw text of unreadable lines, for tying them to a trace
    unreadable: dict[int, str] = field(default_factory=dict)
    size: int = 0

    @property
    def source(self) -> str:
        return str(self.path)

    @property
    def tabular(self) -> bool:
        return self.container in ("csv", "tsv")

    def truncated(self, line: int | None, what: str) -> DataError:
        return DataError(RecordProblem(self.source, line, None,
                                       f"truncated at byte {self.size}: {what}"),
                         hint="the file was cut short (an interrupted export or copy); "
                              "export it again. A cut file is never imported in part: it "
                              "cannot say which requests lost spans")


def open_records(path: str | Path) -> tuple[Records, Iterator[tuple[int | None, Any]]]:
    """The container of ``path`` and an iterator of its ``(line, record)`` pairs."""
    p = Path(path)
    source = str(p)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            head = fh.read(SNIFF + 1)
    except FileNotFoundError:
        raise DataError(RecordProblem(source, None, None, "file not found")) from None
    except IsADirectoryError:
        raise DataError(RecordProblem(source, None, None, "is a folder, expected a file")
                        ) from None
    except OSError as exc:
        raise DataError(RecordProblem(source, None, None, f"cannot read: {exc.strerror}")
                        ) from None
    recs = Records(p, size=size)
    if head.startswith(b"PAR1"):
        recs.container = "parquet"
        return recs, _parquet(recs)
    _check_head(head, source)
    text = head.decode("utf-8-sig", errors="ignore").lstrip()
    if not text:
        raise DataError(RecordProblem(source, None, None, "empty file: no records"))
    if text[0] == "{":
        first, newline, _ = text.partition("\n")
        if newline or len(head) <= SNIFF:  # the first line is whole: JSON Lines if it parses
            try:
                json.loads(first)
            except (ValueError, RecursionError):
                pass
            else:
                recs.container = "jsonl"
                return recs, _jsonl(recs)
    if text[0] in "[{":
        recs.container = "json"
        return recs, _json_doc(recs)
    first_line = text.split("\n", 1)[0]
    recs.container = "tsv" if first_line.count("\t") > first_line.count(",") else "csv"
    return recs, _csv(recs, "\t" if recs.container == "tsv" else ",")


def _check_head(head: bytes, source: str) -> None:
    """UTF-16/32, binary and non-UTF-8 files: the reading layer's clear errors."""
    sample = head[:8192]
    cut = len(sample)
    while cut > 0 and cut > len(sample) - 4:  # do not split a multi-byte character
        try:
            sample[:cut].decode("utf-8")
            break
        except UnicodeDecodeError as exc:
            if exc.start < cut - 4:
                break
            cut -= 1
    decode_text(sample[:cut], source)


def _open_text(recs: Records) -> IO[str]:
    return recs.path.open("r", encoding="utf-8-sig", newline="")


def _unicode_error(recs: Records, line: int | None) -> DataError:
    return DataError(RecordProblem(recs.source, line, None,
                                   "not UTF-8 text; convert the file to UTF-8"))


# --- JSON Lines ---------------------------------------------------------------------------------
def _jsonl(recs: Records) -> Iterator[tuple[int | None, Any]]:
    from ragmeter.data.loaders import record_limits

    max_bytes = record_limits()[0]
    with recs.path.open("rb") as fh:
        lineno = 0
        offset = 0
        while True:
            raw = fh.readline(max_bytes + 1)
            if not raw:
                return
            lineno += 1
            offset += len(raw)
            if lineno == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if len(raw) > max_bytes and not raw.endswith(b"\n"):
                size = len(raw)
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(1 << 20)
                    size += len(raw)
                    offset += len(raw)
                recs.problems.append(RecordProblem(recs.source, lineno, None, (
                    f"record of {size:,} bytes is longer than the limit of {max_bytes:,} "
                    "(raise it with RAGMETER_MAX_RECORD_BYTES if this is intended)")))
                continue
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _unicode_error(recs, lineno) from None
            try:
                obj = _DECODER.decode(text)
            except (ValueError, RecursionError) as exc:
                if not raw.endswith(b"\n") and offset >= recs.size and _cut_short(text, exc):
                    raise recs.truncated(lineno, f"line {lineno} ends inside a JSON value"
                                         ) from None
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else (
                    "nested too deeply" if isinstance(exc, RecursionError) else str(exc))
                col = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
                recs.problems.append(RecordProblem(recs.source, lineno, None,
                                                   f"invalid JSON{col}: {msg}"))
                recs.unreadable[lineno] = text[:1 << 16]
                continue
            yield lineno, obj


def _cut_short(text: str, exc: BaseException) -> bool:
    """Whether a JSON value failed because its text ended (not because of a wrong character)."""
    if not isinstance(exc, json.JSONDecodeError):
        return False
    body = text.rstrip()
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(body) - 1 or (
        exc.msg == "Expecting value" and body[exc.pos:].isalpha())


# --- one JSON document (streamed) ---------------------------------------------------------------
class _Reader:
    """A JSON text read in chunks: values decoded one at a time, containers walked."""

    def __init__(self, recs: Records, fh: IO[str]) -> None:
        self.recs, self.fh = recs, fh
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False

    def _more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.fh.read(CHUNK)
        except UnicodeDecodeError:
            raise _unicode_error(self.recs, self.line) from None
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _advance(self, end: int) -> None:
        self.line += self.buf.count("\n", self.pos, end)
        self.pos = end

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            buf, pos, n = self.buf, self.pos, len(self.buf)
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            self._advance(pos)
            if pos < n:
                return buf[pos]
            if not self._more():
                return ""

    def take(self, ch: str, what: str) -> None:
        got = self.peek()
        if got != ch:
            self._fail(got, what)
        self.pos += 1

    def _fail(self, got: str, what: str) -> None:
        if got == "":
            raise self.recs.truncated(self.line, f"the file ends where {what} was expected")
        raise DataError(RecordProblem(self.recs.source, self.line, None,
                                      f"invalid JSON: expected {what}, got {got!r}"))

    def value(self) -> Any:
        """The next JSON value, decoded whole (read on while the buffer ends inside it)."""
        from ragmeter.data.loaders import record_limits

        first = self.peek()
        if first == "":
            self._fail("", "a value")
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if _cut_short(self.buf, exc):
                    if len(self.buf) - self.pos > record_limits()[0]:
                        raise DataError(RecordProblem(self.recs.source, self.line, None, (
                            f"a record longer than the limit of {record_limits()[0]:,} bytes "
                            "(raise it with RAGMETER_MAX_RECORD_BYTES if this is intended)"))
                        ) from None
                    if self._more():
                        continue
                    raise self.recs.truncated(self.line, "a JSON value that starts on line "
                                              f"{self.line} is not closed") from None
                line = self.line + self.buf.count("\n", self.pos, exc.pos)
                raise DataError(RecordProblem(self.recs.source, line, None,
                                              f"invalid JSON: {exc.msg}")) from None
            except RecursionError:
                raise DataError(RecordProblem(self.recs.source, self.line, None,
                                              "JSON nested too deeply")) from None
            if end >= len(self.buf) and first not in "[{\"" and self._more():
                continue  # a number may go on in the next chunk
            self._advance(end)
            return obj

    def key(self) -> str:
        k = self.value()
        if not isinstance(k, str):
            self._fail(repr(k), "an object key")
        self.take(":", "':'")
        return k

    def items(self) -> Iterator[int]:
        """Walk an array: yields before each item (the caller reads it)."""
        self.take("[", "'['")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            self.peek()
            yield self.line
            c = self.peek()
            self.pos += 1 if c in ",]" else 0
            if c == "]":
                return
            if c != ",":
                self._fail(c, "',' or ']'")

    def members(self) -> Iterator[str]:
        """Walk an object: yields each key (the caller reads its value)."""
        self.take("{", "'{'")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            yield self.key()
            c = self.peek()
            self.pos += 1 if c in ",}" else 0
            if c == "}":
                return
            if c != ",":
                self._fail(c, "',' or '}'")


def _json_doc(recs: Records) -> Iterator[tuple[int | None, Any]]:
    with _open_text(recs) as fh:
        r = _Reader(recs, fh)
        doc = 0
        while r.peek():
            c = r.peek()
            line = r.line
            if c == "[":
                for item_line in r.items():
                    yield item_line, r.value()
            elif c == "{":
                yield from _object(r, line, doc)
            else:
                raise DataError(RecordProblem(recs.source, line, None, (
                    "expected a list of records (a JSON array, JSON Lines, or "
                    "{\"samples\": [...]}), got a JSON scalar")))
            doc += 1


def _object(r: _Reader, line: int, doc: int) -> Iterator[tuple[int | None, Any]]:
    """A top-level object: OTLP spans one at a time, a records list item by item, or (neither)
    the object itself as one record."""
    rest: dict[str, Any] = {}
    streamed = False
    for key in r.members():
        if key == "resourceSpans" and r.peek() == "[":
            streamed = True
            yield from _resource_spans(r, doc)
        elif key in ARRAY_KEYS and r.peek() == "[":
            streamed = True
            for item_line in r.items():
                yield item_line, r.value()
        else:
            if key in rest:
                raise DataError(RecordProblem(r.recs.source, line, key,
                                              f"key '{key}' repeated in one object"))
            rest[key] = r.value()
    if not streamed:
        yield line, rest


def _resource_spans(r: _Reader, doc: int) -> Iterator[tuple[int | None, Any]]:
    for i, _ in enumerate(r.items()):
        if r.peek() != "{":
            yield r.line, OtlpSpan(r.value(), {}, f"resourceSpans[{i}]", doc)
            continue
        resource: dict[str, Any] = {}  # {"raw": the resource object}, shared by its spans
        for key in r.members():
            if key == "resource":
                resource["raw"] = r.value()
                resource.pop("parsed", None)
            elif key in ("scopeSpans", "instrumentationLibrarySpans") and r.peek() == "[":
                for j, _ in enumerate(r.items()):
                    where = f"resourceSpans[{i}].scopeSpans[{j}]"
                    if r.peek() != "{":
                        yield r.line, OtlpSpan(r.value(), resource, where, doc)
                        continue
                    for skey in r.members():
                        if skey == "spans" and r.peek() == "[":
                            for k, line in enumerate(r.items()):
                                yield line, OtlpSpan(r.value(), resource,
                                                     f"{where}.spans[{k}]", doc)
                        else:
                            r.value()
            else:
                r.value()


# --- CSV / TSV ----------------------------------------------------------------------------------
class _Lines:
    """The lines a CSV reader takes, kept until its row is out (to see a cut quoted cell)."""

    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.raw: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = next(self.fh)
        self.raw.append(line)
        return line


def _csv(recs: Records, delimiter: str) -> Iterator[tuple[int | None, Any]]:
    csv.field_size_limit(CSV_FIELD_LIMIT)
    with _open_text(recs) as fh:
        lines = _Lines(fh)
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(RecordProblem(recs.source, 1, None, f"invalid CSV header: {exc}")
                            ) from None
        seen: set[str] = set()
        for h in header:
            if h in seen:
                raise DataError(RecordProblem(recs.source, 1, h,
                                              f"column '{h}' repeated in the header"))
            seen.add(h)
        lines.raw.clear()
        start = reader.line_num + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError:
                raise _unicode_error(recs, start) from None
            except csv.Error as exc:
                raise DataError(RecordProblem(recs.source, reader.line_num, None,
                                              f"invalid CSV: {exc}")) from None
            raw = "".join(lines.raw)
            lines.raw.clear()
            if raw.count('"') % 2 and _at_end(fh):
                col = header[len(row) - 1] if 0 < len(row) <= len(header) else "?"
                raise recs.truncated(start, f"the row starting on line {start} ends inside "
                                            f"a quoted cell (column '{col}')")
            line, start = start, reader.line_num + 1
            if not any(c.strip() for c in row):
                continue
            if len(row) > len(header):
                recs.problems.append(RecordProblem(recs.source, line, None,
                                                   f"{len(row)} cells but {len(header)} "
                                                   "header columns"))
                continue
            yield line, {k: v for k, v in zip(header, row, strict=False) if v != "" and k}


def _at_end(fh: IO[str]) -> bool:
    pos = fh.tell()
    more = fh.read(1)
    fh.seek(pos)
    return more == ""


# --- Parquet ------------------------------------------------------------------------------------
def _parquet(recs: Records) -> Iterator[tuple[int | None, Any]]:
    from ragmeter.errors import require

    pq: Any = require("pyarrow.parquet", "parquet", "Parquet files")
    try:
        pf = pq.ParquetFile(recs.path)
        batches = pf.iter_batches(batch_size=2048)
    except Exception as exc:  # pyarrow raises its own error types
        raise DataError(RecordProblem(recs.source, None, None,
                                      f"unreadable Parquet file: {type(exc).__name__}: {exc}")
                        ) from None
    n = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # a cut or corrupt row group
            raise DataError(RecordProblem(recs.source, n + 1, None, "unreadable Parquet row "
                                          f"group: {type(exc).__name__}: {exc}")) from None
        for row in batch.to_pylist():
            n += 1
            yield n, {k: v for k, v in row.items() if v is not None}


def file_size(path: str | Path) -> int:
    return os.path.getsize(path)
