"""The benchmark runner's side of cost control: ``ragmeter run --estimate`` plans the whole
config through the real runner with stand-in judges (``--judge-batch`` runs the same dry run
with judges that write or collect batch files), a budget stop is recorded on the stored
(interrupted) run, and each tier's judge calls are priced per sample (:func:`with_judge_cost`:
``judge_cost_per_sample``)."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter.cost import BudgetExhausted, Estimate, estimate_scope, summarise
from ragmeter.cost.pricing import judge_cost_result, usage_scope
from ragmeter.results.records import EvalResult, Signature
from ragmeter.runner.config import BenchConfig

if TYPE_CHECKING:
    from ragmeter.results.runs import StoredRun


def with_judge_cost(run: Callable[[], list[EvalResult]], tier: str, sample_ids: Sequence[str],
                    *, dataset: str = "", seed: int = 42) -> list[EvalResult]:
    """The tier's results from ``run()``, plus ``judge:cost`` (``judge_cost_per_sample``
    over ``sample_ids``) when a priced judge was asked about any of them."""
    with usage_scope() as ledger:
        results = run()
    sig = Signature.make(tier=tier, dataset=dataset or None,
                         judge_prices=",".join(sorted(f"{p.price_in:g}/{p.price_out:g}"
                                                      for p in ledger.prices)) or None)
    cost = judge_cost_result(ledger.take(sample_ids), sig, seed=seed)
    return [*results, cost] if cost is not None else results


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
