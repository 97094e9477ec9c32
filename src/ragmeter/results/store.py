"""Results store with history: every benchmark run, its per-sample records and aggregates.

Any SQLAlchemy URL works; the default is a SQLite file ``./ragmeter-results.sqlite`` (or
``$RAGMETER_STORE_URL``). Per-sample values are stored as rows (the source of truth); the
aggregates stored next to them are a convenience for ``runs list`` and SQL users, and
:meth:`ResultStore.load_run` rebuilds every :class:`EvalResult` from the per-sample rows.

Tables (prefix ``rm_``): ``rm_runs`` (one row per run), ``rm_tiers`` (tier status and reason),
``rm_metrics`` (one row per system × metric: signature, counts, aggregate),
``rm_values`` (one row per system × metric × sample), ``rm_samples`` (the samples' text for the
report's explorer).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DataError, RagmeterError, RecordProblem, require
from ragmeter.results.jsonout import dumps as strict_json
from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
from ragmeter.secrets import mask, mask_secrets, mask_url

DEFAULT_STORE_FILE = "ragmeter-results.sqlite"
STORE_ENV = "RAGMETER_STORE_URL"
TIER_STATUSES = ("ok", "not_run", "error", "partial")
RUN_WRITING = "writing"
EXPORT_FORMATS = ("json", "csv", "parquet")
SCHEMA_VERSION = 1
#: rows per write transaction: large runs are written in batches so that no transaction holds the
#: database for long (other processes writing to the same store wait at most one batch)
WRITE_BATCH_ROWS = 20_000
#: how long a writer waits for a busy SQLite database before it retries (milliseconds)
SQLITE_BUSY_TIMEOUT_MS = 60_000
#: attempts of one write transaction on a transient error (locked database, serialization failure)
WRITE_ATTEMPTS = 8


def default_store_url() -> str:
    """``$RAGMETER_STORE_URL`` or a SQLite file in the current directory."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return f"sqlite:///{Path.cwd() / DEFAULT_STORE_FILE}"


def normalize_url(url: str | os.PathLike[str] | None) -> str:
    """Accept a SQLAlchemy URL or a plain path to a SQLite file."""
    if url is None:
        return default_store_url()
    text = str(url)
    if "://" in text:
        if text.startswith("postgres://"):
            text = "postgresql://" + text[len("postgres://"):]
        if text.startswith("postgresql://"):  # use psycopg 3, the driver of the postgres extra
            text = "postgresql+psycopg://" + text[len("postgresql://"):]
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``cwd``; ``None`` outside a repository or without git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) >= 7 else None


@dataclass
class TierRecord:
    """What happened to one tier of a run: status, reason when not run, and its results."""

    tier: str
    status: str = "ok"
    reason: str | None = None
    results: list[EvalResult] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in TIER_STATUSES:
            raise ValueError(f"tier status {self.status!r} not in {TIER_STATUSES}")


@dataclass
class StoredRun:
    """A run as kept in the store."""

    id: str
    created_at: str
    name: str
    signature: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    status: str = "complete"
    tiers: dict[str, TierRecord] = field(default_factory=dict)
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def results(self) -> dict[str, EvalResult]:
        """Every EvalResult of the run, keyed ``tier/system`` (``tier`` alone when it is unique)."""
        out: dict[str, EvalResult] = {}
        for tier, rec in self.tiers.items():
            for res in rec.results:
                key = tier if len(rec.results) == 1 else f"{tier}/{res.name}"
                out[key] = res
        return out

    def to_dict(self, per_sample: bool = True) -> dict[str, Any]:
        return {
            "id": self.id, "created_at": self.created_at, "name": self.name,
            "signature": self.signature, "config": self.config, "git_commit": self.git_commit,
            "status": self.status, "meta": self.meta,
            "tiers": {
                t: {"status": r.status, "reason": r.reason, "stats": r.stats,
                    "results": [e.to_dict(per_sample) for e in r.results]}
                for t, r in self.tiers.items()
            },
            **({"samples": self.samples} if per_sample else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredRun:
        tiers = {
            t: TierRecord(t, r.get("status", "ok"), r.get("reason"),
                          [EvalResult.from_dict(e) for e in r.get("results", [])],
                          dict(r.get("stats", {})))
            for t, r in d.get("tiers", {}).items()
        }
        return cls(id=d["id"], created_at=d.get("created_at", ""), name=d.get("name", ""),
                   signature=d.get("signature", ""), config=dict(d.get("config", {})),
                   git_commit=d.get("git_commit"), status=d.get("status", "complete"),
                   tiers=tiers, samples=dict(d.get("samples", {})), meta=dict(d.get("meta", {})))


@dataclass(frozen=True)
class RunSummary:
    """One line of ``runs list``."""

    id: str
    created_at: str
    name: str
    status: str
    git_commit: str | None
    n_tiers_ok: int
    n_tiers_not_run: int
    n_tiers_error: int = 0
    n_tiers_partial: int = 0


@dataclass(frozen=True)
class MetricSummary:
    """One stored aggregate: run × tier × system × metric (for history and registry pages)."""

    run_id: str
    tier: str
    system: str
    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_unscored: int
    higher_is_better: bool
    seed: int
    n_boot: int


@dataclass(frozen=True)
class RunRow:
    """A run's registry line: identity, tags (``meta.tags`` or ``config.tags``) and tier counts."""

    id: str
    created_at: str
    name: str
    status: str
    git_commit: str | None
    tags: tuple[str, ...]
    n_tiers_ok: int
    n_tiers_not_run: int
    n_tiers_error: int
    #: tiers cut off part-way (an interrupted run), finished batches kept
    n_tiers_partial: int = 0

    @property
    def effective_status(self) -> str:
        """``failed`` for a run with an errored tier that an older ragmeter stored as
        ``complete``; otherwise the stored status."""
        return "failed" if self.n_tiers_error and self.status == "complete" else self.status


def _tags(*sources: Any) -> tuple[str, ...]:
    out: list[str] = []
    for src in sources:
        raw = src.get("tags") if isinstance(src, Mapping) else None
        if isinstance(raw, str):
            raw = [x.strip() for x in raw.split(",")]
        if isinstance(raw, (list, tuple)):
            out.extend(str(x) for x in raw if str(x).strip() and str(x) not in out)
    return tuple(out)


def new_run_id(now: datetime | None = None) -> str:
    """Sortable, unique enough: ``20260122-153012-3fa9c1``."""
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _dumps(obj: Any) -> str:
    return mask(json.dumps(obj, ensure_ascii=False, default=str, sort_keys=True))


class ResultStore:
    """History of runs in any SQLAlchemy database (``ResultStore()`` = local SQLite file)."""

    def __init__(self, url: str | os.PathLike[str] | None = None, *, create: bool = True):
        require("sqlalchemy", "postgres", "the results store")
        self.url = normalize_url(url)
        if self.url.startswith("postgresql+psycopg"):
            require("psycopg", "postgres", "PostgreSQL results store")
        try:
            self.engine = _make_engine(self.url, immediate=False)
            self._write_engine = _make_engine(self.url, immediate=True)
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
                if attempt == WRITE_ATTEMPTS - 1 or not _transient(exc):
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def __repr__(self) -> str:
        return f"ResultStore({mask_url(self.url)!r})"

    def _define_tables(self) -> None:
        import sqlalchemy as sa

        md = sa.MetaData()
        text = sa.Text
        self.metadata = md
        self.t_schema = sa.Table("rm_schema", md, sa.Column("version", sa.Integer,
                                                             primary_key=True))
        self.t_runs = sa.Table(
            "rm_runs", md,
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("created_at", sa.String(40), nullable=False),
            sa.Column("name", text, nullable=False),
            sa.Column("signature", text, nullable=False, default=""),
            sa.Column("config_json", text, nullable=False),
            sa.Column("git_commit", sa.String(64)),
            sa.Column("status", sa.String(20), nullable=False),
            sa.Column("meta_json", text, nullable=False),
        )
        self.t_tiers = sa.Table(
            "rm_tiers", md,
            sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("tier", sa.String(64), primary_key=True),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("status", sa.String(20), nullable=False),
            sa.Column("reason", text),
            sa.Column("stats_json", text, nullable=False),
        )
        self.t_metrics = sa.Table(
            "rm_metrics", md,
            sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("tier", sa.String(64), primary_key=True),
            sa.Column("system", sa.String(200), primary_key=True),
            sa.Column("metric", sa.String(200), primary_key=True),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("system_position", sa.Integer, nullable=False),
            sa.Column("system_meta_json", text, nullable=False),
            sa.Column("signature", text, nullable=False),
            sa.Column("higher_is_better", sa.Boolean, nullable=False),
            sa.Column("seed", sa.Integer, nullable=False),
            sa.Column("n_boot", sa.Integer, nullable=False),
            sa.Column("counts_json", text, nullable=False),
            sa.Column("mean", sa.Float),
            sa.Column("ci_low", sa.Float),
            sa.Column("ci_high", sa.Float),
            sa.Column("n", sa.Integer, nullable=False),
            sa.Column("n_unscored", sa.Integer, nullable=False),
        )
        self.t_values = sa.Table(
            "rm_values", md,
            sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("tier", sa.String(64), primary_key=True),
            sa.Column("system", sa.String(200), primary_key=True),
            sa.Column("metric", sa.String(200), primary_key=True),
            sa.Column("idx", sa.Integer, primary_key=True),
            sa.Column("sample_id", text, nullable=False),
            sa.Column("value", sa.Float),
            sa.Column("reason", text),
            sa.Column("details_json", text),
        )
        self.t_samples = sa.Table(
            "rm_samples", md,
            sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("sample_id", sa.String(400), primary_key=True),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("data_json", text, nullable=False),
        )

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

        cfg = mask_secrets(run.config)
        tier_rows, metric_rows, value_rows = [], [], []
        for pos, (tier, rec) in enumerate(run.tiers.items()):
            tier_rows.append({"run_id": run.id, "tier": tier, "position": pos,
                              "status": rec.status, "reason": rec.reason,
                              "stats_json": _dumps(rec.stats)})
            seen: set[str] = set()
            for spos, res in enumerate(rec.results):
                if res.name in seen:
                    raise DataError(RecordProblem(f"run {run.id}", None, f"{tier}.{res.name}",
                                                  "two results of one tier share a name"))
                seen.add(res.name)
                for mpos, (key, mr) in enumerate(res.results.items()):
                    agg = mr.aggregate
                    metric_rows.append({
                        "run_id": run.id, "tier": tier, "system": res.name, "metric": key,
                        "position": mpos, "system_position": spos,
                        "system_meta_json": _dumps(res.meta), "signature": str(mr.signature),
                        "higher_is_better": bool(mr.higher_is_better), "seed": int(mr.seed),
                        "n_boot": int(mr.n_boot), "counts_json": _dumps(mr.counts),
                        "mean": _num(agg.mean), "ci_low": _num(agg.ci_low),
                        "ci_high": _num(agg.ci_high), "n": agg.n,
                        "n_unscored": agg.n_unscored,
                    })
                    for idx, rec_s in enumerate(mr.records()):
                        value_rows.append({
                            "run_id": run.id, "tier": tier, "system": res.name,
                            "metric": key, "idx": idx, "sample_id": rec_s.sample_id,
                            "value": rec_s.value, "reason": rec_s.reason,
                            "details_json": _dumps(dict(rec_s.details))
                            if rec_s.details else None,
                        })
        sample_rows = [{"run_id": run.id, "sample_id": sid, "position": pos,
                        "data_json": _dumps(data)}
                       for pos, (sid, data) in enumerate(run.samples.items())]
        run_row = {"id": run.id, "created_at": run.created_at, "name": run.name,
                   "signature": run.signature, "config_json": _dumps(cfg),
                   "git_commit": run.git_commit, "meta_json": _dumps(mask_secrets(run.meta))}
        batches = [(table, rows[i:i + WRITE_BATCH_ROWS])
                   for table, rows in ((self.t_tiers, tier_rows), (self.t_metrics, metric_rows),
                                       (self.t_values, value_rows), (self.t_samples, sample_rows))
                   for i in range(0, len(rows), WRITE_BATCH_ROWS)]
        if sum(len(rows) for _, rows in batches) <= WRITE_BATCH_ROWS:
            # small run: one transaction, never visible half-written
            def write_all(conn: Any) -> None:
                self._delete(conn, run.id)
                conn.execute(self.t_runs.insert().values(status=run.status, **run_row))
                for table, rows in batches:
                    conn.execute(table.insert(), rows)
            self._write(write_all)
            return run.id
        # large run: the run row is marked 'writing' first, its rows follow in short
        # transactions, and the final status is set last; a reader sees 'writing' meanwhile,
        # and a writer that dies half-way leaves a run marked 'writing', never a silent gap
        def start(conn: Any) -> None:
            self._delete(conn, run.id)
            conn.execute(self.t_runs.insert().values(status=RUN_WRITING, **run_row))
        self._write(start)
        for table, rows in batches:
            def insert(conn: Any, table: Any = table, rows: list[dict[str, Any]] = rows) -> None:
                conn.execute(table.insert(), rows)
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

        return [RunRow(x.id, x.created_at, x.name, x.status, x.git_commit,
                       _tags(load(x.meta_json), load(x.config_json)),
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
            return [MetricSummary(x.run_id, x.tier, x.system, x.metric, _num(x.mean),
                                  _num(x.ci_low), _num(x.ci_high), int(x.n), int(x.n_unscored),
                                  bool(x.higher_is_better), int(x.seed), int(x.n_boot))
                    for x in conn.execute(q)]

    def latest_run_id(self, name: str | None = None) -> str | None:
        runs = self.list_runs(name=name, limit=1)
        return runs[0].id if runs else None

    def load_run(self, run_id: str, *, samples: bool = True) -> StoredRun:
        """The run with every tier's EvalResults rebuilt from per-sample rows."""
        import sqlalchemy as sa

        run_id = self._require(run_id)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(self.t_runs).where(self.t_runs.c.id == run_id)).one()
            tier_rows = list(conn.execute(sa.select(self.t_tiers)
                                          .where(self.t_tiers.c.run_id == run_id)
                                          .order_by(self.t_tiers.c.position)))
            metric_rows = list(conn.execute(
                sa.select(self.t_metrics).where(self.t_metrics.c.run_id == run_id)
                .order_by(self.t_metrics.c.tier, self.t_metrics.c.system_position,
                          self.t_metrics.c.position)))
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
        cols = _columns(rows)
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

            cols = _columns(rows)
            with out.open("w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=cols)
                w.writeheader()
                for r in rows:
                    w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
            return out
        pa: Any = require("pyarrow", "parquet", "Parquet export")
        pq: Any = require("pyarrow.parquet", "parquet", "Parquet export")
        cols = _columns(rows)
        table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
        pq.write_table(table, str(out))
        return out


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def run_rows(run: StoredRun, per_sample: bool = True) -> list[dict[str, Any]]:
    """Flat rows of a run (what CSV/Parquet/pandas exports contain)."""
    rows: list[dict[str, Any]] = []
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                base = {"run_id": run.id, "run_name": run.name, "created_at": run.created_at,
                        "tier": tier, "system": res.name, "metric": key}
                if per_sample:
                    for s in mr.records():
                        rows.append({**base, "sample_id": s.sample_id, "value": s.value,
                                     "reason": s.reason,
                                     "details": _dumps(dict(s.details)) if s.details else None})
                else:
                    a = mr.aggregate
                    rows.append({**base, "mean": a.mean, "ci_low": a.ci_low,
                                 "ci_high": a.ci_high, "n": a.n, "n_unscored": a.n_unscored,
                                 "signature": str(mr.signature)})
    return rows


def _make_engine(url: str, *, immediate: bool) -> Any:
    """A SQLAlchemy engine; SQLite files get WAL mode (readers never block the writer), a busy
    timeout, and — for the write engine — ``BEGIN IMMEDIATE`` transactions, so two writers queue
    on the database lock instead of failing with "database is locked" when both upgrade a read
    lock at once."""
    import sqlalchemy as sa

    if not url.startswith("sqlite"):
        return sa.create_engine(url, future=True, pool_pre_ping=True)
    engine = sa.create_engine(url, future=True,
                              connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        if (":memory:" not in url and "mode=ro" not in url
                and url.rstrip("/") not in ("sqlite:", "sqlite://")):
            cur.execute("PRAGMA journal_mode=WAL")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _transient(exc: BaseException) -> bool:
    """A write error worth retrying: busy/locked SQLite, PostgreSQL serialization failure or
    deadlock, a table created by a concurrent first use."""
    text = str(exc).lower()
    return any(m in text for m in ("database is locked", "database is busy", "deadlock",
                                   "could not serialize", "already exists",
                                   "duplicate key value violates unique constraint \"pg_type"))
