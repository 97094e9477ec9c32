"""``ragmeter gate RUN --min hit_rate@5=0.8``: fail CI (exit 1) when quality drops."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ragmeter.cli import common


def register(app: typer.Typer) -> None:
    @app.command("gate")
    def gate(
        run: Annotated[str, typer.Argument(help="Run id in the store, 'latest', or a results "
                                                "JSON file.")],
        min_: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer
            "--min", help="METRIC=VALUE (or RESULT:METRIC=VALUE); repeatable.")] = None,
        max_: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--max", help="METRIC=VALUE upper bound; repeatable.")] = None,
        config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--config", "-c", help="Take thresholds from this benchmark config.")] = None,
        use_ci_bound: Annotated[bool, typer.Option(
            "--use-ci-bound", help="Gate on the 95% CI bound (lower for --min, upper for "
                                   "--max) instead of the mean.")] = False,
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--store", help="Results store URL.")] = None,
        junit: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--junit", help="Also write the checks as JUnit XML to this file (for CI test "
                            "reports); a failed check lists its three worst samples.")] = None,
        require_card: Annotated[bool, typer.Option(
            "--require-card", help="Fail a judged metric's gate unless a judge card stored "
                                   "with the run matches its judge (without it such a gate "
                                   "is advisory).")] = False,
    ) -> None:
        """Check a run against thresholds; exit 1 with a table of what failed.

        Examples:

          ragmeter gate results.json --min mrr=0.5 --min hit_rate@5=0.6

          ragmeter gate latest --config bench.yaml --use-ci-bound

          ragmeter gate latest --min mrr=0.5 --junit reports/ragmeter.xml
        """
        from ragmeter.errors import UsageError
        from ragmeter.runner.gate_report import failing_samples, format_failures, junit_xml
        from ragmeter.runner.gating import (
            check_thresholds,
            gate_passed,
            rich_table,
            thresholds_from_cli,
        )
        from ragmeter.runner.sources import load_source

        thresholds = thresholds_from_cli(min_ or [], max_ or [])
        if config is not None:
            from ragmeter.runner.config import load_config

            thresholds = [*load_config(config).thresholds, *thresholds]
        elif not thresholds:
            src = load_source(run, store)
            raw = src.run.config.get("thresholds")
            if raw:
                from ragmeter.runner.gating import thresholds_from_mapping

                thresholds = thresholds_from_mapping(raw)
        if not thresholds:
            raise UsageError("--min/--max", "no thresholds: pass --min/--max, --config, or "
                              "run with a config that has 'thresholds'")
        from ragmeter.judge_trust.backing import run_backing

        src = load_source(run, store)
        rows = check_thresholds(src.results, thresholds, use_ci_bound=use_ci_bound,
                                backing=run_backing(src.run), require_card=require_card)
        c = common.human_console()
        c.print(rich_table(rows, title=f"Quality gate: {src.label}"))
        failed = sum(not r.passed for r in rows)
        failures = failing_samples(src.results, rows, getattr(src.run, "samples", None))
        if failures:
            c.print(format_failures(failures), markup=False, highlight=False)
        if junit is not None:
            junit.parent.mkdir(parents=True, exist_ok=True)
            junit.write_text(junit_xml(rows, failures, f"ragmeter gate {src.label}"),
                             encoding="utf-8")
        if common.state().json:
            from dataclasses import asdict

            common.emit_json({"source": src.label, "passed": gate_passed(rows),
                              "checks": [asdict(r) for r in rows]})
        backed = sum(r.backing == "card" for r in rows)
        advisory = sum(r.backing == "advisory" for r in rows)
        judged = (f" ({backed} judged gate(s) card-backed"
                  + (f", {advisory} advisory: no matching judge card, not enforced; "
                     "--require-card enforces them" if advisory else "") + ")"
                  if backed or advisory else "")
        if not gate_passed(rows):
            c.print(f"[bold red]FAILED[/]: {failed} of {len(rows)} check(s){judged}")
            raise typer.Exit(1)
        c.print(f"[bold green]PASSED[/]: {len(rows)} check(s){judged}")
