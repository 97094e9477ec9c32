"""Qrels and runs: TREC text files and JSON dicts, loaded and saved, every bad line reported.

* qrels, TREC: ``qid iter docid rel`` (whitespace separated; ``iter`` is ignored);
  JSON: ``{qid: {docid: rel}}`` with integer grades.
* run, TREC: ``qid Q0 docid rank score tag``; JSON: ``{qid: {docid: score}}``.
  The ``rank`` column is ignored (as trec_eval does): ranking comes from scores and the tie policy.

The format is detected from the content: the first non-blank character ``{`` → JSON; a header
``query-id corpus-id score`` → BEIR qrels TSV (``qid docid rel``). As trec_eval 10 reads them,
lines starting with ``#`` are comments and columns after the last one used are ignored. A UTF-8
byte-order mark is dropped everywhere. A doc id given twice for the same query is an error naming
both lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

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


def _parse_trec(text: str, source: str, kind: Literal["qrels", "run"]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    first_line: dict[tuple[str, str], int] = {}
    problems: list[RecordProblem] = []
    ncols = 4 if kind == "qrels" else 5
    layout = "qid iter docid rel" if kind == "qrels" else "qid Q0 docid rank score [tag]"
    beir = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if not beir and kind == "qrels" and tuple(p.lower() for p in parts[:3]) == BEIR_HEADER:
            beir, ncols, layout = True, 3, "query-id corpus-id score"
            continue
        if len(parts) < ncols:
            problems.append(RecordProblem(source, lineno, None,
                                          f"expected {ncols} columns '{layout}', got {len(parts)}"))
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
                if not -GRADE_LIMIT < value < GRADE_LIMIT:
                    problems.append(RecordProblem(source, lineno, "rel",
                                                  f"grade {raw} out of range (|grade| < 2^31)"))
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
        data = json.loads(text, object_pairs_hook=hook)
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
                if ok and not -GRADE_LIMIT < value < GRADE_LIMIT:
                    ok = False
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
        return _parse_json(text, str(path), "qrels")
    return _parse_trec(text, str(path), "qrels")


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
