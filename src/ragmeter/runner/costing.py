"""The benchmark runner's side of cost control: ``ragmeter run --estimate`` plans the whole
config through the real runner with stand-in judges (``--judge-batch`` runs the same dry run
with judges that write or collect batch files), and a budget stop is recorded on the stored
(interrupted) run."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter.cost import BudgetExhausted, Estimate, estimate_scope, summarise
from ragmeter.runner.config import BenchConfig

if TYPE_CHECKING:
    from ragmeter.results.runs import StoredRun


def estimate_run(config: BenchConfig, *, tiers: Sequence[str] | None = None,
                 limit: int | None = None) -> list[Estimate]:
    """Plan ``config`` with planning stand-ins for every judge: its progress log goes to a
    temporary directory and nothing is sent or stored."""
    with estimate_scope() as planned:
        dry_run(config, tiers=tiers, limit=limit)
    return [summarise(j) for j in planned]


def dry_run(config: BenchConfig, *, tiers: Sequence[str] | None = None,
            limit: int | None = None) -> StoredRun:
    """Run ``config`` without storing it (its progress log in a temporary directory): the plan
    of ``--estimate`` and of ``--judge-batch`` (whose judges send nothing)."""
    from ragmeter.runner.engine import run_benchmark

    with tempfile.TemporaryDirectory(prefix="ragmeter-plan-") as tmp:
        cfg = dataclasses.replace(config, run_dir=Path(tmp))
        return run_benchmark(cfg, tiers=tiers, limit=limit, save=False)


def record_stop(store_url: str | None, run_id: str, stop: BudgetExhausted) -> None:
    """Record a budget stop on a stored (interrupted) run: ``meta["budget_stop"]``."""
    from ragmeter.results.store import ResultStore

    store = ResultStore(store_url)
    if not store.has_run(run_id):
        return
    run = store.load_run(run_id)
    run.meta["budget_stop"] = stop.to_dict()
    store.save_run(run)


__all__ = ["dry_run", "estimate_run", "record_stop"]
