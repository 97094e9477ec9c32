"""A stored run read as a page shows it, in a few indexed queries: each metric's stored
aggregate and its per-sample values (from the metric's one row when the run has it, else from
the per-sample rows), the paired tests' projections where they were stored, and — only for the
samples a page shows — their text and the judge's details.

These are the reads behind :meth:`ResultStore.load_run` with ``details=False`` /
``stored_aggregates=True`` and :meth:`ResultStore.sample_data` / ``sample_details``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragmeter.results.database import values_from_columns
from ragmeter.results.projections import from_columns
from ragmeter.results.records import Aggregate, EvalResult, MetricResult, Signature
from ragmeter.results.runs import StoredRun, TierRecord, finite_or_none

#: ids read per ``IN (...)`` query
_CHUNK = 500


def _rows(store: Any, run_id: str, samples: bool, details: bool
          ) -> tuple[Any, list[Any], list[Any], list[Any], dict[str, dict[str, Any]], bool]:
    """The run's row, tier rows, metric rows, per-sample value rows (none when every metric
    has its one-row values and no details are asked), sample texts; and whether the values
    come from the metric rows."""
    import sqlalchemy as sa

    v = store.t_values.c
    cols = [v.tier, v.system, v.metric, v.sample_id, v.value, v.reason]
    if details:
        cols.append(v.details_json)
    sample_data: dict[str, dict[str, Any]] = {}
    with store.engine.connect() as conn:
        row, tier_rows, metric_rows = store._run_rows(conn, run_id)
        in_row = not details and all(getattr(m, "values_blob", None) is not None
                                     for m in metric_rows)
        value_rows = [] if in_row else conn.execute(
            sa.select(*cols).where(v.run_id == run_id)
            .order_by(v.tier, v.system, v.metric, v.idx)).all()
        if samples:
            for sid, text in conn.execute(
                    sa.select(store.t_samples.c.sample_id, store.t_samples.c.data_json)
                    .where(store.t_samples.c.run_id == run_id)
                    .order_by(store.t_samples.c.position)):
                sample_data[sid] = json.loads(text)
    return row, tier_rows, metric_rows, list(value_rows), sample_data, in_row


def _metric(m: Any, rows: Sequence[Any], in_row: bool, details: bool,
            stored_aggregates: bool, seen: dict[str, list[str]]) -> MetricResult:
    """One metric from its row (and its per-sample rows when it is read from them);
    ``seen``: the run's sample id lists read so far."""
    if in_row:
        ids, values, kept = values_from_columns(m.ids_json, m.values_blob, m.reasons_json,
                                                seen)
        reasons = {i: kept.get(i, "unscored")
                   for i in (int(x) for x in np.flatnonzero(np.isnan(values)))}
        det = None
    else:
        ids = [str(r[3]) for r in rows]
        values = np.array([np.nan if r[4] is None else r[4] for r in rows], dtype=np.float64)
        reasons = {i: str(rows[i][5] or "unscored")
                   for i in (int(x) for x in np.flatnonzero(np.isnan(values)))}
        det = [json.loads(r[6]) if r[6] else None for r in rows] if details else None
    mr = MetricResult(m.metric, ids, values, Signature.parse(m.signature), reasons=reasons,
                      counts=json.loads(m.counts_json),
                      details=det if det and any(d is not None for d in det) else None,
                      higher_is_better=bool(m.higher_is_better), seed=int(m.seed),
                      n_boot=int(m.n_boot))
    if in_row and getattr(m, "signs_blob", None) is not None:
        mr.__dict__["projection"] = from_columns(m.seed, m.signs_blob, m.boots_blob,
                                                 getattr(m, "gaps_blob", None))
    if stored_aggregates:  # the aggregate as stored with the run: no bootstrap on reading
        mr.__dict__["aggregate"] = Aggregate(
            finite_or_none(m.mean), int(m.n), int(m.n_unscored), finite_or_none(m.ci_low),
            finite_or_none(m.ci_high), None, n_boot=int(m.n_boot), seed=int(m.seed),
            unscored_by_reason=dict(Counter(reasons.values())))
    return mr


def load_light(store: Any, run_id: str, *, samples: bool, details: bool,
               stored_aggregates: bool) -> StoredRun:
    """The run (see the module doc)."""
    row, tier_rows, metric_rows, value_rows, sample_data, in_row = _rows(
        store, run_id, samples, details)
    grouped: dict[tuple[str, str, str], list[Any]] = {}
    for r in value_rows:
        grouped.setdefault((r[0], r[1], r[2]), []).append(r)
    tiers = {t.tier: TierRecord(t.tier, t.status, t.reason, [], json.loads(t.stats_json))
             for t in tier_rows}
    systems: dict[tuple[str, str], EvalResult] = {}
    seen: dict[str, list[str]] = {}
    for m in metric_rows:
        key = (m.tier, m.system)
        if key not in systems:
            systems[key] = EvalResult(m.system, meta=json.loads(m.system_meta_json))
            tiers.setdefault(m.tier, TierRecord(m.tier)).results.append(systems[key])
        systems[key].add(_metric(m, grouped.get((m.tier, m.system, m.metric), []), in_row,
                                 details, stored_aggregates, seen))
    return StoredRun(id=row.id, created_at=row.created_at, name=row.name,
                     signature=row.signature, config=json.loads(row.config_json),
                     git_commit=row.git_commit, status=row.status, tiers=tiers,
                     samples=sample_data, meta=json.loads(row.meta_json))


def sample_ids(store: Any, run_id: str) -> list[str]:
    """The ids of a run's samples, in dataset order: the list stored with the run's row, else
    (a run saved before it was kept) read from the sample rows."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        if store.has_column("rm_runs", "sample_ids_json"):
            kept = conn.execute(sa.select(store.t_runs.c.sample_ids_json)
                                .where(store.t_runs.c.id == run_id)).scalar()
            if kept is not None:
                return [str(x) for x in json.loads(kept)]
        q = (sa.select(store.t_samples.c.sample_id).where(store.t_samples.c.run_id == run_id)
             .order_by(store.t_samples.c.position))
        return [str(r[0]) for r in conn.execute(q)]


def sample_data(store: Any, run_id: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored text of chosen samples of a run (by primary key), id → data."""
    import sqlalchemy as sa

    wanted = list(dict.fromkeys(ids))
    out: dict[str, dict[str, Any]] = {}
    c = store.t_samples.c
    with store.engine.connect() as conn:
        for start in range(0, len(wanted), _CHUNK):
            for sid, text in conn.execute(sa.select(c.sample_id, c.data_json).where(
                    c.run_id == run_id, c.sample_id.in_(wanted[start:start + _CHUNK]))):
                out[str(sid)] = json.loads(text)
    return out


def sample_details(store: Any, run_id: str, ids: Iterable[str]
                   ) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """The per-sample details of chosen samples: ``(tier, system, metric, sample id)`` →
    details (read through the sample index)."""
    import sqlalchemy as sa

    wanted = list(dict.fromkeys(ids))
    v = store.t_values.c
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    with store.engine.connect() as conn:
        for start in range(0, len(wanted), _CHUNK):
            for r in conn.execute(sa.select(v.tier, v.system, v.metric, v.sample_id,
                                            v.details_json).where(
                    v.run_id == run_id, v.sample_id.in_(wanted[start:start + _CHUNK]),
                    v.details_json.is_not(None))):
                out[(r[0], r[1], r[2], str(r[3]))] = json.loads(r[4])
    return out


__all__ = ["load_light", "sample_data", "sample_details", "sample_ids"]
