"""``--max-lost``: the command-line side of :mod:`ragmeter.results.lost` (one spelling for
every command that calls a judge or a generator). Imports nothing heavy at CLI start."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ragmeter.errors import UsageError

if TYPE_CHECKING:
    from ragmeter.results.lost import MetricLoss

#: shown in the help; the value itself is ``ragmeter.results.lost.DEFAULT_MAX_LOST``
_DEFAULT_SHOWN = "0.02"


def _check_fraction(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UsageError("--max-lost", f"must be a fraction between 0 and 1, got {value:g}")
    return value


MaxLostOpt = Annotated[Optional[float], typer.Option(  # noqa: UP045 - typer needs Optional
    "--max-lost", callback=_check_fraction,
    help="Fail (exit 3) when a metric lost more than this share (0-1) of its values to "
         "backend or parse errors (timeouts, 5xx, unparseable replies, a target's lost "
         "replies); reasons that are "
         "properties of the data (no reference, no gold) do not count. 1 = never fail. "
         f"Default: {_DEFAULT_SHOWN}.")]


def report_lost(results: Iterable[Any], max_lost: float | None = None, *,
                tier: str | None = None) -> None:
    """Fail on lost work above ``max_lost`` among metric ``results`` (of one ``tier``);
    print smaller losses as warnings on stderr."""
    from ragmeter.results.lost import LOST_REASONS, TRANSPORT_REASONS, lost_work

    reasons = TRANSPORT_REASONS if tier == "judge_pipeline" else LOST_REASONS
    _report(lost_work(results, reasons=reasons), max_lost)


def report_lost_run(run: Any, max_lost: float | None = None) -> None:
    """:func:`report_lost` over every tier and system of a stored run."""
    from ragmeter.results.lost import LOST_REASONS, TRANSPORT_REASONS, lost_work

    losses: list[MetricLoss] = []
    for tier, rec in run.tiers.items():
        reasons = TRANSPORT_REASONS if tier == "judge_pipeline" else LOST_REASONS
        for res in rec.results:
            losses += lost_work(res.results.values(), reasons=reasons,
                                prefix=f"{tier}/{res.name}/")
    _report(losses, max_lost)


def _report(losses: list[MetricLoss], max_lost: float | None) -> None:
    from ragmeter.cli import common
    from ragmeter.results.lost import DEFAULT_MAX_LOST, check_lost

    limit = DEFAULT_MAX_LOST if max_lost is None else max_lost
    for line in check_lost(losses, limit):
        common.err_console().print(f"lost work (within --max-lost {limit:g}): {line}",
                                   highlight=False, markup=False)


__all__ = ["MaxLostOpt", "report_lost", "report_lost_run"]
