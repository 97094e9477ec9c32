"""``ragmeter init [PATH]``: write a commented example benchmark config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ragmeter.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init(
        path: Annotated[Path, typer.Argument(help="Where to write the config ('-' = stdout).")
                        ] = Path(
            "bench.yaml"),
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")]
        = False,
    ) -> None:
        """Write a commented example benchmark config (edit it, then `ragmeter run PATH`).

        Examples:

          ragmeter init my-bench.yaml

          ragmeter init -
        """
        from ragmeter.cli import common
        from ragmeter.runner.example import example_config

        if str(path) == "-":  # like --out -: the config goes to stdout
            sys.stdout.write(example_config())
            sys.stdout.flush()
            return
        if path.exists() and not force:
            raise UsageError("PATH", f"{path} exists; pass --force to overwrite it")
        with common.writing_out(path) as p:
            p.write_text(example_config(), encoding="utf-8")
        if common.state().json:
            common.emit_json({"path": str(path)})
            return
        typer.echo(f"wrote {path} — edit datasets/corpus/judges, then: ragmeter run {path}")
