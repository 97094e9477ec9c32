"""``ragmeter judge quality``: consistency, agreement, error rate and latency of LLM judges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ragmeter.cli import common
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group
from ragmeter.cli.lost_work import MaxLostOpt, report_lost


@judge_options()
def judge_quality_command(
    data: Path = typer.Argument(..., help="Items: jsonl/json/csv with question, answer, "  # noqa: B008
                                "context (or contexts)."),
    repeats: int = typer.Option(2, "-n", "--n-repeats", help="Calls per item (>= 2); the "
                                "config key is n_repeats."),
    delta: float = typer.Option(0.5, "--delta", help="Consistency tolerance on the judge "
                                "scale: |s1 - s2| <= delta (max - min for n > 2)."),
    judge: JudgeOptions = NONE_GIVEN,
    limit: int = typer.Option(0, "--limit", help="Use only the first N items (0 = all)."),
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed."),
    out: Path = typer.Option(None, "--out", help="Write the results as JSON here."),  # noqa: B008
    estimate: common.EstimateOpt = False,
    max_cost: common.MaxCostOpt = None,
    max_calls: common.MaxCallsOpt = None,
    max_lost: MaxLostOpt = None,
) -> None:
    """Judge quality: every item is judged N times with the cache off (every judge of
    --judge-config: one result per judge).

    Examples:

      ragmeter judge quality qa.jsonl --judge-config judge.yaml --repeats 3 --limit 5
    """
    from rich.table import Table

    from ragmeter.tiers.judge_quality import (
        evaluate_judge_quality,
        judge_quality_table,
        load_judge_items,
    )

    samples = load_judge_items(data)
    if limit > 0:
        samples = samples[:limit]
    configs = judge.required("judge quality")
    if not estimate:
        judge.check_reachable(configs)
    from ragmeter.cli.cost_options import CostOptions, run_costed

    def work() -> Any:
        with common.working(f"judging {len(samples)} items x {repeats}"):
            return evaluate_judge_quality(samples, configs, n_repeats=repeats, delta=delta,
                                          seed=seed)

    results = run_costed(
        work, CostOptions(estimate, max_cost, max_calls),
        title=f"judge quality: {len(samples)} items x {repeats} repeats")
    if results is None:
        return
    table = Table(title=f"judge quality — {data} ({len(samples)} items x {repeats})")
    for col in ("judge", "consistency (95% CI)", "alpha (interval)", "kappa r1/r2",
                "error rate", "unscored items", "mean score", "flip rate", "crosses threshold",
                "p50 ms", "p95 ms"):
        table.add_column(col)
    for row in judge_quality_table(results):
        lo, hi = row["consistency_ci"]
        table.add_row(row["judge"], f"{_f(row['consistency'])} [{_f(lo)}, {_f(hi)}]",
                      _f(row["alpha_interval"]), _f(row["cohen_kappa"]), _f(row["error_rate"]),
                      str(row["unscored_items"]), _f(row["mean_score"]), _f(row["flip_rate"]),
                      _f(row["threshold_cross"]),
                      _f(row["latency_p50_ms"], 1), _f(row["latency_p95_ms"], 1))
    console = common.human_console()
    console.print(table)
    for r in results:
        if r.meta.get("errors_by_reason") or r.meta.get("missing_fields"):
            console.print(f"{r.name}: errors {r.meta['errors_by_reason']}, "
                          f"not sent {r.meta['missing_fields']}")
        if r.meta.get("warning"):
            console.print(f"[yellow]{r.name}: {r.meta['warning']}[/]")
    from ragmeter.results.jsonout import dumps as strict_json

    payload = strict_json([r.to_dict() for r in results])
    common.write_text_out(payload, out, console)
    if common.state().json and str(out) != "-":
        common.emit_json([r.to_dict() for r in results])
    report_lost([m for r in results for m in r.results.values()], max_lost)


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def register(app: typer.Typer) -> None:
    group(app, "judge").command("quality")(judge_quality_command)
