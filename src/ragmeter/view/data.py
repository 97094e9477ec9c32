"""What the viewer reads from the results store, cached on the store's version.

Every cached value is keyed on :meth:`StoreData.version` — the SQLite file's (and its
write-ahead log's) size and modification time, or for another database a small query over the
run and metric tables — so a run written, replaced or given a judge card is seen at the next
request, never after a restart. Concurrent requests for the same missing value compute it once.

A run that cannot be read (a corrupt row, a broken JSON field) raises :class:`CorruptRun` for
that run alone; the registry and the other runs are unaffected.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ragmeter.errors import RagmeterError
from ragmeter.results.records import EvalResult
from ragmeter.results.store import MetricSummary, ResultStore, RunRow, StoredRun, TierRecord

T = TypeVar("T")
#: cached values (pages, runs, row lists) kept at most; the oldest go first
CACHE_ENTRIES = 96
#: full runs (with samples) kept at most — each can be tens of MB at 5,000 samples
RUN_ENTRIES = 4
#: a rendered page larger than this is not cached (memory stays bounded)
MAX_CACHED_CHARS = 4_000_000


class Unreadable(RagmeterError):
    """An item the viewer cannot read (a stored run, a running run's folder); its page is an
    error page, the lists that show it mark it unreadable with the message."""


class CorruptRun(Unreadable):
    """A stored run that cannot be read; the message names the run and the cause."""

    def __init__(self, run_id: str, cause: BaseException):
        self.run_id = run_id
        super().__init__(f"run {run_id} cannot be read from the store: "
                         f"{type(cause).__name__}: {str(cause).splitlines()[0][:300] if str(cause) else ''}")


class _LRU:
    """A small thread-safe LRU of computed values with one computation per missing key."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._busy: dict[Any, threading.Lock] = {}

    def get(self, key: Any, make: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            gate = self._busy.setdefault(key, threading.Lock())
        with gate:  # the first caller computes, the others wait for its value
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = make()
            finally:
                with self._lock:
                    self._busy.pop(key, None)
            self.put(key, value)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def drop(self, key: Any) -> None:
        with self._lock:
            self._items.pop(key, None)


def _sqlite_path(url: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    return Path(url[len("sqlite:///"):].split("?", 1)[0])


class StoreData:
    """The store's runs, aggregates, runs and judge cards, as the pages read them."""

    def __init__(self, store: ResultStore):
        self.store = store
        self._path = _sqlite_path(store.url)
        self._cache = _LRU(CACHE_ENTRIES)
        self._runs = _LRU(RUN_ENTRIES)

    # ------------------------------------------------------------------ version
    def version(self) -> str:
        """Changes whenever the store's content does (cheap: a few ``stat`` calls on SQLite)."""
        if self._path is not None:
            parts = []
            for p in (self._path, Path(f"{self._path}-wal")):
                try:
                    st = os.stat(p)
                except OSError:
                    parts.append("-")
                    continue
                parts.append(f"{st.st_size}:{st.st_mtime_ns}")
            return "|".join(parts)
        return self._db_version()

    def _db_version(self) -> str:
        import sqlalchemy as sa

        s = self.store
        with s.engine.connect() as conn:
            runs = conn.execute(sa.select(s.t_runs.c.id, s.t_runs.c.status)).all()
            n_metrics = conn.execute(sa.select(sa.func.count()).select_from(s.t_metrics)).scalar()
            n_tiers = conn.execute(sa.select(sa.func.count()).select_from(s.t_tiers)).scalar()
        text = "|".join(f"{a}:{b}" for a, b in sorted(runs)) + f"|{n_metrics}|{n_tiers}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def cached(self, key: Any, make: Callable[[], T], version: str | None = None) -> T:
        """``make()`` once per store version and ``key``."""
        return self._cache.get((version or self.version(), key), make)

    def forget(self, key: Any, version: str) -> None:
        """Drop one cached value (a page too large to keep)."""
        self._cache.drop((version, key))

    # ------------------------------------------------------------------ reads
    def rows(self) -> list[RunRow]:
        """Every run for the registry, newest first."""
        return self.cached("rows", self.store.run_rows)

    def summaries(self, run_ids: Iterable[str]) -> list[MetricSummary]:
        ids = tuple(run_ids)
        if not ids:
            return []
        return self.cached(("summaries", ids), lambda: self.store.metric_summaries(ids))

    def run(self, run_id: str, samples: bool = True) -> StoredRun:
        """The run (cached per version); :class:`CorruptRun` when its rows cannot be read."""
        version = self.version()

        def load() -> StoredRun:
            try:
                return self.store.load_run(run_id, samples=samples)
            except RagmeterError:
                raise
            except Exception as exc:  # a broken row of this run: this run's error alone
                raise CorruptRun(run_id, exc) from None
        return self._runs.get((version, run_id, samples), load)

    def runs(self, run_ids: Sequence[str], samples: bool = False
             ) -> tuple[list[StoredRun], list[CorruptRun]]:
        """The runs that can be read, and an error for each that cannot."""
        good, bad = [], []
        for rid in run_ids:
            try:
                good.append(self.run(rid, samples=samples))
            except CorruptRun as exc:
                bad.append(exc)
        return good, bad

    def sample_texts(self, run_id: str, n: int = 50) -> list[str]:
        """The first ``n`` questions of a run (to tell the language of its data)."""
        import sqlalchemy as sa

        s = self.store
        q = (sa.select(s.t_samples.c.data_json).where(s.t_samples.c.run_id == run_id)
             .order_by(s.t_samples.c.position).limit(n))
        out = []
        with s.engine.connect() as conn:
            for (text,) in conn.execute(q):
                try:
                    out.append(str(json.loads(text).get("user_input") or ""))
                except (ValueError, AttributeError):
                    continue
        return out

    def sample_of(self, run_id: str, sample_id: str
                  ) -> tuple[dict[str, Any], list[tuple[str, str, str, Any, Any, Any]]]:
        """One sample of one run without loading the run: its stored text and its scores
        ``(tier, system, metric, value, reason, details)``; :class:`CorruptRun` when a row of
        it cannot be read."""
        return self.cached(("sample", run_id, sample_id),
                           lambda: self._sample_of(run_id, sample_id))

    def _sample_of(self, run_id: str, sample_id: str
                   ) -> tuple[dict[str, Any], list[tuple[str, str, str, Any, Any, Any]]]:
        import sqlalchemy as sa

        s = self.store
        v = s.t_values.c
        try:
            with s.engine.connect() as conn:
                row = conn.execute(sa.select(s.t_samples.c.data_json).where(
                    s.t_samples.c.run_id == run_id, s.t_samples.c.sample_id == sample_id)).first()
                sample = json.loads(row[0]) if row else {}
                scores = [(x.tier, x.system, x.metric, x.value, x.reason,
                           json.loads(x.details_json) if x.details_json else None)
                          for x in conn.execute(
                              sa.select(v.tier, v.system, v.metric, v.value, v.reason,
                                        v.details_json)
                              .where(v.run_id == run_id, v.sample_id == sample_id)
                              .order_by(v.tier, v.system, v.metric))]
        except Exception as exc:
            raise CorruptRun(run_id, exc) from None
        return dict(sample), scores

    def sample_ids(self, run_id: str, limit: int) -> list[str]:
        """The first ``limit`` sample ids of a run, in dataset order."""
        import sqlalchemy as sa

        s = self.store
        q = (sa.select(s.t_samples.c.sample_id).where(s.t_samples.c.run_id == run_id)
             .order_by(s.t_samples.c.position).limit(limit))
        with s.engine.connect() as conn:
            return [r[0] for r in conn.execute(q)]

    def judge_cards(self, limit: int) -> list[StoredRun]:
        """The judge cards of the latest ``limit`` runs that have any, read from the card rows
        alone (no per-sample values): each as a run whose judge-card tier holds only the
        cards' results (with ``meta``)."""
        return self.cached(("cards", limit), lambda: self._judge_cards(limit))

    def _judge_cards(self, limit: int) -> list[StoredRun]:
        import sqlalchemy as sa

        from ragmeter.judge_trust.runs import TIER

        s = self.store
        m, r = s.t_metrics.c, s.t_runs.c
        q = (sa.select(m.run_id, m.system, m.system_meta_json, r.created_at, r.name)
             .join(s.t_runs, r.id == m.run_id).where(m.tier == TIER)
             .order_by(r.created_at.desc(), r.id.desc(), m.system_position, m.position))
        out: dict[str, StoredRun] = {}
        with s.engine.connect() as conn:
            for row in conn.execute(q):
                run = out.get(row.run_id)
                if run is None:
                    if len(out) >= limit:
                        break
                    run = StoredRun(id=row.run_id, created_at=row.created_at, name=row.name,
                                    tiers={TIER: TierRecord(TIER)})
                    out[row.run_id] = run
                results = run.tiers[TIER].results
                if any(x.name == row.system for x in results):
                    continue
                try:
                    meta = json.loads(row.system_meta_json)
                except ValueError:
                    continue  # a broken card row: skipped, the others are shown
                results.append(EvalResult(row.system, meta=meta))
        return list(out.values())
