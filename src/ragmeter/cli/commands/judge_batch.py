"""``ragmeter judge batch submit|status|fetch``: drive an OpenAI-compatible Batch API with the
files of a batch folder (written by ``--judge-batch write DIR``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ragmeter.cli import common

batch_app = typer.Typer(help="Judge through an OpenAI-compatible Batch API: submit a round's "
                        "files, follow the batches, fetch their results.",
                        no_args_is_help=True)

FolderArg = Annotated[Path, typer.Argument(help="Batch folder (from --judge-batch write DIR).")]
UrlOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
    "--url", help="Base URL of the Batch API (…/v1); default: the judge's base URL.")]
KeyEnvOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
    "--key-env", help="Environment variable holding the API key (default: the judge's "
                      "api_key_env). The key is never printed or stored.")]


def _echo(text: str) -> None:
    common.human_console().print(text, highlight=False, markup=False)


@batch_app.command("submit")
def submit_command(
    folder: FolderArg,
    url: UrlOpt = None,
    key_env: KeyEnvOpt = None,
    round_no: Annotated[Optional[int], typer.Option(  # noqa: UP045 - typer
        "--round", min=1, help="Round to submit (default: the last).")] = None,
) -> None:
    """Upload every file of a round (purpose=batch) and create its batch (24h window).

    Examples:

      ragmeter judge batch submit batches --url http://127.0.0.1:8765/v1
    """
    from ragmeter.judges.batchfiles.service import submit

    submit(folder, url=url, key_env=key_env, round_no=round_no, echo=_echo)


@batch_app.command("status")
def status_command(folder: FolderArg, url: UrlOpt = None, key_env: KeyEnvOpt = None) -> None:
    """Print the status and request counts of every batch submitted from the folder.

    Examples:

      ragmeter judge batch status batches-sent
    """
    from ragmeter.judges.batchfiles.service import status

    status(folder, url=url, key_env=key_env, echo=_echo)


@batch_app.command("fetch")
def fetch_command(
    folder: FolderArg,
    url: UrlOpt = None,
    key_env: KeyEnvOpt = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Poll until every batch has finished (or --timeout).")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.0, help="Seconds --wait polls at most.")] = 86400.0,
    poll: Annotated[float, typer.Option(
        "--poll", min=0.01, help="Seconds between two polls of --wait.")] = 30.0,
) -> None:
    """Download the output and error files of every finished batch into FOLDER/results/.

    Exit 3 while a batch is still running or when one failed, expired or was cancelled (what
    it answered is fetched all the same); then collect with --judge-batch collect FOLDER.

    Examples:

      ragmeter judge batch fetch batches-sent --wait --poll 1
    """
    from ragmeter.errors import WorkFailedError
    from ragmeter.judges.batchfiles.service import fetch

    got = fetch(folder, url=url, key_env=key_env, wait=wait, timeout_s=timeout, poll_s=poll,
                echo=_echo)
    if got["running"]:
        raise WorkFailedError(f"{len(got['running'])} batch(es) still running: "
                              + ", ".join(got["running"]) + "; fetch again later (or --wait)")
    if got["unfinished"]:
        raise WorkFailedError("batch(es) that did not complete: " + "; ".join(got["unfinished"])
                              + f"; collect what came back (--judge-batch collect {folder}), "
                              "the next write writes the rest again")
    _echo(f"next: --judge-batch collect {folder}")


def register(app: typer.Typer) -> None:
    """Add ``judge batch`` to the ``judge`` group."""
    from ragmeter.cli.lazy import group

    group(app, "judge").add_typer(batch_app, name="batch")
