"""Which module of :mod:`ragmeter.cli.commands` defines each command, so that one invocation
imports only the modules of the command it runs (``ragmeter score retrieval`` never imports
the judge engine, the web viewer or the metric modules of other commands).

Every module there defines ``register(app)``: a top-level command goes on ``app`` itself, a
command of a group (``score``, ``judge``, ``testset``, ``traces``, ``serve``, ``runs``) on
``group(app, name)``. :func:`recorded` runs ``register`` once per process against a private
:class:`typer.Typer`, and :func:`assemble` builds a command line from the recorded commands
of some modules, merging each group's commands from every module that adds to it: all of
them for ``ragmeter --help`` and the tests, one command's for an ordinary invocation. A
command missing from :data:`COMMAND_MODULES` still works (the whole tree is built); a test
checks the table against what the modules register.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
from collections.abc import Iterable, Sequence

import typer

from ragmeter.cli.names import GROUPS

PACKAGE = "ragmeter.cli.commands"

#: command (its words joined by a space) -> the modules that register it
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "compare": ("compare",),
    "demo": ("demo",),
    "gate": ("gate",),
    "init": ("init",),
    "label": ("judge_label",),
    "metrics": ("metrics",),
    "report": ("report",),
    "run": ("run",),
    "view": ("view",),
    "score retrieval": ("retrieval",),
    "score generation": ("generation",),
    "score tier0": ("tier0",),
    "score ux": ("ux",),
    "score real-users": ("real_users",),
    "score baselines": ("baselines",),
    "judge check": ("judge_model",),
    "judge demo": ("judge_model",),
    "judge bench": ("judge_bench",),
    "judge card": ("judge_bench",),
    "judge quality": ("judge_quality",),
    "judge pipeline": ("judge_pipeline",),
    "judge cache": ("cache",),
    "judge batch": ("judge_batch",),
    "judge examples": ("judge_label",),
    "testset generate": ("generate",),
    "traces import": ("import_traces",),
    "traces export": ("export_scores",),
    "serve example": ("serve_example",),
    "serve mock-judge": ("mock_judge",),
    "runs list": ("runs",),
    "runs show": ("runs",),
    "runs export": ("runs",),
}

_RECORDED: dict[str, typer.Typer] = {}


def group(app: typer.Typer, name: str) -> typer.Typer:
    """The group ``name`` (one of :data:`~ragmeter.cli.names.GROUPS`) of ``app``, added with
    its help on first use: a module registers a group's command on it."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    sub = typer.Typer(help=GROUPS[name], no_args_is_help=True)
    app.add_typer(sub, name=name)
    return sub


def modules_for(words: Sequence[str]) -> tuple[str, ...] | None:
    """The modules of the command named by ``words`` (a group alone: all of its modules);
    None for a name not in the table (the whole tree is built)."""
    if not words:
        return None
    key = " ".join(words[:2])
    if key in COMMAND_MODULES:
        return COMMAND_MODULES[key]
    in_group = [m for k, mods in COMMAND_MODULES.items() if k.split(" ")[0] == words[0]
                for m in mods]
    return tuple(dict.fromkeys(in_group)) or None


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
    """``root`` (its callback, help and settings) with the commands of ``modules``; a group
    gets the commands every module adds to it."""
    app = copy.copy(root)
    app.registered_commands = list(root.registered_commands)
    app.registered_groups = list(root.registered_groups)
    merged: dict[str, typer.Typer] = {}
    for module in modules:
        rec = recorded(module)
        app.registered_commands.extend(rec.registered_commands)
        for info in rec.registered_groups:
            if info.name not in GROUPS or info.typer_instance is None:
                app.registered_groups.append(info)
                continue
            target = merged.get(info.name)
            if target is None:
                target = merged[info.name] = group(app, info.name)
            target.registered_commands.extend(info.typer_instance.registered_commands)
            target.registered_groups.extend(info.typer_instance.registered_groups)
    return app


def paths(cmd: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The words of every command under a click group (its leaves and nested groups' leaves)."""
    subs = getattr(cmd, "commands", None) or {}
    out: list[tuple[str, ...]] = []
    for name, sub in subs.items():
        if getattr(sub, "commands", None) and len(prefix) >= 1:
            out.append((*prefix, name))  # a group inside a group (judge cache): one entry
        elif getattr(sub, "commands", None):
            out.extend(paths(sub, (*prefix, name)))
        else:
            out.append((*prefix, name))
    return out
