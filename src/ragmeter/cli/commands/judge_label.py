"""``ragmeter label RUN``: people label a run's judged samples, blind, into the labels
file ``ragmeter judge card`` reads — on a local page (served like ``ragmeter view``) or in
the terminal (``--terminal``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.cli import common

SELECT_MODES = ("uniform", "stratified", "active")


def _check(seed: int, threshold: float, target_width: float | None, n: int | None) -> None:
    from ragmeter.judge_trust.checks import check_card_options

    check_card_options(threshold, target_width, seed)
    if n is not None and n < 1:
        from ragmeter.errors import UsageError

        raise UsageError("--n", f"must be at least 1, got {n}")


def _strata(run: Any, by: str, system: str | None) -> dict[str, str]:
    """Each sample's slice over ``--by`` (the slices a run made with ``--by`` keeps, else the
    stored samples' fields), as one text."""
    from ragmeter.cli import slicing
    from ragmeter.data.sample import Sample
    from ragmeter.errors import ConfigError, UsageError
    from ragmeter.judge_trust.slice_ppi import run_slice_keys
    from ragmeter.results.slices import slice_keys

    spec = slicing.spec_of(by, 1)
    assert spec is not None
    try:
        keys = run_slice_keys(run, spec.by, system=system)
    except ConfigError:
        known = set(Sample.__dataclass_fields__)
        samples = [Sample(**{k: v for k, v in d.items() if k in known})
                   for d in run.samples.values() if "id" in d]
        try:
            keys = slice_keys(samples, spec.by)
        except ConfigError as exc:
            raise UsageError("--by", str(exc).partition("': ")[2] or str(exc)) from None
    return {sid: " / ".join(k) for sid, k in keys.items()}


def _maker(run: Any, rt: Any, *, n: int | None, seed: int, by: str | None,
           system: str | None, threshold: float, target_width: float | None,
           say: Callable[[str], None]) -> Callable[[str, Any], Any]:
    """``make(mode, pilot)`` for :func:`open_session`: draws the selection when needed."""
    from ragmeter.errors import UsageError
    from ragmeter.judge_trust.labelling import DEFAULT_N, choose, plan_labels
    from ragmeter.judge_trust.uncertainty import judge_uncertainty

    def make(mode: str, pilot: Any) -> Any:
        goal = n
        if goal is None and target_width is not None and mode != "uniform":
            goal = plan_labels(None, rt.task, rt.values, None, target_width)["needed"]
        strata = uncertainty = None
        if mode == "stratified":
            if by is None:
                raise UsageError("--by", "--select stratified spreads the labels over slices: "
                                         "name the field(s) with --by (e.g. --by type)")
            strata = _strata(run, by, system)
        if mode == "active":
            uncertainty, used = judge_uncertainty(rt.values, rt.details, threshold)
            say("judge uncertainty from " + ", ".join(f"{k} {v}" for k, v in used.items()
                                                      if v)
                + ("" if used["logprobs"] else " (no token probabilities kept: a judge config "
                   "with 'logprobs: true' on a server that returns them adds them)"))
        return choose(mode, rt.values, n=goal or (None if mode == "uniform" else DEFAULT_N),
                      seed=seed, strata=strata, uncertainty=uncertainty, pilot=pilot)
    return make


def _read_key() -> str:
    """One key from the terminal (a line from a pipe; ``q`` at its end)."""
    if sys.stdin.isatty():
        import click

        ch = click.getchar()
        return {"\x1b[D": "b", "\x1b[C": "f", "\x7f": "b", "\x03": "q", "\x04": "q"}.get(ch, ch)
    line = sys.stdin.readline()
    return line.strip()[:1] if line else "q"


def terminal(session: Any, rater: str, lang: str, echo: Callable[[str], None],
             read_key: Callable[[], str] = _read_key) -> None:
    """The terminal fallback: the same session, one item at a time, keys as on the page
    (``q`` stops; every answer is saved before the next item shows)."""
    from ragmeter.controls import escape_controls
    from ragmeter.reports.i18n import t

    task = session.task
    grades = (1, 0) if task.scale == "binary" else task.grades
    names = ({1: t("lb_yes", lang), 0: t("lb_no", lang)} if task.scale == "binary"
             else {g: t(f"lb_g{g}", lang) for g in grades})
    keys = "  ".join(f"[{g}] {names[g]}" for g in grades) + \
        f"  [s] {t('lb_skip', lang)}  [b] {t('lb_back', lang)}  [q] quit"
    i = session.resume_index(rater)
    while True:
        v = session.view(rater, i)
        if v.get("finished"):
            echo(t("lb_finished", lang))
            return
        item = v["item"]
        echo("")
        echo(f"— {t('lb_progress', lang, i=v['index'] + 1, n=v['total'], done=v['labelled'])}"
             f" · {item['sample_id']}")
        for field in task.fields:
            title = t(f"lb_{field}", lang)
            if field == "contexts":
                echo(f"{title}:")
                for k, c in enumerate(item.get("contexts") or [], 1):
                    echo(f"  [{k}] {escape_controls(c)}")
            else:
                value = item.get(field)
                echo(f"{title}: {escape_controls(value) if value else t('lb_none', lang)}")
        if v.get("label") is not None:
            echo(t("lb_your_label", lang, label=v["label"]))
        echo(keys)
        key = read_key()
        if key == "q":
            return
        if key in {str(g) for g in task.grades}:
            out = session.label(rater, i, item["sample_id"], int(key))
            echo(t("lb_saved", lang))
            i = out["index"]
        elif key == "s":
            i = session.skip(rater, i, item["sample_id"])["index"]
        elif key == "b":
            i = max(0, i - 1)
        elif key == "f":
            i = min(v["total"], i + 1)


def _summary(session: Any, echo: Callable[[str], None]) -> None:
    info = session.summary()
    per = ", ".join(f"{r or '(no id)'} {k}" for r, k in sorted(info["labels"].items()))
    echo(f"labels in {info['labels_file']}: {per or 'none yet'} ({info['chosen']} chosen, "
         f"{info['selection']})")
    if "agreement_line" in info:
        echo(f"labellers: {info['agreement_line']}")
    plan = info.get("plan")
    if plan is not None:
        echo(_plan_line(plan))


def _plan_line(plan: dict[str, Any]) -> str:
    if plan["more"] is None:
        return f"target 95% CI width {plan['width']:g}: {plan['how']}"
    now = "" if plan["now"] is None else f" (now {plan['now']:.3f})"
    return (f"target 95% CI width {plan['width']:g}{now}: about {plan['more']} more label(s), "
            f"{plan['needed']} in all ({plan['how']})")


def label_command(
    run_id: Annotated[str, typer.Argument(help="Run id in the results store (or 'latest').")],
    labels: Annotated[Path, typer.Option(
        "--labels", "-l", help="The labels file to write (JSON Lines); an existing one is "
                               "resumed.")],
    metric: Annotated[str, typer.Option(
        "--metric", "-m", help="The judged metric to label (e.g. faithfulness).")],
    rater: Annotated[Optional[str], typer.Option(  # noqa: UP045 - typer needs it
        "--rater", help="Your labeller id (default: your user name); each labeller's labels "
                        "are kept apart and their agreement reported.")] = None,
    system: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--system", help="Which system's answers to label (when the run has several).")] = None,
    select: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--select", help="Which items to label: uniform (all, in a random order; stop any "
                         "time), stratified (Neyman allocation over --by slices) or active "
                         "(more often where the judge was unsure). Default: uniform, or the "
                         "file's own.")] = None,
    n: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--n", "-n", help="Labels to aim for (stratified, active; default from "
                          "--target-width, else 100).")] = None,
    by: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--by", help="Slices to stratify by (a sample field or metadata key; comma-separated "
                     "for several).")] = None,
    target_width: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--target-width", help="Say how many more labels bring the bias-corrected 95% CI to "
                               "this full width (half-width W/2), as `judge card` does.")] = None,
    threshold: Annotated[float, typer.Option(
        "--threshold", help="Good/bad cut on the 0-1 scale (active: how close a judge value "
                            "is to it).")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the selection and its "
                                                     "order.")] = 42,
    terminal_mode: Annotated[bool, typer.Option(
        "--terminal", help="Label in this terminal instead of the local page.")] = False,
    store: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--store", help="Results store URL (default: $RAGMETER_STORE_URL or "
                        "./ragmeter-results.sqlite).")] = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address of the page; the default serves this machine only.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="TCP port of the page (0 = any free port).")] = 8766,
    lang: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--lang", help="ru | en (default: the language of the questions).")] = None,
) -> None:
    """Label a run's judged samples blind (the judge's verdict hidden), one at a time, into a
    labels file for `judge card`; the items come from a seeded selection whose inclusion
    probabilities are kept in the file.

    Examples:

      ragmeter label RUN --labels labels.jsonl --metric faithfulness

      ragmeter label RUN --labels l.jsonl -m answer_relevance --select active -n 60

      ragmeter label RUN --labels l.jsonl -m faithfulness --terminal --rater anna
    """
    import getpass

    from ragmeter.errors import ConfigError
    from ragmeter.judge_trust.labelling import check_rater, open_session, run_task
    from ragmeter.reports.i18n import check_lang
    from ragmeter.results.store import ResultStore

    if select is not None and select not in SELECT_MODES:
        from ragmeter.errors import UsageError

        raise UsageError("--select", f"unknown selection {select!r}", list(SELECT_MODES))
    _check(seed, threshold, target_width, n)
    if lang is not None:
        check_lang(lang)
    who = check_rater(rater if rater is not None else _user(getpass.getuser))
    rs, _note = ResultStore.open_readonly(store)
    rid = rs.latest_run_id() if run_id == "latest" else run_id
    if rid is None:
        raise ConfigError("run", "the store holds no runs")
    run = rs.load_run(rid)
    rt = run_task(run, metric, system)

    def say(text: str) -> None:
        common.err_console().print(text, highlight=False, markup=False)

    make = _maker(run, rt, n=n, seed=seed, by=by, system=system, threshold=threshold,
                  target_width=target_width, say=say)
    session = open_session(labels, rt.task, rt.items, rt.values, mode=select, make=make,
                           target_width=target_width, default_rater=who)
    try:
        for note in session.notes:
            say(note)
        say(f"{len(session.order)} of {len(rt.values)} judged samples chosen to label "
            f"({metric}, run {rid}); the judge's verdicts stay hidden")
        plan = session.plan()
        if plan is not None:
            say(_plan_line(plan))
        shown = lang or _lang(rt)
        if terminal_mode:
            terminal(session, who, shown, typer.echo)
        else:
            from urllib.parse import quote

            from ragmeter.cli.commands.view import free_port
            from ragmeter.view import serve

            if port == 0:
                port = free_port(host)
            serve(store, host=host, port=port, lang=shown, print_fn=typer.echo,
                  labelling=session, path=f"/label?rater={quote(who)}")
        _summary(session, say)
    finally:
        session.close()


def examples_command(
    run_id: Annotated[str, typer.Argument(help="Run id the labels were made on (or "
                                                "'latest').")],
    labels: Annotated[Path, typer.Option("--labels", "-l", help="The labels file (of "
                                         "`ragmeter label`); the examples are recorded in it.")],
    metric: Annotated[str, typer.Option("--metric", "-m", help="The judged metric.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The examples file to write (name "
                                                          "it in the judge config: "
                                                          "'examples: FILE').")],
    k: Annotated[int, typer.Option("-k", help="How many labelled items to show the judge.")]
    = 4,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random draw.")] = 42,
    system: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--system", help="Which system's answers (when the run has several).")] = None,
    store: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--store", help="Results store URL (default: $RAGMETER_STORE_URL or "
                        "./ragmeter-results.sqlite).")] = None,
) -> None:
    """Harvest k labelled items, drawn at random, as graded examples for the judge's prompt;
    `judge card` leaves them out of agreement and of the bias-corrected estimate.

    Example:

      ragmeter judge examples RUN -l labels.jsonl -m faithfulness -k 4 -o shots.jsonl
    """
    from ragmeter.errors import ConfigError
    from ragmeter.judge_trust.examples import harvest, record
    from ragmeter.judge_trust.labelling import run_task
    from ragmeter.judge_trust.labels import load_labels
    from ragmeter.judges.fewshot import write_shots
    from ragmeter.results.store import ResultStore

    labs = load_labels(labels)
    rs, _note = ResultStore.open_readonly(store)
    rid = rs.latest_run_id() if run_id == "latest" else run_id
    if rid is None:
        raise ConfigError("run", "the store holds no runs")
    rt = run_task(rs.load_run(rid), metric, system)
    shots = harvest(labs, rt.task.metric, rt.items, k, seed, system)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_shots(out, shots)
    record(labels, shots, system)
    left = len(labs.values(rt.task.metric, system)) - k
    typer.echo(f"{k} labelled items of {shots.metric} written to {out} as the judge's examples "
               f"(shots {shots.digest}); {labels} records them: `judge card` leaves them out "
               f"and grades the judge on the other {left} label(s). Name the file in the judge "
               f"config: examples: {out}")


def _user(getuser: Callable[[], str]) -> str:
    import re

    try:
        name = re.sub(r"[^\w.@+-]", "_", getuser())[:64]
    except Exception:   # no user name in this environment (a container without one)
        name = ""
    return name or "labeller"


def _lang(rt: Any) -> str:
    from ragmeter.text import detect_language

    texts = [x.question or x.answer or "" for x in list(rt.items.values())[:50]]
    return detect_language([x for x in texts if x] or ["labelling"])


def register(app: typer.Typer) -> None:
    from ragmeter.cli.lazy import group

    judge = group(app, "judge")
    judge.command("examples")(examples_command)
    app.command("label")(label_command)   # people's labels: a top-level step of its own
