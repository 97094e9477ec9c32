"""Options coerced without typer's pydantic validators give what typer's own coercion gives:
for every option of every command and a spread of spellings, the quick path either returns
typer's value or leaves the value to typer (so its error messages stay the same)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from ragmeter.cli import app as cli
from ragmeter.cli import quick_params

_VALUES: list[Any] = [None, "", "0", "12", "-3", "007", "+4", " 4", "1.5", "-0.25", ".5", "1e3",
                      "1_000", "abc", "x.txt", "-", True, False, 0, 3, 2.5, ("a", "b"), (), []]


def _walk(cmd: Any) -> list[tuple[Any, Any]]:
    out = [(cmd, p) for p in cmd.params]
    for sub in getattr(cmd, "commands", {}).values():
        out.extend(_walk(sub))
    return out


def test_quick_coercion_equals_typer_coercion_for_every_option(tmp_path: Path) -> None:
    readable = tmp_path / "f.txt"
    readable.write_text("x")
    values = [*_VALUES, str(tmp_path), str(readable)]
    checked = 0
    for cmd, param in _walk(cli.click_command()):
        quick = param._runtime_param
        if not isinstance(quick, quick_params.QuickCoercion):
            continue
        ctx = Context(cmd)
        full = build_runtime_param(param.type_descriptor)
        for value in values:
            try:
                got = quick.quick(value, param, ctx)
            except BadParameter:
                got = BadParameter
            if got is quick_params._UNSET:
                continue
            try:
                want = full.coerce(value, param=param, ctx=ctx)
            except BadParameter:
                want = BadParameter
            assert (type(got), got) == (type(want), want), (cmd.name, param.name, value)
            checked += 1
    assert checked > 500


def test_every_plain_option_of_retrieval_takes_the_quick_path() -> None:
    cmd = cli.command_for(["score", "retrieval"])
    group = cmd.commands["score"]
    sub = group.commands["retrieval"]
    slow = [p.name for p in [*cmd.params, *group.params, *sub.params]
            if not isinstance(p._runtime_param, quick_params.QuickCoercion)]
    assert slow == []


@pytest.mark.parametrize("argv", [["score", "retrieval", "--seed", "abc"],
                                  ["score", "retrieval", "--seed", "1.5"],
                                  ["score", "retrieval", "--min-n", "0"]])
def test_values_the_quick_path_refuses_get_typers_usage_error(argv: list[str]) -> None:
    assert cli.run(argv) == 2
