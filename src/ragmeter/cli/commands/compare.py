"""``ragmeter compare A B``: paired significance per metric between two runs (B − A)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from ragmeter.cli import common, slicing


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(
        a: Annotated[str, typer.Argument(help="Baseline: run id, 'latest' or results JSON.")],
        b: Annotated[str, typer.Argument(help="Candidate: run id, 'latest' or results JSON.")],
        method: Annotated[str, typer.Option(
            "--method", help="randomization | bootstrap")] = "randomization",
        n_resamples: Annotated[int, typer.Option("--n-resamples", min=100)] = 10000,
        seed: Annotated[Optional[int], typer.Option(  # noqa: UP045 - typer
            "--seed", help="Seed of the paired test (default: the metric's).")] = None,
        fail_on_regression: Annotated[bool, typer.Option(
            "--fail-on-regression", help="Exit 1 when a metric got significantly worse.")]
        = False,
        html: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--html", help="Also write a self-contained HTML comparison report.")] = None,
        md: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--md", help="Also write a Markdown comparison (for pull requests).")] = None,
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--store", help="Results store URL.")] = None,
        by: slicing.ByOpt = None,
        min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
        correction: slicing.CorrectionOpt = "holm",
        samples: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--samples", help="Samples file whose fields give the slices (--by); default: "
                              "the slices kept with a run made with slices.")] = None,
    ) -> None:
        """Compare B against A on the samples both scored; regressions in red.

        Examples:

          ragmeter compare base.json new.json

          ragmeter compare base.json new.json --fail-on-regression --md compare.md --json
        """
        from ragmeter.errors import RagmeterError, UsageError
        from ragmeter.runner.comparing import compare_runs
        from ragmeter.runner.sources import load_source

        if method not in ("randomization", "bootstrap"):
            raise UsageError("--method", f"unknown method {method!r}",
                              ["randomization", "bootstrap"])
        sa, sb = load_source(a, store), load_source(b, store)
        rows = compare_runs(sa.results, sb.results, method=method, n_resamples=n_resamples,
                            seed=seed)
        if not rows:
            raise RagmeterError(f"'{a}' and '{b}' share no result/metric to compare "
                                f"(A has {sorted(sa.results)}, B has {sorted(sb.results)})")
        console = common.human_console()
        timing = [r for r in rows if r.block == "latency"]
        quality = [r for r in rows if r.block != "latency"]
        if quality:
            console.print(_table(f"B = {sb.label}  vs  A = {sa.label}   (B − A, paired "
                                 f"{method}, {n_resamples} resamples)", quality))
        if timing:
            c0 = timing[0].comparison
            console.print(_table(f"latency and throughput (B − A, {c0.method}, "
                                 f"{c0.n_resamples} resamples)", timing, units=True))
        tables = (_slices(sa, sb, by, min_n, correction, samples, n_resamples, seed, console)
                  if by is not None or samples is not None else [])
        if common.state().json:
            from dataclasses import asdict

            common.emit_json({"a": sa.label, "b": sb.label, "method": method,
                              "n_resamples": n_resamples,
                              "rows": [{"result": r.result, "verdict": r.verdict,
                                        **asdict(r.comparison)} for r in rows],
                              **({"slices": [tb.to_dict() for tb in tables]} if tables
                                 else {})})
        if html is not None:
            from ragmeter.reports.comparison import write_comparison_html

            with common.writing_out(html) as path:
                write_comparison_html(sa, sb, rows, path)
            console.print(f"wrote {html}")
        if md is not None:
            from ragmeter.reports.markdown import comparison_markdown

            common.write_text_out(comparison_markdown(sa, sb, rows), md, console)
        regressions: list[Any] = [r for r in rows if r.verdict == "regression"]
        regressions += [f"{tb.system}:{x.metric}[{x.label}]" for tb in tables
                        for x in tb.regressed()]
        if regressions:
            console.print(f"[bold red]{len(regressions)} regression(s)[/]: "
                          + ", ".join(str(r) if isinstance(r, str) else
                                      f"{r.result}:{r.comparison.metric}"
                                      for r in regressions))
        if fail_on_regression and regressions:
            raise typer.Exit(1)


def _table(title: str, rows: list[Any], units: bool = False) -> Table:
    """One table of paired tests; ``units``: the latency block (unit and direction shown)."""
    from ragmeter.results.statistic import UNITS

    t = Table(title=title)
    for col in ("result", "metric", "A", "B", "B − A", "95% CI of diff", "p", "n",
                "verdict"):
        t.add_column(col)
    for r in rows:
        c = r.comparison
        style = {"regression": "bold red", "improvement": "green"}.get(r.verdict, "")
        metric = c.metric
        if units and c.metric in UNITS:
            metric += (f" ({UNITS[c.metric]}, "
                       f"{'higher' if c.higher_is_better else 'lower'} is better)")
        t.add_row(r.result, metric, f"{c.mean_a:.4f}", f"{c.mean_b:.4f}",
                  f"{c.diff:+.4f}", f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
                  f"{c.p_value:.4f}", str(c.n), r.verdict, style=style)
    return t


def _slices(sa: Any, sb: Any, by: str | None, min_n: int, correction: str,
            samples: Path | None, n_resamples: int, seed: int | None, console: Any
            ) -> list[Any]:
    """Per-slice tests (``--by``), printed; the slice tables."""
    from ragmeter.data.loaders import load_samples
    from ragmeter.errors import ConfigError, UsageError
    from ragmeter.results.slices import parse_by
    from ragmeter.runner.comparing import compare_runs_by_slices

    spec = slicing.spec_of(by, min_n, correction) if by is not None else None
    items = list(load_samples(samples).samples) if samples is not None else None
    try:
        tables = compare_runs_by_slices(
            sa.results, sb.results, by=parse_by(by) if by else None,
            min_n=spec.min_n if spec else None, correction=spec.correction if spec else None,
            samples=items, n_resamples=n_resamples, seed=42 if seed is None else seed)
    except ConfigError as exc:
        raise UsageError("--by", str(exc)) from None
    for tb in tables:
        slicing.show(tb, console)
    return list(tables)
