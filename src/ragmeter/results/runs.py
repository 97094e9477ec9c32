"""A run as the results store keeps it: its tiers, their results, and the rows listed about it.

:class:`StoredRun` (with :class:`TierRecord` per tier) is what ``ResultStore.save_run`` writes
and ``load_run`` gives back; :class:`RunSummary`, :class:`RunRow` and :class:`MetricSummary`
are the lighter rows of ``runs list``, the viewer's registry and its history pages;
:func:`run_rows` flattens a run for CSV, Parquet and pandas exports.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ragmeter.results.records import EvalResult
from ragmeter.secrets import mask

TIER_STATUSES = ("ok", "not_run", "error", "partial")
RUN_WRITING = "writing"


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``cwd``; ``None`` outside a repository or without git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) >= 7 else None



@dataclass
class TierRecord:
    """What happened to one tier of a run: status, reason when not run, and its results."""

    tier: str
    status: str = "ok"
    reason: str | None = None
    results: list[EvalResult] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in TIER_STATUSES:
            raise ValueError(f"tier status {self.status!r} not in {TIER_STATUSES}")


@dataclass
class StoredRun:
    """A run as kept in the store."""

    id: str
    created_at: str
    name: str
    signature: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    status: str = "complete"
    tiers: dict[str, TierRecord] = field(default_factory=dict)
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def results(self) -> dict[str, EvalResult]:
        """Every EvalResult of the run, keyed ``tier/system`` (``tier`` alone when it is unique)."""
        out: dict[str, EvalResult] = {}
        for tier, rec in self.tiers.items():
            for res in rec.results:
                key = tier if len(rec.results) == 1 else f"{tier}/{res.name}"
                out[key] = res
        return out

    def to_dict(self, per_sample: bool = True) -> dict[str, Any]:
        return {
            "id": self.id, "created_at": self.created_at, "name": self.name,
            "signature": self.signature, "config": self.config, "git_commit": self.git_commit,
            "status": self.status, "meta": self.meta,
            "tiers": {
                t: {"status": r.status, "reason": r.reason, "stats": r.stats,
                    "results": [e.to_dict(per_sample) for e in r.results]}
                for t, r in self.tiers.items()
            },
            **({"samples": self.samples} if per_sample else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredRun:
        tiers = {
            t: TierRecord(t, r.get("status", "ok"), r.get("reason"),
                          [EvalResult.from_dict(e) for e in r.get("results", [])],
                          dict(r.get("stats", {})))
            for t, r in d.get("tiers", {}).items()
        }
        return cls(id=d["id"], created_at=d.get("created_at", ""), name=d.get("name", ""),
                   signature=d.get("signature", ""), config=dict(d.get("config", {})),
                   git_commit=d.get("git_commit"), status=d.get("status", "complete"),
                   tiers=tiers, samples=dict(d.get("samples", {})), meta=dict(d.get("meta", {})))


@dataclass(frozen=True)
class RunSummary:
    """One line of ``runs list``."""

    id: str
    created_at: str
    name: str
    status: str
    git_commit: str | None
    n_tiers_ok: int
    n_tiers_not_run: int
    n_tiers_error: int = 0
    n_tiers_partial: int = 0


@dataclass(frozen=True)
class MetricSummary:
    """One stored aggregate: run × tier × system × metric (for history and registry pages)."""

    run_id: str
    tier: str
    system: str
    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_unscored: int
    higher_is_better: bool
    seed: int
    n_boot: int
    #: why the stored row cannot be read (a value that is not a number); None when it can
    error: str | None = None


@dataclass(frozen=True)
class RunRow:
    """A run's registry line: identity, tags (``meta.tags`` or ``config.tags``) and tier counts."""

    id: str
    created_at: str
    name: str
    status: str
    git_commit: str | None
    tags: tuple[str, ...]
    n_tiers_ok: int
    n_tiers_not_run: int
    n_tiers_error: int
    #: tiers cut off part-way (an interrupted run), finished batches kept
    n_tiers_partial: int = 0

    @property
    def effective_status(self) -> str:
        """``failed`` for a run with an errored tier that an older ragmeter stored as
        ``complete``; otherwise the stored status."""
        return "failed" if self.n_tiers_error and self.status == "complete" else self.status


def tags_of(*sources: Any) -> tuple[str, ...]:
    """The tags of a run: ``tags`` of each mapping (a list or a comma-separated string)."""
    out: list[str] = []
    for src in sources:
        raw = src.get("tags") if isinstance(src, Mapping) else None
        if isinstance(raw, str):
            raw = [x.strip() for x in raw.split(",")]
        if isinstance(raw, (list, tuple)):
            out.extend(str(x) for x in raw if str(x).strip() and str(x) not in out)
    return tuple(out)


#: a run id names a folder under the runner's run_dir and a row of the store: one path part
#: of letters, digits, ``.``, ``_`` and ``-``, starting with a letter or a digit
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run (``..``, ``/abs/path``, ``a/b``, empty, too long,
    control characters), or ``None`` for a safe name."""
    if _RUN_ID.fullmatch(run_id):
        return None
    return (f"{run_id!r} is not a safe run id: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or a digit (a run id names a folder; no path)")


def new_run_id(now: datetime | None = None) -> str:
    """Sortable, unique enough: ``20260122-153012-3fa9c1``."""
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, ``None`` for a missing or NaN value."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def masked_json(obj: Any) -> str:
    """Canonical JSON of ``obj`` with every secret masked (what the store writes)."""
    return mask(json.dumps(obj, ensure_ascii=False, default=str, sort_keys=True))


def columns_of(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of ``rows``, in first-seen order (the columns of a flat export)."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def run_rows(run: StoredRun, per_sample: bool = True) -> list[dict[str, Any]]:
    """Flat rows of a run (what CSV/Parquet/pandas exports contain)."""
    rows: list[dict[str, Any]] = []
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                base = {"run_id": run.id, "run_name": run.name, "created_at": run.created_at,
                        "tier": tier, "system": res.name, "metric": key}
                if per_sample:
                    for s in mr.records():
                        rows.append({**base, "sample_id": s.sample_id, "value": s.value,
                                     "reason": s.reason,
                                     "details": masked_json(dict(s.details)) if s.details else None})
                else:
                    a = mr.aggregate
                    rows.append({**base, "mean": a.mean, "ci_low": a.ci_low,
                                 "ci_high": a.ci_high, "n": a.n, "n_unscored": a.n_unscored,
                                 "signature": str(mr.signature)})
    return rows
