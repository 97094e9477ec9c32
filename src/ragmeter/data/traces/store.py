"""Spans grouped by trace in a bounded window: held in memory up to a limit, then spilled to a
temporary SQLite file and read back one trace at a time (the traces in the order they first
appear in the file, each trace's spans in file order). Files whose traces are interleaved or
split across the file need no sorting beforehand."""

from __future__ import annotations

import pickle
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from ragmeter.data.traces.spans import Span

#: spans held in memory before the store spills to disk
MEMORY_SPANS = 20_000
_BATCH = 5_000


class SpanStore:
    """Add spans in any order; :meth:`traces` gives ``(trace id, first line, spans)``."""

    def __init__(self, memory_spans: int | None = None) -> None:
        self.limit = MEMORY_SPANS if memory_spans is None else memory_spans
        self.groups: dict[str, tuple[int | None, list[Span]]] = {}
        self.n = 0
        self._seq = 0
        self.db: sqlite3.Connection | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._rows: list[tuple[str, int, bytes]] = []
        self._recent: dict[str, None] = {}
        self._traces: list[tuple[int, str, int | None]] = []

    def __enter__(self) -> SpanStore:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def spilled(self) -> bool:
        return self.db is not None

    def add(self, span: Span) -> None:
        self.n += 1
        if self.db is None:
            group = self.groups.get(span.trace_id)
            if group is None:
                self.groups[span.trace_id] = (span.line, [span])
            else:
                group[1].append(span)
            if self.n > self.limit:
                self._spill()
            return
        self._put(span)

    def _spill(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ragmeter-import-")
        db = sqlite3.connect(str(Path(self._dir.name) / "spans.sqlite"))
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                         "PRAGMA temp_store=FILE; PRAGMA cache_size=-16000;"
                         "CREATE TABLE traces (tseq INTEGER PRIMARY KEY, trace_id TEXT UNIQUE,"
                         " line INTEGER);"
                         "CREATE TABLE spans (trace_id TEXT, seq INTEGER, blob BLOB);")
        self.db = db
        groups, self.groups = self.groups, {}
        for _, (_, spans) in groups.items():
            for s in spans:
                self._put(s)
        self._flush()

    def _put(self, span: Span) -> None:
        self._seq += 1
        self._rows.append((span.trace_id, self._seq, pickle.dumps(span, 5)))
        if span.trace_id not in self._recent:
            self._recent[span.trace_id] = None
            self._traces.append((self._seq, span.trace_id, span.line))
            if len(self._recent) > 10_000:
                del self._recent[next(iter(self._recent))]
        if len(self._rows) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        assert self.db is not None
        self.db.executemany("INSERT OR IGNORE INTO traces VALUES (?, ?, ?)", self._traces)
        self.db.executemany("INSERT INTO spans VALUES (?, ?, ?)", self._rows)
        self._rows.clear()
        self._traces.clear()

    def traces(self) -> Iterator[tuple[str, int | None, list[Span]]]:
        """Each trace's spans, traces in the order they first appeared."""
        if self.db is None:
            for trace_id, (line, spans) in self.groups.items():
                yield trace_id, line, spans
            return
        self._flush()
        self.db.execute("CREATE INDEX IF NOT EXISTS spans_by_trace ON spans (trace_id, seq)")
        cur = self.db.execute("SELECT t.trace_id, t.line, s.blob FROM traces t JOIN spans s "
                              "ON s.trace_id = t.trace_id ORDER BY t.tseq, s.seq")
        current: str | None = None
        first: int | None = None
        group: list[Span] = []
        for trace_id, tline, blob in cur:
            if trace_id != current:
                if current is not None:
                    yield current, first, group
                current, first, group = trace_id, tline, []
            group.append(_load(blob))
        if current is not None:
            yield current, first, group

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        self.groups = {}


def _load(blob: bytes) -> Any:
    return pickle.loads(blob)  # our own rows, written above by this process
