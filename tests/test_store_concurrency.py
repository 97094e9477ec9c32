"""The results store under concurrent writers: separate processes writing runs into one fresh
store at the same time (first use races on the schema, long writes race on the lock) must all
land, and the database must stay intact. SQLite and the real PostgreSQL server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from ragmeter.results.store import ResultStore

PG_URL = os.environ.get("RAGMETER_TEST_PG_URL")
SRC = str(Path(__file__).resolve().parents[1] / "src")

WRITER = textwrap.dedent("""
    import sys
    from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
    from ragmeter.results.store import ResultStore, TierRecord

    url, n, n_metrics, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    res = EvalResult("bm25")
    scores = [SampleScore(f"q{i}", (i % 7) / 7, None, None) for i in range(n)]
    for m in range(n_metrics):
        name = f"hit_rate@{m + 1}"
        res.add(MetricResult.from_scores(name, scores, Signature.make(metric=name), n_boot=50))
    run_id = ResultStore(url).save_run(
        name=f"run-{tag}", tiers={"retrieval": TierRecord("retrieval", results=[res])}, git=False)
    print(run_id)
""")


def _writers(tmp_path: Path, url: str, count: int, n: int, n_metrics: int) -> list[str]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, str(script), url, str(n), str(n_metrics), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(count)]
    ids = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        ids.append(out.strip().splitlines()[-1])
    return ids


def _fresh_url(kind: str, tmp_path: Path, trial: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'store-{trial}.sqlite'}"
    if not PG_URL:
        pytest.skip("RAGMETER_TEST_PG_URL is not set (start a server with scripts/pg_setup.sh)")
    import sqlalchemy as sa

    schema = f"rm_conc_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(PG_URL)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    return f"{PG_URL}?options=-csearch_path%3D{schema}"


def _check_integrity(url: str, expected: list[str]) -> None:
    store = ResultStore(url)
    listed = {r.id: r for r in store.list_runs()}
    assert sorted(listed) == sorted(expected)
    assert {r.status for r in listed.values()} == {"complete"}
    for rid in expected:
        run = store.load_run(rid, samples=False)
        assert run.tiers["retrieval"].results[0].results, rid
    if url.startswith("sqlite"):
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_three_concurrent_runs_on_a_fresh_store_all_land(kind, tmp_path):
    for trial in range(10):
        url = _fresh_url(kind, tmp_path, trial)
        ids = _writers(tmp_path, url, count=3, n=200, n_metrics=2)
        _check_integrity(url, ids)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_concurrent_large_runs_both_land(kind, tmp_path):
    url = _fresh_url(kind, tmp_path, 0)
    ids = _writers(tmp_path, url, count=2, n=100_000, n_metrics=2)
    _check_integrity(url, ids)
    store = ResultStore(url)
    run = store.load_run(ids[0], samples=False)
    assert len(run.tiers["retrieval"].results[0].results["hit_rate@1"].values) == 100_000
