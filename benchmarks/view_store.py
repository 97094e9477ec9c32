"""The store ``bench_view.py`` measures: ``--runs`` runs × ``--samples`` samples, two benchmark
names, tags, a retrieval tier (two metrics, one system) and a judged generation tier (claims
with verdicts in every sample's details), a judge card on every 40th run, one run with a
corrupt config and one with a corrupt details row — written with bulk inserts (SQLite) or COPY
(PostgreSQL) as the measured version's ``save_run`` would write it (its own columns: one-row
values and the paired tests' projections where that version has them)."""

from __future__ import annotations

import functools
import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAMES = ("support-bot", "support-bot", "support-bot", "legal-qa")
TAGS = (("nightly",), ("nightly", "bm25"), ("release",), ())
#: runs with a planted defect (a corrupt config; a corrupt details row): never drawn at random
CORRUPT = (3, 5)


def _signature(metric: str, seed: int) -> str:
    return f"metric:{metric}|data:bench|seed:{seed}"


def _run_id(i: int) -> str:
    return f"2026{(i // 28) % 12 + 1:02d}{i % 28 + 1:02d}-{i % 24:02d}0000-{i:06x}"


def _card(judge: str, kappa: float) -> dict[str, Any]:
    """A real judge card (as stored with a run's judge_trust tier)."""
    from ragmeter.judge_trust.card import JudgeCard, MetricCard
    from ragmeter.stats.resampling import Estimate

    stats = {"kappa": Estimate(kappa, kappa - 0.1, kappa + 0.1, 200),
             "accuracy": Estimate(0.8, 0.75, 0.85, 200)}
    mc = MetricCard("faithfulness", "binary", 200, stats, "cohen", 0.5, 0.7, 0.68)
    return JudgeCard(judge, f"{judge}-model", ("gen.verify/v1",), "0" * 64,
                     {"faithfulness": mc}).to_dict()


# --------------------------------------------------------------------------- the store
def _rows_of_run(r: int, samples: int, rng: random.Random, sample_rows: Sequence[str]
                 ) -> dict[str, list[tuple[Any, ...]]]:
    """The table rows of run ``r`` (the same for SQLite and PostgreSQL)."""
    rid = _run_id(r)
    name = NAMES[r % len(NAMES)]
    created = f"2026-{(r // 28) % 12 + 1:02d}-{r % 28 + 1:02d}T{r % 24:02d}:00:00+00:00"
    meta = {"tags": list(TAGS[r % len(TAGS)])}
    config = "{not json" if r == CORRUPT[0] else json.dumps({"name": name})
    out: dict[str, list[tuple[Any, ...]]] = {
        "rm_runs": [(rid, created, name, "", config, f"{r:040x}", "complete",
                     json.dumps(meta),
                     # the samples' order kept with the run, where the measured version does
                     *([json.dumps([f"q{i}" for i in range(samples)])]
                       if "sample_ids_json" in _columns("rm_runs") else []))],
        "rm_tiers": [], "rm_metrics": [], "rm_values": [], "rm_samples": []}
    tiers = [("retrieval", 0), ("generation", 1)]
    if r % 40 == 0:
        tiers.append(("judge_trust", 2))
    out["rm_tiers"] = [(rid, t, p, "ok", None, "{}") for t, p in tiers]
    shift = 0.002 * r
    metrics = [("retrieval", "bm25", "hit_rate@5", True),
               ("retrieval", "bm25", "ndcg@10", True),
               ("generation", "judge-main", "faithfulness", True)]
    for pos, (tier, system, metric, hib) in enumerate(metrics):
        vals = []
        for i in range(samples):
            if tier == "retrieval":
                v = 1.0 if rng.random() < 0.6 + shift else 0.0
                if metric == "ndcg@10":
                    v = min(1.0, rng.random() * 0.9 + shift)
                out["rm_values"].append((rid, tier, system, metric, i, f"q{i}", v, None, None))
            else:
                verdicts = [1, 1 if rng.random() < 0.7 + shift else 0]
                v = sum(verdicts) / 2
                details = json.dumps({
                    "answer_claims": ["Hold reset.", f"Wait {i % 9 + 1} seconds."],
                    "verdicts": {"answer_in_context": verdicts},
                    "verdict_reasons": {"answer": ["stated in the manual",
                                                   "the manual says so" if verdicts[1]
                                                   else "not in any context"]}})
                out["rm_values"].append((rid, tier, system, metric, i, f"q{i}", v, None,
                                         "{broken" if r == CORRUPT[1] and i == 0 else details))
            vals.append(v)
        mean = sum(vals) / len(vals)
        out["rm_metrics"].append((rid, tier, system, metric, pos, 0, json.dumps({"tier": tier}),
                                  _signature(metric, 42), hib, 42, 1000, "{}", mean,
                                  mean - 0.01, mean + 0.01, samples, 0,
                                  *_in_row(samples, vals)))
    if r % 40 == 0:
        card = {"judge_card": _card(f"judge-{r}", 0.5 + r / 1000)}
        out["rm_metrics"].append((rid, "judge_trust", f"judge_card:judge-{r}", "human_label", 0,
                                  0, json.dumps(card), _signature("human_label", 42), True, 42,
                                  1000, "{}", None, None, None, 0, 0, *_in_row(0, [])))
    out["rm_samples"] = [(rid, f"q{i}", i, d) for i, d in enumerate(sample_rows)]
    return out


def _in_row(samples: int, vals: Sequence[float]) -> tuple[Any, ...]:
    """A metric's values as one row, where the measured version's store keeps them so (what
    its ``save_run`` writes); nothing for a version without those columns."""
    if "values_blob" not in _columns("rm_metrics"):
        return ()
    import numpy as np

    row: tuple[Any, ...] = (json.dumps([f"q{i}" for i in range(samples)]),
                            np.asarray(vals, dtype="<f8").tobytes(), "{}")
    if "signs_blob" in _columns("rm_metrics"):  # the paired tests' projections, as stored
        from ragmeter.results.projections import project, to_columns
        from ragmeter.results.records import MetricResult, Signature

        mr = MetricResult("m", [f"q{i}" for i in range(samples)], np.asarray(vals, dtype=float),
                          Signature.make(metric="m"), seed=42)
        cols = to_columns(project(mr))
        row += (cols["signs_blob"], cols["boots_blob"])
        if "gaps_blob" in _columns("rm_metrics"):
            row += (cols["gaps_blob"],)
    return row


def _sample_rows(samples: int) -> list[str]:
    return [json.dumps({
        "user_input": f"How do I reset password number {i} on device {i % 97}?",
        "reference": f"Hold the button for {i % 9 + 1} s.",
        "response": f"Press and hold reset for {i % 9 + 1} seconds.",
        "retrieved_contexts": [f"Manual p.{i % 50}: hold reset {i % 9 + 1} s.",
                               f"FAQ {i % 13}: passwords"]}, ensure_ascii=False)
        for i in range(samples)]


@functools.cache
def _columns(table: str) -> list[str]:
    from ragmeter.results.database import define_tables

    t = define_tables()
    return [c.name for c in getattr(t, table[3:]).columns]


def _insert_sql(table: str, n: int, mark: str) -> str:
    cols = _columns(table)[:n]
    return (f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
            f"({', '.join([mark] * len(cols))})")


def build(path: Path, runs: int, samples: int, seed: int = 7) -> None:
    """Create the SQLite store at ``path`` with bulk inserts (one transaction per run)."""
    from ragmeter.results.store import ResultStore

    store = ResultStore(path)  # the schema
    store.close()
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    sample_rows = _sample_rows(samples)
    for r in range(runs):
        for table, rows in _rows_of_run(r, samples, rng, sample_rows).items():
            if rows:
                con.executemany(_insert_sql(table, len(rows[0]), "?"), rows)
        con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode=DELETE")  # a read-only reader needs no -shm file
    con.close()


def pg_url_with_schema(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


def build_pg(url: str, schema: str, runs: int, samples: int, seed: int = 7) -> str:
    """Create the same store in PostgreSQL, in its own schema (dropped first); return the
    store URL (its search path set to that schema)."""
    import psycopg

    from ragmeter.results.store import ResultStore

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.execute(f"CREATE SCHEMA {schema}")
    store_url = pg_url_with_schema(url, schema)
    ResultStore(store_url).close()  # the schema's tables
    rng = random.Random(seed)
    sample_rows = _sample_rows(samples)
    with psycopg.connect(plain, options=f"-csearch_path={schema}") as con:
        for r in range(runs):
            for table, rows in _rows_of_run(r, samples, rng, sample_rows).items():
                if not rows:
                    continue
                cols = _columns(table)[:len(rows[0])]
                with con.cursor().copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as cp:
                    for row in rows:
                        cp.write_row(row)
            con.commit()
        con.execute("ANALYZE")
    return store_url


def _tiny_run(tag: str) -> Any:
    """A small run saved through the public API (the store change of the cold phase)."""
    from ragmeter.results.records import EvalResult, MetricResult, Signature
    from ragmeter.results.store import StoredRun, TierRecord, utc_now

    res = EvalResult("bm25")
    res.add(MetricResult("hit_rate@5", ["q0", "q1", "q2"], [1.0, 0.0, 1.0],
                         Signature.make(metric="hit_rate@5")))
    return StoredRun(id=f"zz-change-{tag}", created_at=utc_now(), name="support-bot",
                     tiers={"retrieval": TierRecord("retrieval", "ok", None, [res])},
                     samples={"q0": {"user_input": "changed?"}})
