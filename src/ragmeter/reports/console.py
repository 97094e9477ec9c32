"""Rich console rendering of results: a metric table with CIs, policy counts and signature.

Reusable by every command: ``render_eval_result`` (one system), ``render_per_query`` (per-query
values), ``render_comparison`` (paired comparisons B − A with p-values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.results.statistic import COST_METRICS
from ragmeter.stats import PairedComparison

_VARYING = ("metric", "k", "level", "gain", "threshold")


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:.{digits}f}"


def common_signature(results: Sequence[MetricResult]) -> str:
    """The signature fields shared by every result (metric, k, level... left out)."""
    if not results:
        return ""
    shared = dict(results[0].signature.fields)
    for r in results[1:]:
        other = r.signature.as_dict()
        shared = {k: v for k, v in shared.items() if other.get(k) == v}
    return "|".join(f"{k}:{v}" for k, v in shared.items() if k not in _VARYING)


def policy_counts(result: EvalResult) -> dict[str, int]:
    """Union of the per-metric policy counters (the largest value of each)."""
    counts: dict[str, int] = {}
    for r in result:
        for key, value in r.counts.items():
            counts[key] = max(counts.get(key, 0), int(value))
    return counts


def render_eval_result(result: EvalResult, console: Console | None = None, *,
                       title: str | None = None) -> None:
    """Table: metric, mean, 95% CI, n, n_unscored; then the policy counts and the signature."""
    console = console or Console()
    table = Table(title=title or f"{result.name}", title_justify="left")
    table.add_column("metric", overflow="fold")
    for col, width in (("mean", 6), ("95% CI", 16), ("n", 3), ("n_unscored", 10)):
        table.add_column(col, justify="right", no_wrap=True, min_width=width)
    reasons: dict[str, int] = {}
    for key, r in result.results.items():
        a = r.aggregate
        ci = f"[{_fmt(a.ci_low)}, {_fmt(a.ci_high)}]" if a.mean is not None else "—"
        arrow = "" if r.higher_is_better else " ↓"
        for reason, count in a.unscored_by_reason.items():
            reasons[reason] = max(reasons.get(reason, 0), count)
        if r.metric in COST_METRICS:   # a cost is small: significant digits, not decimals
            ci = f"[{a.ci_low:.4g}, {a.ci_high:.4g}]" if a.ci_low is not None else ci
            table.add_row(key + arrow, f"{a.mean:.4g}" if a.mean is not None else "—", ci,
                          str(a.n), str(a.n_unscored))
            continue
        table.add_row(key + arrow, _fmt(a.mean), ci, str(a.n), str(a.n_unscored))
    console.print(table)
    if reasons:
        console.print("unscored (never counted as 0): " + ", ".join(
            f"{k}={v}" for k, v in reasons.items()), highlight=False, markup=False, soft_wrap=True)
    counts = policy_counts(result)
    if counts:
        console.print("counts: " + ", ".join(f"{k}={v}" for k, v in counts.items()),
                      highlight=False, soft_wrap=True)
    sig = common_signature(list(result))
    if sig:
        console.print(f"signature: {sig}", highlight=False, markup=False, soft_wrap=True)


def render_per_query(result: EvalResult, console: Console | None = None, *,
                     limit: int | None = None) -> None:
    """One row per query, one column per metric (``—`` = unscored / not in that population)."""
    console = console or Console()
    rows = per_query_rows(result)
    shown = rows[:limit] if limit else rows
    metrics = list(result.results)
    per_table = max(1, (console.width - 16) // 12)
    for start in range(0, len(metrics), per_table):
        group = metrics[start:start + per_table]
        table = Table(title=f"{result.name}: per query", title_justify="left")
        table.add_column("query", no_wrap=True)
        for key in group:
            table.add_column(key, justify="right", overflow="fold")
        for row in shown:
            table.add_row(str(row["query"]), *(_fmt(row.get(k)) for k in group))
        console.print(table)
    if limit and len(rows) > limit:
        console.print(f"... {len(rows) - limit} more queries (use --csv for all)")


def per_query_rows(result: EvalResult) -> list[dict[str, Any]]:
    """Per-query values of every metric, queries in first-seen order."""
    order: dict[str, dict[str, Any]] = {}
    for key, r in result.results.items():
        for sid, value in r.by_id().items():
            order.setdefault(sid, {"query": sid})[key] = value
    return list(order.values())


def render_comparison(comparisons: Sequence[PairedComparison], console: Console | None = None,
                      *, name_a: str = "A", name_b: str = "B") -> None:
    """Paired comparison table: means, difference B − A with 95% CI, p-value, verdict."""
    console = console or Console()
    table = Table(title=f"{name_b} vs {name_a}", title_justify="left")
    for col in ("metric", name_a, name_b, "diff", "95% CI", "p", "n", ""):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for c in comparisons:
        verdict = ""
        if c.significant:
            verdict = "[red]regression[/]" if c.regression else "[green]improved[/]"
        table.add_row(c.metric, _fmt(c.mean_a), _fmt(c.mean_b), f"{c.diff:+.4f}",
                      f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]", f"{c.p_value:.4f}", str(c.n),
                      verdict)
    console.print(table)
    if comparisons:
        c = comparisons[0]
        console.print(f"test: {c.method}, resamples={c.n_resamples}, seed={c.seed}; "
                      f"significant at p < 0.05", highlight=False)


def fmt3(value: float | None) -> str:
    """A value with 3 decimals, ``-`` when there is none (never ``nan``)."""
    return "-" if value is None else f"{value:.3f}"


def write_result_json(result: EvalResult, out: Path | None, console: Console) -> None:
    """Write ``result`` (per-sample records included) as JSON to ``out`` and say so."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.to_json(), encoding="utf-8")
    console.print(f"wrote {out}", highlight=False, markup=False)
