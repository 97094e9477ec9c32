"""The ``--by`` options of the result commands: slice a result, keep the slices with it,
print the per-slice table and the worst slice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Optional

import typer

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, UsageError
from ragmeter.results.records import EvalResult
from ragmeter.results.slices import (
    DEFAULT_MIN_N,
    SliceSpec,
    SliceTable,
    attach_slices,
    parse_by,
    slice_results,
    stored_slices,
)

ByOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
    "--by", help="Break results down by FIELD[,FIELD]: a sample field (type, turn, language) "
                 "or a metadata key (section, target, ...). Cells with fewer than --min-n "
                 "samples are withheld.")]
MinNOpt = Annotated[int, typer.Option(
    "--min-n", min=1, help="Smallest slice whose mean is shown (--by).")]
CorrectionOpt = Annotated[str, typer.Option(
    "--correction", help="Multiple-comparison control of per-slice tests: holm (family-wise "
                         "error) | bh (false-discovery rate).")]


def _message(exc: ConfigError) -> str:
    text = str(exc).partition("': ")[2] or str(exc)
    return text.split(" (allowed:")[0]


def spec_of(by: str | None, min_n: int, correction: str = "holm", *,
            needs: object = True) -> SliceSpec | None:
    """The slice spec of the command line (``None`` without ``--by``); ``needs``: the samples
    file the slices are read from (falsy: a usage error, the fields are not there)."""
    if by is None:
        return None
    if not needs:
        raise UsageError("--by", "slicing needs the sample fields: give --evalset or --samples")
    try:
        return SliceSpec(parse_by(by), min_n, correction)
    except ConfigError as exc:
        flag = {"slices.min_n": "--min-n", "slices.correction": "--correction"}.get(
            exc.key, "--by")
        raise UsageError(flag, _message(exc), exc.allowed) from None


def slice_and_show(result: EvalResult, samples: Sequence[Sample], spec: SliceSpec,
                   console: Any) -> SliceTable:
    """Keep the slices with ``result`` and print its per-slice table (``--by``)."""
    try:
        attach_slices([result], samples, spec)
    except ConfigError as exc:
        raise UsageError("--by", _message(exc)) from None
    stored = stored_slices(result)
    assert stored is not None
    from ragmeter.reports.slices import value_ranges

    table = slice_results(result, stored[1], spec.by, min_n=spec.min_n,
                          value_ranges=value_ranges(result.results))
    result.meta["slice_table"] = table.to_dict()
    show(table, console)
    return table


def slice_file(result: EvalResult, path: Any, spec: SliceSpec, console: Any,
               data_format: str = "auto", column_map: Any = None) -> SliceTable:
    """``--by`` for a result whose samples were streamed: read the file again for its
    fields, then :func:`slice_and_show`."""
    from ragmeter.data.loaders import iter_samples

    keyed = iter_samples(path, skip_invalid=True, format=data_format, column_map=column_map)
    return slice_and_show(result, list(keyed), spec, console)


def show(table: SliceTable, console: Any) -> None:
    from rich.table import Table

    from ragmeter.reports.slices import cell_rows

    rows = cell_rows(table)
    tested = bool(table.tests)
    t = Table(title=f"{table.system} by {', '.join(table.by)}")
    for col in ("metric", "slice", "n", "mean [95% CI]",
                *([f"{table.system} − {table.baseline}"] if tested else [])):
        t.add_column(col)
    for r in rows:
        extra = []
        if tested:
            extra = [("–" if "diff" not in r else
                      f"{r['diff']:+.4f} p_adj={r['p_adjusted']:.3g}"
                      + (" regression" if r["regression"] else ""))]
        t.add_row(str(r["metric"]), str(r["slice"]), str(r["n"]), r["value"], *extra,
                  style="bold red" if r.get("regression") else "")
    console.print(t)
    for metric in table.metrics():
        w = table.worst(metric)
        if w is not None:
            console.print(f"worst slice ({metric}): {w.label} {w.mean:.4f} "
                          f"[{w.ci_low:.4f}, {w.ci_high:.4f}] n={w.n}", highlight=False)
    console.print(f"slices: {table.signature}", highlight=False, markup=False)


__all__ = ["DEFAULT_MIN_N", "ByOpt", "CorrectionOpt", "MinNOpt", "show", "slice_and_show",
           "slice_file", "spec_of"]
