"""Slice tables for every output: Markdown, HTML (the report and the viewer call
:func:`slices_html`), and plain rows for the console and JSON.

A withheld cell (fewer than ``min_n`` samples) shows its ``n`` and no mean; per-slice tests
show only the family-adjusted p-value, with the correction and the family size in the
signature line under the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from ragmeter.results.slices import SliceCell, SliceTable

WITHHELD = "withheld"


def value_ranges(metrics: Iterable[str]) -> dict[str, tuple[float, float] | None]:
    """Each metric's declared value range (``None`` when unknown or unbounded): slice
    intervals are cut to it."""
    from ragmeter.errors import MetricSpecError
    from ragmeter.metrics.registry import get_spec, metric_base

    out: dict[str, tuple[float, float] | None] = {}
    for m in metrics:
        try:
            out[m] = get_spec(metric_base(m).split("@")[0]).value_range
        except (MetricSpecError, ValueError):
            out[m] = None
    return out


def _value(c: SliceCell, min_n: int) -> str:
    if c.withheld or c.mean is None:
        return f"{WITHHELD} (n<{min_n})"
    return f"{c.mean:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"


def cell_rows(table: SliceTable) -> list[dict[str, Any]]:
    """One row per slice × metric, with the slice's test when there is one."""
    tests = {(x.metric, x.key): x for x in table.tests}
    rows = []
    for c in table.cells:
        row: dict[str, Any] = {"metric": c.metric, "slice": c.label, "n": c.n,
                               "unscored": c.n_unscored,
                               "mean": None if c.withheld else c.mean,
                               "ci": None if c.withheld else (c.ci_low, c.ci_high),
                               "value": _value(c, table.min_n)}
        x = tests.get((c.metric, c.key))
        if x is not None:
            row.update({"diff": x.diff, "diff_ci": (x.ci_low, x.ci_high),
                        "p_adjusted": x.p_adjusted, "regression": x.regression})
        rows.append(row)
    return rows


def _test_text(r: dict[str, Any]) -> str:
    if "diff" not in r:
        return "–"
    lo, hi = r["diff_ci"]
    mark = " ▼" if r["regression"] else ""
    return f"{r['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] p_adj={r['p_adjusted']:.3g}{mark}"


def slices_markdown(table: SliceTable) -> str:
    """A Markdown table of the slices (and the per-slice tests against the baseline)."""
    rows = cell_rows(table)
    tested = bool(table.tests)
    head = "| metric | slice | n | mean [95% CI] |" + (
        f" {table.system} − {table.baseline} |" if tested else "")
    lines = [head, "|---|---|---:|---:|" + ("---:|" if tested else "")]
    for r in rows:
        line = f"| `{r['metric']}` | {r['slice']} | {r['n']} | {r['value']} |"
        lines.append(line + (f" {_test_text(r)} |" if tested else ""))
    lines += ["", f"`{table.signature}`"]
    return "\n".join(lines)


def slices_html(table: SliceTable) -> str:
    """A small self-contained HTML table of the slices (the viewer and reports embed it)."""
    rows = cell_rows(table)
    tested = bool(table.tests)
    head = "".join(f"<th>{escape(h)}</th>" for h in (
        "metric", "slice", "n", "mean [95% CI]",
        *([f"{table.system} − {table.baseline}"] if tested else [])))
    body = []
    for r in rows:
        cls = ' class="regressed"' if r.get("regression") else (
            ' class="withheld"' if r["mean"] is None else "")
        tds = [escape(str(r["metric"])), escape(str(r["slice"])), str(r["n"]),
               escape(r["value"])]
        if tested:
            tds.append(escape(_test_text(r)))
        body.append(f"<tr{cls}>" + "".join(f"<td>{x}</td>" for x in tds) + "</tr>")
    return (f'<table class="slices"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
            f'</tbody></table><p class="muted signature"><code>{escape(str(table.signature))}'
            "</code></p>")


__all__ = ["cell_rows", "slices_html", "slices_markdown", "value_ranges"]


def decision_slices(dec: Any) -> list[SliceTable]:
    """The slice tables of a tier's decision: per system (its slices alone when it has no
    per-slice test), then the per-slice tests against the best system."""
    tested = {tb.system for tb in dec.slice_tests}
    return [tb for system, tb in dec.slices.items() if system not in tested] + list(
        dec.slice_tests)


def decision_slices_html(dec: Any) -> str:
    """The decision's slice tables as HTML (empty when the results were not sliced)."""
    return "".join(f'<div class=slices><p class=muted>{escape(tb.system)}</p>'
                   f"{slices_html(tb)}</div>" for tb in decision_slices(dec))
