"""The ``ragmeter`` command: a thin layer over the Python API, one module per subcommand.

Every module in :mod:`ragmeter.cli.commands` defines ``register(app)``; :mod:`ragmeter.cli.lazy`
knows which module defines which command, so an invocation imports only its command's module
(``ragmeter --help`` and :data:`app` hold them all). This file owns the one exit-code contract (README "Exit codes"):

====  ==================================================================================
0     success (partial unscoring is reported, not a failure, unless ``--max-unscored``)
1     a quality gate or regression check failed
2     usage, input or config error: one message naming the file, line, field, option or key
3     the work failed: a tier errored, a requested metric scored no sample, the store or an
      output could not be written (the full reason is printed)
4     internal error (a bug): one line, ``--debug`` shows the traceback
130   interrupted (Ctrl-C)
====  ==================================================================================

Commands raise :mod:`ragmeter.errors` exceptions; only :func:`main` turns them into exit codes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import typer
from rich.markup import escape

from ragmeter._version import __version__
from ragmeter.cli import common, completion, lazy, names, quick_params
from ragmeter.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    EXIT_WORK,
    ConfigError,
    RagmeterError,
    UsageError,
)
from ragmeter.secrets import mask

try:  # typer >= 0.29 vendors click as typer._click and no longer installs click
    from typer._click import exceptions as _click_exc
except ImportError:  # pragma: no cover - older typer with click installed
    from click import exceptions as _click_exc  # type: ignore[no-redef]

class RagmeterGroup(typer.core.TyperGroup):
    """The root group: every invocation (``main``, ``CliRunner``) starts with fresh global flags,
    global flags are moved to the root and old judge-option spellings are rewritten."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        common.reset_state(debug="--debug" in args or os.environ.get("RAGMETER_DEBUG") == "1",
                           stdout_reserved=_out_is_stdout(args))
        return super().parse_args(ctx, normalize_argv(renamed_argv(args), self))

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands in the order of :data:`ragmeter.cli.names.ORDER` (``--help``)."""
        rank = {name: i for i, name in enumerate(names.ORDER)}
        return sorted(super().list_commands(ctx), key=lambda n: (rank.get(n, len(rank)), n))


#: the root: its options and help, no command (see :func:`full_app` and :data:`app`)
_ROOT = typer.Typer(
    name="ragmeter",
    cls=RagmeterGroup,
    help="Measure RAG systems: retrieval, generation, judge reliability and user experience.\n\n"
         "Exit codes: 0 ok; 1 quality gate or regression failed; 2 usage, input or config "
         "error; 3 the work failed (tier errored, metric with no scored sample, store not "
         "written); 4 internal error (rerun with --debug).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,
)

#: flags every command accepts before or after the subcommand name
GLOBAL_FLAGS = {"--debug": "debug", "--verbose": "verbose", "-v": "verbose",
                "--quiet": "quiet", "-q": "quiet", "--json": "json",
                "--pseudonymise": "pseudonymise"}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragmeter {__version__}")
        raise typer.Exit()


@_ROOT.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of internal errors."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="Log the main steps "
                                "(files read, datasets, tiers, metrics) with their times on "
                                "stderr; -vv adds per-batch times and judge retries."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress, only results and "
                                                             "errors."),
    json_: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
    pseudonymise: bool = typer.Option(
        False, "--pseudonymise", help="Replace personal data (names, phones, СНИЛС, ИНН…) by "
        "consistent tokens in every judge request (needs ragmeter\\[privacy] for names); the "
        "token map goes only to $RAGMETER_PSEUDONYMISE_MAP when set."),
) -> None:
    """ragmeter command line."""
    if pseudonymise or "ragmeter.privacy.judge" in sys.modules:  # else nothing to switch off:
        from ragmeter.privacy.judge import activate  # (it pulls in the judge engine)

        activate(pseudonymise, os.environ.get("RAGMETER_PSEUDONYMISE_MAP") or None)
    st = common.state()
    st.debug = st.debug or debug
    st.verbose = max(st.verbose, verbose)
    st.quiet = st.quiet or quiet
    st.json = st.json or json_
    common.setup_logging(st.verbose)


_APP: typer.Typer | None = None
_COMMAND: Any = None
_SUBSETS: dict[tuple[str, ...], Any] = {}


def full_app() -> typer.Typer:
    """The whole command line: every command module imported and registered (cached)."""
    global _APP
    if _APP is None:
        _APP = lazy.assemble(_ROOT, lazy.discovered_modules())
    return _APP


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from ragmeter.cli.app import app``: the whole command line
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def click_command() -> Any:
    """The click command tree typer builds from :func:`full_app` (cached)."""
    global _COMMAND
    if _COMMAND is None:
        _COMMAND = typer.main.get_command(full_app())
        _range_seeds(_COMMAND)
        quick_params.install(_COMMAND)
    return _COMMAND


def command_for(args: Sequence[str]) -> Any:
    """The click tree :func:`run` needs for ``args``: only the invoked command's modules when
    the arguments before it are global flags (so ``--help``/``--version`` and unknown names get
    the whole tree; a group's name alone gets the group's modules), else
    :func:`click_command`. An old command name stands for its new one."""
    modules = lazy.modules_for(names.command_words(args)[1])
    if modules is None:
        return click_command()
    if modules not in _SUBSETS:
        cmd = typer.main.get_command(lazy.assemble(_ROOT, modules))
        _range_seeds(cmd)
        quick_params.install(cmd)
        _SUBSETS[modules] = cmd
    return _SUBSETS[modules]


def _range_seeds(cmd: Any) -> None:
    """Every ``--seed`` option takes 0 … 2**32 - 1 (a usage error naming it, not a crash deep
    in numpy or the store)."""
    for p in getattr(cmd, "params", []):
        if "--seed" in getattr(p, "opts", ()):
            p.callback = _seed_checked(p.callback)
    for sub in getattr(cmd, "commands", {}).values():
        _range_seeds(sub)


def _seed_checked(inner: Callable[..., Any] | None) -> Callable[..., Any]:
    def check(ctx: Any, param: Any, value: Any) -> Any:
        from ragmeter.seeds import check_seed

        if value is not None:
            try:
                check_seed(value)
            except RagmeterError as exc:
                raise UsageError("--seed", str(exc).split(": ", 1)[1]) from None
        return inner(ctx, param, value) if inner is not None else value
    return check


def renamed_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with an old command name replaced by its new words (``retrieval`` -> ``score
    retrieval``), the one-line notice printed on stderr; other arguments unchanged."""
    args = list(argv)
    pos, _ = names.command_words(args)
    if pos < len(args) and args[pos] in names.RENAMED:
        old = args[pos]
        sys.stderr.write(names.deprecation(old) + "\n")
        args[pos:pos + 1] = names.RENAMED[old]
    return args


def _declared(cmd: Any) -> set[str]:
    names: set[str] = set()
    for p in getattr(cmd, "params", []):
        names.update(getattr(p, "opts", []))
        names.update(getattr(p, "secondary_opts", []))
    return names


def normalize_argv(argv: Sequence[str], group: Any = None) -> list[str]:
    """Move global flags to the root and rewrite old option spellings (hidden aliases).

    A flag the subcommand declares itself (e.g. ``run --quiet``) stays where it is.
    """
    args = list(argv)
    group = group if group is not None else click_command()
    commands = getattr(group, "commands", {})
    # the subcommand: the first argument that names one
    pos = next((i for i, a in enumerate(args) if a in commands), None)
    if pos is None:
        return args
    sub = commands[args[pos]]
    # descend into sub-groups (``judge check``, ``runs list``): their leaf command's options count
    while getattr(sub, "commands", None) and pos + 1 < len(args) \
            and args[pos + 1] in sub.commands:
        pos += 1
        sub = sub.commands[args[pos]]
    declared = _declared(sub)
    head, tail = args[:pos], args[pos + 1:]
    hoisted: list[str] = []
    rest: list[str] = []
    after_dashdash = False
    for a in tail:
        if after_dashdash or a == "--":
            after_dashdash = True
            rest.append(a)
            continue
        name, eq, value = a.partition("=")
        if name in GLOBAL_FLAGS and name not in declared and not eq:
            hoisted.append(a)
            continue
        if name in common.OPTION_ALIASES and name not in declared \
                and common.OPTION_ALIASES[name] in declared:
            a = common.OPTION_ALIASES[name] + (eq + value if eq else "")
        rest.append(a)
    # a global flag the subcommand also declares is passed on to it as well
    for a in head:
        if a in GLOBAL_FLAGS and a in declared and a not in rest:
            rest.append(a)
    first = next(i for i, a in enumerate([*head, args[pos]]) if a in commands)
    return [*head[:first], *hoisted, *head[first:], args[pos], *rest]


#: keys the data layer names in a ConfigError -> the command-line option that set them
_OPTION_OF_KEY = {"format": "--format", "column_map": "--map"}


def _cli_message(exc: RagmeterError) -> str:
    """The error as the command line says it: a data-layer ``config key 'format'`` is the
    ``--format`` option here."""
    text = str(exc)
    if isinstance(exc, ConfigError) and exc.key in _OPTION_OF_KEY:
        return text.replace(f"config key '{exc.key}'", f"option '{_OPTION_OF_KEY[exc.key]}'", 1)
    return text


def _print_error(message: str) -> None:
    console = common.err_console()
    console.print(f"[bold red]error:[/] {escape(mask(message))}", highlight=False,
                  soft_wrap=True)


def _os_error_code(exc: OSError) -> int:
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                        PermissionError)):
        return EXIT_USAGE
    if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
        return EXIT_WORK
    return EXIT_USAGE


def _out_is_stdout(args: Sequence[str]) -> bool:
    for i, a in enumerate(args):
        if a in ("--out=-", "-o-") or (a in ("--out", "-o") and i + 1 < len(args)
                                         and args[i + 1] == "-"):
            return True
    return False


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    # plain (piped) output: wide enough that tables never cut an identifier (rich reads COLUMNS)
    set_cols = "COLUMNS" not in os.environ and not getattr(sys.stdout, "isatty", lambda: False)()
    if set_cols:
        os.environ["COLUMNS"] = str(common.PLAIN_WIDTH)
    try:
        return _run(argv)
    finally:
        if set_cols:
            os.environ.pop("COLUMNS", None)
        # --pseudonymise ends with its command: library calls after it in the same process
        # are not pseudonymised by surprise
        if "ragmeter.privacy.judge" in sys.modules:
            from ragmeter.privacy.judge import activate

            activate(False)


def _run(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    common.reset_state(debug="--debug" in args or os.environ.get("RAGMETER_DEBUG") == "1")
    if argv is None and os.environ.get(completion.COMPLETE_VAR):  # a Tab: from the table
        text = completion.answer(os.environ, click_command)
        if text is not None:
            sys.stdout.write(text + ("\n" if text else ""))
            return 0
    try:
        rv = command_for(args).main(args=args, prog_name="ragmeter", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else 0
    except RagmeterError as exc:
        _print_error(_cli_message(exc))
        return exc.exit_code
    except typer.Exit as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except (typer.Abort, KeyboardInterrupt):
        common.err_console().print("interrupted", highlight=False)
        return EXIT_INTERRUPTED
    except _click_exc.ClickException as exc:  # usage errors: bad option, missing argument ...
        exc.show()
        code = getattr(exc, "exit_code", EXIT_USAGE)
        return EXIT_USAGE if code in (1, 2) else int(code)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
    except RecursionError:
        _print_error("input nested too deeply to process (recursion limit reached)")
        return EXIT_USAGE
    except OSError as exc:
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        _print_error(f"{exc.strerror or type(exc).__name__}{where}")
        if common.state().debug:
            traceback.print_exc()
        return _os_error_code(exc)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        _print_error(f"internal error ({type(exc).__name__}: {first}); this is a bug in "
                     f"ragmeter — rerun with --debug for the traceback and report it")
        if common.state().debug:
            traceback.print_exc()
        return EXIT_INTERNAL


def _keep_freed_memory() -> None:
    """Let glibc keep freed blocks of up to 32 MiB in the heap instead of unmapping them: the
    file readers allocate block-sized arrays again and again, and every fresh mapping is zeroed
    page by page by the kernel (half the page faults of a large run). No-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):  # not glibc
        return
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks below it come from the heap
    mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD: free heap top kept up to this size


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run and exit with the contract's code."""
    _keep_freed_memory()
    code = run(argv)
    with contextlib.suppress(BrokenPipeError, ValueError):  # closed pipe
        sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
