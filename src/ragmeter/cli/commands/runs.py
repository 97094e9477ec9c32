"""``ragmeter runs list|show|export``: the history of runs in the results store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

StoreOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
    "--store", help="Results store URL (default: $RAGMETER_STORE_URL or "
                    "./ragmeter-results.sqlite).")]


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def register(app: typer.Typer) -> None:
    runs = typer.Typer(help="Runs in the results store: list, show, export.",
                       no_args_is_help=True)
    app.add_typer(runs, name="runs")

    @runs.command("list")
    def list_(
        store: StoreOpt = None,
        name: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--name", help="Only runs of this benchmark name.")] = None,
        limit: Annotated[int, typer.Option("--limit", help="At most N runs.")] = 50,
    ) -> None:
        """Runs, newest first."""
        from ragmeter.results.store import ResultStore

        rows = ResultStore(store).list_runs(name=name, limit=limit)
        t = Table(title="ragmeter runs")
        for col in ("id", "created", "name", "status", "tiers ok", "not run", "git"):
            t.add_column(col)
        for r in rows:
            t.add_row(r.id, r.created_at, r.name, r.status, str(r.n_tiers_ok),
                      str(r.n_tiers_not_run), (r.git_commit or "-")[:10])
        Console().print(t)
        if not rows:
            Console().print("no runs yet — start one with `ragmeter run bench.yaml`")

    @runs.command("show")
    def show(
        run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix is enough), "
                                                   "'latest' or a results JSON file.")],
        store: StoreOpt = None,
    ) -> None:
        """Tiers, metrics with 95% CIs, and the signature of one run."""
        from ragmeter.reports.bands import classify
        from ragmeter.runner.sources import load_source

        run = load_source(run_id, store).run
        c = Console()
        c.print(f"[bold]{run.name}[/]  run {run.id}  {run.created_at}  status {run.status}"
                f"  git {run.git_commit or '-'}", highlight=False)
        c.print(f"signature: {run.signature}", highlight=False, markup=False)
        for tier, rec in run.tiers.items():
            if rec.status != "ok":
                c.print(f"[yellow]{tier}: {rec.status}[/] — {rec.reason or ''}",
                        highlight=False)
                continue
            for res in rec.results:
                t = Table(title=f"{tier} / {res.name}")
                for col in ("metric", "mean", "95% CI", "n", "unscored", "band"):
                    t.add_column(col)
                for key, mr in res.results.items():
                    a = mr.aggregate
                    ci = "-" if a.ci_low is None else f"[{a.ci_low:.4f}, {a.ci_high:.4f}]"
                    t.add_row(key, _fmt(a.mean), ci, str(a.n), str(a.n_unscored),
                              classify(key, a.mean, tier) or "")
                c.print(t)

    @runs.command("export")
    def export(
        run_id: Annotated[str, typer.Argument(help="Run id (or unique prefix, or 'latest').")],
        fmt: Annotated[str, typer.Option("--format", "-f",
                                         help="json | csv | parquet")] = "json",
        out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--out", "-o", help="Output file (default: <run id>.<format>).")] = None,
        aggregates: Annotated[bool, typer.Option(
            "--aggregates", help="One row per metric instead of per sample (csv/parquet).")]
        = False,
        store: StoreOpt = None,
    ) -> None:
        """Export a run: JSON (full, re-loadable), CSV or Parquet (flat rows)."""
        from ragmeter.errors import ConfigError
        from ragmeter.results.store import EXPORT_FORMATS, ResultStore

        if fmt not in EXPORT_FORMATS:
            raise ConfigError("--format", f"unknown format {fmt!r}", list(EXPORT_FORMATS))
        st = ResultStore(store)
        if run_id == "latest":
            run_id = st.latest_run_id() or run_id
        path = out or Path(f"{run_id}.{fmt}")
        written = st.export(run_id, path, fmt, per_sample=not aggregates)
        typer.echo(f"wrote {written}")
