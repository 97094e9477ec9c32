"""``ragmeter run bench.yaml``: run a whole benchmark from one config (resumable)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        config: Annotated[Path, typer.Argument(help="Benchmark config (YAML); see `ragmeter "
                                                    "init`.")],
        tier: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer needs it
            "--tier", "-t", help="Run only this tier (repeatable).")] = None,
        limit: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--limit", min=1, help="Only the first N samples.")] = None,
        resume: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--resume", help="Continue an interrupted run with this id.")] = None,
        run_id: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--run-id", help="Id for a new run (default: timestamp).")] = None,
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--store", help="Results store URL (default: config, $RAGMETER_STORE_URL, "
                            "./ragmeter-results.sqlite).")] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
        check: Annotated[bool, typer.Option(
            "--check", help="Gate on the config's thresholds (exit 1 on failure).")] = False,
        estimate: Annotated[bool, typer.Option(
            "--estimate", help="Print planned judge calls, tokens, cost and time; send "
                               "nothing, store nothing.")] = False,
        max_cost: Annotated[Optional[float], typer.Option(  # noqa: UP045
            "--max-cost", help="Stop (resumable) before the judges spend more than this.")
        ] = None,
        max_calls: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--max-calls", help="Stop (resumable) before more than N judge calls.")] = None,
    ) -> None:
        """Run the tiers of a benchmark config and save the run to the results store."""
        from ragmeter.results.store import mask_url, normalize_url
        from ragmeter.runner.config import load_config
        from ragmeter.runner.engine import run_benchmark
        from ragmeter.runner.progress import RunProgress

        cfg = load_config(config)
        if estimate:
            from ragmeter.cost import estimate_run

            estimate_run(cfg, tiers=tier or None, limit=limit)
            return
        from ragmeter.cost import Budget, BudgetExhausted, budget_scope, record_stop

        budget = Budget(max_cost, max_calls)
        err = Console(stderr=True)
        out = Console()
        url = normalize_url(store or cfg.store)
        prog = RunProgress(err, enabled=not quiet)
        ids: list[str] = []

        def hook(tier_name: str, event: str, info: dict[str, object]) -> None:
            prog.hook(tier_name, event, info)

        def on_plan(rid: str) -> None:
            ids.append(rid)
            err.print(f"run id: [bold]{rid}[/]", highlight=False)

        try:
            with prog, budget_scope(budget):
                stored = run_benchmark(cfg, tiers=tier or None, limit=limit, resume=resume,
                                       run_id=run_id, store=url, hook=hook,
                                       on_plan=on_plan)
        except BudgetExhausted as stop:
            rid = ids[0] if ids else (resume or run_id or "?")
            record_stop(url, rid, stop)
            err.print(f"[yellow]{stop.message()}[/]; continue with: ragmeter run {config} "
                      f"--resume {rid}", highlight=False)
            raise typer.Exit(3) from None
        except KeyboardInterrupt:
            rid = ids[0] if ids else (resume or run_id or "?")
            err.print(f"[yellow]interrupted[/]; continue with: ragmeter run {config} "
                      f"--resume {rid}", highlight=False)
            raise typer.Exit(130) from None
        out.print(f"run [bold]{stored.id}[/] saved to {mask_url(url)}", highlight=False)
        for name, rec in stored.tiers.items():
            line = f"  {name}: {rec.status}"
            if rec.reason:
                line += f" — {rec.reason}"
            out.print(line, highlight=False, markup=False)
        if check and cfg.thresholds:
            from ragmeter.runner.gating import check_thresholds, gate_passed, rich_table

            rows = check_thresholds(stored.results(), cfg.thresholds)
            out.print(rich_table(rows))
            if not gate_passed(rows):
                raise typer.Exit(1)
