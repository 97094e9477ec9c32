"""A store written before the one-row values columns and the sample index stays readable:
read-only (the viewer) it is read through the per-sample rows; a writer adds the columns and
the index on open, new runs keep their values in one row, older runs are read as before."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import numpy as np

from ragmeter.results.store import ResultStore

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _values(run):
    return {(tier, res.name, m.metric): (list(m.sample_ids), np.nan_to_num(m.values, nan=-9),
                                         dict(m.reasons))
            for tier, rec in run.tiers.items() for res in rec.results for m in res}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k][0] == b[k][0] and np.array_equal(a[k][1], b[k][1]) and a[k][2] == b[k][2], k


def test_an_old_store_is_read_then_upgraded_by_a_writer(tmp_path):
    path = tmp_path / "old.sqlite"
    url = f"sqlite:///{path}"
    store = ResultStore(url)
    store.save_run(builders.make_run("old-run", n=9))
    store.close()
    con = sqlite3.connect(path)  # as a store written before the columns and the index
    for col in ("ids_json", "values_blob", "reasons_json"):
        con.execute(f"ALTER TABLE rm_metrics DROP COLUMN {col}")
    con.execute("DROP INDEX ix_rm_values_sample")
    con.commit()
    con.close()

    ro, _ = ResultStore.open_readonly(url)
    full = ro.load_run("old-run")
    light = ro.load_run("old-run", samples=False, details=False, stored_aggregates=True)
    _same(_values(full), _values(light))
    assert full.tiers["generation"].results[0]["faithfulness"].details   # the full read
    ro.close()

    writer = ResultStore(url)   # the first write-side open adds the columns and the index
    writer.save_run(builders.make_run("new-run", n=9))
    writer.close()
    con = sqlite3.connect(path)
    cols = {r[1] for r in con.execute("PRAGMA table_info(rm_metrics)")}
    assert {"ids_json", "values_blob", "reasons_json"} <= cols
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name='ix_rm_values_sample'"
                       ).fetchone()[0] == 1
    blobs = dict(con.execute("SELECT run_id, count(values_blob) FROM rm_metrics GROUP BY run_id"))
    assert blobs["old-run"] == 0 and blobs["new-run"] > 0
    con.close()
    ro, _ = ResultStore.open_readonly(url)
    for rid in ("old-run", "new-run"):
        _same(_values(ro.load_run(rid)), _values(ro.load_run(rid, samples=False, details=False,
                                                             stored_aggregates=True)))
    before = _values(ro.load_run("new-run"))
    ro.close()
    con = sqlite3.connect(path)   # the new run's values are read from its metric rows alone
    con.execute("DELETE FROM rm_values WHERE run_id = 'new-run'")
    con.commit()
    con.close()
    ro, _ = ResultStore.open_readonly(url)
    _same(before, _values(ro.load_run("new-run", samples=False, details=False,
                                      stored_aggregates=True)))
    ro.close()
