"""The ``ragmeter`` command: a thin layer over the Python API, one module per subcommand.

Every module in :mod:`ragmeter.cli.commands` defines ``register(app)``; this file only
discovers them, so adding a subcommand touches one new file.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from rich.console import Console
from rich.markup import escape

from ragmeter._version import __version__
from ragmeter.errors import RagmeterError
from ragmeter.secrets import mask

app = typer.Typer(
    name="ragmeter",
    help="Measure RAG systems: retrieval, generation, judge reliability and user experience.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragmeter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """ragmeter command line."""


def _load_commands() -> None:
    import ragmeter.cli.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"ragmeter.cli.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_load_commands()


def main() -> None:
    """Entry point: run the app, turning ragmeter errors into a clean message and exit code 2."""
    try:
        rv = app(standalone_mode=False)
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except RagmeterError as exc:
        # soft_wrap: never break a path or a pip command across lines
        err_console.print(f"[bold red]error:[/] {escape(mask(str(exc)))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except SystemExit:
        raise
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":  # pragma: no cover
    main()
