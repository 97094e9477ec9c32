"""``ragmeter retrieval``: Tier 1 retrieval metrics from qrels + run, or an evalset (+ run)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragmeter.cli import common, slicing
from ragmeter.data.evalset import check_evalset_sample
from ragmeter.data.formats import parse_map
from ragmeter.data.loaders import LoadResult, iter_samples
from ragmeter.data.trec import load_qrels, load_run
from ragmeter.errors import DataError, RecordProblem, UsageError
from ragmeter.metrics.registry import (
    Metric,
    make_metric,
    needs_cutoff,
    parse_metrics,
    split_metric_list,
    with_cutoffs,
)
from ragmeter.metrics.retrieval import RANKING_METRICS
from ragmeter.reports.console import per_query_rows, render_eval_result, render_per_query
from ragmeter.tiers.retrieval_eval import DEFAULT_METRICS, evaluate_retrieval

LEVELS = ("chunk", "doc", "both")
BY_QUERY_LIMIT = 200


def build_metrics(metrics: str | None, ks: list[int] | None, level: str) -> list[Metric]:
    """The metric list of a command line: defaults, ``-k`` expansion and ``--level``."""
    if level not in LEVELS:
        raise UsageError("--level", f"unknown level '{level}'", list(LEVELS))
    if metrics is None:
        if ks:
            kl = ",".join(map(str, ks))
            items = [f"hit_rate@{kl}", "mrr", f"recall@{kl}", f"precision@{kl}", f"ndcg@{kl}",
                     "map"]
        else:
            items = list(DEFAULT_METRICS)
    else:
        items = []
        if not split_metric_list(metrics):
            raise UsageError("--metrics", f"no metric named in {metrics!r}")
        for raw in split_metric_list(metrics):
            if "@" not in raw and ks and needs_cutoff(raw):
                raw = with_cutoffs(raw, ks)
            items.append(raw)
    parsed = parse_metrics(items)
    out: list[Metric] = []
    for m in parsed:
        levels = ["chunk", "doc"] if level == "both" else [level]
        if m.name not in RANKING_METRICS or m.get("level") != "chunk":
            targets = [m]
        else:
            targets = [m if lv == "chunk" else make_metric(m.name, k=m.k, **{**dict(m.params),
                                                                             "level": lv})
                       for lv in levels]
        for t in targets:
            if t not in out:
                out.append(t)
    return out


def _parse_ks(k: str | None) -> list[int] | None:
    if k is None:
        return None
    try:
        ks = [int(x) for x in k.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError("-k", f"expected comma-separated positive integers, got '{k}'") from None
    if not ks or any(x < 1 for x in ks):
        raise UsageError("-k", f"expected comma-separated positive integers, got '{k}'")
    return ks


def _load_doc_map(path: Path) -> dict[str, str]:
    """A ``{chunk_id: doc_id}`` JSON object, validated."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(RecordProblem(str(path), None, None, "file not found")) from None
    except json.JSONDecodeError as exc:
        raise DataError(RecordProblem(str(path), exc.lineno, None,
                                      f"invalid JSON: {exc.msg}")) from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise DataError(RecordProblem(str(path), None, None,
                                      "expected a JSON object {chunk_id: doc_id} of strings"))
    return data


def _report_skipped(loaded: LoadResult, console: Console) -> None:
    if loaded.skipped:
        console.print(f"[yellow]skipped {loaded.n_skipped} invalid record(s)[/] in "
                      f"{loaded.source}:")
        for p in loaded.skipped[:20]:
            console.print(f"  {p}", markup=False, highlight=False)
        if len(loaded.skipped) > 20:
            console.print(f"  ... and {len(loaded.skipped) - 20} more problems")


def retrieval(
    qrels: Annotated[Path | None, typer.Option(
        "--qrels", help="Qrels: TREC 'qid 0 doc rel' or JSON {qid: {doc: rel}}.")] = None,
    run: Annotated[Path | None, typer.Option(
        "--run", help="Run: TREC 'qid Q0 doc rank score tag' or JSON {qid: {doc: score}}.")] = None,
    evalset: Annotated[Path | None, typer.Option(
        "--evalset", help="Evalset-format file (jsonl/json/csv), strict rules.")] = None,
    samples: Annotated[Path | None, typer.Option(
        "--samples", help="Generic samples file (RAGAS or evalset-format field names).")] = None,
    beir: Annotated[Path | None, typer.Option(
        "--beir", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv); the ranking "
                       "comes from --run (BEIR results JSON or TREC).")] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels split.")] = "test",
    k: Annotated[str | None, typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10,20.")] = None,
    metrics: Annotated[str | None, typer.Option(
        "--metrics", help="e.g. 'ndcg@5,10,mrr,recall' (bare names needing a cutoff get -k).")] = None,
    level: Annotated[str, typer.Option("--level", help="chunk | doc | both")] = "chunk",
    ties: Annotated[str, typer.Option(
        "--ties", help="stable (score desc, input order) | trec (score desc, doc id desc)")] = "stable",
    match: Annotated[str, typer.Option(
        "--match", help="id | text (normalised text containment)")] = "id",
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 42,
    score_threshold: Annotated[float | None, typer.Option(
        "--score-threshold", help="Negative questions: a top-1 score at or above it is a false "
                                  "retrieval.")] = None,
    skip_invalid: Annotated[bool, typer.Option(
        "--skip-invalid", help="Skip bad records (listed and counted).")] = False,
    by_query: Annotated[bool, typer.Option("--by-query", help="Also print per-query values.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the result as JSON.")] = None,
    csv_path: Annotated[Path | None, typer.Option(
        "--csv", help="Write per-query values as CSV.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="System name.")] = None,
    doc_map: Annotated[Path | None, typer.Option(
        "--doc-map", help="JSON {chunk_id: doc_id} for --level doc (default: 'doc#n' ids).")] = None,
    data_format: common.FormatOpt = "auto",
    column_map: common.MapOpt = None,
    max_unscored: common.MaxUnscoredOpt = None,
    by: slicing.ByOpt = None,
    min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
) -> None:
    """Retrieval metrics (hit rate, MRR, recall, precision, F1, NDCG, MAP) with 95% CIs.

    Examples:

      ragmeter retrieval --qrels qrels.txt --run run.txt -k 5,10

      ragmeter retrieval --evalset evalset.jsonl --run run.txt --metrics ndcg@10,mrr --json
    """
    console = common.human_console()
    common.parse_fraction(max_unscored)
    cmap = parse_map(column_map)
    ks = _parse_ks(k)
    doc_of = _load_doc_map(doc_map) if doc_map is not None else None
    metric_list = build_metrics(metrics, ks, level)
    slice_spec = slicing.spec_of(by, min_n)
    if slice_spec is not None and evalset is None and samples is None:
        raise UsageError("--by", "slicing needs the sample fields: give --evalset or --samples")
    skipped = 0
    if beir is not None:
        if qrels is not None or evalset is not None or samples is not None:
            raise UsageError("--beir", "give --beir DIR with --run, without --qrels/--evalset/"
                             "--samples")
        if run is None:
            raise UsageError("--run", "--beir needs --run (BEIR results JSON or a TREC run)")
        from ragmeter.data.beir import load_beir

        load_beir(beir, split)  # checks the whole folder: corpus, queries, qrels
        result = evaluate_retrieval(qrels=load_qrels(beir / "qrels" / f"{split}.tsv"),
                                    run=run, metrics=metric_list, ties=ties, match=match,
                                    seed=seed, name=name or run.stem,
                                    score_threshold=score_threshold, doc_of=doc_of)
    elif qrels is not None:
        if evalset is not None or samples is not None:
            raise UsageError("--qrels", "give --qrels with --run, or --evalset/--samples")
        if run is None:
            raise UsageError("--run", "--qrels needs --run")
        # the run file is streamed query by query (loaded whole only when not grouped)
        result = evaluate_retrieval(qrels=load_qrels(qrels), run=run, metrics=metric_list,
                                    ties=ties, match=match, seed=seed,
                                    name=name or (run.stem if run else "run"),
                                    score_threshold=score_threshold, doc_of=doc_of)
    elif evalset is not None or samples is not None:
        if evalset is not None and samples is not None:
            raise UsageError("--evalset", "give --evalset or --samples, not both")
        path = evalset or samples
        assert path is not None  # for the type checker; guarded above
        run_data = load_run(run) if run is not None else None
        # samples are streamed: each record becomes its relevance cells and is dropped
        loaded = iter_samples(path, skip_invalid=skip_invalid,
                              validate=check_evalset_sample if evalset is not None else None,
                              format=data_format if evalset is None else "auto",
                              column_map=cmap)
        result = evaluate_retrieval(loaded, run=run_data, metrics=metric_list, ties=ties,
                                    match=match, seed=seed, score_threshold=score_threshold,
                                    name=name or (run.stem if run else path.stem), doc_of=doc_of)
        _report_skipped(loaded.result, console)
        skipped = loaded.result.n_skipped
    else:
        raise UsageError("", "give --qrels FILE --run FILE, or --evalset FILE [--run FILE]")
    if skipped:
        result.meta["skipped_invalid"] = skipped
        for r in result:
            r.counts["skipped_invalid"] = skipped
    render_eval_result(result, console)
    if slice_spec is not None:
        path = evalset or samples
        assert path is not None  # guarded above
        keyed = iter_samples(path, skip_invalid=True, format=data_format if evalset is None
                             else "auto", column_map=cmap)
        slicing.slice_and_show(result, list(keyed), slice_spec, console)
    if by_query:
        render_per_query(result, console, limit=BY_QUERY_LIMIT)
    common.finish_result(result, out, console)
    if csv_path is not None:
        rows = per_query_rows(result)
        with common.writing_out(csv_path) as cp, cp.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["query", *result.results])
            writer.writeheader()
            for row in rows:
                writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        console.print(f"wrote {csv_path}")
    for line in common.check_scored(common.results_of(result), max_unscored):
        common.err_console().print(f"partly unscored: {line}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("retrieval")(retrieval)
