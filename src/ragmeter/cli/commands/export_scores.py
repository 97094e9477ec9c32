"""``ragmeter traces export``: per-sample scores as OpenTelemetry ``gen_ai.evaluation.result`` events
(OTLP JSON) or Langfuse scores (JSON or CSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group
from ragmeter.errors import UsageError


def export_command(
    results: Annotated[Path, typer.Argument(help="A result JSON written with --out.")],
    to: Annotated[str, typer.Option("--to", help="otlp | langfuse | langfuse-csv.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write ('-' = stdout).")],
    samples: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--samples", help="The imported samples file: maps sample ids to trace/span ids.")
    ] = None,
) -> None:
    """Send ragmeter's verdicts back to your tracing tool.

    Examples:

      ragmeter traces export results.json --to otlp --out scores.otlp.json

      ragmeter traces export results.json --to langfuse-csv --out scores.csv
    """
    from ragmeter.data.traces.export import TARGETS, load_scores, render, trace_ids

    if to not in TARGETS:
        raise UsageError("--to", f"unknown target {to!r}", list(TARGETS))
    scores = load_scores(results)
    text = render(scores, to, trace_ids(samples))
    common.write_text_out(text, out, common.err_console())
    n_unscored = sum(s.value is None for s in scores)
    if not common.is_stdout(out):
        common.human_console().print(
            f"{len(scores)} score(s) of {len({s.metric for s in scores})} metric(s) exported"
            + (f"; {n_unscored} unscored" + (" (left out: Langfuse needs a value)"
                                             if to != "otlp" else " (as error.type)")
               if n_unscored else ""), highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    group(app, "traces").command("export")(export_command)
