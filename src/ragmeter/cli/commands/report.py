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
                                "prints it to stdout.")] = None,
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
        from ragmeter.errors import UsageError
        from ragmeter.reports.i18n import check_lang
        from ragmeter.runner.sources import load_source

        if lang is not None:
            check_lang(lang)
        if fmt not in ("html", "md"):
            raise UsageError("--format", f"unknown report format {fmt!r}", ["html", "md"])
        from ragmeter.cli import common

        src = load_source(run, store)
        console = common.err_console() if common.is_stdout(out) else common.human_console()
        if fmt == "html":
            from ragmeter.reports.html import render_run_html

            path: Path | str = out or Path(f"report-{src.run.id}.html")
            common.write_text_out(render_run_html(src.run, lang), path, console)
        else:
            from ragmeter.reports.markdown import run_markdown

            gate = None
            raw = src.run.config.get("thresholds")
            if raw:
                from ragmeter.runner.gating import check_thresholds, thresholds_from_mapping

                gate = check_thresholds(src.results, thresholds_from_mapping(raw))
            path = out or Path(f"report-{src.run.id}.md")
            common.write_text_out(run_markdown(src.run, gate, lang), path, console)
        if common.state().json and not common.is_stdout(path):
            common.emit_json({"run_id": src.run.id, "format": fmt, "path": str(path)})
