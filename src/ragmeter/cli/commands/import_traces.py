"""``ragmeter traces import``: production traces (OTLP JSON, Langfuse, Phoenix, MLflow exports) or any
samples file → a samples JSON Lines file, with gold merged in, duplicates out and a recorded
sample."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group

if TYPE_CHECKING:
    from ragmeter.data.sample import Sample
    from ragmeter.data.traces.importing import Imported


def import_command(
    file: Annotated[Path, typer.Argument(help="Trace export or samples file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Samples JSON Lines to write, '-' = "
                                      "stdout (a <name>.import.json sidecar records the "
                                      "selection).")],
    fmt: common.FormatOpt = "auto",
    gold: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--gold", help="Evalset whose gold ids/references are merged in by id (trace id).")
    ] = None,
    dedupe: Annotated[bool, typer.Option(
        "--dedupe", help="Keep the first request of each question (normalised text).")] = False,
    sample: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--sample", help="Keep N requests (after --dedupe).")] = None,
    ci_width: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--ci-width", help="Instead of --sample: as many requests as a 0-1 metric needs for a "
                           "95% CI this wide (worst case p=0.5), e.g. 0.1.")] = None,
    stratify: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--stratify", help="Sample each value of this field or metadata key in proportion "
                           "(e.g. model, session_id).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample.")] = 42,
    hop_metrics: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--hop-metrics", help="Score these Tier 1 metrics per retrieval hop (needs gold), "
                              "e.g. 'hit_rate@10(level=doc),mrr(level=doc)'.")] = None,
    skip_invalid: Annotated[bool, typer.Option(
        "--skip-invalid", help="Skip bad traces (counted) instead of failing; a request with "
                               "a bad span is left out whole.")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Exit 3 when the import report warns (a documented field no request "
                         "has, retrieval spans that yield no document).")] = False,
) -> None:
    """Import traces as evaluation samples.

    Examples:

      ragmeter traces import otel.json --format otlp --out samples.jsonl

      ragmeter traces import langfuse.csv --out s.jsonl --dedupe --sample 2 --stratify model
    """
    from ragmeter.data.traces.importing import import_samples, sidecar, write_lines
    from ragmeter.errors import WorkFailedError

    transform, privacy = _pseudonymiser()
    imported = import_samples(file, format=fmt, gold=gold, dedup=dedupe, sample=sample,
                              stratify=stratify, seed=seed, skip_invalid=skip_invalid,
                              ci_width=ci_width, transform=transform)
    with imported:
        imported.privacy = privacy()
        if common.is_stdout(out):  # --out -: the samples on stdout, the summary on stderr
            meta = write_lines(imported, sys.stdout)
            sys.stdout.flush()
            meta = _with_hops(imported, meta, hop_metrics, seed)
            common.err_console().print(json.dumps(meta, ensure_ascii=False), highlight=False,
                                       markup=False)
            console = common.err_console()
        else:
            with common.writing_out(out) as p:
                with p.open("w", encoding="utf-8") as fh:
                    meta = write_lines(imported, fh)
                meta = _with_hops(imported, meta, hop_metrics, seed)
                sidecar(p).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n",
                                      "utf-8")
            console = common.human_console()
            sel = imported.selection
            console.print(f"{imported.source} ({imported.format}): {sel.n_read} request(s) "
                          f"read, {sel.n_duplicates} duplicate(s) dropped, {sel.n_selected} "
                          f"written to {p}"
                          + (f", {imported.n_skipped} skipped" if imported.n_skipped else ""),
                          highlight=False, markup=False)
        report = imported.report
        if report is not None:
            for line in report.lines():
                console.print(f"  {line}", highlight=False, markup=False)
        for h in (meta.get("hops") or {}).get("hops", []):
            means = ", ".join(f"{k}={v:.3f}" for k, v in h["means"].items() if v is not None)
            console.print(f"  hop {h['hop'] + 1} (n={h['n']}): {means}", highlight=False,
                          markup=False)
        if common.state().json and not common.is_stdout(out):
            common.emit_json(meta)
        if strict and report is not None and report.warnings:
            raise WorkFailedError("--strict: the import report warns:\n  "
                                  + "\n  ".join(report.warnings))


def _with_hops(imported: Imported, meta: dict[str, Any], hop_metrics: str | None, seed: int
               ) -> dict[str, Any]:
    """``--hop-metrics``: Tier 1 metrics per retrieval hop of the requests that have gold."""
    if not hop_metrics:
        return meta
    from ragmeter.retrieval.evaluate import evaluate_retrieval
    from ragmeter.retrieval.hops import hop_results

    metrics = [m.strip() for m in hop_metrics.split(",") if m.strip()]
    with_gold = [s for s in imported.iter_samples() if s.gold_doc_ids or s.gold_chunk_ids]
    return {**meta, "hops": hop_results(with_gold, evaluate_retrieval, metrics,
                                        seed=seed).to_dict()}


def _pseudonymiser() -> tuple[Callable[[Sample], Sample] | None, Callable[[], dict[str, Any]]]:
    """``ragmeter --pseudonymise import``: the samples file is written with tokens only (the
    map goes to $RAGMETER_PSEUDONYMISE_MAP, when set, and nowhere else)."""
    from ragmeter.privacy.judge import active
    from ragmeter.privacy.pseudonymise import pseudonymise_sample

    p, map_path = active()
    if p is None:
        return None, dict

    def done() -> dict[str, Any]:
        if map_path:
            p.save_map(map_path)
        return {**p.signature(), **p.redaction_counts()}

    return (lambda s: pseudonymise_sample(s, p)), done


def register(app: typer.Typer) -> None:
    group(app, "traces").command("import")(import_command)
