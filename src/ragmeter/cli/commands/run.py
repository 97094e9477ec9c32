"""``ragmeter run bench.yaml``: run a whole benchmark from one config (resumable)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.cli import common, slicing
from ragmeter.cli.batch_files import JudgeBatchOpt
from ragmeter.cli.common import JsonOpt, MaxUnscoredOpt
from ragmeter.cli.judge_options import CheckJudgeOpt
from ragmeter.cli.lost_work import MaxLostOpt, report_lost_run
from ragmeter.errors import GateFailedError, RagmeterError, WorkFailedError


def preflight(cfg: object, url: str) -> None:
    """Everything checkable before work starts: the store opens, every dataset loads."""
    from ragmeter.results.store import ResultStore, mask_url
    from ragmeter.runner.engine import load_dataset

    try:
        ResultStore(url)
    except RagmeterError:
        raise  # already says "cannot open results store URL: why"
    except Exception as exc:
        raise RagmeterError(f"cannot open results store {mask_url(url)}: "
                            f"{type(exc).__name__}: {exc}") from None
    for ds in getattr(cfg, "datasets", []):
        load_dataset(cfg, ds.name)  # type: ignore[arg-type]


@contextmanager
def _store_write_errors(url: str) -> Iterator[None]:
    """A failure to save the finished run is exit 3 (the run stays resumable)."""
    from ragmeter.results.store import mask_url

    try:
        yield
    except RagmeterError:
        raise
    except Exception as exc:
        import sqlalchemy.exc as sa_exc

        if isinstance(exc, (sa_exc.SQLAlchemyError, OSError)):
            raise WorkFailedError(f"the run could not be written to the results store "
                                  f"{mask_url(url)}: {type(exc).__name__}: {exc}") from None
        raise


def _run(cfg: Any, url: str, tier: list[str] | None, limit: int | None, resume: str | None,
         run_id: str | None, tags: Sequence[str], ids: list[str], quiet: bool) -> Any:
    """``run_benchmark`` with the progress display; ``ids`` receives the run id once known."""
    from ragmeter.runner.engine import run_benchmark
    from ragmeter.runner.progress import RunProgress

    err = common.err_console()
    prog = RunProgress(err, enabled=not quiet)
    plain = common.PlainProgress(err) if common.PlainProgress.wanted() else None

    def hook(tier_name: str, event: str, info: dict[str, object]) -> None:
        prog.hook(tier_name, event, info)
        if plain is not None:
            plain.hook(tier_name, event, info)

    def on_plan(rid: str) -> None:
        ids.append(rid)
        err.print(f"run id: [bold]{rid}[/]", highlight=False)

    try:
        with prog, _store_write_errors(url):
            return run_benchmark(cfg, tiers=tier or None, limit=limit, resume=resume,
                                 run_id=run_id, store=url, hook=hook, on_plan=on_plan,
                                 tags=tags)
    finally:
        if plain is not None:
            plain.close()


def _judge_batch(cfg: Any, batch: tuple[str, Path], tier: list[str] | None,
                 limit: int | None, out: Any) -> None:
    """``--judge-batch``: the run planned without storing it, its judges writing or
    collecting batch files; a tier that could not run is named."""
    from ragmeter.cli.batch_files import command_line, run_batch_files
    from ragmeter.runner.costing import dry_run

    if not getattr(cfg, "judges", None):
        raise RagmeterError("--judge-batch: the config has no judge ('judges:')")
    run = run_batch_files(lambda: dry_run(cfg, tiers=tier or None, limit=limit), cfg.judges,
                          batch, command=command_line(),
                          echo=lambda text: out.print(text, highlight=False, markup=False))
    from ragmeter.judges.batchfiles import PENDING

    for name, rec in getattr(run, "tiers", {}).items():
        # a tier whose values all wait for batch results is how a written round looks
        if rec.status == "error" and PENDING not in (rec.reason or ""):
            out.print(f"  note: tier {name} did not run: {rec.reason}", highlight=False,
                      markup=False)


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        config: Annotated[Path, typer.Argument(help="Benchmark config (YAML); see `ragmeter "
                                                    "init`.")],
        tier: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer needs it
            "--tier", "-t", help="Run only this tier (repeatable).")] = None,
        limit: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--limit", min=1, help="Only the first N samples.")] = None,
        resume: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--resume", help="Continue an interrupted run with this id.")] = None,
        run_id: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--run-id", help="Id for a new run: letters, digits, '.', '_', '-' (a folder "
                        "name; default: timestamp).")] = None,
        store: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--store", help="Results store URL (default: config, $RAGMETER_STORE_URL, "
                            "./ragmeter-results.sqlite).")] = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
        check: Annotated[bool, typer.Option(
            "--check", help="Gate on the config's thresholds (exit 1 on failure).")] = False,
        max_unscored: MaxUnscoredOpt = None,
        max_lost: MaxLostOpt = None,
        json_out: JsonOpt = False,
        check_judge: CheckJudgeOpt = False,
        tag: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--tag", help="Label the run (repeatable), added to the config's tags; `ragmeter "
                          "view` and `ragmeter runs list` filter by it.")] = None,
        estimate: common.EstimateOpt = False,
        max_cost: common.MaxCostOpt = None,
        max_calls: common.MaxCallsOpt = None,
        by: slicing.ByOpt = None,
        min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
        correction: slicing.CorrectionOpt = "holm",
        replay: Annotated[bool, typer.Option(
            "--replay", help="Re-score the targets' recorded replies, calling none of them "
            "(the config's target: / targets:).")] = False,
        judge_batch: JudgeBatchOpt = None,
    ) -> None:
        """Run the tiers of a benchmark config and save the run to the results store.

        The run stores its tags (config `tags:` plus --tag) and the git commit of the config's
        folder.

        Examples:

          ragmeter run bench.yaml

          ragmeter run bench.yaml --tier retrieval --limit 20 --tag nightly --json
        """
        from ragmeter.cli.cost_options import CostOptions, run_costed
        from ragmeter.cost import BudgetExhausted
        from ragmeter.results.store import normalize_url
        from ragmeter.runner.config import load_config, parse_tags
        from ragmeter.runner.costing import record_stop
        from ragmeter.secrets import mask_url

        cfg = load_config(config)
        if by is not None:  # the command line's slices replace the config's
            cfg.slices = slicing.spec_of(by, min_n, correction)
        if replay:
            cfg.target_mode = "replay"
        elif resume and cfg.target_mode == "live":   # finished questions are not asked again
            cfg.target_mode = "resume"
        tags = parse_tags(tag, "--tag") if tag else ()
        st = common.state()
        st.json = st.json or json_out
        quiet = quiet or st.quiet
        common.parse_fraction(max_unscored)
        err = common.err_console()
        out = common.human_console()
        url = normalize_url(store or cfg.store)
        ids: list[str] = []

        def plan() -> None:
            from ragmeter.cli.cost_options import print_estimates
            from ragmeter.runner.costing import estimate_run
            from ragmeter.targets.tier_hooks import plan_lines, planned_target_calls

            with planned_target_calls() as target_calls:   # the user's systems: counted only
                estimates = estimate_run(cfg, tiers=tier or None, limit=limit)
            out.print(f"estimate for {cfg.name}: nothing was sent or stored", highlight=False,
                      markup=False)
            print_estimates(estimates, lambda text: out.print(text, highlight=False,
                                                               markup=False))
            for line in plan_lines(target_calls):
                out.print(line, highlight=False, markup=False)

        from ragmeter.cli.batch_files import parse_judge_batch

        batch = parse_judge_batch(judge_batch, estimate=estimate,
                                  budget=max_cost is not None or max_calls is not None)
        if batch is not None:
            _judge_batch(cfg, batch, tier, limit, out)
            return

        def work() -> Any:
            preflight(cfg, url)
            if check_judge:
                for j in getattr(cfg, "judges", []):
                    common.check_judge_reachable(j)
            return _run(cfg, url, tier, limit, resume, run_id, tags, ids, quiet)

        def on_stop(stop: BudgetExhausted) -> None:
            rid = ids[0] if ids else (resume or run_id or "?")
            record_stop(url, rid, stop)
            err.print(f"continue with: ragmeter run {config} --resume {rid}", highlight=False,
                      markup=False)

        try:
            stored = run_costed(work, CostOptions(estimate, max_cost, max_calls), plan=plan,
                                on_stop=on_stop, echo=lambda text: err.print(
                                    f"[yellow]{text}[/]", highlight=False))
        except KeyboardInterrupt:
            rid = ids[0] if ids else (resume or run_id or "?")
            err.print(f"[yellow]interrupted[/]; finished batches saved as run {rid} (status "
                      f"interrupted); continue with: ragmeter run {config} --resume {rid}",
                      highlight=False)
            raise typer.Exit(130) from None
        if stored is None:
            return
        out.print(f"run [bold]{stored.id}[/] saved to {mask_url(url)}", highlight=False)
        for name, rec in stored.tiers.items():
            line = f"  {name}: {rec.status}"
            if rec.reason:
                line += f" — {rec.reason}"
            out.print(line, highlight=False, markup=False)
        if st.json:
            common.emit_json(stored.to_dict(per_sample=False) if hasattr(stored, "to_dict") else
                             {"id": stored.id, "tiers": {n: {"status": r.status, "reason": r.reason}
                                                         for n, r in stored.tiers.items()}})
        failed = [f"{n}: {r.reason}" for n, r in stored.tiers.items() if r.status == "error"]
        if failed:
            raise WorkFailedError(f"run {stored.id}: {len(failed)} tier(s) failed:\n  "
                                  + "\n  ".join(failed))
        for line in common.check_scored(common.results_of(stored.results()), max_unscored):
            err.print(f"partly unscored: {line}", highlight=False, markup=False)
        report_lost_run(stored, max_lost)
        if check and cfg.thresholds:
            from ragmeter.runner.gating import check_thresholds, gate_passed, rich_table

            rows = check_thresholds(stored.results(), cfg.thresholds)
            out.print(rich_table(rows))
            if not gate_passed(rows):
                raise GateFailedError("quality gate failed: "
                                      f"{sum(not r.passed for r in rows)} check(s)")
