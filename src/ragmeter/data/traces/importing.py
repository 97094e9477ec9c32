"""``ragmeter traces import``'s Python side: a trace export (or any samples file) → samples, with gold
merged in by id, duplicates out and a recorded sample; written as samples JSON Lines with a
``<name>.import.json`` sidecar that records the source, the layout, the selection and what the
file held (:class:`~ragmeter.data.traces.report.ImportReport`).

Everything streams: records are read one at a time (:mod:`.stream`), spans grouped by trace in
a window that spills to disk (:mod:`.store`), and the requests spooled to a temporary SQLite
file from which the selection and the output are read back in order. Memory does not grow with
the file. A conversation's turns refer to the turn before them instead of repeating its
history (:mod:`ragmeter.data.history_refs`), so the output grows linearly with the turns.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ragmeter.data.history_refs import HistoryLinks
from ragmeter.data.sample import Sample
from ragmeter.data.traces.report import ImportReport
from ragmeter.data.traces.sampling import (
    Selection,
    _allocate,
    field_value,
    normalise_question,
    size_for_width,
)
from ragmeter.data.traces.spans import Problems, Reader, turn_messages
from ragmeter.errors import DataError, RecordProblem, UsageError

#: fields a gold file contributes to an imported sample (matched by id)
GOLD_FIELDS = ("gold_doc_ids", "gold_chunk_ids", "gold_grades", "reference",
               "reference_contexts", "type")
#: records looked at to detect the layout
DETECT_RECORDS = 200
_TRACE_ID = re.compile(r'"(?:traceId|trace_id|context\.trace_id|request_id)"\s*:\s*"([^"]+)"')


def _readers() -> dict[str, Reader]:
    from ragmeter.data.traces.langfuse import read_langfuse
    from ragmeter.data.traces.mlflow import read_mlflow
    from ragmeter.data.traces.otlp import read_otlp
    from ragmeter.data.traces.phoenix import read_phoenix

    return {"otlp": read_otlp, "langfuse": read_langfuse, "phoenix": read_phoenix,
            "mlflow": read_mlflow}


@dataclass
class Imported:
    """One import: the chosen requests (spooled on disk, read back in order by
    :meth:`records`), how they were chosen and what the file held."""

    source: str
    format: str
    selection: Selection
    spool: _Spool
    n_skipped: int = 0
    gold: dict[str, Any] = field(default_factory=dict)
    #: pseudonymiser version and redaction counts, when the texts were pseudonymised
    privacy: dict[str, Any] = field(default_factory=dict)
    report: ImportReport | None = None
    problems: list[RecordProblem] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "n_skipped": self.n_skipped,
                "selection": self.selection.to_dict(),
                **({"gold": self.gold} if self.gold else {}),
                **({"privacy": self.privacy} if self.privacy else {}),
                **({"report": self.report.to_dict()} if self.report else {})}

    def lines(self) -> Iterator[str]:
        """The output, one JSON Lines record at a time (history as references)."""
        return self.spool.lines()

    def iter_samples(self) -> Iterator[Sample]:
        """The chosen samples as the written file reads back (history resolved)."""
        from ragmeter.data.history_refs import HistoryLinks
        from ragmeter.data.records import record_to_sample

        links = HistoryLinks(self.source)
        for i, text in enumerate(self.lines()):
            rec = json.loads(text)
            resolved, _ = links.resolve(rec, None)
            sample, _ = record_to_sample(resolved, source=self.source, index=i)
            if sample is not None:
                links.remember(sample, rec)
                yield sample

    @property
    def samples(self) -> list[Sample]:
        """The chosen samples in a list (for small imports and the Python API)."""
        return list(self.iter_samples())

    def close(self) -> None:
        self.spool.close()

    def __enter__(self) -> Imported:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Spool:
    """The valid requests of one import in a temporary SQLite file, in file order."""

    def __init__(self, conversations: bool) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ragmeter-import-")
        self.db = sqlite3.connect(str(Path(self._dir.name) / "requests.sqlite"))
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;"
            "PRAGMA cache_size=-16000;"
            "CREATE TABLE requests (rseq INTEGER PRIMARY KEY, id TEXT UNIQUE, session TEXT,"
            " start INTEGER, dkey TEXT, stratum TEXT, msgs TEXT, body TEXT,"
            " kept INTEGER DEFAULT 1, sel INTEGER DEFAULT 1, turn INTEGER, slot INTEGER);")
        self.conversations = conversations
        self.n = 0
        self._rows: list[tuple[Any, ...]] = []

    def add(self, sample: Sample, start: int | None, stratify: str | None) -> bool:
        """Spool ``sample``; False when its id was spooled before."""
        body = json.dumps(sample.to_dict(), ensure_ascii=False, sort_keys=True)
        session = sample.metadata.get("session_id") if self.conversations else None
        msgs = json.dumps(turn_messages({"user_input": sample.user_input,
                                         "response": sample.response}),
                          ensure_ascii=False) if session is not None else None
        self.n += 1
        try:
            self.db.execute("INSERT INTO requests (rseq, id, session, start, dkey, stratum, "
                            "msgs, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (self.n, sample.id, None if session is None else str(session),
                             start, normalise_question(sample.user_input),
                             field_value(sample, stratify) if stratify else None, msgs, body))
        except sqlite3.IntegrityError:
            self.n -= 1
            return False
        return True

    def count(self, where: str = "1") -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM requests WHERE {where}").fetchone()[0])

    def sessions(self) -> int:
        return int(self.db.execute("SELECT COUNT(DISTINCT session) FROM requests").fetchone()[0])

    def select(self, *, dedup: bool, n: int | None, stratify: str | None, seed: int,
               ci_width: float | None) -> Selection:
        """:func:`ragmeter.data.traces.sampling.select` over the spooled requests (the same
        draw, the same record)."""
        import numpy as np

        db = self.db
        sel = Selection(n_read=self.n, dedupe=dedup)
        if dedup:
            db.execute("UPDATE requests SET kept = 0 WHERE dkey != '' AND rseq NOT IN "
                       "(SELECT MIN(rseq) FROM requests WHERE dkey != '' GROUP BY dkey)")
            sel.n_duplicates = self.n - self.count("kept = 1")
        kept = self.count("kept = 1")
        if ci_width is not None:
            if n is not None:
                raise UsageError("--ci-width", "give --sample N or --ci-width W, not both")
            n, sel.ci_width = size_for_width(ci_width, kept), ci_width
        if stratify and n is None:
            raise UsageError("--stratify", "needs --sample N")
        db.execute("UPDATE requests SET sel = kept")
        if n is not None:
            if n < 1:
                raise UsageError("--sample", f"must be at least 1, got {n}")
            sizes = {str(k if stratify else "all"): int(c) for k, c in db.execute(
                "SELECT stratum, COUNT(*) FROM requests WHERE kept = 1 GROUP BY stratum "
                "ORDER BY MIN(rseq)")}
            if n >= kept:
                sel.strata = sizes
            else:
                quota = _allocate(sizes, n)
                rng = np.random.default_rng(seed)
                chosen: list[int] = []
                for key in sorted(sizes):
                    idx = np.array([r for (r,) in db.execute(
                        "SELECT rseq FROM requests WHERE kept = 1 AND "
                        + ("stratum = ?" if stratify else "?1 = ?1") + " ORDER BY rseq",
                        (key,))], dtype=np.int64)
                    pick = rng.permutation(len(idx))[:quota[key]]
                    chosen.extend(int(idx[int(j)]) for j in pick)
                db.execute("UPDATE requests SET sel = 0")
                db.executemany("UPDATE requests SET sel = 1 WHERE rseq = ?",
                               ((r,) for r in chosen))
                sel.strata = {k: v for k, v in sorted(quota.items()) if v}
            sel.sample, sel.stratify, sel.seed = n, stratify, seed
        sel.n_selected = self.count("sel = 1")
        h = hashlib.sha256()
        for i, (sid,) in enumerate(db.execute("SELECT id FROM requests WHERE sel = 1 "
                                              "ORDER BY id")):
            h.update((("\n" if i else "") + sid).encode())
        sel.ids_sha256 = h.hexdigest()
        if self.conversations:
            self._turns()
        return sel

    def _turns(self) -> None:
        """Turn numbers (time order within a session) and slots (file order): turns of one
        session are written in turn order in the places the session's requests held."""
        self.db.executescript(
            "WITH t AS (SELECT rseq, ROW_NUMBER() OVER (PARTITION BY session ORDER BY start, "
            "rseq) - 1 AS turn, ROW_NUMBER() OVER (PARTITION BY session ORDER BY rseq) - 1 "
            "AS slot FROM requests WHERE session IS NOT NULL) "
            "UPDATE requests SET turn = t.turn, slot = t.slot FROM t "
            "WHERE requests.rseq = t.rseq;"
            "CREATE INDEX by_slot ON requests (session, slot);"
            "CREATE INDEX by_turn ON requests (session, turn);")

    def lines(self) -> Iterator[str]:
        db = self.db
        if not self.conversations:
            for (body,) in db.execute("SELECT body FROM requests WHERE sel = 1 ORDER BY rseq"):
                yield body
            return
        from ragmeter.data.history_refs import ref

        rows = db.execute(
            "SELECT r.body, r.session, r.turn, LAG(r.id) OVER w, LAG(r.turn) OVER w, "
            "CASE WHEN r.session IS NULL THEN r.rseq ELSE (SELECT s.rseq FROM requests s "
            "WHERE s.session = r.session AND s.slot = r.turn) END AS okey "
            "FROM requests r WHERE r.sel = 1 WINDOW w AS (PARTITION BY r.session ORDER BY "
            "r.turn) ORDER BY okey")
        gaps = self.db.cursor()
        for body, session, turn, prev_id, prev_turn, _ in rows:
            if session is None:
                yield body
                continue
            rec = json.loads(body)
            rec["metadata"]["turn"] = turn
            first = -1 if prev_turn is None else prev_turn
            if turn > 0:
                add: list[dict[str, str]] = []
                if turn - first > 1:
                    for (msgs,) in gaps.execute(
                            "SELECT msgs FROM requests WHERE session = ? AND turn > ? AND "
                            "turn < ? ORDER BY turn", (session, first, turn)):
                        add.extend(json.loads(msgs))
                rec["history"] = ref(prev_id, add)
            yield json.dumps(rec, ensure_ascii=False, sort_keys=True)

    def close(self) -> None:
        self.db.close()
        self._dir.cleanup()


def _load_gold(gold_path: str | Path) -> tuple[dict[str, Sample], list[int | None], str]:
    from ragmeter.data.loaders import load_samples

    gold = load_samples(gold_path)
    return ({g.id: g for g in gold.samples}, list(gold.lines), gold.source)


def _detected(recs: Any, head: list[tuple[int | None, Any]], format: str) -> str:
    from ragmeter.data.formats import check_explicit_format, detect_format, get_format
    from ragmeter.data.traces.stream import OtlpSpan

    get_format(format)
    probe = [(line, {"resourceSpans": []} if isinstance(rec, OtlpSpan) else rec)
             for line, rec in head]
    if format != "auto":
        check_explicit_format(format, probe, recs.source)
        return format
    return detect_format(probe)


def import_samples(path: str | Path, *, format: str = "auto", gold: str | Path | None = None,
                   dedup: bool = False, sample: int | None = None, stratify: str | None = None,
                   seed: int = 42, skip_invalid: bool = False,
                   ci_width: float | None = None,
                   transform: Callable[[Sample], Sample] | None = None) -> Imported:
    """Read ``path`` in layout ``format`` (``auto`` detects) record by record, merge ``gold``,
    then select. ``transform`` (e.g. pseudonymisation) is applied to each sample before it is
    spooled. Close the result (or use it as a context manager) to remove its spool."""
    from ragmeter.data.formats import get_format
    from ragmeter.data.traces.stream import open_records

    recs, records = open_records(path)
    head = list(itertools.islice(records, DETECT_RECORDS))
    fmt_name = _detected(recs, head, format)
    trace = get_format(fmt_name).convert is not None
    gold_set = _Gold(gold) if gold is not None else None
    problems = Problems(recs.source)
    report = ImportReport(fmt_name, trace=trace)
    spool = _Spool(conversations=trace)
    try:
        _spool_requests(recs, itertools.chain(head, records), fmt_name, spool, problems,
                        report, gold_set, transform, stratify)
        _check_orphans(problems)
        if problems.count and not skip_invalid:
            raise DataError(problems.items, hint="fix the lines above, or pass --skip-invalid "
                                                 "to skip them (a request with a bad span is "
                                                 "left out whole) and count them")
        if spool.n == 0:
            raise DataError(problems.items or [RecordProblem(recs.source, None, None,
                                                             "no request to import")],
                            hint="every request of the file was skipped: nothing to write")
        gold_info = gold_set.info() if gold_set is not None else {}
        selection = spool.select(dedup=dedup, n=sample, stratify=stratify, seed=seed,
                                 ci_width=ci_width)
        report.sessions = spool.sessions()
        report.skipped = problems.count
        report.finish()
    except BaseException:
        spool.close()
        raise
    skipped = sorted(problems.items, key=lambda p: (p.line is None, p.line or 0))
    return Imported(recs.source, fmt_name, selection, spool, problems.count, gold_info,
                    report=report, problems=skipped)


class _Gold:
    """A gold file's samples by id, and which of them matched an imported request."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.by_id, self.lines, self.source = _load_gold(path)
        self.matched: set[str] = set()

    def merge(self, s: Sample) -> None:
        g = self.by_id.get(s.id)
        if g is None:
            return
        self.matched.add(s.id)
        for name in GOLD_FIELDS:
            value = getattr(g, name)
            if value is not None:
                setattr(s, name, value)

    def info(self) -> dict[str, Any]:
        """The sidecar's record; a gold file of which no id matched is a problem of its own."""
        unmatched = [RecordProblem(self.source, ln, "id", f"'{gid}' matches no imported request")
                     for (gid, _), ln in zip(self.by_id.items(), self.lines, strict=True)
                     if gid not in self.matched]
        if unmatched and len(unmatched) == len(self.by_id):
            raise DataError(unmatched, hint="gold ids must be the trace ids of the export "
                                            "(metadata.trace_id of the imported samples)")
        return {"path": str(self.path), "matched": len(self.by_id) - len(unmatched),
                "unmatched": len(unmatched)}


def _spool_requests(recs: Any, records: Iterator[tuple[int | None, Any]], fmt_name: str,
                    spool: _Spool, problems: Problems, report: ImportReport,
                    gold: _Gold | None, transform: Callable[[Sample], Sample] | None,
                    stratify: str | None) -> None:
    """Every request of the file, validated, with gold merged and ``transform`` applied,
    into ``spool``; each bad one is a problem."""
    from ragmeter.data.formats import apply_format, get_format
    from ragmeter.data.records import record_to_sample

    fmt = get_format(fmt_name)
    trace = fmt.convert is not None
    links = HistoryLinks(recs.source)
    for index, (line, rec) in enumerate(_requests(recs, records, fmt_name, trace, problems)):
        start = None
        written = rec
        probs: list[RecordProblem] = []
        if trace:
            start = rec["metadata"].pop("start_ns", None)
        elif isinstance(rec, dict):  # a samples file (perhaps an earlier import's)
            rec = written = apply_format(rec, fmt, None, tabular=recs.tabular)
            rec, probs = links.resolve(rec, line)
        s, more = record_to_sample(rec, source=recs.source, line=line, index=index,
                                   from_csv=recs.tabular and not trace)
        probs += more
        if s is None or probs:
            for p in probs:
                problems.add(p.line, p.field, p.message)
            continue
        if not trace:
            links.remember(s, written)
        if gold is not None:
            gold.merge(s)
        if transform is not None:
            s = transform(s)
        try:
            json.dumps(s.to_dict(), ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            problems.add(line, None, "holds a lone surrogate (e.g. \\ud800): not valid "
                                     "Unicode text")
            continue
        if not spool.add(s, start, stratify):
            problems.add(line, "id", f"duplicate id '{s.id}'")
            continue
        report.count(s)


def _requests(recs: Any, records: Iterator[tuple[int | None, Any]], fmt: str, trace: bool,
              problems: Problems) -> Iterator[tuple[int | None, Any]]:
    """``(line, record)`` of each request: trace spans grouped into requests, or the plain
    records of a samples file."""
    if not trace:
        for line, rec in records:
            yield line, rec
        for p in recs.problems:
            problems.add(p.line, p.field, p.message)
        return
    from ragmeter.data.traces.spans import read_all, requests_of
    from ragmeter.data.traces.store import SpanStore

    read = _readers()[fmt]
    with SpanStore() as store:
        for span in read_all(read, records, problems):
            store.add(span)
        for p in recs.problems:
            problems.add(p.line, p.field, p.message)
        for line, text in recs.unreadable.items():  # tie an unreadable line to its trace
            m = _TRACE_ID.search(text)
            if m:
                problems.bad_traces.add(m.group(1))
            else:
                problems.orphan(line, None, None)
        yield from requests_of(store, problems)


def _check_orphans(problems: Problems) -> None:
    untied = problems.untied()
    if untied:
        lines = ", ".join(str(line) for line, _, _ in untied[:10])
        raise DataError([*problems.items, RecordProblem(
            problems.source, untied[0][0], None,
            f"{len(untied)} unreadable span(s) (line(s) {lines}) name no trace and no span: "
            "no request of the file can be said to be whole, so none is imported")],
            hint="fix or remove those spans; --skip-invalid cannot skip a span whose request "
                 "is unknown")


def sidecar(out: str | Path) -> Path:
    """``samples.jsonl`` → ``samples.import.json``."""
    p = Path(out)
    return p.with_name(f"{p.stem}.import.json")


def write_lines(imported: Imported, fh: IO[str]) -> dict[str, Any]:
    """Write the samples as JSON Lines to ``fh``; returns the sidecar's content."""
    h = hashlib.sha256()
    n = 0
    for text in imported.lines():
        line = text + "\n"
        h.update(line.encode("utf-8"))
        fh.write(line)
        n += 1
    return {**imported.meta(), "n_samples": n, "samples_sha256": h.hexdigest()}


def render_samples(imported: Imported) -> tuple[str, dict[str, Any]]:
    """The samples as JSON Lines text, and the sidecar's content (small imports)."""
    import io

    buf = io.StringIO()
    meta = write_lines(imported, buf)
    return buf.getvalue(), meta


def write_samples(imported: Imported, out: str | Path) -> dict[str, Any]:
    """Write the samples as JSON Lines and the sidecar; returns the sidecar's content."""
    p = Path(out)
    with p.open("w", encoding="utf-8") as fh:
        meta = write_lines(imported, fh)
    write_sidecar(p, meta)
    return meta


def write_sidecar(out: Path, meta: dict[str, Any]) -> None:
    sidecar(out).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", "utf-8")
