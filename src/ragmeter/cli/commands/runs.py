"""``ragmeter runs list|show|export``: the history of runs in the results store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from ragmeter.cli.lazy import group

StoreOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs Optional
    "--store", help="Results store URL (default: $RAGMETER_STORE_URL or "
                    "./ragmeter-results.sqlite).")]


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _status(run: Any) -> str:
    """The stored status, or ``failed`` when a tier errored in a run stored as ``complete``."""
    errored = any(rec.status == "error" for rec in run.tiers.values())
    return "failed" if errored and run.status == "complete" else str(run.status)


def _run_json(run: Any) -> dict[str, Any]:
    """``runs show --json``: identity, signature and per tier its status and metric aggregates."""
    tiers: dict[str, Any] = {}
    for tier, rec in run.tiers.items():
        systems: dict[str, Any] = {}
        for res in rec.results:
            systems[res.name] = {
                key: {"mean": mr.aggregate.mean if mr.aggregate.n else None,
                      "ci_low": mr.aggregate.ci_low, "ci_high": mr.aggregate.ci_high,
                      "n": mr.aggregate.n, "n_unscored": mr.aggregate.n_unscored,
                      "unscored_by_reason": dict(mr.aggregate.unscored_by_reason)}
                for key, mr in res.results.items()}
        tiers[tier] = {"status": rec.status, "reason": rec.reason, "results": systems}
    return {"id": run.id, "name": run.name, "created_at": run.created_at,
            "status": _status(run),
            "git_commit": run.git_commit, "signature": run.signature, "tiers": tiers}


def register(app: typer.Typer) -> None:
    runs = group(app, "runs")

    @runs.command("list")
    def list_(
        store: StoreOpt = None,
        name: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--name", help="Only runs of this benchmark name.")] = None,
        tag: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--tag", help="Only runs with this tag (`run --tag`, a config's tags); repeat "
                          "for runs with every one of them.")] = None,
        limit: Annotated[int, typer.Option("--limit", help="At most N runs.")] = 50,
        metric: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--metric", "-m", help="Metric column as tier/system/metric (repeatable; default: "
                                   "each tier's key metric).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON (one object per run "
                                                             "with its metrics).")] = False,
    ) -> None:
        """Runs, newest first, with their key metrics (mean and 95% CI).

        Examples:

          ragmeter runs list

          ragmeter runs list --name retrieval-bench --json

          ragmeter runs list --tag nightly
        """
        from ragmeter.cli import common
        from ragmeter.results.store import ResultStore
        from ragmeter.view.pages import default_columns

        st = ResultStore(store)
        wanted = {x.lower() for x in tag or []}
        rows = [r for r in st.run_rows() if (name is None or r.name == name)
                and wanted <= {x.lower() for x in r.tags}][:limit]
        summaries = st.metric_summaries([r.id for r in rows]) if rows else []
        cols = [m.replace("/", "|", 2) for m in metric or []]
        if not cols and rows:
            cols = default_columns(summaries, limit=6)  # the listed runs' key metrics
        cells = {(m.run_id, f"{m.tier}|{m.system}|{m.metric}"): m for m in summaries}
        if as_json:
            out = []
            for r in rows:
                metrics = {}
                for c in cols:
                    m = cells.get((r.id, c))
                    if m is not None:
                        metrics[c.replace("|", "/")] = {
                            "mean": m.mean if m.n else None, "ci_low": m.ci_low,
                            "ci_high": m.ci_high, "n": m.n, "n_unscored": m.n_unscored}
                out.append({"id": r.id, "created_at": r.created_at, "name": r.name,
                            "status": r.effective_status, "git_commit": r.git_commit,
                            "tags": list(r.tags), "tiers_ok": r.n_tiers_ok,
                            "tiers_error": r.n_tiers_error, "tiers_partial": r.n_tiers_partial,
                            "tiers_not_run": r.n_tiers_not_run, "metrics": metrics})
            common.emit_json(out)
            return
        t = Table(title="ragmeter runs")
        for col in ("id", "created", "name", "tags", "status", "tiers ok", "errored",
                    "not run", "git"):
            t.add_column(col, overflow="fold")
        for c in cols:
            _tier, system, metric_name = c.split("|", 2)
            t.add_column(f"{system}\n{metric_name}", justify="right", overflow="fold")
        for r in rows:
            vals = []
            for c in cols:
                m = cells.get((r.id, c))
                vals.append("" if m is None else ("no scored samples" if not m.n else
                                                  _fmt(m.mean)))
            errored = str(r.n_tiers_error) + (f" (+{r.n_tiers_partial} partial)"
                                              if r.n_tiers_partial else "")
            t.add_row(r.id, r.created_at[:16].replace("T", " "), r.name,
                      ", ".join(r.tags) or "-", r.effective_status,
                      str(r.n_tiers_ok), errored if r.n_tiers_error or r.n_tiers_partial else "0",
                      str(r.n_tiers_not_run), (r.git_commit or "-")[:10], *vals)
        console = common.human_console()
        console.print(t)
        if not rows:
            if tag or name is not None:
                what = [f"tag {', '.join(repr(x) for x in tag or [])}" if tag else "",
                        f"name {name!r}" if name is not None else ""]
                console.print(f"no runs with {' and '.join(x for x in what if x)} "
                              "(`ragmeter runs list` shows them all)")
            else:
                console.print("no runs yet — start one with `ragmeter run bench.yaml`")

    @runs.command("show")
    def show(
        run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix is enough), "
                                                   "'latest' or a results JSON file.")],
        store: StoreOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the run's tiers and "
                                                             "metrics as JSON.")] = False,
    ) -> None:
        """Tiers, metrics with 95% CIs, and the signature of one run.

        Examples:

          ragmeter runs show latest
        """
        from ragmeter.cli import common
        from ragmeter.reports.bands import classify
        from ragmeter.runner.sources import load_source

        run = load_source(run_id, store).run
        if as_json or common.state().json:
            common.emit_json(_run_json(run))
            return
        c = common.human_console()
        c.print(f"[bold]{run.name}[/]  run {run.id}  {run.created_at}  status {_status(run)}"
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
                    t.add_row(key, _fmt(a.mean) if a.n else "no scored samples", ci, str(a.n),
                              str(a.n_unscored),
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
        """Export a run: JSON (full, re-loadable), CSV or Parquet (flat rows).

        Examples:

          ragmeter runs export latest --format csv --out run.csv
        """
        from ragmeter.cli import common
        from ragmeter.errors import UsageError
        from ragmeter.results.store import EXPORT_FORMATS, ResultStore

        if fmt not in EXPORT_FORMATS:
            raise UsageError("--format", f"unknown format {fmt!r}", list(EXPORT_FORMATS))
        if common.is_stdout(out) and fmt == "parquet":
            raise UsageError("--out", "Parquet is binary and cannot be printed to stdout; give "
                                      "a file name, or use --format json|csv with '--out -'")
        st = ResultStore(store)
        if run_id == "latest":
            run_id = st.latest_run_id() or run_id
        if common.is_stdout(out):
            common.write_text_out(st.export_text(run_id, fmt, per_sample=not aggregates), out)
            return
        with common.writing_out(out or Path(f"{run_id}.{fmt}")) as path:
            written = st.export(run_id, path, fmt, per_sample=not aggregates)
        if common.state().json:
            common.emit_json({"run_id": run_id, "format": fmt, "path": str(written)})
        elif not common.state().quiet:
            common.human_console().print(f"wrote {written}", highlight=False, markup=False)
