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
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ragmeter.errors import RagmeterError
from ragmeter.results.records import EvalResult
from ragmeter.results.store import MetricSummary, ResultStore, RunRow, StoredRun, TierRecord
from ragmeter.view.errors import NotFound, ViewError

T = TypeVar("T")
#: cached values (pages, row lists, paired tests) kept at most; the oldest go first
CACHE_ENTRIES = 256
#: characters of rendered pages and other values kept at most, all together
CACHE_CHARS = 48_000_000
#: runs kept at most, each as a page reads it: aggregates and per-sample values, no text, no
#: details (about 1 MB at 5,000 samples × 3 metrics)
RUN_ENTRIES = 24
#: a rendered page larger than this is not cached (memory stays bounded)
MAX_CACHED_CHARS = 4_000_000


class Unreadable(ViewError):
    """An item the viewer cannot read (a stored run, a running run's folder); its page is an
    error page, the lists that show it mark it unreadable with the message."""


class CorruptRun(Unreadable):
    """A stored run that cannot be read; the message names the run and the cause."""

    def __init__(self, run_id: str, cause: BaseException):
        self.run_id = run_id
        first = str(cause).splitlines()[0][:300] if str(cause) else ""
        super().__init__("v_e_corrupt", run=run_id, error=f"{type(cause).__name__}: {first}")


def _weight(value: Any) -> int:
    """What a cached value costs, roughly in characters (rendered pages dominate)."""
    if isinstance(value, tuple) and len(value) >= 2 and isinstance(value[1], str):
        return len(value[1]) + 1000
    return 1000


class _LRU:
    """A small thread-safe LRU of computed values with one computation per missing key,
    bounded in entries and in total weight (:func:`_weight`)."""

    def __init__(self, size: int, chars: int = 1 << 62):
        self.size = size
        self.chars = chars
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._weights: dict[Any, int] = {}
        self._total = 0
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
            self._total -= self._weights.pop(key, 0)
            self._items[key] = value
            self._items.move_to_end(key)
            self._weights[key] = w = _weight(value)
            self._total += w
            while self._items and (len(self._items) > self.size or self._total > self.chars):
                old, _ = self._items.popitem(last=False)
                self._total -= self._weights.pop(old, 0)

    def drop(self, key: Any) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._total -= self._weights.pop(key, 0)


def _sqlite_path(url: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    return Path(url[len("sqlite:///"):].split("?", 1)[0])


class StoreData:
    """The store's runs, aggregates, runs and judge cards, as the pages read them."""

    def __init__(self, store: ResultStore):
        self.store = store
        self._path = _sqlite_path(store.url)
        self._cache = _LRU(CACHE_ENTRIES, CACHE_CHARS)
        self._runs = _LRU(RUN_ENTRIES)
        self._pin = threading.local()

    # ------------------------------------------------------------------ version
    def version(self) -> str:
        """Changes whenever the store's content does (cheap: a few ``stat`` calls on SQLite,
        one look at the runs elsewhere); inside :meth:`pinned`, the version of that request."""
        pinned = getattr(self._pin, "version", None)
        return pinned if pinned is not None else self._look()

    @contextmanager
    def pinned(self) -> Iterator[str]:
        """The store's version, looked at once for everything one request reads (a page reads
        several cached things; on PostgreSQL each look is a query)."""
        outer = getattr(self._pin, "version", None)
        self._pin.version = outer if outer is not None else self._look()
        try:
            yield self._pin.version
        finally:
            self._pin.version = outer

    def _look(self) -> str:
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
            if conn.dialect.name == "postgresql":  # one short answer, summed up on the server
                row = conn.execute(sa.text(
                    "SELECT (SELECT md5(coalesce(string_agg(id || ':' || status, '|' "
                    "ORDER BY id), '')) FROM rm_runs), (SELECT count(*) FROM rm_metrics), "
                    "(SELECT count(*) FROM rm_tiers)")).one()
                return hashlib.sha256(repr(tuple(row)).encode()).hexdigest()[:16]
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

    def run(self, run_id: str) -> StoredRun:
        """The run as the pages read it (cached per version): each metric's stored aggregate
        and its per-sample values, without the samples' text or the judge's details (read
        for the samples a page shows: :meth:`sample_data`; the judge's details on a sample's page).
        :class:`CorruptRun` when its rows cannot be read."""
        version = self.version()

        def load() -> StoredRun:
            try:
                run = self.store.load_run(run_id, samples=False, details=False,
                                          stored_aggregates=True)
            except RagmeterError:
                if not self.store.has_run(run_id):
                    raise NotFound("v_e_no_run", run=run_id[:200]) from None
                raise
            except Exception as exc:  # a broken row of this run: this run's error alone
                raise CorruptRun(run_id, exc) from None
            for tier, rec in run.tiers.items():  # where each metric comes from (the memo key)
                for res in rec.results:
                    for mr in res:
                        mr.__dict__["store_key"] = (run.id, tier, res.name)
            return run
        return self._runs.get((version, run_id), load)

    def runs(self, run_ids: Sequence[str]) -> tuple[list[StoredRun], list[CorruptRun]]:
        """The runs that can be read, and an error for each that cannot."""
        good, bad = [], []
        for rid in run_ids:
            try:
                good.append(self.run(rid))
            except CorruptRun as exc:
                bad.append(exc)
        return good, bad

    def _read(self, run_id: str, read: Callable[[], T]) -> T:
        try:
            return read()
        except RagmeterError:
            raise
        except Exception as exc:
            raise CorruptRun(run_id, exc) from None

    def dataset_ids(self, run_id: str) -> list[str]:
        """A run's sample ids in dataset order (cached per version)."""
        return self.cached(("ids", run_id), lambda: self._read(
            run_id, lambda: self.store.sample_ids(run_id)))

    def sample_data(self, run_id: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored text of the chosen samples of a run."""
        return self._read(run_id, lambda: self.store.sample_data(run_id, ids))

    def compare(self) -> Callable[..., Any]:
        """The paired test of two stored metrics, each pair computed once per store version
        (shared by the diff, the compare page and the run pages' decisions)."""
        from ragmeter.results.projections import paired_projected
        from ragmeter.results.records import compare_metric

        version = self.version()

        def test(a: Any, b: Any, **kw: Any) -> Any:
            # two large runs on the same samples: from the projections stored with them
            return paired_projected(a, b, **kw) or compare_metric(a, b, **kw)

        def paired(a: Any, b: Any, **kw: Any) -> Any:
            ka, kb = a.__dict__.get("store_key"), b.__dict__.get("store_key")
            if ka is None or kb is None:
                return test(a, b, **kw)
            key = ("paired", ka, a.metric, kb, b.metric, tuple(sorted(kw.items())))
            return self.cached(key, lambda: test(a, b, **kw), version)
        return paired


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
                # ordered here: an ORDER BY would steer SQLite off the sample index onto the
                # whole run's rows
                scores = sorted(
                    ((x.tier, x.system, x.metric, x.value, x.reason,
                      json.loads(x.details_json) if x.details_json else None)
                     for x in conn.execute(
                         sa.select(v.tier, v.system, v.metric, v.value, v.reason,
                                   v.details_json)
                         .where(v.run_id == run_id, v.sample_id == sample_id))),
                    key=lambda sc: sc[:3])
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


class RunSamples:
    """The explorer's samples of a stored run: ids of the whole dataset, the text of the shown
    rows only (:class:`ragmeter.reports.explorer.SampleSource`); every score and the judge's
    details are on each row's sample page."""

    #: each row links to its sample's page for every score and the judge's reasons
    every_score = False

    def __init__(self, data: StoreData, run: StoredRun):
        self.data, self.run = data, run

    def dataset_ids(self) -> list[str]:
        return self.data.dataset_ids(self.run.id)

    def texts(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.data.sample_data(self.run.id, ids)
