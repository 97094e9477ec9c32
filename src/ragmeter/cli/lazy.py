"""Which module of :mod:`ragmeter.cli.commands` defines each subcommand, so that one invocation
imports only the modules of the command it runs (``ragmeter retrieval`` never imports the judge
engine, the web viewer or the metric modules of other commands).

Every module there defines ``register(app)``. :func:`recorded` runs it once per process against
a private :class:`typer.Typer`, and :func:`assemble` builds a command line from the recorded
commands of some modules: all of them for ``ragmeter --help`` and the tests, one command's for
an ordinary invocation. A command missing from :data:`COMMAND_MODULES` still works (the whole
tree is built); a test checks the table against what the modules register.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
from collections.abc import Iterable

import typer

PACKAGE = "ragmeter.cli.commands"

#: subcommand -> the modules that register it (a group's subcommands may come from several)
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "cache": ("cache",),
    "check": ("check",),
    "compare": ("compare",),
    "demo": ("demo",),
    "export": ("export_scores",),
    "generate": ("generate",),
    "generation": ("generation",),
    "import": ("import_traces",),
    "init": ("init",),
    "judge": ("judge_batch", "judge_bench", "judge_label", "judge_model"),
    "judge-pipeline": ("judge_pipeline",),
    "judge-quality": ("judge_quality",),
    "label": ("judge_label",),
    "metrics": ("metrics",),
    "mock-judge": ("mock_judge",),
    "real-users": ("real_users",),
    "report": ("report",),
    "retrieval": ("retrieval",),
    "retrievers": ("retrievers",),
    "run": ("run",),
    "runs": ("runs",),
    "serve-example": ("serve_example",),
    "tier0": ("tier0",),
    "ux": ("ux",),
    "view": ("view",),
}

_RECORDED: dict[str, typer.Typer] = {}


def discovered_modules() -> list[str]:
    """Every command module, sorted by name (the order of ``ragmeter --help``)."""
    pkg = importlib.import_module(PACKAGE)
    return sorted(info.name for info in pkgutil.iter_modules(pkg.__path__)
                  if not info.name.startswith("_"))


def recorded(module: str) -> typer.Typer:
    """The commands and groups ``module.register`` adds (imported and registered once)."""
    if module not in _RECORDED:
        recorder = typer.Typer()
        register = getattr(importlib.import_module(f"{PACKAGE}.{module}"), "register", None)
        if register is not None:
            register(recorder)
        _RECORDED[module] = recorder
    return _RECORDED[module]


def assemble(root: typer.Typer, modules: Iterable[str]) -> typer.Typer:
    """``root`` (its callback, help and settings) with the commands of ``modules``."""
    app = copy.copy(root)
    app.registered_commands = list(root.registered_commands)
    app.registered_groups = list(root.registered_groups)
    for module in modules:
        rec = recorded(module)
        app.registered_commands.extend(rec.registered_commands)
        app.registered_groups.extend(rec.registered_groups)
    return app
