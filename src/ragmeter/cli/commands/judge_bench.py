"""``ragmeter judge bench`` and ``ragmeter judge card``: how far can this judge be trusted?

``judge bench`` grades one or more judges on the bundled judge benchmark (Russian, with an
English subset) and prints each judge's card; ``--compare`` ranks them side by side with
paired tests. ``judge card`` compares a stored run's judged metrics with a file of human
labels, prints the card and the bias-corrected (prediction-powered) estimates, and stores the
card with the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.cli import common, slicing
from ragmeter.cli.judge_options import NONE_GIVEN, JudgeOptions, judge_options
from ragmeter.cli.lazy import group


def _f(v: Any, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _ci(e: Any) -> str:
    if e.value is None:
        return "-"
    if e.ci_low is None:
        return f"{e.value:.2f}"
    return f"{e.value:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}]"


_ROWS = (("accuracy", "accuracy"), ("kappa", "Cohen's kappa"), ("spearman", "Spearman rho"),
         ("mae", "MAE"), ("tpr", "TPR (judge good | human good)"),
         ("tnr", "TNR (judge bad | human bad)"), ("bias", "bias: judge - human"),
         ("auc", "AUC (good vs bad)"), ("separation", "judge mean good - bad"))


def card_table(card: Any) -> Any:
    """A rich table of one judge card: statistics as rows, metrics as columns."""
    from rich.table import Table

    title = f"judge card: {card.judge} ({card.model})" + ("  [DEMO judge]" if card.demo
                                                          else "")
    t = Table(title=title, caption=card.signature, caption_justify="left")
    t.add_column("statistic [95% CI]")
    metrics = list(card.metrics.values())
    for m in metrics:
        t.add_column(f"{m.metric}\n{m.scale}", overflow="fold")
    t.add_row("n (unscored)", *[f"{m.n} ({m.n_unscored})" for m in metrics])
    for key, label in _ROWS:
        if key == "kappa":
            label = "kappa (quadratic for 0/1/2)"
        t.add_row(label, *[_ci(m.stats[key]) for m in metrics])
    t.add_row("bias direction", *[m.bias_direction for m in metrics])
    if any(m.flaky for m in metrics):
        t.add_row("flip rate", *[_f(m.flaky.get("flip_rate"), 2) if m.flaky else "-"
                                 for m in metrics])
        t.add_row("crosses 0.5", *[_f(m.flaky.get("threshold_cross"), 2) if m.flaky else "-"
                                   for m in metrics])
    return t


def _judges(judge: JudgeOptions, price_in: float, price_out: float) -> list[Any]:
    """The judges to grade: every judge of --judge-config, one from --judge-url /
    --judge-backend, or the tiny test model (``--judge-backend tiny``)."""
    if judge.backend == "tiny" and judge.config is None:
        return ["tiny"]
    prices: dict[str, Any] = {k: v for k, v in (("price_in", price_in),
                                                 ("price_out", price_out)) if v}
    prices["name"] = judge.model or judge.backend  # a judge made from the options: its model
    if judge.config is None and judge.backend not in (None, "openai"):
        return judge.configs(**prices)
    return judge.required("judge bench", **prices)


def _build(cfg: Any) -> Any:
    from ragmeter.cost import planned_judge
    from ragmeter.judges import make_judge

    if cfg == "tiny":
        from ragmeter.judges.config import JudgeConfig
        from ragmeter.judges.gguf import TINY_MODEL, make_demo_judge

        tiny_cfg = JudgeConfig(name="tiny-judge", backend="local-demo", api_key_env=None)
        planned = planned_judge(tiny_cfg)
        if planned is not None:
            return planned
        from ragmeter.cost import budgeted

        return budgeted(make_demo_judge(tiny_cfg, spec=TINY_MODEL))
    return make_judge(cfg)


@judge_options()
def bench_command(
    judge: JudgeOptions = NONE_GIVEN,
    lang: Annotated[str, typer.Option("--lang", help="ru, en or all.")] = "ru",
    task: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--task", help="Only this task (repeatable): a judged metric's name or "
                       "production_gate (bundled items: faithfulness, factual_correctness, "
                       "answer_relevance, context_relevance, production_gate), or a variant graded "
                       "on its task's items, e.g. 'faithfulness(method=direct)'.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most N items per task "
                                                       "(0 = all).")] = 0,
    repeats: Annotated[int, typer.Option("--repeats", help="Ask every item N times (>= 2 "
                                                           "adds flip rates).")] = 1,
    graded: Annotated[Optional[bool], typer.Option(  # noqa: UP045
        "--graded/--binary", help="Prompt variant (default: binary for demo judges, graded "
                                  "otherwise, as the metrics do).")] = None,
    compare: Annotated[bool, typer.Option(
        "--compare", help="Rank the judges side by side with paired tests.")] = False,
    estimate: common.EstimateOpt = False,
    max_cost: common.MaxCostOpt = None,
    max_calls: common.MaxCallsOpt = None,
    price_in: Annotated[float, typer.Option("--price-in", help="Price per 1M input tokens "
                                                               "(sets every judge's).")] = 0.0,
    price_out: Annotated[float, typer.Option("--price-out", help="Price per 1M output "
                                                                 "tokens.")] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 42,
    items_file: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--items", help="Another benchmark file in the same format (default: bundled).")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", help="Write the card(s) (and the comparison) as JSON here.")] = None,
    probes: Annotated[bool, typer.Option(
        "--probes", help="Also run the bias probes (verbosity, context order, passage "
                         "position, language) and put them on the card(s).")] = False,
    probe: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--probe", help="Only this bias probe (repeatable; implies --probes): verbosity, "
                        "context_order, position, language.")] = None,
    probe_limit: Annotated[int, typer.Option(
        "--probe-limit", min=5, help="Items (language: translated pairs) per probe, a "
                                     "seeded choice.")] = 40,
    generator_model: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--generator-model", help="The generator's model name: warn when the judge is of "
                                  "its family.")] = None,
) -> None:
    """Grade judges on the bundled Russian judge benchmark and print their cards."""
    from rich.console import Console
    from rich.table import Table

    from ragmeter.cli.cost_options import CostOptions, run_costed
    from ragmeter.judge_trust.bench import compare_bench, load_bench, run_bench
    from ragmeter.judge_trust.probes import PROBES

    console = Console()
    chosen_probes = _probe_names(probe) if probe else (PROBES if probes else ())
    items = load_bench(items_file, lang=lang, tasks=task or None, limit=limit)
    configs = _judges(judge, price_in, price_out)
    if not estimate:
        judge.check_reachable(c for c in configs if c != "tiny")
    binary = None if graded is None else not graded

    def work() -> list[Any]:
        # under --estimate the card's bootstrap is only planned: 10 resamples suffice
        boot = {"n_boot": 10} if estimate else {}
        out = []
        for cfg in configs:
            judge = _build(cfg)
            out.append(run_bench(judge, items, repeats=repeats, binary=binary, seed=seed,
                                 **boot))
            if chosen_probes:  # under --estimate their calls are planned and counted too
                _probe(judge, out[-1], items_file, lang, task, chosen_probes, probe_limit,
                       generator_model, binary, seed)
        return out

    runs = run_costed(work, CostOptions(estimate, max_cost, max_calls),
                      title=f"judge benchmark: {len(items)} items x {repeats} repeat(s)",
                      echo=console.print)
    if runs is None:
        return
    for r in runs:
        console.print(card_table(r.card))
        kinds = r.card.meta.get("by_kind", {})
        for t, ks in kinds.items():
            console.print(f"  {t}: " + ", ".join(
                f"{k} {_f(v['accuracy'], 2)} (n={v['n']})" for k, v in ks.items()),
                highlight=False)
        usage = r.stats
        if usage:
            console.print(f"  usage: {usage}", highlight=False)
        if "probes" in r.card.meta:
            console.print(probe_table(r.card.meta["probes"]))
            for w in r.card.meta["probes"].get("warnings", []):
                console.print(f"[yellow]warning:[/] {w}", highlight=False)
    rows = compare_bench(runs, seed=seed) if compare and len(runs) > 1 else []
    if rows:
        t = Table(title="judges side by side (paired randomisation test of per-item "
                        "correctness against the best judge)")
        for col in ("task", "rank", "judge", "n", "accuracy [95% CI]", "kappa [95% CI]",
                    "vs best", "p"):
            t.add_column(col)
        for row in rows:
            acc_ci = row["accuracy_ci"]
            kap_ci = row["kappa_ci"]
            t.add_row(row["task"], str(row["rank"]), row["judge"], str(row["n"]),
                      f"{_f(row['accuracy'])} [{_f(acc_ci[0])}, {_f(acc_ci[1])}]",
                      f"{_f(row['kappa'])} [{_f(kap_ci[0])}, {_f(kap_ci[1])}]",
                      _f(row["vs_best_diff"]), _f(row["vs_best_p"], 4))
        console.print(t)
    elif compare:
        console.print("--compare needs at least two judges (a --judge-config with a "
                      "'judges' list)")
    if out is not None:
        from ragmeter.results.jsonout import dumps as strict_json

        out.parent.mkdir(parents=True, exist_ok=True)
        payload: dict[str, Any] = {"cards": [r.card.to_dict() for r in runs]}
        if rows:
            payload["comparison"] = rows
        out.write_text(strict_json(payload, indent=1),
                       encoding="utf-8")
        console.print(f"wrote {out}")


def _probe_names(names: list[str]) -> tuple[str, ...]:
    """The ``--probe`` names, checked before any work."""
    from ragmeter.errors import UsageError
    from ragmeter.judge_trust.probes import PROBES

    bad = [n for n in names if n not in PROBES]
    if bad:
        raise UsageError("--probe", f"unknown probe {bad[0]!r}", list(PROBES))
    return tuple(dict.fromkeys(names))


def _probe(judge: Any, run: Any, items_file: Path | None, lang: str,
           tasks: list[str] | None, probes: tuple[str, ...], limit: int,
           generator_model: str | None, binary: bool | None, seed: int) -> None:
    """Bias probes of ``judge`` on the benchmark's items, kept on its card. The language
    probe uses the bundled translated pairs (of the chosen tasks) with the bundled items, the
    pairs inside an ``--items`` file otherwise."""
    from ragmeter.judge_trust.bench import load_bench
    from ragmeter.judge_trust.language import bundled_pairs
    from ragmeter.judge_trust.probes import run_probes

    pool = load_bench(items_file, lang=lang)
    pairs = bundled_pairs(tasks) if items_file is None else None
    report = run_probes(judge, pool, probes=probes, run=run, generator_model=generator_model,
                        limit=limit, seed=seed, binary=binary, pairs=pairs)
    run.card.meta["probes"] = report.to_dict()


def probe_table(report: dict[str, Any]) -> Any:
    """The probes of a card as a table: effect, 95% CI, n, biased?"""
    from rich.table import Table

    t = Table(title=f"bias probes of {report['judge']} (variant − original on the 0–1 scale)")
    for col in ("probe", "effect [95% CI]", "n", "unscored", "p", "bias?", "note"):
        t.add_column(col)
    for r in report["results"]:
        ci = f"{_f(r['effect'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}]"
        t.add_row(r["probe"], ci, str(r["n"]), str(r["n_unscored"]), _f(r["p_value"], 4),
                  "yes" if r["biased"] else "no", r["note"],
                  style="bold red" if r["biased"] else "")
    return t


def _ppi_table(est: dict[str, Any]) -> Any:
    """The table of raw judge means beside the bias-corrected estimates."""
    from rich.table import Table

    t = Table(title="judged metrics: raw judge mean vs bias-corrected (prediction-powered) "
                    "estimate")
    for col in ("metric", "judge mean (N)", "corrected [95% CI]", "correction", "labels",
                "estimator (effective labels)", "labels for target"):
        t.add_column(col)
    for m, e in est.items():
        x = e.estimate
        plan = e.plan
        t.add_row(m, f"{_f(x.judge_mean)} ({x.n_all})",
                  f"{_f(x.estimate)} [{_f(x.ci_low)}, {_f(x.ci_high)}]"
                  + (f" (cut to the metric's range {x.clipped_to[0]:g}-{x.clipped_to[1]:g})"
                     if x.clipped_to else ""), f"{x.correction:+.3f}",
                  str(x.n_labelled),
                  f"{x.estimator}, {x.interval} interval"
                  + (f" ({x.ess:.0f})" if x.ess is not None else ""),
                  "-" if plan is None else (f"{plan.n_more} more" if plan.n_more is not None
                                            else plan.reason))
    return t


def _paired_estimates(console: Any, run: Any, labs: Any, pair: tuple[str, str]
                      ) -> dict[str, Any]:
    """Bias-corrected differences B - A per labelled metric, printed and returned."""
    from ragmeter.judge_trust.ppi import paired_metric_ppi
    from ragmeter.judge_trust.runs import judged_values

    a, b = pair
    paired: dict[str, Any] = {}
    va, _, _ = judged_values(run, labs, system=a)
    vb, _, _ = judged_values(run, labs, system=b)
    for m in labs.metrics:
        if m in va and m in vb:
            try:
                p = paired_metric_ppi(m, va[m], vb[m], labs, system_a=a, system_b=b)
            except ValueError as exc:
                console.print(f"{m}: {exc}")
                continue
            paired[m] = p.to_dict()
            console.print(f"{m}: {b} - {a} = {p.diff.estimate:+.3f} "
                          f"[{p.diff.ci_low:+.3f}, {p.diff.ci_high:+.3f}]"
                          f"{' (cut to -1..1)' if p.diff.clipped_to else ''} (raw judge "
                          f"{p.raw_diff:+.3f}), p = {p.p_value:.4f}", highlight=False)
    return paired


def _slice_keys(run: Any, by: str | None, min_n: int, samples: Path | None,
                system: str | None) -> tuple[Any, dict[str, tuple[str, ...]]] | None:
    """The ``--by`` spec and each sample's slice (from ``--samples`` or the run), or
    ``None`` without ``--by``; checked before any work is shown."""
    from ragmeter.errors import ConfigError, UsageError
    from ragmeter.judge_trust.slice_ppi import run_slice_keys

    if by is None:
        if samples is not None:
            raise UsageError("--samples", "gives the fields of the slices: name them with --by")
        return None
    spec = slicing.spec_of(by, min_n)
    assert spec is not None
    read = None
    if samples is not None:
        from ragmeter.data.loaders import load_samples

        read = load_samples(samples).samples
    try:
        return spec, run_slice_keys(run, spec.by, system=system, samples=read)
    except ConfigError as exc:
        msg = (str(exc).partition("': ")[2] or str(exc)).replace("the samples file",
                                                                 "--samples FILE")
        raise UsageError("--by", msg) from None


def _slice_estimates(console: Any, values: Any, labs: Any, system: str | None,
                     spec: Any, keys: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """Judge mean vs bias-corrected estimate per slice (``--by``), printed and returned."""
    from rich.table import Table

    from ragmeter.judge_trust.slice_ppi import slice_ppi_table

    table = slice_ppi_table(values, labs, keys, spec.by, system=system, min_n=spec.min_n)
    t = Table(title=f"bias-corrected (prediction-powered) estimates by {', '.join(spec.by)}",
              caption=f"cells with fewer than {spec.min_n} judge values or "
                      f"{table['min_labels']} labels are withheld", caption_justify="left")
    for col in ("metric", "slice", "n", "labels", "judge mean", "corrected [95% CI]",
                "correction"):
        t.add_column(col)
    for r in table["rows"]:
        if r["withheld"]:
            t.add_row(r["metric"], r["slice"], str(r["n"]), str(r["n_labelled"]), "withheld",
                      "withheld", "-")
            continue
        t.add_row(r["metric"], r["slice"], str(r["n"]), str(r["n_labelled"]),
                  _f(r["judge_mean"]), f"{_f(r['estimate'])} [{_f(r['ci_low'])}, "
                  f"{_f(r['ci_high'])}]", f"{r['correction']:+.3f}")
    console.print(t)
    return table


def _raters(console: Any, card: Any, labs: Any, system: str | None) -> None:
    """Agreement between the labellers, where a metric has several (kept on the card)."""
    from ragmeter.judge_trust.raters import rater_agreement

    for m in labs.metrics:
        agree = rater_agreement(labs, m, system)
        if agree is not None:
            card.meta.setdefault("rater_agreement", {})[m] = agree.to_dict()
            console.print(f"labellers: {agree.line()}", highlight=False)


def card_command(
    run_id: Annotated[str, typer.Argument(help="Run id in the results store (or 'latest').")],
    labels: Annotated[Path, typer.Option("--labels", "-l", help="Human labels file "
                                         "(jsonl/csv: sample_id, metric, label).")],
    store: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--store", help="Results store URL (default: $RAGMETER_STORE_URL or "
                        "./ragmeter-results.sqlite).")] = None,
    system: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--system", help="Which system of the run the labels grade (when it has several).")
    ] = None,
    target_width: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--target-width", help="Say how many labels reach this 95% CI width.")] = None,
    compare_systems: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--compare-systems", help="A,B: bias-corrected difference B - A (labels carry "
                                  "'system').")] = None,
    threshold: Annotated[float, typer.Option("--threshold", help="Good/bad cut on the 0-1 "
                                                                  "scale.")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 42,
    save: Annotated[bool, typer.Option("--save/--no-save", help="Store the card with the "
                                                                "run.")] = True,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", help="Write the card and estimates as JSON here.")] = None,
    by: slicing.ByOpt = None,
    min_n: slicing.MinNOpt = slicing.DEFAULT_MIN_N,
    samples: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--samples", help="Samples file whose fields give the slices (--by); default: the "
                          "slices kept with a run made with --by.")] = None,
    estimator: Annotated[str, typer.Option(
        "--estimator", help="Bias-corrected estimator: classic (PPI), ppi++ (the judge's "
                            "weight tuned; never wider than classic) or stratified (a weight "
                            "per slice: the --by slices, or a stratified selection's).")]
    = "classic",
) -> None:
    """Compare a run's judged metrics with human labels: card + bias-corrected estimates
    (per slice with --by); the estimates name their estimator and effective sample size."""
    from rich.console import Console

    from ragmeter.errors import ConfigError, DataError, RecordProblem
    from ragmeter.judge_trust import checks
    from ragmeter.judge_trust.card import card_from_values
    from ragmeter.judge_trust.labels import load_labels
    from ragmeter.judge_trust.ppi import ppi_estimates
    from ragmeter.judge_trust.runs import judged_values, trust_result
    from ragmeter.results.records import Signature
    from ragmeter.results.store import ResultStore, normalize_url

    checks.check_card_options(threshold, target_width, seed)
    _check_estimator(estimator)
    console = Console()
    labs = load_labels(labels)
    rs = ResultStore(normalize_url(store))
    rid = rs.latest_run_id() if run_id == "latest" else run_id
    if rid is None:
        raise ConfigError("run", "the store holds no runs")
    run = rs.load_run(rid)
    sliced = _slice_keys(run, by, min_n, samples, system)
    values, reasons, sigs = judged_values(run, labs, system=system)
    if not values:
        raise DataError(RecordProblem(str(labels), None, "metric", "no labelled metric "
                                      f"({', '.join(labs.metrics)}) is in run {rid}"))
    held_out = _held_out_examples(values, labs, sigs, system)
    cov = checks.label_coverage(values, labs, system)
    checks.require_matches(cov, values, labs, rid)
    if cov.warning():
        common.err_console().print(f"warning: {cov.warning()}", highlight=False)
    pair = (checks.check_compare_systems(compare_systems, [r.name for x in run.tiers.values()
                                                           for r in x.results], labs.systems())
            if compare_systems else None)
    sig0 = Signature.parse(next(iter(sigs.values())))
    judge = sig0.get("judge") or "judge"
    model = sig0.get("model") or sig0.get("judge_model") or ""
    prompts = sorted({p for s in sigs.values() for p in
                      (Signature.parse(s).get("prompt") or "").split(",") if p})
    card = card_from_values(values, labs, judge=judge, model=model, prompt_versions=prompts,
                            reasons=reasons, system=system, threshold=threshold,
                            dataset=sig0.get("data") or "", seed=seed)
    card.meta["run_id"] = rid
    card.meta["system"] = system
    card.meta["signatures"] = dict(sigs)   # the judged results the card was made on
    if held_out:
        card.meta["examples_held_out"] = held_out
        common.err_console().print(
            "left out as the judge's examples: " + ", ".join(
                f"{m} {n} label(s)" for m, n in held_out.items()), highlight=False)
    console.print(card_table(card))
    _raters(console, card, labs, system)
    chosen = {m: labs.selection(m, system) for m in labs.metrics}
    card.meta["selections"] = {m: x.signature for m, x in chosen.items() if x is not None}
    strata = _estimator_strata(estimator, sliced, chosen)
    try:
        est = ppi_estimates(values, labs, system=system, target_width=target_width,
                            selections=chosen, estimator=estimator, strata=strata)
    except ValueError as exc:
        from ragmeter.errors import UsageError

        raise UsageError("--estimator", str(exc)) from None
    card.meta["estimators"] = {m: {"estimator": e.estimate.estimator, "ess": e.estimate.ess,
                                   "signature": e.estimate.signature}
                               for m, e in est.items()}
    console.print(_ppi_table(est))
    if sliced is not None:
        card.meta["ppi_by_slice"] = _slice_estimates(console, values, labs, system, *sliced)
    paired = _paired_estimates(console, run, labs, pair) if pair else {}
    result = trust_result(card, labs, values, est, system=system)
    if paired:
        result.meta["ppi_paired"] = paired
    _keep(console, rs, rid, result, save, out)


def _keep(console: Any, rs: Any, rid: str, result: Any, save: bool, out: Path | None) -> None:
    """The card stored with the run (``--save``) and written as JSON (``--out``)."""
    from ragmeter.judge_trust.runs import attach_to_run

    if save:
        attach_to_run(rs, rid, result)
        console.print(f"card stored with run {rid} (tier judge_trust)")
    if out is not None:
        from ragmeter.results.jsonout import dumps as strict_json

        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(strict_json(result.meta, indent=1), encoding="utf-8")
        console.print(f"wrote {out}")


def _held_out_examples(values: dict[str, Any], labs: Any, sigs: dict[str, str],
                       system: str | None) -> dict[str, int]:
    """Drop the items used as the judge's graded examples from the judged values (their
    labels are already out of ``labs.values``); refuse a run whose prompt carried examples
    the labels file does not record. Metric → examples left out."""
    from ragmeter.judge_trust.examples import check_shots

    check_shots(sigs, labs)
    out: dict[str, int] = {}
    for m in list(values):
        ex = labs.examples(m, system)
        if ex:
            values[m] = {s: v for s, v in values[m].items() if s not in ex}
            out[m] = len(ex)
    return out


def _check_estimator(estimator: str) -> None:
    from ragmeter.stats.ppi_estimators import ESTIMATORS

    if estimator not in ESTIMATORS:
        from ragmeter.errors import UsageError

        raise UsageError("--estimator", f"unknown estimator {estimator!r}", list(ESTIMATORS))


def _estimator_strata(estimator: str, sliced: Any, chosen: dict[str, Any]
                      ) -> dict[str, str] | None:
    """Each sample's stratum for ``--estimator stratified``: the ``--by`` slices, else
    ``None`` (the labels' stratified selection brings its own); an error when neither."""
    if estimator != "stratified":
        return None
    if sliced is not None:
        return {sid: " / ".join(k) for sid, k in sliced[1].items()}
    if any(x is not None and x.stratum_of() for x in chosen.values()):
        return None
    from ragmeter.errors import UsageError

    raise UsageError("--estimator", "stratified needs slices: name them with --by (e.g. "
                                    "--by type), or label with --select stratified")


def register(app: typer.Typer) -> None:
    judge = group(app, "judge")
    judge.command("bench")(bench_command)
    judge.command("card")(card_command)
