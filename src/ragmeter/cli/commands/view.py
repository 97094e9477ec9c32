"""``ragmeter view``: browse the results store in a local, read-only web app."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("view")
    def view(
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
            "--store", help="Results store URL or SQLite file (default: $RAGMETER_STORE_URL "
                            "or ./ragmeter-results.sqlite). PostgreSQL: "
                            "postgresql://user@host/db.")] = None,
        host: Annotated[str, typer.Option(
            "--host", help="Address to listen on; the default serves this machine only.")]
        = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)]
        = 8765,
        lang: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--lang", help="Page language: ru | en (default: the language of the data).")]
        = None,
    ) -> None:
        """Runs registry, metric history, run details, tier comparison, diff of two runs and
        per-sample drill-down, served read-only from the results store. No network assets.

        Examples:

          ragmeter view

          ragmeter view --store results.sqlite --port 8770 --lang en
        """
        from ragmeter.reports.i18n import check_lang
        from ragmeter.view import serve

        if lang is not None:
            check_lang(lang)
        serve(store, host=host, port=port, lang=lang, print_fn=typer.echo)
