"""Fixtures shared by several test modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "ragmeter_test_logdb", Path(__file__).parent / "fixtures" / "tiers" / "logdb.py")
if _spec is None or _spec.loader is None:  # pragma: no cover - the fixture file ships with tests
    raise RuntimeError("tests/fixtures/tiers/logdb.py is missing")
logdb = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(logdb)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    """A logged-questions database on SQLite and on the real PostgreSQL server (when set up)."""
    yield from logdb.make_logdb(request.param, tmp_path)
