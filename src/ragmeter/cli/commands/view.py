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
        port: Annotated[int, typer.Option("--port", help="TCP port (0 = any free port).",
                                          min=0, max=65535)]
        = 8765,
        lang: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--lang", help="Page language: ru | en (default: the language of the data).")]
        = None,
        runs: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--runs", help="The runner's folder (a config's run_dir), whose runs still "
                           "running are shown live (default: ./.ragmeter/runs when it "
                           "exists).")] = None,
        export: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--export", help="Write the dashboard as static files into this folder (opens "
                             "offline from disk: index.html) instead of serving it.")] = None,
        export_samples: Annotated[int, typer.Option(
            "--export-samples", min=0, help="Sample pages exported per run.")] = 20,
    ) -> None:
        """Runs registry, metric history, run details, tier comparison, diff of two runs and
        per-sample drill-down, served read-only from the results store. No network assets.

        Examples:

          ragmeter view

          ragmeter view --store results.sqlite --port 8770 --lang en

          ragmeter view --export site
        """
        from pathlib import Path

        from ragmeter.reports.i18n import check_lang
        from ragmeter.view import serve

        if lang is not None:
            check_lang(lang)
        if export is not None:
            from ragmeter.view.export import export_site

            done = export_site(store, export, lang=lang, max_samples=export_samples)
            typer.echo(f"wrote {done.pages} pages to {done.folder}/ (open "
                       f"{done.folder / 'index.html'}); {done.skipped_links} links to pages "
                       "not exported left as text")
            return
        default_runs = Path(".ragmeter") / "runs"
        runs_dir = runs or (str(default_runs) if default_runs.is_dir() else None)
        if port == 0:  # as mock-judge does: pick a free port and say which
            port = free_port(host)
        serve(store, host=host, port=port, lang=lang, print_fn=typer.echo, runs_dir=runs_dir)


def free_port(host: str) -> int:
    """A TCP port free on ``host`` now (the system's choice for port 0)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
