"""``ragmeter judge-pipeline``: accuracy / precision / recall / F1 of a production yes/no judge."""

from __future__ import annotations

from pathlib import Path

import typer

from ragmeter.errors import ConfigError
from ragmeter.reports.console import fmt3 as _f
from ragmeter.reports.console import write_result_json


def judge_pipeline_command(
    data: Path = typer.Argument(..., help="Labelled items: question, answer, context, "  # noqa: B008
                                "ground_truth_show (+ predicted_show / predicted_score)."),
    prompt: Path = typer.Option(None, "--prompt", help="Production prompt template with "  # noqa: B008
                                "{question} {answer} {context} (optional ---system--- / "
                                "---user--- parts). Needs a judge."),
    judge_config: Path = typer.Option(None, "--judge-config", help="Judge config YAML/JSON "  # noqa: B008
                                      "(the first judge is used)."),
    base_url: str = typer.Option("", "--base-url", help="OpenAI-compatible endpoint (with "
                                 "--model, instead of --judge-config)."),
    model: str = typer.Option("", "--model", help="Model name at --base-url."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Name of the variable holding the API key."),
    seed: int = typer.Option(42, "--seed", help="Bootstrap seed."),
    charts: Path = typer.Option(None, "--charts", help="Folder for the confusion matrix."),  # noqa: B008
    out: Path = typer.Option(None, "--out", help="Write the result as JSON here."),  # noqa: B008
) -> None:
    """Production judge pipeline: call the production judge, or score stored predictions."""
    from rich.console import Console
    from rich.table import Table

    from ragmeter.tiers.judge_pipeline import (
        evaluate_judge_pipeline,
        load_pipeline_items,
        plot_confusion,
    )

    judge = None
    template = None
    if prompt is not None:
        from ragmeter.judges import JudgeConfig, make_judge
        from ragmeter.judges.config import load_judge_configs

        template = prompt.read_text(encoding="utf-8")
        if judge_config is not None:
            cfg = load_judge_configs(judge_config)[0]
            if base_url:
                cfg = cfg.with_(base_url=base_url)
        elif base_url and model:
            cfg = JudgeConfig(name="production", backend="openai", base_url=base_url,
                              model=model, api_key_env=api_key_env or None)
        else:
            raise ConfigError("--judge-config", "--prompt needs a judge: --judge-config, or "
                              "--base-url with --model")
        judge = make_judge(cfg.with_(no_cache=True))
    elif judge_config is not None or base_url:
        raise ConfigError("--prompt", "calling the production judge needs its prompt template")
    items = load_pipeline_items(data, need_predictions=judge is None)
    res = evaluate_judge_pipeline(items, judge=judge, prompt_template=template, seed=seed)
    console = Console()
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
        console.print("charts: " + ", ".join(map(str, plot_confusion(res, charts))))
    write_result_json(res, out, console)


def register(app: typer.Typer) -> None:
    app.command("judge-pipeline")(judge_pipeline_command)
