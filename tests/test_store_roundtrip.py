"""Results store: save → load round-trips on SQLite and PostgreSQL, history, exports."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.errors import RagmeterError
from ragmeter.results.store import ResultStore, StoredRun, mask_url, normalize_url

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

PG_URL = os.environ.get("RAGMETER_TEST_PG_URL")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    if request.param == "sqlite":
        return ResultStore(f"sqlite:///{tmp_path / 'r.sqlite'}")
    if not PG_URL:
        pytest.skip("RAGMETER_TEST_PG_URL is not set (start a server with scripts/pg_setup.sh)")
    return ResultStore(PG_URL)


def _uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _same(a, b) -> None:
    assert a.name == b.name
    assert list(a.results) == list(b.results)
    for key, ma in a.results.items():
        mb = b.results[key]
        assert ma.sample_ids == mb.sample_ids
        assert np.array_equal(np.isnan(ma.values), np.isnan(mb.values))
        assert np.allclose(ma.values[~np.isnan(ma.values)], mb.values[~np.isnan(mb.values)])
        assert ma.reasons == mb.reasons
        assert ma.counts == mb.counts
        assert str(ma.signature) == str(mb.signature)
        assert ma.higher_is_better == mb.higher_is_better
        assert ma.aggregate == mb.aggregate  # same values + seed -> same CI


def test_roundtrip(store):
    run = builders.make_run(_uid("rt"))
    store.save_run(run)
    back = store.load_run(run.id)
    assert back.name == run.name and back.git_commit == "abc1234"
    assert list(back.tiers) == list(run.tiers)
    assert back.tiers["ux"].status == "not_run"
    assert "not available" in back.tiers["ux"].reason
    assert back.tiers["generation"].stats["llm_calls"] == 60
    for tier, rec in run.tiers.items():
        assert len(back.tiers[tier].results) == len(rec.results)
        for a, b in zip(rec.results, back.tiers[tier].results, strict=True):
            _same(a, b)
            assert b.meta == a.meta
    # details (judge reasons) survive
    faith = back.tiers["generation"].results[0]["faithfulness"]
    assert faith.details[0] == {"reason": "claim 0 supported by context"}
    assert faith.reasons == {2: "parse_error"}
    assert back.samples["q1"]["user_input"] == builders.XSS
    assert list(back.samples) == list(run.samples)  # q1, q2, ..., q10 — not q1, q10, q2
    store.delete_run(run.id)
    assert not store.has_run(run.id)


def test_secrets_masked_in_stored_config(store):
    run = builders.make_run(_uid("sec"))
    store.save_run(run)
    back = store.load_run(run.id)
    text = json.dumps(back.config)
    assert "sk-secret" not in text and "hunter2" not in text
    assert back.config["judges"][0]["api_key"] == "***"
    assert back.config["judges"][0]["api_key_env"] == "OPENAI_API_KEY"  # a name, kept
    store.delete_run(run.id)


def test_history_and_prefix(store):
    name = _uid("hist")
    ids = []
    for i, created in enumerate(["2026-01-01T00:00:00+00:00", "2026-01-08T00:00:00+00:00"]):
        run = builders.make_run(_uid(f"h{i}"))
        run.name, run.created_at = name, created
        ids.append(store.save_run(run))
    listed = store.list_runs(name=name)
    assert [r.id for r in listed] == ids[::-1]  # newest first
    assert listed[0].n_tiers_ok == 4 and listed[0].n_tiers_not_run == 1
    assert store.latest_run_id(name=name) == ids[1]
    assert store.load_run(ids[0][:12]).id == ids[0]  # unique prefix
    with pytest.raises(RagmeterError, match="no run"):
        store.load_run("does-not-exist")
    # saving again with the same id replaces the run, it does not duplicate rows
    again = builders.make_run(ids[0])
    again.name = name
    store.save_run(again)
    assert len(store.list_runs(name=name)) == 2
    needs_extra("pandas")
    frame = store.to_frame(ids[0])
    n_values = sum(len(m.sample_ids) for rec in again.tiers.values() for r in rec.results
                   for m in r.results.values())
    assert len(frame) == n_values
    for rid in ids:
        store.delete_run(rid)


def test_exports(store, tmp_path):
    run = builders.make_run(_uid("exp"))
    store.save_run(run)
    j = store.export(run.id, tmp_path / "r.json")
    back = StoredRun.from_dict(json.loads(j.read_text(encoding="utf-8")))
    _same(back.tiers["retrieval"].results[1], run.tiers["retrieval"].results[1])
    c = store.export(run.id, tmp_path / "r.csv")
    needs_extra("pandas")
    needs_extra("parquet")
    import pandas as pd

    df = pd.read_csv(c)
    row = df[(df.system == "judge-main") & (df.metric == "faithfulness") & (df.sample_id == "q3")]
    assert row.reason.item() == "parse_error" and math.isnan(row.value.item())
    p = store.export(run.id, tmp_path / "r.parquet")
    pq = pd.read_parquet(p)
    assert len(pq) == len(df)
    agg = store.export(run.id, tmp_path / "agg.csv", per_sample=False)
    dfa = pd.read_csv(agg)
    mrr = dfa[(dfa.system == "bm25") & (dfa.metric == "mrr")]
    assert mrr["mean"].item() == pytest.approx(
        run.tiers["retrieval"].results[0]["mrr"].aggregate.mean)
    store.delete_run(run.id)


def test_urls_and_masking(tmp_path):
    assert normalize_url(tmp_path / "x.sqlite").startswith("sqlite:///")
    assert normalize_url("postgresql://u:p@h/db").startswith("postgresql+psycopg://")
    assert "hunter2" not in mask_url("postgresql+psycopg://u:hunter2@h/db")
    assert "hunter2" not in repr(ResultStore(f"sqlite:///{tmp_path / 'x.sqlite'}"))


def test_schema_version_is_checked(tmp_path):
    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'v.sqlite'}"
    store = ResultStore(url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE rm_schema SET version = 99"))
    with pytest.raises(RagmeterError, match="schema version 99"):
        ResultStore(url)
    with store.engine.begin() as conn:  # a store from before versioning
        conn.execute(sa.text("DROP TABLE rm_schema"))
    with pytest.raises(RagmeterError, match="schema version 0"):
        ResultStore(url)
