"""``ragmeter judge pipeline``: accuracy / precision / recall / F1 of a production yes/no judge."""

from __future__ import annotations

from pathlib import Path

import typer

from ragmeter.cli import common
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group
from ragmeter.cli.lost_work import MaxLostOpt, report_lost
from ragmeter.errors import UsageError
from ragmeter.reports.console import fmt3 as _f


@judge_options()
def judge_pipeline_command(
    data: Path = typer.Argument(..., help="Labelled items: question, answer, context, "  # noqa: B008
                                "ground_truth_show (+ predicted_show / predicted_score)."),
    prompt: Path = typer.Option(None, "--prompt", help="Production prompt template with "  # noqa: B008
                                "{question} {answer} {context} (optional ---system--- / "
                                "---user--- parts). Needs a judge."),
    judge: JudgeOptions = NONE_GIVEN,
    strict_reply: bool = typer.Option(False, "--strict-reply", help="Accept only replies "
                                      "exactly in the prompt's format (Yes / No: reason); "
                                      "default: also Yes., **No**, Нет — причина ..."),
    max_unscored: common.MaxUnscoredOpt = None,
    max_lost: MaxLostOpt = None,
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed."),
    charts: Path = typer.Option(None, "--charts", help="Folder for the confusion matrix."),  # noqa: B008
    out: Path = typer.Option(None, "--out", help="Write the result as JSON here."),  # noqa: B008
) -> None:
    """Production judge: call it with its prompt, or score stored predictions.

    Examples:

      ragmeter judge pipeline items.jsonl

      ragmeter judge pipeline items.jsonl --prompt prompt.txt --judge-url http://127.0.0.1:8000/v1 --judge-model qwen
    """
    from rich.table import Table

    from ragmeter.reports.charts import confusion_chart
    from ragmeter.tiers.judge_pipeline import (
        evaluate_judge_pipeline,
        load_pipeline_items,
    )

    llm = None
    template = None
    common.parse_fraction(max_unscored)
    if prompt is not None:
        from ragmeter.data.reading import read_text
        from ragmeter.judges import make_judge

        template = read_text(prompt)
        cfg = judge.config_or_none(name="judge")
        if cfg is None:
            raise UsageError("--judge-config", "--prompt needs a judge: --judge-config, or "
                             "--judge-url with --judge-model")
        judge.check_reachable([cfg])
        llm = make_judge(cfg.with_(no_cache=True))
    elif judge.given():
        raise UsageError("--prompt", "calling the production judge needs its prompt template")
    items = load_pipeline_items(data, need_predictions=llm is None)
    with common.working(f"judging {len(items)} items"):
        res = evaluate_judge_pipeline(items, judge=llm, prompt_template=template, seed=seed,
                                      strict=strict_reply)
    console = common.human_console()
    c = res.meta["confusion"]
    t = Table(title=f"judge pipeline — {data} ({res.meta['mode']}, {len(items)} items)")
    for col in ("metric", "value", "95% CI"):
        t.add_column(col)
    for key in ("cls_accuracy", "cls_precision", "cls_recall"):
        a = res[key].aggregate
        t.add_row(key.removeprefix("cls_"), _f(a.mean), f"[{_f(a.ci_low)}, {_f(a.ci_high)}]")
    f1 = res.meta["f1"]
    t.add_row("f1", _f(f1["value"]), f"[{_f(f1['ci_low'])}, {_f(f1['ci_high'])}]")
    if "roc_auc" in res.meta:
        auc = res.meta["roc_auc"]
        t.add_row("roc_auc", _f(auc["value"]), f"[{_f(auc['ci_low'])}, {_f(auc['ci_high'])}]")
    if "latency_ms" in res.meta:
        lat = res.meta["latency_ms"]
        t.add_row("latency p50 / p95 ms", f"{lat['p50']:.1f} / {lat['p95']:.1f}", "")
    console.print(t)
    console.print(f"TP={c['tp']} FP={c['fp']} FN={c['fn']} TN={c['tn']}; unscored: "
                  f"{res.meta['unscored_by_reason'] or 0}")
    best = res.meta.get("best_f1_threshold")
    if best:
        console.print(f"best-F1 threshold: score >= {best['threshold']:.4g} -> F1 "
                      f"{best['f1']:.3f} (P {_f(best['precision'])}, R {_f(best['recall'])})")
    if charts is not None:
        console.print("charts: " + ", ".join(map(str, confusion_chart(res, charts))))
    common.finish_result(res, out, console)
    for line in common.check_scored(common.results_of(res)[:1], max_unscored):
        common.err_console().print(f"partly unscored: {line}", highlight=False, markup=False)
    report_lost(common.results_of(res)[:1], max_lost, tier="judge_pipeline")


def register(app: typer.Typer) -> None:
    group(app, "judge").command("pipeline")(judge_pipeline_command)
