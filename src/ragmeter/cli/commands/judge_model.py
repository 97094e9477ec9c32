"""``ragmeter judge check|demo``: check judge configs with a few probe calls; status of the demo
judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ragmeter.cli import common
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group

_PROBES = [
    ("Does the text answer the question 'What is the capital of France?'",
     "Paris is the capital of France."),
    ("Содержит ли текст ответ на вопрос «Какая столица России?»",
     "Столица России — Москва."),
    ("Does the text answer the question 'How tall is Mount Everest?'",
     "The weather in Lisbon is mild in winter."),
]


@judge_options(omit=("check_judge",))
def check_command(
    config: Optional[Path] = typer.Argument(  # noqa: B008, UP045 - typer needs Optional
        None, hidden=True, help="Judge config file (older form of --judge-config)."),
    judge: JudgeOptions = NONE_GIVEN,
    n: int = typer.Option(3, "--n", help="Probe calls per judge."),
    no_cache: bool = typer.Option(True, "--no-cache/--cache", help="Bypass the cache."),
    against: Optional[Path] = typer.Option(  # noqa: B008, UP045
        None, "--against", help="Drift check: re-run a fixed subset of the judge benchmark "
        "and exit 1 when agreement dropped significantly against this card (JSON from "
        "`ragmeter judge bench --out`)."),
    drift_n: int = typer.Option(50, "--drift-n", min=5, help="Items re-run by --against."),
    items_file: Optional[Path] = typer.Option(  # noqa: B008, UP045
        None, "--items", help="Benchmark file the card was made on (default: bundled)."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.0001, max=0.5,
                                help="Significance level of the drift test."),
) -> None:
    """Send a few yes/no probes to a judge and print replies and accounting.

    The judge comes from --judge-config (every judge in the file; YAML/JSON: one judge, a
    'judges' list, or a Spring-AI application.yaml) and/or --judge-url/--judge-model, which
    override the file's endpoint and model.

    Examples:

      ragmeter judge check --judge-config judge.yaml --n 2

      ragmeter judge check --judge-config judge.yaml --judge-url http://127.0.0.1:8765/v1
    """
    from rich.table import Table

    from ragmeter.errors import UsageError
    from ragmeter.judges import get_prompt, make_judge

    if config is not None and judge.config is not None and config != judge.config:
        raise UsageError("--judge-config", "given twice (as an argument and as the option)")
    if judge.config is None and config is not None:
        judge = judge.with_(config=config)
    path = judge.config
    configs = judge.required("judge check")
    if against is not None:
        _drift(configs, against, drift_n, items_file, alpha, no_cache)
        return
    tpl = get_prompt("yes_no")
    requests = [tpl.request("ru" if "Содерж" in q else "en", question=q, text=t,
                            metric="probe", sample_id=str(i))
                for i, (q, t) in enumerate((_PROBES * (n // len(_PROBES) + 1))[:n])]
    table = Table(title=f"judge check: {path or judge.url or judge.backend}")
    for col in ("judge", "model", "scored", "unscored (reasons)", "calls", "p50 s", "tokens",
                "cost"):
        table.add_column(col)
    rows: list[dict[str, Any]] = []
    for cfg in configs:
        cfg = cfg.with_(no_cache=no_cache)
        llm = make_judge(cfg)
        replies = llm.ask_many(requests)
        st = getattr(llm, "last_stats", None)
        reasons = ", ".join(sorted({f"{r.reason}: {(r.detail or '')[:60]}"
                                    for r in replies if not r.ok})) or "-"
        table.add_row(cfg.name, llm.model, str(sum(r.ok for r in replies)),
                      f"{sum(not r.ok for r in replies)} ({reasons})",
                      str(st.calls if st else "-"),
                      f"{st.p50_s:.2f}" if st and st.p50_s is not None else "-",
                      f"{st.tokens_in}/{st.tokens_out}" if st else "-",
                      f"{st.cost:.5f}" if st else "-")
        rows.append({"judge": cfg.name, "model": llm.model,
                     "scored": sum(r.ok for r in replies),
                     "unscored": sum(not r.ok for r in replies),
                     "unscored_reasons": sorted({str(r.reason) for r in replies if not r.ok}),
                     "calls": st.calls if st else None,
                     "p50_s": st.p50_s if st else None,
                     "tokens_in": st.tokens_in if st else None,
                     "tokens_out": st.tokens_out if st else None,
                     "cost": st.cost if st else None})
    common.human_console().print(table)
    if common.state().json:
        common.emit_json({"judges": rows})


def _drift(configs: list[Any], against: Path, n: int, items_file: Path | None, alpha: float,
           no_cache: bool) -> None:
    """``--against CARD``: the drift check of every configured judge; exit 1 on a drop."""
    from rich.table import Table

    from ragmeter.judge_trust.bench import load_bench
    from ragmeter.judge_trust.drift import drift_check, load_card
    from ragmeter.judges import make_judge

    items = load_bench(items_file, lang="all")
    table = Table(title=f"judge drift against {against} (exact one-sided McNemar on per-item "
                        "correctness)")
    for col in ("judge", "card", "n", "accuracy then", "accuracy now", "lost", "gained",
                "unscored now", "p", "drifted"):
        table.add_column(col)
    results = []
    for cfg in configs:
        card = load_card(against, cfg.name)
        res = drift_check(make_judge(cfg.with_(no_cache=no_cache)), card, items, n=n,
                          alpha=alpha)
        results.append(res)
        table.add_row(res.judge, res.card_judge, str(res.n), f"{res.accuracy_then:.3f}",
                      f"{res.accuracy_now:.3f}", str(res.lost), str(res.gained),
                      str(res.unscored_now), f"{res.p_value:.4f}",
                      "yes" if res.drifted else "no",
                      style="bold red" if res.drifted else "")
    common.human_console().print(table)
    if common.state().json:
        common.emit_json({"drift": [r.to_dict() for r in results]})
    if any(r.drifted for r in results):
        common.err_console().print("judge agreement dropped significantly: the model may "
                                   "have changed", highlight=False)
        raise typer.Exit(1)


def demo_command(
    probe: bool = typer.Option(False, "--probe", help="Load the model and ask one question."),
    tiny: bool = typer.Option(False, "--tiny", help="Use the 0.5B test model (extra tiny-judge)."),
) -> None:
    """Is the offline demonstration judge installed? With --probe, run it once. Exit 2 with
    the pip command when it is not.

    Examples:

      ragmeter judge demo
    """
    from ragmeter.judges.gguf import DEMO_MODEL, TINY_MODEL, demo_judge_status, load_demo_judge

    spec = TINY_MODEL if tiny else DEMO_MODEL
    status = demo_judge_status(spec)
    if not status.available:  # an environment problem with its fix: exit 2, like any usage error
        from ragmeter.errors import RagmeterError

        which = "tiny test judge" if tiny else "demo judge"
        raise RagmeterError(f"the offline {which} is not installed ({status.reason}); "
                            f"install it with: {status.enable_command}")
    typer.echo(f"demo judge available: {spec.name} (weak: yes/no decisions only)")
    if probe:
        from ragmeter.judges import get_prompt

        judge = load_demo_judge(tiny=tiny)
        assert judge is not None
        req = get_prompt("yes_no").request("en", question=_PROBES[0][0], text=_PROBES[0][1])
        reply = judge.ask_many([req])[0]
        typer.echo(f"reply: {reply.data if reply.ok else reply.reason} "
                   f"({reply.latency_s:.1f} s, cached={reply.cached})")


def register(app: typer.Typer) -> None:
    judge = group(app, "judge")
    judge.command("check")(check_command)
    judge.command("demo")(demo_command)
