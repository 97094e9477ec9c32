"""The database side of the results store: URLs, engines, tables and transient write errors.

Any SQLAlchemy URL works; a plain path is a SQLite file. SQLite files are opened in WAL mode
with a busy timeout, and written with ``BEGIN IMMEDIATE`` so that concurrent writers queue.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem
from ragmeter.results.runs import StoredRun, finite_or_none, masked_json
from ragmeter.secrets import mask_secrets

DEFAULT_STORE_FILE = "ragmeter-results.sqlite"
STORE_ENV = "RAGMETER_STORE_URL"
SCHEMA_VERSION = 1
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


@dataclass(frozen=True)
class Tables:
    """The store's tables (prefix ``rm_``) on one SQLAlchemy ``MetaData``."""

    metadata: Any
    schema: Any
    runs: Any
    tiers: Any
    metrics: Any
    values: Any
    samples: Any


def _metrics_table(md: Any) -> Any:
    """``rm_metrics``: one row per run × tier × system × metric."""
    import sqlalchemy as sa

    text = sa.Text
    return sa.Table(
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
        # the per-sample values again, as one row (written since these columns exist; NULL
        # in older rows): a page reads a metric's values in one row, not one row per sample
        sa.Column("ids_json", text),
        sa.Column("values_blob", sa.LargeBinary),
        sa.Column("reasons_json", text),
        # the paired test's projections of a large fully scored metric
        # (:mod:`ragmeter.results.projections`): a diff of two runs is a subtraction
        sa.Column("signs_blob", sa.LargeBinary),
        sa.Column("boots_blob", sa.LargeBinary),
        # the test's draws at the metric's unscored samples (a pair dropped from a paired test)
        sa.Column("gaps_blob", sa.LargeBinary),
    )


def define_tables() -> Tables:
    """The table definitions of schema version :data:`SCHEMA_VERSION`."""
    import sqlalchemy as sa

    md = sa.MetaData()
    text = sa.Text
    schema = sa.Table("rm_schema", md, sa.Column("version", sa.Integer, primary_key=True))
    runs = sa.Table(
        "rm_runs", md,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("name", text, nullable=False),
        sa.Column("signature", text, nullable=False, default=""),
        sa.Column("config_json", text, nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("meta_json", text, nullable=False),
        # the samples' ids in dataset order, one JSON list (a run page orders its rows
        # without reading every sample row)
        sa.Column("sample_ids_json", text),
    )
    tiers = sa.Table(
        "rm_tiers", md,
        sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("tier", sa.String(64), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("reason", text),
        sa.Column("stats_json", text, nullable=False),
    )
    metrics = _metrics_table(md)
    values = sa.Table(
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
        # one sample's scores across metrics (the sample and side-by-side pages, the shown
        # rows of a run page) without reading the whole run
        sa.Index("ix_rm_values_sample", "run_id", "sample_id"),
    )
    samples = sa.Table(
        "rm_samples", md,
        sa.Column("run_id", sa.String(64), sa.ForeignKey("rm_runs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("sample_id", sa.String(400), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("data_json", text, nullable=False),
    )
    return Tables(md, schema, runs, tiers, metrics, values, samples)


#: columns added to a table after schema version 1 (nullable; an older store gets them on its
#: first write-side open, and is read without them until then)
ADDED_COLUMNS = {"rm_metrics": ("ids_json", "values_blob", "reasons_json", "signs_blob",
                                 "boots_blob", "gaps_blob"),
                 "rm_runs": ("sample_ids_json",)}


def add_missing_columns(conn: Any, tables: Tables) -> None:
    """Add :data:`ADDED_COLUMNS` to the tables of an older store (in the schema
    transaction)."""
    import sqlalchemy as sa

    for name, cols in ADDED_COLUMNS.items():
        have = {c["name"] for c in sa.inspect(conn).get_columns(name)}
        table = getattr(tables, name[3:])
        for col in cols:
            if col in have:
                continue
            kind = table.c[col].type.compile(dialect=conn.dialect)
            conn.execute(sa.text(f"ALTER TABLE {name} ADD COLUMN {col} {kind}"))


def values_columns(mr: Any) -> dict[str, Any]:
    """A metric's per-sample values as the one-row columns of :data:`ADDED_COLUMNS`."""
    import numpy as np

    from ragmeter.results.projections import project, to_columns

    return {"ids_json": json.dumps(list(mr.sample_ids), ensure_ascii=False),
            "values_blob": np.asarray(mr.values, dtype="<f8").tobytes(),
            "reasons_json": masked_json({str(i): r for i, r in sorted(mr.reasons.items())}),
            **to_columns(project(mr))}


def values_from_columns(ids_json: str, blob: bytes, reasons_json: str | None,
                        seen: dict[str, list[str]] | None = None
                        ) -> tuple[list[str], Any, dict[int, str]]:
    """:func:`values_columns` read back: sample ids, values (float64, NaN unscored), reasons
    by position. ``seen``: the ids already read for this run (its metrics mostly share one
    list: read once, shared)."""
    import numpy as np

    ids = seen.get(ids_json) if seen is not None else None
    if ids is None:
        ids = [str(x) for x in json.loads(ids_json)]
        if seen is not None:
            seen[ids_json] = ids
    values = np.frombuffer(blob, dtype="<f8").astype(np.float64)
    if values.shape != (len(ids),):
        raise ValueError(f"{values.size} stored values for {len(ids)} sample ids")
    reasons = {int(k): str(v) for k, v in json.loads(reasons_json or "{}").items()}
    return ids, values, reasons


@dataclass(frozen=True)
class TableRows:
    """A run as rows of the store's tables (secrets masked), ready to insert."""

    run: dict[str, Any]
    tiers: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    values: list[dict[str, Any]]
    samples: list[dict[str, Any]]


def table_rows(run: StoredRun) -> TableRows:
    """The rows that store ``run``; two results of one tier sharing a name are a DataError."""
    rows = TableRows({}, [], [], [], [])
    for pos, (tier, rec) in enumerate(run.tiers.items()):
        rows.tiers.append({"run_id": run.id, "tier": tier, "position": pos,
                           "status": rec.status, "reason": rec.reason,
                           "stats_json": masked_json(rec.stats)})
        seen: set[str] = set()
        for spos, res in enumerate(rec.results):
            if res.name in seen:
                raise DataError(RecordProblem(f"run {run.id}", None, f"{tier}.{res.name}",
                                              "two results of one tier share a name"))
            seen.add(res.name)
            for mpos, (key, mr) in enumerate(res.results.items()):
                agg = mr.aggregate
                rows.metrics.append({
                    "run_id": run.id, "tier": tier, "system": res.name, "metric": key,
                    "position": mpos, "system_position": spos,
                    "system_meta_json": masked_json(res.meta), "signature": str(mr.signature),
                    "higher_is_better": bool(mr.higher_is_better), "seed": int(mr.seed),
                    "n_boot": int(mr.n_boot), "counts_json": masked_json(mr.counts),
                    "mean": finite_or_none(agg.mean), "ci_low": finite_or_none(agg.ci_low),
                    "ci_high": finite_or_none(agg.ci_high), "n": agg.n,
                    "n_unscored": agg.n_unscored, **values_columns(mr),
                })
                for idx, rec_s in enumerate(mr.records()):
                    rows.values.append({
                        "run_id": run.id, "tier": tier, "system": res.name,
                        "metric": key, "idx": idx, "sample_id": rec_s.sample_id,
                        "value": rec_s.value, "reason": rec_s.reason,
                        "details_json": masked_json(dict(rec_s.details))
                        if rec_s.details else None,
                    })
    rows.samples.extend({"run_id": run.id, "sample_id": sid, "position": pos,
                         "data_json": masked_json(data)}
                        for pos, (sid, data) in enumerate(run.samples.items()))
    rows.run.update({"id": run.id, "created_at": run.created_at, "name": run.name,
                     "signature": run.signature,
                     "config_json": masked_json(mask_secrets(run.config)),
                     "git_commit": run.git_commit,
                     "meta_json": masked_json(mask_secrets(run.meta)),
                     "sample_ids_json": json.dumps(list(run.samples), ensure_ascii=False)})
    return rows


def make_engine(url: str, *, immediate: bool) -> Any:
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


def is_transient(exc: BaseException) -> bool:
    """A write error worth retrying: busy/locked SQLite, PostgreSQL serialization failure or
    deadlock, a table created by a concurrent first use."""
    text = str(exc).lower()
    return any(m in text for m in ("database is locked", "database is busy", "deadlock",
                                   "could not serialize", "already exists",
                                   "duplicate key value violates unique constraint \"pg_type"))
