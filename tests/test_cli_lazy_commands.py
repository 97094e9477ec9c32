"""One invocation imports only its own command: the table of which module defines which
command matches what the modules register, ``--help`` still lists every command, and the
retrieval file path imports neither the judge engine nor other commands' modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer

from ragmeter.cli import app as cli
from ragmeter.cli import lazy

ROOT = Path(__file__).resolve().parents[1]


def _registered_paths() -> dict[str, set[str]]:
    """command words -> the modules whose ``register`` adds that command."""
    registered: dict[str, set[str]] = {}
    for module in lazy.discovered_modules():
        rec = lazy.recorded(module)
        for c in rec.registered_commands:
            assert c.name is not None
            registered.setdefault(c.name, set()).add(module)
        for g in rec.registered_groups:
            assert g.name is not None and g.typer_instance is not None
            sub = g.typer_instance
            for name in [c.name for c in sub.registered_commands] + \
                    [x.name for x in sub.registered_groups]:
                registered.setdefault(f"{g.name} {name}", set()).add(module)
    return registered


def test_lazy_command_table_matches_what_modules_register() -> None:
    registered = _registered_paths()
    assert set(lazy.COMMAND_MODULES) == set(registered)
    for name, modules in registered.items():
        assert modules <= set(lazy.COMMAND_MODULES[name]), name
    # every module is listed under some command
    listed = {m for mods in lazy.COMMAND_MODULES.values() for m in mods}
    assert listed == set(lazy.discovered_modules())


def test_one_command_tree_holds_only_that_command_and_help_lists_all() -> None:
    small = cli.command_for(["-q", "score", "retrieval", "--qrels", "q"])
    assert list(small.commands) == ["score"]
    assert list(small.commands["score"].commands) == ["retrieval"]
    tops = {k.split(" ")[0] for k in lazy.COMMAND_MODULES}
    assert set(cli.command_for(["--help"]).commands) == tops
    assert set(cli.command_for(["no-such-command"]).commands) == tops
    judge = cli.command_for(["judge", "card", "--help"]).commands["judge"]
    assert {"bench", "card"} <= set(judge.commands)
    # a group's name alone: all of its commands (its --help lists them)
    judge = cli.command_for(["judge", "--help"]).commands["judge"]
    assert {"bench", "card", "check", "demo", "quality", "pipeline", "cache"} <= set(
        judge.commands)
    # an old name builds the tree of its new one
    old = cli.command_for(["-q", "retrieval", "--qrels", "q"])
    assert list(old.commands) == ["score"] and list(old.commands["score"].commands) == [
        "retrieval"]
    assert isinstance(cli.app, typer.Typer)


def test_retrieval_file_path_imports_no_judge_engine(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d3 2\n")
    run.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\nq2 Q0 d3 1 0.5 x\n")
    code = ("import io, json, sys, contextlib\n"
            "from ragmeter.cli.app import run\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = run(['score', 'retrieval', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, "
            "'--metrics', 'ndcg@10,mrr,recall@10,precision@10,map'])\n"
            "print(json.dumps([rc, sorted(sys.modules)]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, cwd=tmp_path).stdout
    rc, modules = json.loads(out.strip().splitlines()[-1])
    assert rc == 0
    loaded = set(modules)
    assert "ragmeter.cli.commands.retrieval" in loaded
    forbidden = [m for m in loaded if m.startswith(("ragmeter.judges", "ragmeter.metrics.judged",
                                                    "ragmeter.view", "ragmeter.targets",
                                                    "ragmeter.runner", "aiohttp", "httpx"))]
    assert not forbidden
    others = [m for m in loaded if m.startswith("ragmeter.cli.commands.")]
    assert others == ["ragmeter.cli.commands.retrieval"]
    assert not loaded & {"ragmeter.data.loaders", "ragmeter.data.evalset",
                         "ragmeter.metrics.lexical", "ragmeter.metrics.refusal"}
