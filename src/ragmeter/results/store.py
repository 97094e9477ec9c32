"""Results store with history: every benchmark run, its per-sample records and aggregates.

Any SQLAlchemy URL works; the default is a SQLite file ``./ragmeter-results.sqlite`` (or
``$RAGMETER_STORE_URL``). Per-sample values are stored as rows (the source of truth); the
aggregates stored next to them are a convenience for ``runs list`` and SQL users, and
:meth:`ResultStore.load_run` rebuilds every :class:`EvalResult` from the per-sample rows.

Tables (prefix ``rm_``): ``rm_runs`` (one row per run), ``rm_tiers`` (tier status and reason),
``rm_metrics`` (one row per system × metric: signature, counts, aggregate),
``rm_values`` (one row per system × metric × sample), ``rm_samples`` (the samples' text for the
report's explorer). The tables and engines are in :mod:`ragmeter.results.database`, the run
records in :mod:`ragmeter.results.runs`; their public names are importable from here too.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, RagmeterError, require
from ragmeter.results.database import (
    DEFAULT_STORE_FILE,
    SCHEMA_VERSION,
    SQLITE_BUSY_TIMEOUT_MS,
    STORE_ENV,
    WRITE_ATTEMPTS,
    add_missing_columns,
    default_store_url,
    define_tables,
    is_transient,
    make_engine,
    normalize_url,
    table_rows,
)
from ragmeter.results.jsonout import dumps as strict_json
from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
from ragmeter.results.runs import (
    RUN_WRITING,
    TIER_STATUSES,
    MetricSummary,
    RunRow,
    RunSummary,
    StoredRun,
    TierRecord,
    columns_of,
    finite_or_none,
    git_commit,
    new_run_id,
    run_rows,
    tags_of,
    utc_now,
)
from ragmeter.secrets import mask_url

__all__ = [
    "DEFAULT_STORE_FILE", "EXPORT_FORMATS", "RUN_WRITING", "SCHEMA_VERSION",
    "SQLITE_BUSY_TIMEOUT_MS", "STORE_ENV", "TIER_STATUSES", "WRITE_ATTEMPTS", "WRITE_BATCH_ROWS",
    "MetricSummary", "ResultStore", "RunRow", "RunSummary", "StoredRun", "TierRecord",
    "default_store_url", "git_commit", "mask_url", "new_run_id", "normalize_url", "run_rows",
    "utc_now",
]

EXPORT_FORMATS = ("json", "csv", "parquet")
#: rows per write transaction: large runs are written in batches so that no transaction holds the
#: database for long (other processes writing to the same store wait at most one batch)
WRITE_BATCH_ROWS = 20_000


def _summary(x: Any) -> MetricSummary:
    """One stored aggregate row; a row whose numbers cannot be read (a value that is not a
    number) is that row's error (``MetricSummary.error``), never the whole list's."""
    try:
        return MetricSummary(str(x.run_id), str(x.tier), str(x.system), str(x.metric),
                             finite_or_none(x.mean), finite_or_none(x.ci_low),
                             finite_or_none(x.ci_high), int(x.n), int(x.n_unscored),
                             bool(x.higher_is_better), int(x.seed), int(x.n_boot))
    except (TypeError, ValueError) as exc:
        return MetricSummary(str(x.run_id), str(x.tier), str(x.system), str(x.metric), None,
                             None, None, 0, 0, bool(x.higher_is_better), 0, 0,
                             error=f"{type(exc).__name__}: {str(exc)[:200]}")


class ResultStore:
    """History of runs in any SQLAlchemy database (``ResultStore()`` = local SQLite file)."""

    def __init__(self, url: str | os.PathLike[str] | None = None, *, create: bool = True):
        require("sqlalchemy", "postgres", "the results store")
        self.url = normalize_url(url)
        if self.url.startswith("postgresql+psycopg"):
            require("psycopg", "postgres", "PostgreSQL results store")
        try:
            self.engine = make_engine(self.url, immediate=False)
            self._write_engine = make_engine(self.url, immediate=True)
        except Exception as exc:
            raise RagmeterError(f"cannot open results store {mask_url(self.url)}: "
                                f"{type(exc).__name__}: {exc}") from None
        self._define_tables()
        if create:
            try:
                version = self._write(self._create_schema)
            except Exception as exc:
                raise RagmeterError(
                    f"cannot open results store {mask_url(self.url)}: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
            if version != SCHEMA_VERSION:
                raise RagmeterError(
                    f"results store {mask_url(self.url)} has schema version {version}; this "
                    f"ragmeter reads version {SCHEMA_VERSION} (use a new store file/database)")

    @classmethod
    def open_readonly(cls, url: str | os.PathLike[str] | None = None) -> tuple[ResultStore, str]:
        """Open an existing store for reading only; return it with a note on its format.

        A SQLite file is opened in read-only mode (nothing is created or written); any other
        database is only ever queried. Raises :class:`RagmeterError` saying why a store cannot
        be read: missing file, no ragmeter tables, or a schema newer than this ragmeter's. A
        store written before schema versions existed is read as version 1 (same tables) with a
        note saying so."""
        import sqlalchemy as sa

        target = normalize_url(url)
        shown = mask_url(target)
        if target.startswith("sqlite:///"):
            path = Path(target[len("sqlite:///"):].split("?", 1)[0])
            if not path.is_file():
                raise RagmeterError(f"no results store at {path} (run `ragmeter run` or "
                                    "`ragmeter demo` first, or pass --store URL)")
            target = f"sqlite:///file:{path}?mode=ro&uri=true"
        store = cls(target, create=False)
        store.url = normalize_url(url)
        try:
            tables = set(sa.inspect(store.engine).get_table_names())
        except Exception as exc:
            raise RagmeterError(f"cannot read results store {shown}: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        missing = {"rm_runs", "rm_tiers", "rm_metrics", "rm_values"} - tables
        if missing:
            raise RagmeterError(f"{shown} is not a ragmeter results store (tables missing: "
                                f"{', '.join(sorted(missing))})")
        if "rm_schema" not in tables:
            return store, ("written by an earlier ragmeter without a schema version; read as "
                           f"schema {SCHEMA_VERSION}")
        with store.engine.connect() as conn:
            row = conn.execute(sa.select(store.t_schema.c.version)).first()
        version = int(row[0]) if row else SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise RagmeterError(f"results store {shown} has schema version {version}, written "
                                f"by a newer ragmeter; this one reads version {SCHEMA_VERSION} "
                                "(upgrade ragmeter: pip install -U ragmeter)")
        if version < SCHEMA_VERSION:
            raise RagmeterError(f"results store {shown} has schema version {version}; this "
                                f"ragmeter reads version {SCHEMA_VERSION} (no reader for older "
                                "versions: export it with the ragmeter that wrote it)")
        return store, f"schema {version}"

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    def _create_schema(self, conn: Any) -> int:
        """Create the tables if needed and return the schema version, in one write transaction
        that other processes creating the same store wait for (SQLite: ``BEGIN IMMEDIATE``;
        PostgreSQL: a transaction-scoped advisory lock), so first use is race-free."""
        import sqlalchemy as sa

        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                         {"k": zlib.crc32(b"ragmeter-store-schema")})
        existing = set(sa.inspect(conn).get_table_names())
        legacy = "rm_runs" in existing and "rm_schema" not in existing
        self.metadata.create_all(conn)
        add_missing_columns(conn, self._tables)
        # indexes added since a store was created: made on its first write-side open (a store
        # opened read-only without them is read through the primary keys, more slowly)
        for table in self.metadata.sorted_tables:
            for index in table.indexes:
                index.create(conn, checkfirst=True)
        if legacy:
            return 0
        row = conn.execute(sa.select(self.t_schema.c.version)).first()
        if row is None:
            conn.execute(self.t_schema.insert().values(version=SCHEMA_VERSION))
            return SCHEMA_VERSION
        return int(row[0])

    def _write(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(conn)`` in one short write transaction; retried on transient errors
        (a locked SQLite database past its busy timeout, a PostgreSQL serialization failure or
        deadlock) with growing pauses. Each attempt starts from scratch: a failed transaction
        was rolled back, so nothing is written twice."""
        delay = 0.05
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self._write_engine.begin() as conn:
                    return fn(conn)
            except Exception as exc:
                if attempt == WRITE_ATTEMPTS - 1 or not is_transient(exc):
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the store's database connections (a SQLite file is checkpointed: its
        write-ahead log is folded into the file)."""
        self.engine.dispose()
        self._write_engine.dispose()

    def __repr__(self) -> str:
        return f"ResultStore({mask_url(self.url)!r})"

    def _define_tables(self) -> None:
        t = define_tables()
        self._tables = t
        self._present: dict[str, set[str]] = {}
        self.metadata, self.t_schema, self.t_runs = t.metadata, t.schema, t.runs
        self.t_tiers, self.t_metrics, self.t_values, self.t_samples = (
            t.tiers, t.metrics, t.values, t.samples)


    def _run_rows(self, conn: Any, run_id: str) -> tuple[Any, list[Any], list[Any]]:
        """A run's row, its tier rows in order and its metric rows in report order."""
        import sqlalchemy as sa

        row = conn.execute(sa.select(*self.present_columns("rm_runs", skip=("sample_ids_json",)))
                           .where(self.t_runs.c.id == run_id)).one()
        tier_rows = list(conn.execute(sa.select(self.t_tiers)
                                      .where(self.t_tiers.c.run_id == run_id)
                                      .order_by(self.t_tiers.c.position)))
        metric_rows = list(conn.execute(
            sa.select(*self.present_columns("rm_metrics")).where(self.t_metrics.c.run_id == run_id)
            .order_by(self.t_metrics.c.tier, self.t_metrics.c.system_position,
                      self.t_metrics.c.position)))
        return row, tier_rows, metric_rows

    def present_columns(self, table: str, skip: tuple[str, ...] = ()) -> list[Any]:
        """The columns of ``table`` this store has, less ``skip`` (an older store lacks those
        added since: it is read without them)."""
        if table not in self._present:
            import sqlalchemy as sa

            with self.engine.connect() as conn:
                self._present[table] = {c["name"] for c in sa.inspect(conn).get_columns(table)}
        have = self._present[table]
        return [c for c in getattr(self._tables, table[3:]).columns
                if c.name in have and c.name not in skip]

    def has_column(self, table: str, name: str) -> bool:
        """Whether this store's ``table`` has column ``name`` (one added since version 1)."""
        self.present_columns(table)   # reads the store's columns once
        return name in self._present[table]

    # ------------------------------------------------------------------ writing
    def save_run(
        self,
        run: StoredRun | None = None,
        *,
        name: str | None = None,
        tiers: Mapping[str, TierRecord] | None = None,
        config: Mapping[str, Any] | None = None,
        signature: str = "",
        samples: Mapping[str, Mapping[str, Any]] | None = None,
        run_id: str | None = None,
        git: bool | str | None = True,
        meta: Mapping[str, Any] | None = None,
        status: str = "complete",
    ) -> str:
        """Store a run (replacing a run with the same id) and return its id.

        Either pass a :class:`StoredRun`, or its parts: ``name``, ``tiers`` (tier → record),
        ``config`` (masked with :func:`ragmeter.secrets.mask_secrets` before saving),
        ``samples`` (sample id → dict for the report explorer). ``git=True`` records the
        current commit when the working directory is a git repository.
        """
        if run is None:
            if name is None or tiers is None:
                raise TypeError("save_run needs a StoredRun or name= and tiers=")
            commit = git if isinstance(git, str) else (git_commit() if git else None)
            run = StoredRun(id=run_id or new_run_id(), created_at=utc_now(), name=name,
                            signature=signature, config=dict(config or {}), git_commit=commit,
                            status=status, tiers=dict(tiers),
                            samples={k: dict(v) for k, v in (samples or {}).items()},
                            meta=dict(meta or {}))

        rows = table_rows(run)
        batches = [(table, part[i:i + WRITE_BATCH_ROWS])
                   for table, part in ((self.t_tiers, rows.tiers), (self.t_metrics, rows.metrics),
                                       (self.t_values, rows.values), (self.t_samples, rows.samples))
                   for i in range(0, len(part), WRITE_BATCH_ROWS)]
        if sum(len(part) for _, part in batches) <= WRITE_BATCH_ROWS:
            # small run: one transaction, never visible half-written
            def write_all(conn: Any) -> None:
                self._delete(conn, run.id)
                conn.execute(self.t_runs.insert().values(status=run.status, **rows.run))
                for table, part in batches:
                    conn.execute(table.insert(), part)
            self._write(write_all)
            return run.id
        # large run: the run row is marked 'writing' first, its rows follow in short
        # transactions, and the final status is set last; a reader sees 'writing' meanwhile,
        # and a writer that dies half-way leaves a run marked 'writing', never a silent gap
        def start(conn: Any) -> None:
            self._delete(conn, run.id)
            conn.execute(self.t_runs.insert().values(status=RUN_WRITING, **rows.run))
        self._write(start)
        for table, part in batches:
            def insert(conn: Any, table: Any = table, part: list[dict[str, Any]] = part) -> None:
                conn.execute(table.insert(), part)
            self._write(insert)
        self._write(lambda conn: conn.execute(
            self.t_runs.update().where(self.t_runs.c.id == run.id).values(status=run.status)))
        return run.id

    def _delete(self, conn: Any, run_id: str) -> None:
        for table in (self.t_values, self.t_metrics, self.t_tiers, self.t_samples, self.t_runs):
            key = table.c.id if table is self.t_runs else table.c.run_id
            conn.execute(table.delete().where(key == run_id))

    def delete_run(self, run_id: str) -> None:
        run_id = self._require(run_id)
        self._write(lambda conn: self._delete(conn, run_id))

    # ------------------------------------------------------------------ reading
    def _require(self, run_id: str) -> str:
        import sqlalchemy as sa

        with self.engine.connect() as conn:
            ids = [r[0] for r in conn.execute(
                sa.select(self.t_runs.c.id).where(self.t_runs.c.id.like(f"{run_id}%")))]
        if run_id in ids:
            return run_id
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise RagmeterError(f"no run '{run_id}' in store {mask_url(self.url)} "
                                "(see `ragmeter runs list`)")
        raise RagmeterError(f"run id prefix '{run_id}' is ambiguous: {', '.join(sorted(ids))}")

    def has_run(self, run_id: str) -> bool:
        try:
            self._require(run_id)
        except RagmeterError:
            return False
        return True

    def list_runs(self, name: str | None = None, limit: int | None = None) -> list[RunSummary]:
        """Runs, newest first."""
        import sqlalchemy as sa

        q = sa.select(self.t_runs.c.id, self.t_runs.c.created_at, self.t_runs.c.name,
                      self.t_runs.c.status, self.t_runs.c.git_commit)
        if name is not None:
            q = q.where(self.t_runs.c.name == name)
        q = q.order_by(self.t_runs.c.created_at.desc(), self.t_runs.c.id.desc())
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            runs = list(conn.execute(q))
            counts: dict[str, dict[str, int]] = {}
            for rid, status, n in conn.execute(
                sa.select(self.t_tiers.c.run_id, self.t_tiers.c.status, sa.func.count())
                .group_by(self.t_tiers.c.run_id, self.t_tiers.c.status)
            ):
                counts.setdefault(rid, {})[status] = int(n)
        return [RunSummary(r.id, r.created_at, r.name, r.status, r.git_commit,
                           counts.get(r.id, {}).get("ok", 0),
                           counts.get(r.id, {}).get("not_run", 0),
                           counts.get(r.id, {}).get("error", 0),
                           counts.get(r.id, {}).get("partial", 0)) for r in runs]

    def run_rows(self) -> list[RunRow]:
        """Every run for the registry, newest first, with its tags and tier counts."""
        import sqlalchemy as sa

        r = self.t_runs.c
        with self.engine.connect() as conn:
            runs = list(conn.execute(sa.select(r.id, r.created_at, r.name, r.status,
                                               r.git_commit, r.meta_json, r.config_json)
                                     .order_by(r.created_at.desc(), r.id.desc())))
            counts: dict[str, dict[str, int]] = {}
            for rid, status, n in conn.execute(
                sa.select(self.t_tiers.c.run_id, self.t_tiers.c.status, sa.func.count())
                .group_by(self.t_tiers.c.run_id, self.t_tiers.c.status)
            ):
                counts.setdefault(rid, {})[status] = int(n)

        def load(text: str) -> Any:
            try:
                return json.loads(text)
            except (TypeError, ValueError):
                return {}

        return [RunRow(str(x.id), str(x.created_at or ""), str(x.name or ""), str(x.status),
                       None if x.git_commit is None else str(x.git_commit),
                       tags_of(load(x.meta_json), load(x.config_json)),
                       counts.get(x.id, {}).get("ok", 0), counts.get(x.id, {}).get("not_run", 0),
                       counts.get(x.id, {}).get("error", 0), counts.get(x.id, {}).get("partial", 0))
                for x in runs]

    def metric_summaries(self, run_ids: Iterable[str] | None = None, *,
                         tier: str | None = None, metric: str | None = None
                         ) -> list[MetricSummary]:
        """Stored aggregates (mean, CI, n) of runs, without loading per-sample rows."""
        import sqlalchemy as sa

        m = self.t_metrics.c
        q = sa.select(m.run_id, m.tier, m.system, m.metric, m.mean, m.ci_low, m.ci_high, m.n,
                      m.n_unscored, m.higher_is_better, m.seed, m.n_boot)
        if run_ids is not None:
            q = q.where(m.run_id.in_(list(run_ids)))
        if tier is not None:
            q = q.where(m.tier == tier)
        if metric is not None:
            q = q.where(m.metric == metric)
        q = q.order_by(m.run_id, m.tier, m.system_position, m.position)
        with self.engine.connect() as conn:
            return [_summary(x) for x in conn.execute(q)]

    def latest_run_id(self, name: str | None = None) -> str | None:
        runs = self.list_runs(name=name, limit=1)
        return runs[0].id if runs else None

    def load_run(self, run_id: str, *, samples: bool = True, details: bool = True,
                 stored_aggregates: bool = False) -> StoredRun:
        """The run with every tier's EvalResults rebuilt from per-sample rows.

        ``details=False`` leaves the per-sample details (the judge's claims and reasons) out;
        ``stored_aggregates=True`` takes each metric's aggregate (mean, CI, n) from its stored
        row instead of recomputing it: what a page that shows a run needs, read without a
        bootstrap. ``samples=False`` reads no sample text (:meth:`sample_data` reads it for
        chosen samples)."""
        import sqlalchemy as sa

        run_id = self._require(run_id)
        if not details or stored_aggregates:
            return self._load_light(run_id, samples, details, stored_aggregates)
        with self.engine.connect() as conn:
            row, tier_rows, metric_rows = self._run_rows(conn, run_id)
            value_rows = conn.execute(
                sa.select(self.t_values.c.tier, self.t_values.c.system, self.t_values.c.metric,
                          self.t_values.c.sample_id, self.t_values.c.value,
                          self.t_values.c.reason, self.t_values.c.details_json)
                .where(self.t_values.c.run_id == run_id)
                .order_by(self.t_values.c.tier, self.t_values.c.system, self.t_values.c.metric,
                          self.t_values.c.idx))
            values: dict[tuple[str, str, str], list[SampleScore]] = {}
            for v in value_rows:
                values.setdefault((v.tier, v.system, v.metric), []).append(SampleScore(
                    v.sample_id, v.value, v.reason,
                    json.loads(v.details_json) if v.details_json else None))
            sample_data: dict[str, dict[str, Any]] = {}
            if samples:
                for s in conn.execute(sa.select(self.t_samples.c.sample_id,
                                                self.t_samples.c.data_json)
                                      .where(self.t_samples.c.run_id == run_id)
                                      .order_by(self.t_samples.c.position)):
                    sample_data[s.sample_id] = json.loads(s.data_json)
        tiers = {t.tier: TierRecord(t.tier, t.status, t.reason, [], json.loads(t.stats_json))
                 for t in tier_rows}
        systems: dict[tuple[str, str], EvalResult] = {}
        for m in metric_rows:
            key = (m.tier, m.system)
            if key not in systems:
                systems[key] = EvalResult(m.system, meta=json.loads(m.system_meta_json))
                tiers.setdefault(m.tier, TierRecord(m.tier)).results.append(systems[key])
            systems[key].add(MetricResult.from_scores(
                m.metric, values.get((m.tier, m.system, m.metric), []),
                Signature.parse(m.signature), counts=json.loads(m.counts_json),
                higher_is_better=bool(m.higher_is_better), seed=int(m.seed),
                n_boot=int(m.n_boot)))
        return StoredRun(id=row.id, created_at=row.created_at, name=row.name,
                         signature=row.signature, config=json.loads(row.config_json),
                         git_commit=row.git_commit, status=row.status, tiers=tiers,
                         samples=sample_data, meta=json.loads(row.meta_json))

    def _load_light(self, run_id: str, samples: bool, details: bool,
                    stored_aggregates: bool) -> StoredRun:
        from ragmeter.results.page_reads import load_light

        return load_light(self, run_id, samples=samples, details=details,
                          stored_aggregates=stored_aggregates)

    def sample_ids(self, run_id: str) -> list[str]:
        """The ids of a run's samples, in dataset order."""
        from ragmeter.results.page_reads import sample_ids

        return sample_ids(self, run_id)

    def sample_data(self, run_id: str, sample_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored text of chosen samples of a run (by primary key), id → data."""
        from ragmeter.results.page_reads import sample_data

        return sample_data(self, run_id, sample_ids)

    def sample_details(self, run_id: str, sample_ids: Iterable[str]
                       ) -> dict[tuple[str, str, str, str], dict[str, Any]]:
        """The per-sample details (judge claims and reasons) of chosen samples:
        ``(tier, system, metric, sample id)`` → details (read through the sample index)."""
        from ragmeter.results.page_reads import sample_details

        return sample_details(self, run_id, sample_ids)

    # ------------------------------------------------------------------ export
    def to_frame(self, run_id: str, per_sample: bool = True) -> Any:
        """pandas DataFrame of a run: per (tier, system, metric, sample), or per metric."""
        pd: Any = require("pandas", "pandas", "DataFrame export")
        return pd.DataFrame(self.rows(run_id, per_sample=per_sample))

    def rows(self, run_id: str, per_sample: bool = True) -> list[dict[str, Any]]:
        run = self.load_run(run_id, samples=False)
        return run_rows(run, per_sample=per_sample)

    def export_text(self, run_id: str, fmt: str = "json", per_sample: bool = True) -> str:
        """A run as JSON or CSV text (what :meth:`export` writes; Parquet is binary)."""
        if fmt == "json":
            run = self.load_run(run_id)
            return strict_json(run.to_dict(per_sample))
        if fmt != "csv":
            raise ConfigError("format", f"no text form of {fmt!r}", ["json", "csv"])
        import csv
        import io

        rows = self.rows(run_id, per_sample=per_sample)
        cols = columns_of(rows)
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
        return buf.getvalue()

    def export(self, run_id: str, path: str | os.PathLike[str], fmt: str | None = None,
               per_sample: bool = True) -> Path:
        """Write a run to JSON (full, round-trips via :meth:`StoredRun.from_dict`), CSV or
        Parquet (flat rows). The format comes from ``fmt`` or the file suffix."""
        out = Path(path)
        fmt = (fmt or out.suffix.lstrip(".")).lower()
        if fmt not in EXPORT_FORMATS:
            raise ConfigError("format", f"unknown export format {fmt!r}", list(EXPORT_FORMATS))
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "json":
            run = self.load_run(run_id)
            out.write_text(strict_json(run.to_dict(per_sample)), encoding="utf-8")
            return out
        rows = self.rows(run_id, per_sample=per_sample)
        if fmt == "csv":
            import csv

            cols = columns_of(rows)
            with out.open("w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=cols)
                w.writeheader()
                for r in rows:
                    w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
            return out
        pa: Any = require("pyarrow", "parquet", "Parquet export")
        pq: Any = require("pyarrow.parquet", "parquet", "Parquet export")
        cols = columns_of(rows)
        table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
        pq.write_table(table, str(out))
        return out

