"""``ragmeter report RUN --format html|md --out FILE``: a run's report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run: Annotated[str, typer.Argument(help="Run id in the store, 'latest', or a results "
                                                "JSON file.")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="html | md")] = "html",
        out: Annotated[Optional[Path], typer.Option(  # noqa: UP045 - typer
            "--out", "-o", help="Output file (default: report-<run id>.<html|md>); '-' "
                                "prints Markdown to stdout.")] = None,
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--store", help="Results store URL.")] = None,
        lang: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--lang", help="Report language: ru | en (default: the language of the data's "
                           "questions).")] = None,
    ) -> None:
        """Write a self-contained HTML report or a Markdown summary for pull requests.

        Examples:

          ragmeter report latest --out report.html --lang en

          ragmeter report latest --format md --out -
        """
        from ragmeter.errors import ConfigError
        from ragmeter.reports.i18n import check_lang
        from ragmeter.runner.sources import load_source

        if lang is not None:
            check_lang(lang)
        if fmt not in ("html", "md"):
            raise ConfigError("--format", f"unknown report format {fmt!r}", ["html", "md"])
        src = load_source(run, store)
        if fmt == "html":
            from ragmeter.reports.html import write_run_html

            path = out or Path(f"report-{src.run.id}.html")
            write_run_html(src.run, path, lang)
            typer.echo(f"wrote {path}")
            return
        from ragmeter.reports.markdown import run_markdown

        gate = None
        raw = src.run.config.get("thresholds")
        if raw:
            from ragmeter.runner.gating import check_thresholds, thresholds_from_mapping

            gate = check_thresholds(src.results, thresholds_from_mapping(raw))
        text = run_markdown(src.run, gate, lang)
        if out is not None and str(out) == "-":
            typer.echo(text)
            return
        path = out or Path(f"report-{src.run.id}.md")
        path.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {path}")
