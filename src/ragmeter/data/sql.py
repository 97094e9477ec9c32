"""Read logged user questions from a SQL database, read-only, through SQLAlchemy Core.

Default table ``question_answer`` with columns ``question``, ``answer``, ``confluence_url``,
``score``, ``created_at``; every name is configurable through
:class:`ColumnMap`. Identifiers are validated against the *reflected* table — a wrong column
name is a :class:`~ragmeter.errors.ConfigError` naming it and listing the real columns — and
values travel as bound parameters, never as SQL text.

Read-only by construction:

* SQLite: the file is opened through a ``file:…?mode=ro`` URI (a missing file is an error,
  never a new empty database);
* PostgreSQL: the session runs with ``default_transaction_read_only=on`` and every
  transaction starts with ``SET TRANSACTION READ ONLY``.

The URL comes from the argument, else ``$RAGMETER_DB_URL``; the password is never printed
(:func:`mask_url` in every message).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DataError, require
from ragmeter.secrets import mask_text, mask_url

ENV_URL = "RAGMETER_DB_URL"
DEFAULT_TABLE = "question_answer"


@dataclass(frozen=True)
class ColumnMap:
    """Logical role → column name. ``id`` / ``answer`` / ``score`` / ``created_at`` may be None."""

    question: str = "question"
    answer: str | None = "answer"
    url: str = "confluence_url"
    score: str | None = "score"
    created_at: str | None = "created_at"
    id: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnMap:
        known = {f.name for f in fields(cls)}
        bad = sorted(set(data) - known)
        if bad:
            raise ConfigError(f"columns.{bad[0]}", "unknown column role", sorted(known))
        return cls(**data)


@dataclass(frozen=True)
class LogQuery:
    """Which rows to read: filters, order and limit (all optional)."""

    table: str = DEFAULT_TABLE
    db_schema: str | None = None
    columns: ColumnMap = field(default_factory=ColumnMap)
    min_score: float | None = None
    where_score: float | None = None
    limit: int | None = None
    latest: bool = False

    def __post_init__(self) -> None:
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(
                self.limit, int) or self.limit < 1):
            raise ConfigError("limit", f"must be a positive integer, got {self.limit!r}")
        if self.min_score is not None and self.where_score is not None:
            raise ConfigError("where_score", "give either min_score or where_score, not both")

    def signature_fields(self) -> dict[str, Any]:
        return {"table": self.table, "min_score": self.min_score, "where_score": self.where_score,
                "limit": self.limit, "latest": self.latest or None}


@dataclass(frozen=True)
class LoggedQuestion:
    """One logged row, values as read (``url`` may be None)."""

    id: str
    question: str | None
    answer: str | None
    url: str | None
    score: float | None
    created_at: Any


@dataclass
class LoggedQuestions:
    """Rows read, plus counts of what was excluded and why."""

    rows: list[LoggedQuestion]
    n_read: int
    counts: dict[str, int]
    url_masked: str
    dialect: str
    query: LogQuery


def resolve_db_url(url: str | None = None) -> str:
    """The database URL from the argument, else ``$RAGMETER_DB_URL`` (a bare path, without
    ``://``, is an SQLite file and is kept as a path)."""
    value = url or os.environ.get(ENV_URL)
    if not value:
        raise ConfigError("db_url", f"no database URL: pass --db-url or set ${ENV_URL} "
                          "(e.g. sqlite:///logs.sqlite or postgresql+psycopg://user@host/db)")
    return value


def open_readonly_engine(url: str) -> Any:
    """A SQLAlchemy engine that can only read (see module docstring)."""
    sa = require("sqlalchemy", "postgres", "SQL log access")
    from sqlalchemy import event
    from sqlalchemy.engine import make_url

    if "://" not in url:  # a plain file path: SQLite, no URL parsing ('?', '#' are literal)
        return _sqlite_readonly(sa, url)
    try:
        u = make_url(url)
    except Exception:
        raise ConfigError("db_url", f"cannot parse database URL {mask_url(url)!r}") from None
    backend = u.get_backend_name()
    if backend == "sqlite":
        db = u.database
        if not db or db == ":memory:":
            raise ConfigError("db_url", "an SQLite log database must be a file")
        return _sqlite_readonly(sa, db)
    if backend == "postgresql":
        if u.get_driver_name() in ("psycopg", "psycopg2", ""):
            require("psycopg" if u.get_driver_name() != "psycopg2" else "psycopg2", "postgres",
                    "PostgreSQL access")
        if u.get_driver_name() == "":
            u = u.set(drivername="postgresql+psycopg")
        engine = sa.create_engine(  # type: ignore[attr-defined]
            u, connect_args={"options": "-c default_transaction_read_only=on"},
            pool_pre_ping=False)

        @event.listens_for(engine, "begin")
        def _read_only(conn: Any) -> None:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")

        return engine
    raise ConfigError("db_url", f"unsupported database '{backend}' in {mask_url(url)}",
                      ["sqlite", "postgresql"])


def _sqlite_readonly(sa: Any, db: str) -> Any:
    """Engine over ``file:<path>?mode=ro`` (percent-encoded path; never creates the file)."""
    from urllib.parse import quote

    path = Path(db).expanduser().resolve()
    if not path.is_file():
        raise ConfigError("db_url", f"SQLite file not found: {path}")
    uri = f"file:{quote(path.as_posix())}?mode=ro"
    import sqlite3

    return sa.create_engine("sqlite+pysqlite://",
                            creator=lambda: sqlite3.connect(uri, uri=True))


def _reflect(conn: Any, query: LogQuery, url_masked: str) -> Any:
    from sqlalchemy import MetaData, Table, inspect
    from sqlalchemy.exc import NoSuchTableError

    try:
        return Table(query.table, MetaData(), autoload_with=conn, schema=query.db_schema)
    except NoSuchTableError:
        tables = inspect(conn).get_table_names(schema=query.db_schema)
        raise ConfigError("table", f"table '{query.table}' not found in {url_masked}",
                          sorted(tables)) from None


def _check_columns(table: Any, query: LogQuery) -> dict[str, Any]:
    cols = query.columns
    real = [c.name for c in table.columns]
    needed: dict[str, str | None] = {
        "question": cols.question, "url": cols.url, "answer": cols.answer, "id": cols.id,
        "score": cols.score if (query.min_score is not None or query.where_score is not None
                                or cols.score in real) else None,
        "created_at": cols.created_at if (query.latest or cols.created_at in real) else None,
    }
    if (query.min_score is not None or query.where_score is not None) and not cols.score:
        raise ConfigError("columns.score", "a score filter needs a score column")
    if query.latest and not cols.created_at:
        raise ConfigError("columns.created_at", "--latest needs a created_at column")
    out = {}
    for role, name in needed.items():
        if name is None:
            continue
        if name not in table.columns:
            raise ConfigError(f"columns.{role}", f"column '{name}' not in table '{table.name}'",
                              real)
        out[role] = table.columns[name]
    return out


def fetch_logged_questions(url: str | None = None, query: LogQuery | None = None
                           ) -> LoggedQuestions:
    """Read logged questions (read-only); rows with a NULL/empty question or URL are excluded
    and counted (``null_question``, ``null_url``). ``limit`` applies to rows read, before that
    exclusion; ``latest`` orders by ``created_at`` descending (else ascending when present)."""
    from sqlalchemy import select
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    q = query or LogQuery()
    full = resolve_db_url(url)
    masked = mask_url(full)
    engine = open_readonly_engine(full)
    try:
        with engine.connect() as conn:
            table = _reflect(conn, q, masked)
            cols = _check_columns(table, q)
            stmt = select(*[c.label(role) for role, c in cols.items()])
            if q.min_score is not None:
                stmt = stmt.where(cols["score"] >= q.min_score)
            if q.where_score is not None:
                stmt = stmt.where(cols["score"] == q.where_score)
            if "created_at" in cols:
                order = cols["created_at"].desc() if q.latest else cols["created_at"].asc()
                pk = list(table.primary_key.columns)
                stmt = stmt.order_by(order, *[(c.desc() if q.latest else c.asc()) for c in pk])
            if q.limit is not None:
                stmt = stmt.limit(q.limit)
            result = conn.execute(stmt).mappings().all()
    except (ConfigError, DataError):
        raise
    except DBAPIError as exc:
        raise ConfigError("db_url", f"database error on {masked}: "
                          f"{mask_text(str(exc.orig).strip())[:500]}") from None
    except SQLAlchemyError as exc:
        raise ConfigError("db_url", f"database error on {masked}: "
                          f"{mask_text(str(exc))[:500]}") from None
    finally:
        engine.dispose()
    counts: Counter[str] = Counter()
    rows: list[LoggedQuestion] = []
    for n, r in enumerate(result, 1):
        question = r.get("question")
        link = r.get("url")
        if not isinstance(question, str) or not question.strip():
            counts["null_question"] += 1
            continue
        if link is None or (isinstance(link, str) and not link.strip()):
            counts["null_url"] += 1
            continue
        score = r.get("score")
        rows.append(LoggedQuestion(
            id=str(r["id"]) if "id" in r and r["id"] is not None else f"row{n}",
            question=question, answer=r.get("answer"), url=str(link),
            score=float(score) if isinstance(score, (int, float)) else None,
            created_at=r.get("created_at").isoformat() if isinstance(r.get("created_at"),
                                                                      datetime)
            else r.get("created_at")))
    return LoggedQuestions(rows, len(result), dict(counts), masked, engine.dialect.name, q)


__all__ = ["DEFAULT_TABLE", "ENV_URL", "ColumnMap", "LogQuery", "LoggedQuestion",
           "LoggedQuestions", "fetch_logged_questions", "mask_url", "open_readonly_engine",
           "resolve_db_url"]
