"""``ragmeter metrics``: every registered metric with parameters, defaults, direction, formula."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def metrics_command(
    family: Annotated[str | None, typer.Option(
        "--family", help="Only this family (retrieval, lexical, judged, ux, ...).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List every metric: parameters with defaults, direction and formula.

    Examples:

      ragmeter metrics --family retrieval

      ragmeter metrics --json
    """
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.cli import common
    from ragmeter.errors import UsageError
    from ragmeter.metrics.reference import metric_reference
    from ragmeter.metrics.registry import list_specs

    entries = metric_reference(family)
    if not entries:
        raise UsageError("--family", f"no metric family {family!r}",
                          sorted({s.family for s in list_specs()}))
    if as_json:
        typer.echo(json.dumps(entries, ensure_ascii=False, indent=2))
        return
    table = Table(show_lines=False)
    for col in ("metric", "family", "@k", "direction", "parameters (default)", "formula"):
        table.add_column(col, overflow="fold")
    for e in entries:
        params = ", ".join(f"{p['name']}={p['default']}" for p in e["params"]) or "–"
        table.add_row(e["name"], e["family"], e["cutoff"],
                      "↑" if e["direction"].startswith("higher") else "↓", escape(params),
                      escape(e["formula"]))
    common.human_console().print(table)


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics_command)
