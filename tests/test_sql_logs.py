"""Logged questions over SQL: the same cases on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import pytest

from conftest import logdb, needs_extra
from ragmeter.data.sql import (
    ColumnMap,
    LogQuery,
    fetch_logged_questions,
    mask_url,
    open_readonly_engine,
    resolve_db_url,
)
from ragmeter.errors import ConfigError


def _q(db, **kw) -> LogQuery:
    return LogQuery(db_schema=db.schema, **kw)


def test_defaults_exclude_and_count_nulls(db) -> None:
    got = fetch_logged_questions(db.url, _q(db))
    assert got.n_read == 6
    assert got.counts == {"null_url": 1, "null_question": 1}
    assert [r.question for r in got.rows] == ["Как оформить отпуск?", "Как подключить VPN?",
                                               "Какой пароль от Wi-Fi?", "Как заказать пропуск?"]
    assert got.rows[0].score == 5.0 and got.rows[0].answer == "Через портал."
    assert str(got.rows[0].created_at).startswith("2024-01-01")
    assert got.dialect in ("sqlite", "postgresql")


def test_score_filters_limit_latest(db) -> None:
    five = fetch_logged_questions(db.url, _q(db, min_score=5))
    assert [r.url for r in five.rows] == ["https://wiki.example.com/pages/vacation",
                                          "https://wiki.example.com/pages/wifi"]
    assert five.counts == {"null_url": 1, "null_question": 1}
    three = fetch_logged_questions(db.url, _q(db, where_score=3))
    assert [r.question for r in three.rows] == ["Как подключить VPN?"]
    latest = fetch_logged_questions(db.url, _q(db, limit=2, latest=True))
    assert latest.n_read == 2
    assert [r.question for r in latest.rows] == ["Как заказать пропуск?"]
    assert latest.counts == {"null_question": 1}


def test_bad_column_names_it_and_lists_real_columns(db) -> None:
    with pytest.raises(ConfigError) as ei:
        fetch_logged_questions(db.url, _q(db, columns=ColumnMap(url="confluence_link")))
    msg = str(ei.value)
    assert "columns.url" in msg and "'confluence_link'" in msg and "confluence_url" in msg
    with pytest.raises(ConfigError, match="not in table"):
        fetch_logged_questions(db.url, _q(db, columns=ColumnMap(
            question="question; DROP TABLE question_answer")))
    with pytest.raises(ConfigError, match="table 'nope' not found"):
        fetch_logged_questions(db.url, LogQuery(table="nope", db_schema=db.schema))
    again = fetch_logged_questions(db.url, _q(db))
    assert again.n_read == 6


def test_column_mapping_without_optional_columns(db) -> None:
    cols = ColumnMap(answer=None, score=None, created_at=None, id="id")
    got = fetch_logged_questions(db.url, _q(db, columns=cols))
    assert [r.id for r in got.rows] == ["1", "3", "4", "6"]
    assert all(r.answer is None and r.score is None for r in got.rows)
    with pytest.raises(ConfigError, match="score filter needs a score column"):
        fetch_logged_questions(db.url, _q(db, columns=cols, min_score=5))


def test_connection_is_read_only(db) -> None:
    import sqlalchemy as sa
    from sqlalchemy.exc import DBAPIError

    eng = open_readonly_engine(db.url)
    table = f'"{db.schema}".question_answer' if db.schema else "question_answer"
    try:
        with pytest.raises(DBAPIError, match=r"(?i)read-?only"), eng.begin() as conn:
            conn.execute(sa.text(f"DELETE FROM {table}"))
    finally:
        eng.dispose()
    assert fetch_logged_questions(db.url, _q(db)).n_read == 6


def test_url_from_env(db, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_DB_URL", db.url)
    assert fetch_logged_questions(None, _q(db)).n_read == 6


def test_password_never_printed() -> None:
    needs_extra("postgres")
    url = "postgresql+psycopg://alice:s3cr3t-pw@127.0.0.1:1/db"
    assert "s3cr3t-pw" not in mask_url(url) and "***" in mask_url(url)
    with pytest.raises(ConfigError) as ei:
        fetch_logged_questions(url, LogQuery())
    assert "s3cr3t-pw" not in str(ei.value) and "alice" in str(ei.value)


@pytest.mark.postgres
def test_wrong_password_on_real_server_is_masked(tmp_path) -> None:
    import os

    from sqlalchemy.engine import make_url

    url = os.environ.get(logdb.PG_ENV)
    if not url:
        pytest.skip(f"{logdb.PG_ENV} is not set (scripts/pg_setup.sh)")
    bad = make_url(url).set(password="definitely-wrong-pw").render_as_string(
        hide_password=False)
    with pytest.raises(ConfigError) as ei:
        fetch_logged_questions(bad, LogQuery())
    assert "definitely-wrong-pw" not in str(ei.value)


def test_missing_sqlite_file_and_url_resolution(tmp_path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="SQLite file not found"):
        fetch_logged_questions(f"sqlite:///{tmp_path}/absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()
    monkeypatch.delenv("RAGMETER_DB_URL", raising=False)
    with pytest.raises(ConfigError, match="RAGMETER_DB_URL"):
        resolve_db_url(None)
    assert resolve_db_url(str(tmp_path / "x.db")) == str(tmp_path / "x.db")
    with pytest.raises(ConfigError, match="unsupported database"):
        open_readonly_engine("mysql://u:p@h/db")


def test_sqlite_path_with_odd_characters(tmp_path) -> None:
    import sqlalchemy as sa

    path = tmp_path / "my logs #1?.sqlite"
    eng = sa.create_engine("sqlite://", creator=lambda: __import__("sqlite3").connect(path))
    logdb._create(eng, None)
    eng.dispose()
    got = fetch_logged_questions(str(path), LogQuery())
    assert got.n_read == 6 and got.dialect == "sqlite"
