"""Nothing a user sees cites the internal design documents: name the concept instead."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

import ragmeter
from ragmeter.cli.app import app

SRC = Path(ragmeter.__file__).resolve().parent
ROOT = SRC.parents[1]
CITATION = re.compile(r"seed[- ]?0\d\d|seed \d\d\d|seed §|§\s*\d|design doc|\b000_\w*\.txt",
                      re.IGNORECASE)
SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".yaml", ".yml", ".txt", ".json"}


def test_no_citations_in_sources_and_readme() -> None:
    files = [p for p in SRC.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    files.append(ROOT / "README.md")
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
            for p in files if p.exists()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if CITATION.search(line)]
    assert hits == []


def test_no_citations_in_cli_help() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    commands = re.findall(r"^│ (\w[\w-]*) ", top.output, re.MULTILINE)
    assert "score" in commands and "metrics" in commands
    seen = 0
    while commands:
        cmd = commands.pop()
        out = runner.invoke(app, [*cmd.split(" "), "--help"], env={"COLUMNS": "200"})
        assert not CITATION.search(out.output), (cmd, out.output)
        if " " not in cmd:  # a group's help lists its commands: check theirs too
            commands += [f"{cmd} {sub}" for sub in re.findall(
                r"^│ (\w[\w-]*) ", out.output.split("Commands")[-1], re.MULTILINE)
                if "Commands" in out.output]
        seen += 1
    assert seen > 30
    assert not CITATION.search(top.output)
