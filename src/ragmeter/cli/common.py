"""Options and output helpers shared by every subcommand (one home for the CLI conventions).

* Global flags ``--debug``, ``-v/--verbose``, ``-q/--quiet`` and ``--json`` work before or after
  the subcommand (``cli/app.py`` moves them to the root); commands read them with :func:`state`.
* ``--json``: the machine-readable result is the only thing on stdout (:func:`emit_json`); the
  human output goes to stderr (:func:`human_console`).
* ``--out -`` writes to stdout (:func:`write_text_out`).
* The judge options are one group, declared once in :mod:`ragmeter.cli.judge_options`.
* :func:`check_scored` turns "a requested metric scored no sample" and ``--max-unscored`` into
  :class:`~ragmeter.errors.WorkFailedError` (exit 3).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.segment import Segment

from ragmeter.controls import escape_controls
from ragmeter.data.formats import FORMATS
from ragmeter.errors import UsageError, WorkFailedError
from ragmeter.secrets import mask

_step_log = logging.getLogger("ragmeter.cli")

#: width of plain (non-terminal) output: wide enough that no identifier is cut
PLAIN_WIDTH = 240


@dataclass
class CliState:
    """Global flags of one invocation."""

    debug: bool = False
    verbose: int = 0
    quiet: bool = False
    json: bool = False
    #: stdout carries a document (``--out -``): human output goes to stderr
    stdout_reserved: bool = False


_STATE = CliState()


def state() -> CliState:
    """The global flags of the running command."""
    return _STATE


def reset_state(**values: Any) -> CliState:
    """Start a new invocation (``main`` calls it once per run, tests in-process too)."""
    global _STATE
    _STATE = CliState(**values)
    return _STATE


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg,unused-ignore]
    """Writes to the ``sys.stderr`` of the moment (tests and ``--json`` keep stdout clean)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))   # a file name or id may hold ESC


_LOG_HANDLER: logging.Handler | None = None


def setup_logging(verbose: int) -> None:
    """``-v``: ragmeter's main steps (files read, datasets, tiers, metrics) with their times on
    stderr; ``-vv``: also per batch and per judge call. Secrets are masked. No ``-v``: only
    warnings from ragmeter's loggers reach stderr (through Python's default handling)."""
    global _LOG_HANDLER
    logger = logging.getLogger("ragmeter")
    if _LOG_HANDLER is not None:
        logger.removeHandler(_LOG_HANDLER)
        _LOG_HANDLER = None
    if verbose <= 0:
        logger.setLevel(logging.NOTSET)
        return
    from ragmeter.secrets import MaskingFilter, install_log_masking

    install_log_masking()
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(relativeCreated)8.0f ms %(levelname)s "
                                           "%(name)s: %(message)s"))
    handler.addFilter(MaskingFilter())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    _LOG_HANDLER = handler


class PlainConsole(Console):
    """A console that never cuts a table's words when it does not write to a terminal: a table
    whose identifiers and headers do not fit is printed wider, so that none is cut with "…"
    (piped output is read by programs and people scrolling, not by an 80-column window).

    Control characters in what it prints (a sample's ``ESC [ 2 J``, a bidi override) are
    written as visible escapes (:func:`ragmeter.controls.escape_controls`): only the console's
    own styles and cursor moves reach the terminal as control sequences."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            seg if seg.control else Segment(escape_controls(seg.text), seg.style)
            for seg in buffer)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal and objects:
            from rich.measure import Measurement
            from rich.table import Table

            unbounded = self.options.update_width(100_000)
            # the minimum width keeps every word (id, header) whole; prose still wraps
            need = max((Measurement.get(self, unbounded, o).minimum
                        for o in objects if isinstance(o, Table)), default=0)
            if need > self.width:
                old = self.width
                self.width = need
                try:
                    super().print(*objects, **kwargs)
                finally:
                    self.width = old
                return
        super().print(*objects, **kwargs)


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", lambda: False)()
    width = None if isatty or os.environ.get("COLUMNS") else PLAIN_WIDTH
    return PlainConsole(stderr=stderr, width=width, file=stream, soft_wrap=not isatty)


def human_console() -> Console:
    """Where tables and messages go: stdout, or stderr under ``--json`` (stdout stays JSON)."""
    return _console(stderr=_STATE.json or _STATE.stdout_reserved)


def err_console() -> Console:
    """stderr (progress, warnings)."""
    return _console(stderr=True)


def emit_json(obj: Any) -> None:
    """Print one JSON document on stdout (a dict, list, or an object with ``to_json()``)."""
    to_json = getattr(obj, "to_json", None)
    text = to_json() if callable(to_json) else json.dumps(obj, ensure_ascii=False, indent=1,
                                                          default=str)
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def is_stdout(out: Path | str | None) -> bool:
    """``--out -``: the document goes to stdout."""
    return out is not None and str(out) == "-"


@contextlib.contextmanager
def writing_out(path: Path | str) -> Iterator[Path]:
    """Create the parent folders of an output file and turn any failure to write it (missing
    or read-only folder, no permission, disk full) into exit 3 naming the file — the one rule
    for every command's ``--out``."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        yield p
    except OSError as exc:
        raise WorkFailedError(f"cannot write {p}: {exc.strerror or exc}") from None


def write_text_out(text: str, out: Path | str | None, console: Console | None = None) -> None:
    """Write ``text`` to ``out``; ``-`` means stdout. Creates parent folders; a file that cannot
    be written is a work failure (exit 3)."""
    if out is None:
        return
    if is_stdout(out):
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()
        return
    with writing_out(out) as p:
        p.write_text(text, encoding="utf-8")
    if console is not None and not _STATE.quiet:
        console.print(f"wrote {p}", highlight=False, markup=False)


def finish_result(result: Any, out: Path | str | None, console: Console) -> None:
    """``--out FILE|-`` and ``--json`` for a result object with ``to_json()``."""
    if out is not None:
        write_text_out(result.to_json(), out, console)
    if _STATE.json and str(out) != "-":
        emit_json(result)


#: the unscored reason of a sample a metric does not apply to (``over_refusal`` on an
#: unanswerable question): a property of the data, never counted as lost work
NOT_APPLICABLE = "not_applicable:"


def check_scored(results: Iterable[Any], max_unscored: float | None = None) -> list[str]:
    """Exit-3 rules on metric results (objects with ``name``/``aggregate``).

    A requested metric with zero scored samples out of at least one is a failure (one that
    ragmeter added on its own, marked in its counts, only warns; one that applies to no sample
    of the data, ``not_applicable:*``, only warns); with ``max_unscored``, so is an unscored
    fraction above it, samples the metric does not apply to left out. Returns warning lines
    for partial unscoring (exit stays 0).
    """
    from ragmeter.results.records import IMPLICIT_COUNT

    failures: list[str] = []
    warnings: list[str] = []
    for r in results:
        a = getattr(r, "aggregate", None)
        if a is None:
            continue
        total = a.n + a.n_unscored
        if total == 0:
            continue
        name = getattr(r, "metric", None) or getattr(r, "name", "?")
        reasons = ", ".join(f"{k}×{v}" for k, v in sorted(a.unscored_by_reason.items()))
        by_reason = a.unscored_by_reason
        not_applicable = sum(v for k, v in by_reason.items() if k.startswith(NOT_APPLICABLE))
        if a.n == 0 and (getattr(r, "counts", None) or {}).get(IMPLICIT_COUNT):
            warnings.append(f"{name}: no sample scored ({a.n_unscored} unscored: {reasons}); "
                            "reported because the data has such samples, not requested")
        elif a.n == 0 and not_applicable == a.n_unscored:
            warnings.append(f"{name}: no sample it applies to ({reasons}); nothing to measure "
                            "in this data")
        elif a.n == 0:
            from ragmeter.results.unscored import describe_unscored

            failures.append(f"{name}: no sample scored ({a.n_unscored} unscored: "
                            f"{describe_unscored(a.unscored_by_reason)})")
        elif a.n_unscored > not_applicable:
            frac = (a.n_unscored - not_applicable) / (total - not_applicable)
            line = (f"{name}: {a.n_unscored - not_applicable} of {total - not_applicable} "
                    f"unscored ({frac:.1%}; {reasons})")
            if max_unscored is not None and frac > max_unscored:
                failures.append(line + f" > --max-unscored {max_unscored:g}")
            else:
                warnings.append(line)
    if failures:
        raise WorkFailedError("the work failed:\n  " + "\n  ".join(failures))
    return warnings


def parse_fraction(value: float | None, option: str = "--max-unscored") -> float | None:
    if value is None:
        return None
    if not 0.0 <= value <= 1.0:
        raise UsageError(option, f"must be a fraction between 0 and 1, got {value:g}")
    return value


def results_of(result: Any) -> list[Any]:
    """Metric results of an ``EvalResult`` (iterable) or a mapping of them."""
    if isinstance(result, Mapping):
        out: list[Any] = []
        for v in result.values():
            out.extend(results_of(v))
        return out
    if hasattr(result, "results") and isinstance(result.results, Mapping):
        return list(result.results.values())
    return list(result)


# --------------------------------------------------------------------------- shared options
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print the result as JSON on stdout (nothing else there).")]
OutOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045 - typer needs Optional
    "--out", "-o", help="Write the result as JSON to this file ('-' = stdout).")]
MaxUnscoredOpt = Annotated[Optional[float], typer.Option(  # noqa: UP045
    "--max-unscored", help="Fail (exit 3) when a metric's unscored fraction exceeds this "
                           "(0-1). Default: only a metric with no scored sample fails.")]
def _check_format(value: str) -> str:
    """``--format``: the data layer names a bad layout as config key ``format``; the command
    line names its option."""
    if value not in FORMATS:
        raise UsageError("--format", f"unknown format {value!r}", FORMATS.names())
    return value


FormatOpt = Annotated[str, typer.Option(
    "--format", callback=_check_format, help="Layout of the samples file: auto (by content), "
                     + ", ".join(f for f in FORMATS.names() if f != "auto") + ".")]
MapOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--map", help="Column map TARGET=SOURCE for renamed columns, e.g. user_input=prompt "
                  "(repeatable or comma-separated).")]
#: cost control, one spelling on every command that calls a model (see ragmeter.cost)
EstimateOpt = Annotated[bool, typer.Option(
    "--estimate", help="Print planned calls, tokens, cost and time; send nothing, store "
                       "nothing.")]
MaxCostOpt = Annotated[Optional[float], typer.Option(  # noqa: UP045
    "--max-cost", help="Stop (resumable) before the calls would spend more than this "
                       "(price table units; needs prices).")]
MaxCallsOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--max-calls", help="Stop (resumable) before more than N model calls.")]
#: old spellings of options -> the one spelling (applied where the command has the new one)
OPTION_ALIASES = {"--base-url": "--judge-url", "--model": "--judge-model",
                  "--api-key-env": "--judge-key-env", "--concurrency": "--judge-concurrency",
                  "--timeout": "--judge-timeout", "--repeats": "--n-repeats"}


def check_judge_reachable(cfg: Any) -> None:
    """Send one tiny request; raise a usage error (exit 2) naming the endpoint if it fails
    (``--check-judge``)."""
    if cfg is None or getattr(cfg, "backend", "") != "openai":
        return
    import urllib.error
    import urllib.request

    url = str(cfg.base_url).rstrip("/") + "/models"
    headers = dict(cfg.headers()) if hasattr(cfg, "headers") else {}
    status = 200
    try:
        req = urllib.request.Request(url, headers=headers, method="GET")
        with urllib.request.urlopen(req, timeout=min(10.0, cfg.timeout_s)):
            pass
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError("--judge-url", f"judge endpoint {mask(str(cfg.base_url))} not reachable: "
                          f"{type(exc).__name__}: {mask(str(reason))}") from None
    if status in (401, 403):
        raise UsageError("--judge-key-env", f"judge endpoint refused the key "
                          f"(HTTP {status})")
    if status >= 500:
        raise UsageError("--judge-url", f"judge endpoint answers HTTP {status}")


class PlainProgress:
    """Periodic plain progress lines on stderr when it is not a terminal (CI logs), where a live
    progress bar would print nothing until the end. Feed it the runner's ``hook`` events.

    While a tier runs, a line comes at least every ``interval_s`` (at most 30 s) even when no
    batch finishes — a slow local judge on one sample says it is still working."""

    #: the longest silence while a tier runs, seconds
    HEARTBEAT_MAX_S = 30.0

    def __init__(self, console: Console | None = None, interval_s: float | None = None):
        import threading
        import time

        self.console = console or err_console()
        self.interval_s = interval_s if interval_s is not None else float(
            os.environ.get("RAGMETER_PROGRESS_INTERVAL", "10"))
        self._clock = time.monotonic
        self._last = 0.0
        self.done: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self._running: dict[str, float] = {}   # tier -> when it started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _heartbeat(self) -> None:
        every = min(self.interval_s, self.HEARTBEAT_MAX_S)
        while not self._stop.wait(min(1.0, max(every / 4, 0.01))):
            with self._lock:
                running = dict(self._running)
                due = running and self._clock() - self._last >= every
            if due:
                tier, since = next(reversed(running.items()))
                self._line(tier, f" · still working ({self._clock() - since:.0f} s in this "
                                 "tier)")

    def close(self) -> None:
        """Stop the heartbeat (at the end of the run)."""
        self._stop.set()

    @staticmethod
    def wanted() -> bool:
        """Plain lines are wanted when stderr is not a terminal and ``--quiet`` is off."""
        return not _STATE.quiet and not getattr(sys.stderr, "isatty", lambda: False)()

    def _line(self, tier: str, suffix: str = "") -> None:
        total = self.total.get(tier, 0)
        done = self.done.get(tier, 0)
        pct = f" ({done / total:.0%})" if total else ""
        self.console.print(f"progress: {tier} {done}/{total}{pct}{suffix}", highlight=False,
                           markup=False)
        self._last = self._clock()

    def hook(self, tier: str, event: str, info: Mapping[str, Any]) -> None:
        import threading

        if event == "start":
            self.total[tier] = int(info.get("total", 1) or 1)
            self.done[tier] = int(info.get("done", 0) or 0)
            with self._lock:
                self._running[tier] = self._clock()
            self._line(tier, " started")
            if self._beat is None:
                self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                              name="ragmeter-progress")
                self._beat.start()
        elif event == "advance":
            self.done[tier] = self.done.get(tier, 0) + int(info.get("n", 1) or 1)
            if self._clock() - self._last >= self.interval_s:
                self._line(tier)
        elif event in ("end", "skipped_done"):
            with self._lock:
                self._running.pop(tier, None)


@contextlib.contextmanager
def working(message: str) -> Iterator[None]:
    """Progress for a long step without per-item events: a spinner on a terminal; on a
    non-terminal stderr a start line, a "still working" line every interval, and the time taken.
    Silent under ``--quiet`` (stdout is never used, so ``--json`` output stays clean)."""
    import threading
    import time

    if _STATE.quiet:
        yield
        return
    console = err_console()
    if getattr(sys.stderr, "isatty", lambda: False)():
        t0 = time.monotonic()
        with console.status(message):
            yield
        _step_log.info("%s: done in %.2f s", message, time.monotonic() - t0)
        return
    interval = float(os.environ.get("RAGMETER_PROGRESS_INTERVAL", "10"))
    t0 = time.monotonic()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            console.print(f"progress: {message} still working ({time.monotonic() - t0:.0f} s)",
                          highlight=False, markup=False)

    console.print(f"progress: {message}", highlight=False, markup=False)
    _step_log.info("%s: started", message)
    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    finished = False
    try:
        yield
        finished = True
    finally:
        stop.set()
        thread.join(timeout=1)
        end = "done in" if finished else "stopped after"  # never "done" before an error
        console.print(f"progress: {message} {end} {time.monotonic() - t0:.1f} s",
                      highlight=False, markup=False)
        _step_log.info("%s: %s %.2f s", message, end, time.monotonic() - t0)
