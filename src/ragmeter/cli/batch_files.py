"""``--judge-batch write|collect DIR``: the one way a command judges through batch files.

``ragmeter run`` and ``ragmeter score generation`` declare :data:`JudgeBatchOpt` and, when it is
given, run their ordinary work through :func:`run_batch_files` instead of calling the judge:

* ``write DIR``: every planned judge request not answered yet is written to the next round's
  files in DIR (OpenAI Batch JSONL, ``custom_id`` = the judge cache key), nothing is sent or
  stored;
* ``collect DIR``: the output and error files in ``DIR/results/`` are read into the judge
  cache of the command's judges (no plan runs, the samples are not read); the report names
  every failed, malformed, missing and unknown line, and the command exits 3 while some
  request written has no usable answer.

When a collect leaves nothing pending, the command without ``--judge-batch`` scores the run
from the judge cache with 0 network calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.errors import UsageError, WorkFailedError

JudgeBatchOpt = Annotated[Optional[tuple[str, Path]], typer.Option(  # noqa: UP045 - typer
    "--judge-batch", metavar="write|collect DIR",
    help="Judge through batch files instead of calling: 'write DIR' writes the planned judge "
         "requests not answered yet as OpenAI Batch JSONL (next round), 'collect DIR' reads "
         "the result files in DIR/results/ (OpenAI Batch output and error files, vllm "
         "run-batch output) into the judge cache. Then run without it: 0 calls.")]

Echo = Callable[[str], Any]
#: samples planned at once while a round is written (the plan's memory stays bounded)
WRITE_BATCH = 5000


def parse_judge_batch(value: tuple[str, Path] | None, *, estimate: bool = False,
                      budget: bool = False) -> tuple[str, Path] | None:
    """The option's ``(mode, folder)``, checked (None when not given)."""
    if value is None or value[0] is None:
        return None
    mode, folder = value
    if mode not in ("write", "collect"):
        raise UsageError("--judge-batch", f"unknown mode {mode!r}", ["write", "collect"])
    if estimate:
        raise UsageError("--judge-batch", "cannot be combined with --estimate (the estimate "
                         "already shows the rounds and the batch price)")
    if budget:
        raise UsageError("--judge-batch", "cannot be combined with --max-cost / --max-calls "
                         "(nothing is sent)")
    return mode, Path(folder)


def collects(option: tuple[str, Path] | None) -> bool:
    """Whether the command collects (it reads results, not its samples)."""
    return option is not None and option[0] == "collect"


def round_metrics(option: tuple[str, Path] | None,
                  metrics: list[str] | None) -> list[str] | None:
    """The metrics a command plans: while it writes a round, only those asking a judge."""
    return judged_only(metrics) if option is not None and option[0] == "write" else metrics


def write_slice(option: tuple[str, Path] | None, n_samples: int) -> int | None:
    """Samples planned at once while a round is written (None: all at once)."""
    return WRITE_BATCH if option is not None and n_samples > WRITE_BATCH else None


def batch_command(work: Callable[[], Any], config: Any, option: tuple[str, Path]) -> None:
    """``--judge-batch`` of a command with one judge (``config``): write or collect."""
    from ragmeter.cli import common

    if config is None:
        raise UsageError("--judge-batch", "needs a judge (--judge-url/--judge-model, "
                         "--judge-config or --judge-backend)")
    console = common.human_console()
    run_batch_files(work, [config], option, command=command_line(),
                    echo=lambda text: console.print(text, highlight=False, markup=False))


def judged_only(metrics: Sequence[str] | None) -> list[str]:
    """The metrics of a written round: those that ask a judge (the default judged set when
    none is named); the others have nothing to write and are scored by the ordinary run."""
    from ragmeter.generation.evaluate import JUDGED_DEFAULT
    from ragmeter.metrics.registry import parse_metric

    if metrics is None:
        return list(JUDGED_DEFAULT)
    out = [m for m in metrics if parse_metric(m).spec.family == "judged"]
    if not out:
        raise UsageError("--judge-batch", f"none of the metrics {', '.join(metrics)} asks a "
                         "judge: there is nothing to write")
    return out


def run_batch_files(plan: Callable[[], Any], judges: Sequence[Any], option: tuple[str, Path],
                    *, command: str, echo: Echo) -> Any:
    """``write``: run ``plan`` (the command's ordinary work) in a batch scope; ``collect``:
    build the command's ``judges`` (configs) in one and collect their results. The report is
    printed; a collect that leaves a written request without an answer exits 3."""
    from ragmeter.judges.batchfiles import CollectReport, batch_scope
    from ragmeter.judges.factory import make_judge

    mode, folder = option
    result = None
    with batch_scope(mode, folder, command=command) as session:  # type: ignore[arg-type]
        if mode == "write":
            result = plan()
        else:
            for cfg in judges:
                make_judge(cfg)
    report = session.report
    lines = report.summary() if isinstance(report, CollectReport) else report.lines()
    for line in lines:
        echo(line)
    if isinstance(report, CollectReport):
        lost = len(report.failed) + len(report.malformed) + len(report.missing)
        if lost:
            raise WorkFailedError(f"collect {folder}: {lost} written request(s) have no usable "
                                  f"result ({len(report.failed)} failed, "
                                  f"{len(report.malformed)} malformed, {len(report.missing)} "
                                  "missing); the next --judge-batch write writes them again")
        if report.lines and not (report.matched or report.already or report.another_turn):
            raise WorkFailedError(f"collect {folder}: no result line answers a request written "
                                  "to this folder (results of another batch folder?)")
    return result


def command_line(argv: list[str] | None = None) -> str:
    """The command as typed (for the manifest), secrets masked."""
    import shlex
    import sys

    from ragmeter.secrets import mask

    return mask(" ".join(shlex.quote(a) for a in ["ragmeter", *(argv or sys.argv[1:])]))


__all__ = ["WRITE_BATCH", "JudgeBatchOpt", "command_line", "judged_only", "parse_judge_batch", "run_batch_files"]
