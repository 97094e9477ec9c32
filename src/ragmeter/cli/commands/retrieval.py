"""``ragmeter score retrieval``: Tier 1 retrieval metrics from qrels + run, or an evalset (+ run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from ragmeter.cli import common, slicing
from ragmeter.cli.lazy import group
from ragmeter.cli.lost_work import MaxLostOpt, report_lost
from ragmeter.data.formats import parse_map
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
from ragmeter.reports.console import render_eval_result, render_per_query
from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.results.streaming import write_per_query_csv, write_result_json
from ragmeter.retrieval.evaluate import DEFAULT_METRICS, evaluate_retrieval

if TYPE_CHECKING:  # the evalset loaders are imported by the branches that read samples
    from ragmeter.data.loaders import LoadResult

LEVELS = ("auto", "chunk", "doc", "both")
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
        if m.name not in RANKING_METRICS or m.get("level") != "auto":
            targets = [m]
        else:
            targets = [make_metric(m.name, k=m.k, **{**dict(m.params), "level": lv})
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
    """A ``{chunk_id: doc_id}`` JSON object, validated (read as every text input is: UTF-8
    with or without a byte-order mark)."""
    from ragmeter.data import jsontext
    from ragmeter.data.reading import read_text

    try:
        data = jsontext.loads(read_text(path))
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


def _render_head(result: EvalResult, console: Console, limit: int) -> None:
    """Per-query values of the first ``limit`` queries (the rest: ``--csv``)."""
    head: dict[str, None] = {}
    total: set[str] = set()
    for r in result:
        total.update(r.sample_ids)
        for sid in r.sample_ids:
            if len(head) >= limit:
                break
            head.setdefault(sid, None)
    small = EvalResult(result.name, meta=result.meta)
    for r in result:
        pos = [i for i, sid in enumerate(r.sample_ids) if sid in head]
        small.add(MetricResult(r.metric, [r.sample_ids[i] for i in pos], r.values[pos],
                               r.signature, reasons={j: r.reasons[i] for j, i in enumerate(pos)
                                                     if i in r.reasons},
                               counts=r.counts, higher_is_better=r.higher_is_better))
    render_per_query(small, console)
    if len(total) > limit:
        console.print(f"... {len(total) - limit} more queries (use --csv for all)")


def _write_outputs(result: EvalResult, out: Path | None, csv_path: Path | None,
                   console: Console) -> None:
    """``--out`` (JSON) and ``--csv``, streamed block by block (never the whole text at once)."""
    if out is not None and common.is_stdout(out):
        write_result_json(result, sys.stdout)
    elif out is not None:
        with common.writing_out(out) as p, p.open("w", encoding="utf-8") as fh:
            write_result_json(result, fh)
        console.print(f"wrote {out}", highlight=False, markup=False)
    if common.state().json and (out is None or not common.is_stdout(out)):
        common.emit_json(result)
    if csv_path is not None:
        with common.writing_out(csv_path) as cp, cp.open("w", encoding="utf-8", newline="") as fh:
            write_per_query_csv(result, fh)
        console.print(f"wrote {csv_path}", highlight=False, markup=False)


def _print_notes(result: EvalResult, console: Console) -> None:
    """What ``level=auto`` chose and any warning about the data."""
    auto = result.meta.get("level_auto")
    if auto and auto["level"] == "doc":
        console.print(f"level: auto -> doc ({auto['why']}); write level=chunk to insist",
                      highlight=False, markup=False)
    for line in result.meta.get("warnings", []):
        common.err_console().print(f"warning: {line}", highlight=False, markup=False)


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
    level: Annotated[str, typer.Option(
        "--level", help="auto (chunk when the data has chunk gold, else doc) | chunk | doc | "
                        "both")] = "auto",
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
    doc_id_pattern: Annotated[str | None, typer.Option(
        "--doc-id-pattern", help="Regex: chunk id -> document id (group 'doc'), e.g. "
                                 "'(?P<doc>.+)_part\\d+' (default rules: 'doc#n', "
                                 "'doc_chunk_n').")] = None,
    data_format: common.FormatOpt = "auto",
    column_map: common.MapOpt = None,
    max_unscored: common.MaxUnscoredOpt = None,
    by: slicing.ByOpt = None,
    min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
    target: Annotated[str | None, typer.Option(
        "--target", help="Your RAG system ranks every question of --evalset/--samples: a "
        "target config file, module:function or URL (its 'retrieve' entry, else 'answer').")
    ] = None,
    replay: Annotated[bool, typer.Option(
        "--replay", help="With --target: re-score the recorded replies, calling nothing.")
    ] = False,
    max_lost: MaxLostOpt = None,
) -> None:
    """Retrieval metrics (hit rate, MRR, recall, precision, F1, NDCG, MAP) with 95% CIs.

    Examples:

      ragmeter score retrieval --qrels qrels.txt --run run.txt -k 5,10

      ragmeter score retrieval --evalset evalset.jsonl --run run.txt --metrics ndcg@10,mrr --json
    """
    console = common.human_console()
    common.parse_fraction(max_unscored)
    cmap = parse_map(column_map)
    ks = _parse_ks(k)
    doc_of = _load_doc_map(doc_map) if doc_map is not None else None
    metric_list = build_metrics(metrics, ks, level)
    slice_spec = slicing.spec_of(by, min_n, needs=evalset or samples)
    skipped = 0
    filled = None
    if target is not None or replay:
        result, filled = _with_target(target, replay, evalset or samples, run, ks, metric_list,
                                      name, ties=ties, match=match, seed=seed, doc_of=doc_of,
                                      score_threshold=score_threshold, data_format=data_format,
                                      cmap=cmap, evalset=evalset is not None)
    elif beir is not None or qrels is not None:
        result = _qrels_result(beir, split, qrels, run, given=evalset or samples,
                               metrics=metric_list, ties=ties, match=match, seed=seed,
                               name=name, score_threshold=score_threshold, doc_of=doc_of,
                               doc_id_pattern=doc_id_pattern)
    elif evalset is not None or samples is not None:
        if evalset is not None and samples is not None:
            raise UsageError("--evalset", "give --evalset or --samples, not both")
        path = evalset or samples
        assert path is not None  # for the type checker; guarded above
        from ragmeter.data.evalset import check_evalset_sample
        from ragmeter.data.loaders import iter_samples

        run_data = load_run(run) if run is not None else None
        # samples are streamed: each record becomes its relevance cells and is dropped
        loaded = iter_samples(path, skip_invalid=skip_invalid,
                              validate=check_evalset_sample if evalset is not None else None,
                              format=data_format if evalset is None else "auto",
                              column_map=cmap)
        result = evaluate_retrieval(loaded, run=run_data, metrics=metric_list, ties=ties,
                                    match=match, seed=seed, score_threshold=score_threshold,
                                    name=name or (run.stem if run else path.stem), doc_of=doc_of,
                                    doc_id_pattern=doc_id_pattern)
        _report_skipped(loaded.result, console)
        skipped = loaded.result.n_skipped
    else:
        raise UsageError("", "give --qrels FILE --run FILE, or --evalset FILE [--run FILE]")
    if skipped:
        result.meta["skipped_invalid"] = skipped
        for r in result:
            r.counts["skipped_invalid"] = skipped
    if filled is not None:
        from ragmeter.targets.oneshot import finish

        finish(result, filled, seed=seed)
    render_eval_result(result, console)
    if slice_spec is not None:
        slicing.slice_file(result, evalset or samples, slice_spec, console,
                           data_format if evalset is None else "auto", cmap)
    _print_notes(result, console)
    if by_query:
        _render_head(result, console, BY_QUERY_LIMIT)
    _write_outputs(result, out, csv_path, console)
    for line in common.check_scored(common.results_of(result), max_unscored):
        common.err_console().print(f"partly unscored: {line}", highlight=False, markup=False)
    if filled is not None:   # the target's lost replies (HTML, 5xx, timeouts) fail the command
        report_lost(common.results_of(result), max_lost)


def _qrels_result(beir: Path | None, split: str, qrels: Path | None, run: Path | None, *,
                  given: Path | None, name: str | None, **kw: Any) -> EvalResult:
    """``--beir DIR --run`` or ``--qrels FILE --run FILE`` (the run streamed query by query)."""
    if beir is not None:
        if qrels is not None or given is not None:
            raise UsageError("--beir", "give --beir DIR with --run, without --qrels/--evalset/"
                             "--samples")
        if run is None:
            raise UsageError("--run", "--beir needs --run (BEIR results JSON or a TREC run)")
        from ragmeter.data.beir import load_beir

        load_beir(beir, split)  # checks the whole folder: corpus, queries, qrels
        return evaluate_retrieval(qrels=load_qrels(beir / "qrels" / f"{split}.tsv"), run=run,
                                  name=name or run.stem, **kw)
    assert qrels is not None  # the caller's branch
    if given is not None:
        raise UsageError("--qrels", "give --qrels with --run, or --evalset/--samples")
    if run is None:
        raise UsageError("--run", "--qrels needs --run")
    return evaluate_retrieval(qrels=load_qrels(qrels), run=run, name=name or run.stem, **kw)


def _with_target(target: str | None, replay: bool, path: Path | None, run: Path | None,
                 ks: list[int] | None, metric_list: list[Metric], name: str | None,
                 **kw: Any) -> tuple[Any, Any]:
    """``--target``: the target ranks the samples' questions, then they are scored."""
    from ragmeter.data.evalset import check_evalset_sample
    from ragmeter.data.loaders import load_samples
    from ragmeter.targets.conformance import chunk_level_metrics
    from ragmeter.targets.oneshot import fill_from_target

    if target is None:
        raise UsageError("--replay", "needs --target")
    if path is None or run is not None:
        raise UsageError("--target", "give --evalset or --samples (the questions), without "
                         "--run: the target's ranking is the run")
    fmt, cmap, strict = kw.pop("data_format"), kw.pop("cmap"), kw.pop("evalset")
    loaded = load_samples(path, format="auto" if strict else fmt, column_map=cmap,
                          validate=check_evalset_sample if strict else None)
    filled = fill_from_target(loaded.samples, target, entry=None, default_entry="retrieve",
                              k=max(ks) if ks else 10, replay=replay, scores_ids=True,
                              chunk_metrics=chunk_level_metrics(metric_list, loaded.samples))
    result = evaluate_retrieval(filled.samples, metrics=metric_list, name=name or
                                (filled.session.name if filled.session else "target"), **kw)
    return result, filled


def register(app: typer.Typer) -> None:
    group(app, "score").command("retrieval")(retrieval)
