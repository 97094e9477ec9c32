"""Qrels and runs: TREC text files and JSON dicts, loaded and saved, every bad line reported.

* qrels, TREC: ``qid iter docid rel`` (whitespace separated; ``iter`` is ignored);
  JSON: ``{qid: {docid: rel}}`` with integer grades.
* run, TREC: ``qid Q0 docid rank score tag``; JSON: ``{qid: {docid: score}}``.
  The ``rank`` column is ignored (as trec_eval does): ranking comes from scores and the tie policy.

The format is detected from the content: the first non-blank character ``{`` → JSON; a header
``query-id corpus-id score`` → BEIR qrels TSV (``qid docid rel``). Every data line has exactly
its format's columns (qrels 4, run 6, BEIR qrels 3): a line with fewer (a truncated file, a
missing tag) or more (a space inside an id shifts every column after it, so the "score" read
would be another column's) is an error naming the file, the line and the column, as is a
``#`` comment line (neither format has comments; a commented-out line is not silently
dropped). Blank lines are skipped; a UTF-8 byte-order mark is dropped everywhere. A doc id
given twice for the same query is an error naming both lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragmeter.data import jsontext
from ragmeter.data.grades import MAX_GRADE, grade_problem
from ragmeter.data.trec_columns import column, line_tokens, parse_grades, parse_scores
from ragmeter.errors import DataError, RecordProblem

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
Format = Literal["auto", "trec", "json"]


def _detect(text: str, fmt: Format) -> Literal["trec", "json"]:
    if fmt != "auto":
        return fmt
    return "json" if text.lstrip()[:1] == "{" else "trec"


def _read(path: str | Path) -> str:
    from ragmeter.data.reading import read_text

    return read_text(path)


BEIR_HEADER = ("query-id", "corpus-id", "score")
#: relevance grades are stored as 32-bit integers downstream
GRADE_LIMIT = 2**31
#: the columns of each TREC layout, in order
QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")


def line_problem(parts: list[bytes] | list[str], columns: tuple[str, ...], source: str,
                 lineno: int, kind: str) -> RecordProblem | None:
    """The problem of a non-blank line's columns (``parts``: its ``split()``), or None: a ``#``
    comment line, or a count other than ``len(columns)``."""
    first = parts[0]
    if first[:1] in ("#", b"#"):
        return RecordProblem(source, lineno, None, f"a '#' comment line: {kind} files hold data "
                             f"lines only ('{' '.join(columns)}'); delete the line")
    n, want = len(parts), len(columns)
    if n == want:
        return None
    layout = " ".join(columns)
    if n < want:
        return RecordProblem(source, lineno, columns[n], f"missing: expected {want} columns "
                             f"'{layout}', got {n} (a truncated line?)")
    return RecordProblem(source, lineno, columns[-1], f"expected {want} columns '{layout}', got "
                         f"{n}: more after '{columns[-1]}' (a space inside an id shifts the "
                         "columns after it; or another layout)")


def _parse_trec(text: str, source: str, kind: Literal["qrels", "run"]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    first_line: dict[tuple[str, str], int] = {}
    problems: list[RecordProblem] = []
    columns: tuple[str, ...] = QRELS_COLUMNS if kind == "qrels" else RUN_COLUMNS
    beir = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        parts = line.split()
        if not parts:
            continue
        if not beir and kind == "qrels" and tuple(p.lower() for p in parts[:3]) == BEIR_HEADER \
                and not first_line and not problems:
            beir, columns = True, BEIR_HEADER
            continue
        bad = line_problem(parts, columns, source, lineno, kind)
        if bad is not None:
            problems.append(bad)
            continue
        if beir:
            qid, docid, raw = parts[0], parts[1], parts[2]
        else:
            qid, docid = parts[0], parts[2]
            raw = parts[3] if kind == "qrels" else parts[4]
        value: Any
        try:
            if kind == "qrels":
                value = int(raw)
                if grade_problem(value) is not None:
                    problems.append(RecordProblem(source, lineno, "rel", str(grade_problem(value))))
                    continue
            else:
                value = float(raw)
                if math.isnan(value):
                    raise ValueError(raw)
        except ValueError:
            field = "rel" if kind == "qrels" else "score"
            want = "an integer grade" if kind == "qrels" else "a number"
            problems.append(RecordProblem(source, lineno, field, f"must be {want}, got {raw!r}"))
            continue
        key = (qid, docid)
        if key in first_line:
            problems.append(RecordProblem(
                source, lineno, "docid",
                f"doc id '{docid}' repeated for query '{qid}' (first on line {first_line[key]})"))
            continue
        first_line[key] = lineno
        out.setdefault(qid, {})[docid] = value
    if problems:
        raise DataError(problems)
    return out


def _parse_json(text: str, source: str, kind: Literal["qrels", "run"]) -> dict[str, dict[str, Any]]:
    dupes: list[RecordProblem] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for key, value in pairs:
            if key in d:
                dupes.append(RecordProblem(source, None, key, f"key '{key}' repeated in {kind}"))
            d[key] = value
        return d

    try:
        data = jsontext.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        hint = None
        if exc.msg.startswith("Extra data"):
            hint = (f"this looks like JSON Lines records (samples or an evalset), not {kind}: "
                    "give it with --samples / --evalset")
        raise DataError(RecordProblem(source, exc.lineno, None, f"invalid JSON: {exc.msg}"),
                        hint=hint) from None
    except RecursionError:
        raise DataError(RecordProblem(source, None, None, "JSON nested too deeply")) from None
    if dupes:
        raise DataError(dupes)
    return validate_mapping(data, source, kind)


def validate_mapping(data: Any, source: str, kind: Literal["qrels", "run"]) -> dict[str, dict[str, Any]]:
    """Check a ``{qid: {docid: value}}`` mapping; returns a clean copy with str keys."""
    if not isinstance(data, Mapping):
        raise DataError(RecordProblem(source, None, None,
                                      f"{kind} must be a JSON object {{qid: {{docid: value}}}}"))
    out: dict[str, dict[str, Any]] = {}
    problems: list[RecordProblem] = []
    for qid, docs in data.items():
        if not isinstance(docs, Mapping):
            problems.append(RecordProblem(source, None, str(qid),
                                          f"query '{qid}': expected an object {{docid: value}}"))
            continue
        clean: dict[str, Any] = {}
        for docid, value in docs.items():
            if kind == "qrels":
                ok = isinstance(value, int) and not isinstance(value, bool)
                if not ok and isinstance(value, float) and value.is_integer():
                    value, ok = int(value), True
                if ok and grade_problem(value) is not None:
                    problems.append(RecordProblem(source, None, f"{qid}/{docid}",
                                                  f"query '{qid}', doc '{docid}': "
                                                  f"{grade_problem(value)}"))
                    continue
            else:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and not math.isnan(value)
                value = float(value) if ok else value
            if not ok:
                want = "an integer grade" if kind == "qrels" else "a number"
                problems.append(RecordProblem(source, None, f"{qid}/{docid}",
                                              f"must be {want}, got {value!r}"))
                continue
            clean[str(docid)] = value
        out[str(qid)] = clean
    if problems:
        raise DataError(problems)
    return out


def load_qrels(path: str | Path, *, format: Format = "auto") -> Qrels:
    """Read qrels from a TREC file or a JSON ``{qid: {docid: rel}}`` file."""
    text = _read(path)
    if _detect(text, format) == "json":
        qrels = _parse_json(text, str(path), "qrels")
    else:
        fast = _fast_qrels(text)
        qrels = fast if fast is not None else _parse_trec(text, str(path), "qrels")
    if not any(qrels.values()):  # an empty file, {} or only empty queries: nothing to score
        raise DataError(RecordProblem(str(path), None, None, "holds no relevance judgments "
                                      "(empty file, {} or queries without documents)"))
    return qrels


def load_run(path: str | Path, *, format: Format = "auto") -> Run:
    """Read a run from a TREC file or a JSON ``{qid: {docid: score}}`` file."""
    text = _read(path)
    if _detect(text, format) == "json":
        return _parse_json(text, str(path), "run")
    return _parse_trec(text, str(path), "run")


def save_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path, *,
               format: Literal["trec", "json"] = "trec") -> None:
    """Write qrels as TREC (``qid 0 docid rel``) or JSON."""
    p = Path(path)
    if format == "json":
        p.write_text(json.dumps(qrels, ensure_ascii=False, indent=1), encoding="utf-8")
        return
    lines = [f"{q} 0 {d} {int(r)}" for q, docs in qrels.items() for d, r in docs.items()]
    p.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


def save_run(run: Mapping[str, Mapping[str, float]], path: str | Path, *,
             format: Literal["trec", "json"] = "trec", tag: str = "ragmeter") -> None:
    """Write a run as TREC (ranked by score desc, then doc id desc, as trec_eval reads it) or JSON."""
    p = Path(path)
    if format == "json":
        p.write_text(json.dumps(run, ensure_ascii=False, indent=1), encoding="utf-8")
        return
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        for rank, (d, s) in enumerate(ranked, start=1):
            lines.append(f"{q} Q0 {d} {rank} {s!r} {tag}")
    p.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


# --- Streaming a TREC run: consecutive lines of one query form a group ------------------------

#: Bytes read at a time by :func:`iter_run_blocks` (a query longer than this is read whole).
RUN_BLOCK_BYTES = 8 * 1024 * 1024
#: Longest query or document id accepted in a streamed run, in bytes (longer: an input error).
MAX_ID_BYTES = 1024


class RunNotGrouped(Exception):
    """A TREC run whose lines of one query are not consecutive (it cannot be streamed)."""


@dataclass
class RunBlock:
    """Complete query groups of a TREC run, in file order.

    Ids are NumPy byte-string arrays (UTF-8, no Python object per line). Group ``g`` is query
    ``qids[g]`` (bytes) with entries ``starts[g]:starts[g + 1]`` of ``line_qids`` / ``docs`` /
    ``scores`` / ``lines`` (1-based line numbers).
    """

    qids: list[bytes]
    starts: np.ndarray
    line_qids: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    lines: np.ndarray


_Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _vector_columns(chunk: bytes, first_line: int) -> _Columns | None:
    """``(qids, docs, scores, lines, line starts)`` of ``chunk`` parsed with array operations
    (line starts: the byte offset of each line in ``chunk``).

    None when a line needs the line-by-line path: not 6 columns, a ``#`` comment, a bad score,
    an id longer than the vectorised width. Blank lines are skipped here.
    """
    tokens = line_tokens(chunk, len(RUN_COLUMNS))
    if tokens is None:
        return None
    data = tokens[4]
    if not data.size:
        none = np.zeros(0, np.int64)
        return np.zeros(0, "S1"), np.zeros(0, "S1"), np.zeros(0), none, none
    qids, docs, raw_scores = column(tokens, 0), column(tokens, 2), column(tokens, 4)
    if qids is None or docs is None or raw_scores is None:
        return None
    try:
        scores = parse_scores(raw_scores)
    except ValueError:
        return None
    if bool(np.isnan(scores).any()):
        return None
    return qids, docs, scores, data.astype(np.int64) + first_line, tokens[1][tokens[3]]


def _fast_qrels(text: str) -> Qrels | None:
    """TREC qrels ``qid iter docid rel`` parsed with array operations; None when any line needs
    the line-by-line parser (its messages): a BEIR header, a comment, a line not of 4 columns,
    a non-integer or out-of-range grade, a long id, a doc id repeated for a query."""
    if "\x00" in text or "-id" in text.lower():
        return None
    tokens = line_tokens(text.encode("utf-8"), len(QRELS_COLUMNS))
    if tokens is None:
        return None
    if not tokens[4].size:
        return {}
    qids, docs, rels = column(tokens, 0), column(tokens, 2), column(tokens, 3)
    if qids is None or docs is None or rels is None:
        return None
    grades = parse_grades(rels)
    if grades is None or bool(np.any((grades > MAX_GRADE) | (grades < -MAX_GRADE - 1))):
        return None
    q_list = [q.decode("utf-8") for q in qids.tolist()]
    d_list = [d.decode("utf-8") for d in docs.tolist()]
    out: Qrels = {}
    n = 0
    for q, d, g in zip(q_list, d_list, grades.tolist(), strict=True):
        out.setdefault(q, {})[d] = g
        n += 1
    if sum(map(len, out.values())) != n:
        return None  # a doc id repeated for a query: the line-by-line parser names both lines
    return out


def _slow_columns(chunk: bytes, first_line: int, source: str, problems: list[RecordProblem]
                  ) -> _Columns:
    """Line by line: blank lines skipped; comments, lines not of 6 columns and bad scores →
    ``problems``."""
    qids: list[bytes] = []
    docs: list[bytes] = []
    scores: list[float] = []
    lines: list[int] = []
    offsets: list[int] = []
    offset = 0
    for lineno, line in enumerate(chunk.split(b"\n"), start=first_line):
        at, offset = offset, offset + len(line) + 1
        parts = line.split()
        if not parts:
            continue
        bad = line_problem(parts, RUN_COLUMNS, source, lineno, "run")
        if bad is not None:
            problems.append(bad)
            continue
        if len(parts[0]) > MAX_ID_BYTES or len(parts[2]) > MAX_ID_BYTES:
            problems.append(RecordProblem(source, lineno, "docid" if len(parts[0]) <= MAX_ID_BYTES
                                          else "qid", f"id longer than {MAX_ID_BYTES} bytes"))
            continue
        try:
            value = float(parts[4])
            if value != value:
                raise ValueError
        except ValueError:
            problems.append(RecordProblem(source, lineno, "score", "must be a number, got "
                                          f"{parts[4].decode('utf-8', 'replace')!r}"))
            continue
        qids.append(parts[0])
        docs.append(parts[2])
        scores.append(value)
        lines.append(lineno)
        offsets.append(at)
    return (np.array(qids or [b""])[:len(qids)], np.array(docs or [b""])[:len(docs)],
            np.asarray(scores, dtype=np.float64), np.asarray(lines, dtype=np.int64),
            np.asarray(offsets, dtype=np.int64))


def _check_text(chunk: bytes, source: str, line_base: int) -> None:
    """A run file is UTF-8 text: NUL bytes or invalid UTF-8 are an error naming the line."""
    nul = chunk.find(b"\x00")
    if nul >= 0:
        raise DataError(RecordProblem(source, line_base + chunk.count(b"\n", 0, nul), None,
                                      "NUL byte: a binary file, not a TREC run"))
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_base + chunk.count(b"\n", 0, exc.start)
        raise DataError(RecordProblem(
            source, line, None, f"not UTF-8 text (byte 0x{chunk[exc.start:exc.start + 1].hex()}"
                                "); save the file as UTF-8")) from None


def iter_run_blocks(path: str | Path, *, block_bytes: int | None = None,
                    problems: list[RecordProblem] | None = None) -> Iterator[RunBlock]:
    """Stream a TREC run file as blocks of complete query groups, ``block_bytes`` read at a time
    (default :data:`RUN_BLOCK_BYTES`).

    Accepts what :func:`load_run` accepts in TREC form (6 columns a line, blank lines, a UTF-8
    byte-order mark). Bad lines are appended to ``problems`` (the caller
    raises them; with no list given they raise a :class:`DataError` at the end) and skipped.
    Raises :class:`RunNotGrouped` as soon as a query's lines turn out not to be consecutive.
    Memory stays bounded by a block (plus the longest query).
    """
    source = str(path)
    block_bytes = block_bytes or RUN_BLOCK_BYTES
    found: list[RecordProblem] = [] if problems is None else problems
    try:
        fh = Path(path).open("rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        raise DataError(RecordProblem(source, None, None, "file not found")) from None
    finished: set[bytes] = set()
    with fh:
        carry = b""
        line_base = 1
        first = True
        eof = False
        while not eof:
            data = fh.read(max(block_bytes, 3) if first else block_bytes)
            eof = not data
            if first:
                data = data.removeprefix(b"\xef\xbb\xbf")
                first = False
            buf = carry + data
            if eof:
                if not buf:
                    break
                if not buf.endswith(b"\n"):
                    buf += b"\n"
                cut = len(buf)
            else:
                cut = buf.rfind(b"\n") + 1
                if cut == 0:
                    carry = buf
                    continue
            chunk, carry = buf[:cut], buf[cut:]
            _check_text(chunk, source, line_base)
            parsed = _vector_columns(chunk, line_base)
            before = len(found)
            if parsed is None:
                parsed = _slow_columns(chunk, line_base, source, found)
            qids, docs, scores, lines, offsets = parsed
            if not qids.size:
                line_base += chunk.count(b"\n")
                continue
            starts = np.concatenate(([0], np.flatnonzero(qids[1:] != qids[:-1]) + 1))
            if not eof:  # the last group may go on in the next block: read it again there
                last = int(starts[-1])
                if last == 0:
                    del found[before:]   # found again when the lines are read again
                    carry = chunk + carry
                    continue
                again = int(lines[last])
                found[before:] = [p for p in found[before:] if (p.line or 0) < again]
                back = again - line_base
                carry = chunk[int(offsets[last]):] + carry
                line_base += back
                qids, docs, scores, lines = qids[:last], docs[:last], scores[:last], lines[:last]
                starts = starts[:-1]
            else:
                line_base += chunk.count(b"\n")
            group_qids = [bytes(q) for q in qids[starts].tolist()]
            for q in group_qids:
                if q in finished:
                    raise RunNotGrouped(f"{source}: the lines of query "
                                        f"'{q.decode('utf-8', 'replace')}' are not consecutive")
                finished.add(q)
            yield RunBlock(group_qids, np.append(starts, qids.size).astype(np.int64), qids, docs,
                           scores, lines)
    if problems is None and found:
        raise DataError(found)
