"""One name per concept on the command line: at most 17 top-level entries, the old names
still work for one minor version with a one-line notice on stderr (exit codes unchanged),
and neither ``--help`` nor shell completion lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.cli import completion
from ragmeter.cli.names import GROUPS, ORDER, RENAMED, deprecation
from ragmeter.errors import EXIT_GATE, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
DEMO = ROOT / "src" / "ragmeter" / "demo" / "data"


def test_top_level_has_at_most_17_entries_and_no_old_name() -> None:
    top = set(cli.click_command().commands)
    assert len(top) <= 17, sorted(top)
    assert top == set(ORDER)
    assert not top & set(RENAMED)
    assert set(GROUPS) <= top


def test_every_old_name_leads_to_an_existing_command() -> None:
    tree = cli.click_command()
    for old, words in RENAMED.items():
        cmd = tree
        for w in words:
            cmd = cmd.commands[w]
        assert cmd is not None, old


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_old_name_works_with_a_one_line_notice(old: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.run([old, "--help"])
    out, err = capsys.readouterr()
    new = " ".join(RENAMED[old])
    assert code == 0
    assert f"ragmeter {new}" in out                       # the new command's own help
    assert err.splitlines() == [deprecation(old)]         # one line, on stderr only
    assert f"'ragmeter {old}'" in err and f"'ragmeter {new}'" in err
    code = cli.run([*RENAMED[old], "--help"])
    out_new, err_new = capsys.readouterr()
    assert code == 0 and out_new == out and err_new == ""


def test_old_names_keep_their_exit_codes(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    qrels, run = str(FIX / "retrieval" / "qrels.txt"), str(FIX / "retrieval" / "run.txt")
    for argv in (["retrieval", "--qrels", qrels, "--run", run, "--out", str(res), "-q"],
                 ["score", "retrieval", "--qrels", qrels, "--run", run, "-q"]):
        assert cli.run(argv) == 0
    for words in (["check"], ["gate"]):
        assert cli.run([*words, str(res), "--min", "mrr=1.01"]) == EXIT_GATE
        assert cli.run([*words, str(res), "--min", "mrr=0"]) == 0
    for words in (["retrieval"], ["score", "retrieval"]):
        assert cli.run([*words, "--bogus"]) == EXIT_USAGE
    capsys.readouterr()
    # global flags before an old name, and an old name among a group's words, are left alone
    assert cli.run(["-q", "judge-pipeline", str(DEMO / "judge_pipeline.jsonl"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["meta"]["n_items"] == 40
    assert err.splitlines()[0] == deprecation("judge-pipeline")
    assert cli.renamed_argv(["judge", "check", "--n", "2"]) == ["judge", "check", "--n", "2"]
    assert cli.renamed_argv(["score", "generation", "-s", "x"]) == ["score", "generation",
                                                                   "-s", "x"]


def test_old_name_in_a_real_process_gives_the_same_stdout() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = ["--qrels", str(FIX / "retrieval" / "qrels.txt"), "--run",
            str(FIX / "retrieval" / "run.txt"), "--json"]
    old = subprocess.run([sys.executable, "-m", "ragmeter", "retrieval", *args],
                         capture_output=True, text=True, env=env, timeout=120)
    new = subprocess.run([sys.executable, "-m", "ragmeter", "score", "retrieval", *args],
                         capture_output=True, text=True, env=env, timeout=120)
    assert old.returncode == new.returncode == 0
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert deprecation("retrieval") in old.stderr.splitlines()
    assert "is now" not in new.stderr


def test_completion_lists_only_the_new_names() -> None:
    table = completion.describe(cli.click_command())
    top = {name for name, _ in completion.candidates(table, [], "")}
    assert top == set(ORDER)
    assert {n for n, _ in completion.candidates(table, [], "ch")} == set()
    assert {n for n, _ in completion.candidates(table, [], "re")} == {"report"}
    assert {n for n, _ in completion.candidates(table, ["score"], "")} == {
        "retrieval", "generation", "tier0", "ux", "real-users", "baselines"}
    assert {n for n, _ in completion.candidates(table, ["judge"], "")} >= {
        "check", "demo", "bench", "card", "quality", "pipeline", "cache"}
    assert {n for n, _ in completion.candidates(table, ["judge", "cache"], "")} == {
        "info", "clear"}
    assert "--judge-url" in {n for n, _ in completion.candidates(table, ["judge", "quality"],
                                                                 "--judge-u")}


def test_completion_table_follows_the_command_modules(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A renamed command or a new option gives a new table (not the one of the old names)."""
    (tmp_path / "cli" / "commands").mkdir(parents=True)
    mod = tmp_path / "cli" / "commands" / "gate.py"
    mod.write_text("x = 1\n")
    monkeypatch.setattr(completion, "__file__", str(tmp_path / "cli" / "completion.py"))
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    before = completion.table_path()
    assert completion.table_path() == before
    mod.write_text("x = 22\n")
    assert completion.table_path() != before
