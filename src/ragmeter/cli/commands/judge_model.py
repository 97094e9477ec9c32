"""``ragmeter judge``: check judge configs with a few probe calls; status of the demo judge."""

from __future__ import annotations

from pathlib import Path

import typer

judge_app = typer.Typer(help="LLM judges: dry-run a config, check the offline demo judge.",
                        no_args_is_help=True)

_PROBES = [
    ("Does the text answer the question 'What is the capital of France?'",
     "Paris is the capital of France."),
    ("Содержит ли текст ответ на вопрос «Какая столица России?»",
     "Столица России — Москва."),
    ("Does the text answer the question 'How tall is Mount Everest?'",
     "The weather in Lisbon is mild in winter."),
]


@judge_app.command("check")
def check_command(
    config: Path = typer.Argument(  # noqa: B008
        ..., help="Judge config (YAML/JSON: one judge, a 'judges' "
                                  "list, or a Spring-AI application.yaml)."),
    n: int = typer.Option(3, "--n", help="Probe calls per judge."),
    base_url: str = typer.Option("", "--judge-url", help="Override base_url (e.g. a "
                                 "`ragmeter mock-judge` server); old spelling --base-url."),
    no_cache: bool = typer.Option(True, "--no-cache/--cache", help="Bypass the cache."),
) -> None:
    """Send a few yes/no probes to every judge in CONFIG and print replies and accounting.

    Examples:

      ragmeter judge check judge.yaml --n 2

      ragmeter judge check judge.yaml --judge-url http://127.0.0.1:8765/v1
    """
    from rich.console import Console
    from rich.table import Table

    from ragmeter.judges import get_prompt, make_judge
    from ragmeter.judges.config import load_judge_configs

    console = Console()
    configs = load_judge_configs(config)
    tpl = get_prompt("yes_no")
    requests = [tpl.request("ru" if "Содерж" in q else "en", question=q, text=t,
                            metric="probe", sample_id=str(i))
                for i, (q, t) in enumerate((_PROBES * (n // len(_PROBES) + 1))[:n])]
    table = Table(title=f"judge check: {config}")
    for col in ("judge", "model", "scored", "unscored (reasons)", "calls", "p50 s", "tokens",
                "cost"):
        table.add_column(col)
    for cfg in configs:
        if base_url:
            cfg = cfg.with_(base_url=base_url)
        cfg = cfg.with_(no_cache=no_cache)
        judge = make_judge(cfg)
        replies = judge.ask_many(requests)
        st = getattr(judge, "last_stats", None)
        reasons = ", ".join(sorted({f"{r.reason}: {(r.detail or '')[:60]}"
                                    for r in replies if not r.ok})) or "-"
        table.add_row(cfg.name, judge.model, str(sum(r.ok for r in replies)),
                      f"{sum(not r.ok for r in replies)} ({reasons})",
                      str(st.calls if st else "-"),
                      f"{st.p50_s:.2f}" if st and st.p50_s is not None else "-",
                      f"{st.tokens_in}/{st.tokens_out}" if st else "-",
                      f"{st.cost:.5f}" if st else "-")
    console.print(table)


@judge_app.command("demo")
def demo_command(
    probe: bool = typer.Option(False, "--probe", help="Load the model and ask one question."),
    tiny: bool = typer.Option(False, "--tiny", help="Use the 0.5B test model (extra tiny-judge)."),
) -> None:
    """Is the offline demonstration judge installed? With --probe, run it once.

    Examples:

      ragmeter judge demo
    """
    from ragmeter.judges.gguf import DEMO_MODEL, TINY_MODEL, demo_judge_status, load_demo_judge

    spec = TINY_MODEL if tiny else DEMO_MODEL
    status = demo_judge_status(spec)
    if not status.available:
        typer.echo(f"demo judge not available: {status.reason}\nenable it with: "
                   f"{status.enable_command}")
        raise typer.Exit(1)
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
    app.add_typer(judge_app, name="judge")
