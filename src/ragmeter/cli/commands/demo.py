"""``ragmeter demo``: run every tier on the built-in Russian demo data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path(
            "ragmeter-demo"),
        no_judge: Annotated[bool, typer.Option(
            "--no-judge", help="Skip the LLM-judge tiers (reported as not run).")] = False,
        limit: Annotated[Optional[int], typer.Option(  # noqa: UP045 - typer needs it
            "--limit", min=1, help="Only the first N evalset questions (quick look).")] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    ) -> None:
        """Run every tier on the built-in Russian demo data; write report, summary and charts.

        The data is a fictional university knowledge base (58 documents, 110 questions, logged
        user questions in SQLite, sessions, a labelled production-judge set). Judge tiers use the
        offline demo judge when ragmeter[local-judge] is installed, else they are reported as
        not run with the command that enables them.

        Examples:

          ragmeter demo --no-judge --limit 5 --out demo-report
        """
        from ragmeter.cli import common
        from ragmeter.demo.pipeline import run_demo
        from ragmeter.errors import UsageError

        if str(out).strip() == "-":
            raise UsageError("--out", "is the folder the demo writes its report, summary and "
                                      "charts to; '-' (stdout) cannot hold them — give a folder, "
                                      "e.g. --out ragmeter-demo (use --json for the results on "
                                      "stdout)")
        if Path(out).exists() and not Path(out).is_dir():
            raise UsageError("--out", f"{out} is a file; the demo writes to a folder")
        from ragmeter.judges.gguf import demo_judge_status
        from ragmeter.reports.console import render_eval_result
        from ragmeter.runner.progress import RunProgress

        console = common.human_console()
        err = common.err_console()
        quiet = quiet or common.state().quiet
        status = demo_judge_status()
        judge_ok = status.available
        if no_judge:
            err.print("LLM-judge tiers skipped (--no-judge)")
        elif not judge_ok:
            err.print(f"[yellow]demo judge not available:[/] {status.reason}; the judge tiers "
                      f"will be reported as not run. Enable them with: {status.enable_command}",
                      highlight=False, markup=False)
        else:
            err.print("[yellow]LLM-judge tiers use the offline DEMO judge "
                      "(Qwen2.5-Coder-1.5B): a weak demonstration, not a real measurement.[/]")
        prog = RunProgress(err, enabled=not quiet)
        with prog:
            plain = common.PlainProgress(err) if common.PlainProgress.wanted() and not quiet \
                else None

            def hook(tier: str, event: str, info: dict[str, object]) -> None:
                prog.hook(tier, event, info)
                if plain is not None:
                    plain.hook(tier, event, info)

            try:
                res = run_demo(out, judge=not no_judge, limit=limit, hook=hook)
            finally:
                if plain is not None:
                    plain.close()
        stored = res.run
        for key, result in stored.results().items():
            console.rule(f"[bold]{key}")
            render_eval_result(result, console)
        console.rule("[bold]tiers")
        for name, rec in stored.tiers.items():
            line = f"  {name}: {rec.status}"
            if rec.reason:
                line += f" — {rec.reason}"
            console.print(line, highlight=False, markup=False)
        if common.state().json:
            common.emit_json(stored.to_dict(per_sample=False))
        console.print(f"\nrun [bold]{stored.id}[/]; files in [bold]{res.out_dir}[/]:",
                      highlight=False)
        for f in res.files:
            console.print(f"  {f}", highlight=False, markup=False)
        for note in getattr(res, "notes", []):
            err.print(f"note: {note}", highlight=False, markup=False)
        _target_lines(res.target_run, console)
        _verdict(stored, skipped=no_judge, enable=status.enable_command, err=err)
        if res.target_run is not None:
            _verdict(res.target_run, skipped=False, enable=status.enable_command, err=err,
                     label="demo, the reference service as a target")


def _target_lines(run: object, console: object) -> None:
    """The reference RAG service measured as a target: its tiers and headline values."""
    if run is None:
        return
    console.rule("[bold]the reference RAG service as a target")  # type: ignore[attr-defined]
    for key, result in run.results().items():  # type: ignore[attr-defined]
        for m in result:
            a = m.aggregate
            if a.mean is not None and any(t in m.metric for t in (
                    "hit_rate@5", "rouge_l", "latency_p95", "ttft_p50", "error_rate")):
                console.print(f"  {key}: {m.metric} = {a.mean:.3f} "  # type: ignore[attr-defined]
                              f"[{a.ci_low:.3f}, {a.ci_high:.3f}] (n={a.n})",
                              highlight=False, markup=False)


def _verdict(stored: object, *, skipped: bool, enable: str, err: object,
             label: str = "demo") -> None:
    """What ran, what did not and how to get it; exit 3 when a step scored nothing, errored
    or lost work (the demo never says "ok" over 0 scored values)."""
    from ragmeter.cli.lost_work import report_lost_run
    from ragmeter.demo.pipeline import judged_tiers
    from ragmeter.errors import WorkFailedError

    tiers = stored.tiers  # type: ignore[attr-defined]
    ran = [n for n, r in tiers.items() if r.status == "ok"]
    missing = [n for n in judged_tiers() if n not in tiers] if skipped else []
    total = len(tiers) + len(missing)
    line = f"{label}: {len(ran)} of {total} tiers ran"
    not_run = [n for n, r in tiers.items() if r.status == "not_run"]
    if missing:
        line += (f"; skipped by --no-judge: {', '.join(missing)} (run without --no-judge; "
                 f"they need the offline demo judge: {enable})")
    if not_run:
        line += f"; not run: {', '.join(not_run)} (reasons above)"
    err.print(line, highlight=False, markup=False)  # type: ignore[attr-defined]
    failed = [f"{n}: {r.reason}" for n, r in tiers.items() if r.status == "error"]
    if failed:
        raise WorkFailedError(f"{label}: {len(failed)} tier(s) failed:\n  " + "\n  ".join(failed))
    report_lost_run(stored)
