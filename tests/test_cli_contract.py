"""The CLI contract: exit codes 0/1/2/3/4, no tracebacks, --json / --out - on stdout only,
judge-option aliases, global flags anywhere, and every example in the help texts parses."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_GATE, EXIT_INTERNAL, EXIT_USAGE, EXIT_WORK

FIX = Path(__file__).parent / "fixtures"
DEMO = Path(__file__).parents[1] / "src" / "ragmeter" / "demo" / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def test_success_and_json_only_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "score", "retrieval", "--qrels",
                         str(FIX / "retrieval" / "qrels.txt"),
                         "--run", str(FIX / "retrieval" / "run.txt"), "--json")
    assert code == 0
    data = json.loads(out)
    assert "results" in data and "metric" in err  # the table went to stderr


def test_out_dash_is_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "judge", "pipeline", str(DEMO / "judge_pipeline.jsonl"),
                       "--out", "-")
    assert code == 0 and json.loads(out)["meta"]["n_items"] == 40
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("argv", [
    ["score", "retrieval", "--bogus"], ["score", "retrieval", "--seed", "abc"],
    ["run", "--limit", "0", "x.yaml"],
    ["run", "missing.yaml"], ["score", "retrieval", "--evalset", "missing.jsonl"],
    ["score", "retrieval", "-k", "0,x", "--qrels", "a", "--run", "b"], ["nonexistent-command"],
    ["score", "generation", "--samples", "x.jsonl", "--max-unscored", "2"],
    ["score", "generation", "--samples", str(FIX / "retrieval" / "samples.json"), "--map",
     "bogus=x"],
])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == EXIT_USAGE, err
    assert err.strip()


def test_evalset_without_ranking_is_an_error(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text('{"id": "q1", "question": "q", "gold_doc_ids": ["d"], "type": "fact"}\n')
    code, _, err = run(capsys, "score", "retrieval", "--evalset", str(p))
    assert code == EXIT_USAGE and "no ranking" in err


def test_zero_scored_metric_exit_3_and_max_unscored(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "a", "question": "q", "answer": "x"}\n')
    code, _, err = run(capsys, "score", "generation", "--samples", str(p), "--metrics", "bleu")
    assert code == EXIT_WORK and "no sample scored" in err
    p.write_text('{"id": "a", "question": "q", "answer": "x y", "reference": "x y"}\n'
                 '{"id": "b", "question": "q", "answer": "x"}\n')
    code, _, err = run(capsys, "score", "generation", "--samples", str(p), "--metrics", "bleu")
    assert code == 0 and "partly unscored" in err
    code, _, err = run(capsys, "score", "generation", "--samples", str(p), "--metrics", "bleu",
                       "--max-unscored", "0.2")
    assert code == EXIT_WORK and "--max-unscored" in err


def test_gate_failure_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, _, _ = run(capsys, "score", "retrieval", "--qrels", str(FIX / "retrieval" / "qrels.txt"),
                     "--run", str(FIX / "retrieval" / "run.txt"), "--out", str(out), "-q")
    assert code == 0
    code, _, _ = run(capsys, "gate", str(out), "--min", "mrr=1.01")
    assert code == EXIT_GATE


def test_run_with_errored_tier_exit_3_reason_intact(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"question": "q", "answer": "a", "context": "c", "ground_truth_show": 7}\n')
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("name: t\nstore: results.sqlite\ntiers:\n  - name: judge_pipeline\n"
                   f"    options: {{items: {bad.name}}}\n")
    code, _, err = run(capsys, "run", str(cfg), "-q")
    assert code == EXIT_WORK, err
    assert "items.jsonl:1 field 'ground_truth_show'" in err
    assert (tmp_path / "results.sqlite").exists()  # store relative to the config


def test_store_checked_before_work(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("name: t\ntiers:\n  - name: judge_pipeline\n"
                   f"    options: {{items: {DEMO / 'judge_pipeline.jsonl'}}}\n")
    code, _, err = run(capsys, "run", str(cfg), "--store",
                       f"sqlite:///{tmp_path}/no/such/dir/x.sqlite", "-q")
    assert code == EXIT_USAGE and "store" in err


def test_internal_error_one_line_and_debug(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import ragmeter.tiers.judge_pipeline as jp

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(jp, "load_pipeline_items", boom)
    code, _, err = run(capsys, "judge", "pipeline", str(DEMO / "judge_pipeline.jsonl"))
    assert code == EXIT_INTERNAL
    assert "internal error (RuntimeError: kaput)" in err and "--debug" in err
    code = cli.run(["judge", "pipeline", str(DEMO / "judge_pipeline.jsonl"), "--debug"])
    _, err = capsys.readouterr()
    assert code == EXIT_INTERNAL and "Traceback" in err


def test_old_judge_spellings_are_hidden_aliases() -> None:
    argv = cli.normalize_argv(["judge", "pipeline", "x.jsonl", "--base-url", "http://h/v1",
                               "--model=m", "--api-key-env", "K", "-v", "--json"])
    assert argv[:2] == ["-v", "--json"]
    assert "--judge-url" in argv and "--judge-model=m" in argv and "--judge-key-env" in argv
    # a flag the command declares itself stays with it
    assert cli.normalize_argv(["run", "c.yaml", "-q"]) == ["run", "c.yaml", "-q"]


def _leaves(cmd: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    subs = getattr(cmd, "commands", None)
    if not subs:
        return [(path, cmd)]
    return [leaf for name, sub in subs.items() for leaf in _leaves(sub, (*path, name))]


def _opts(cmd: object) -> set[str]:
    return {o for p in getattr(cmd, "params", [])
            for o in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])}


def test_judge_options_one_group_everywhere() -> None:
    """Every command that takes a judge option takes the whole group, with one help text."""
    from ragmeter.cli.judge_options import OPTIONS

    group = {ann.__metadata__[0].default: ann.__metadata__[0].help
             for _, ann in OPTIONS.values()}
    with_judge = []
    for path, cmd in _leaves(cli.click_command()):
        opts = _opts(cmd)
        assert not opts & {"--base-url", "--api-key-env"}, path
        if "--judge-url" not in opts:
            continue
        with_judge.append(" ".join(path))
        wanted = set(group) - ({"--check-judge"} if path == ("judge", "check") else set())
        assert wanted <= opts, (path, wanted - opts)
        for p in cmd.params:  # type: ignore[attr-defined]
            name = next((o for o in p.opts if o in group), None)
            if name is not None:
                assert p.help == group[name], (path, name)
    assert set(with_judge) == {"score generation", "score ux", "judge check", "judge bench",
                               "judge quality", "judge pipeline"}
    # the declaration is written once, in the group's module
    src = Path(cli.__file__).parent
    declared = [f.name for f in src.rglob("*.py") if '"--judge-url", help=' in f.read_text()]
    assert declared == ["judge_options.py"]
    assert cli.normalize_argv(["judge", "check", "c.yaml", "--base-url", "http://x", "-q"]) == [
        "-q", "judge", "check", "c.yaml", "--judge-url", "http://x"]


def _help_examples() -> list[tuple[str, str]]:
    out = []
    for path, cmd in _leaves(cli.click_command()):
        for line in (getattr(cmd, "help", None) or "").splitlines():
            line = line.strip()
            if line.startswith("ragmeter "):
                out.append((" ".join(path), line))
    return out


def _leaf_of(argv: list[str]) -> tuple[object, list[str]]:
    """The command ``argv`` names (descending into groups) and the arguments after it."""
    cmd: object = cli.click_command()
    i = next(i for i, a in enumerate(argv) if not a.startswith("-"))
    while getattr(cmd, "commands",
                  None) and i < len(argv) and argv[i] in cmd.commands:  # type: ignore[attr-defined]
        cmd = cmd.commands[argv[i]]  # type: ignore[attr-defined]
        i += 1
    assert not getattr(cmd, "commands", None), f"{argv}: names a group, not a command"
    return cmd, argv[i:]


@pytest.mark.parametrize(("name", "example"), _help_examples())
def test_help_examples_parse(name: str, example: str) -> None:
    """Every example in a help text names a real command (its own) and only options it has."""
    argv = cli.normalize_argv(shlex.split(example)[1:])
    cmd, rest = _leaf_of(argv)
    assert " ".join(a for a in argv[:len(argv) - len(rest)] if not a.startswith("-")) == name
    opts = _opts(cmd)
    for tok in rest:
        if tok.startswith("-") and tok != "-":
            assert tok.split("=")[0] in opts, f"{example}: unknown option {tok}"
    assert cmd.make_context(name, rest,
                            resilient_parsing=True) is not None  # type: ignore[attr-defined]


def test_help_mentions_only_existing_commands() -> None:
    tree = cli.click_command()
    leaves = _leaves(tree)
    groups = {p[0] for p, _ in leaves if len(p) > 1}
    known = {" ".join(p[:i]) for p, _ in leaves for i in range(1, len(p) + 1)}  # + subgroups
    for path, cmd in leaves:
        for ref in re.findall(r"`ragmeter ([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)?)",
                              getattr(cmd, "help", None) or ""):
            words = ref.split(" ")
            named = ref if words[0] in groups else words[0]
            assert named in known, f"{' '.join(path)} help refers to missing command {ref}"


def test_real_subprocess_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "ragmeter", "score", "retrieval", "--bogus"],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(Path(__file__).parents[1] / "src"),
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == EXIT_USAGE
    assert "Traceback" not in proc.stderr and "No such option" in proc.stderr


def test_run_json_and_plain_progress_lines(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("name: t\nstore: r.sqlite\ntiers:\n  - name: judge_pipeline\n"
                   f"    options: {{items: {DEMO / 'judge_pipeline.jsonl'}}}\n")
    code, out, err = run(capsys, "run", str(cfg), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["tiers"]["judge_pipeline"]["status"] == "ok"
    assert "progress: judge_pipeline" in err  # stderr is not a terminal here


def test_check_and_compare_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, run_file in ((a, "run.txt"), (b, "run.json")):
        code, _, _ = run(capsys, "score", "retrieval", "--qrels",
                         str(FIX / "retrieval" / "qrels.txt"),
                         "--run", str(FIX / "retrieval" / run_file), "--out", str(path), "-q")
        assert code == 0
    code, out, _ = run(capsys, "gate", str(a), "--min", "mrr=0", "--json")
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = run(capsys, "compare", str(a), str(b), "--json", "--n-resamples", "200")
    assert code == 0 and json.loads(out)["rows"]


def _readme_examples() -> list[str]:
    text = (Path(__file__).parents[1] / "README.md").read_text("utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("ragmeter ") and " | " not in part and "..." not in part:
                    out.append(part)
    return out


@pytest.mark.parametrize("example", _readme_examples())
def test_readme_examples_parse(example: str) -> None:
    argv = cli.normalize_argv(shlex.split(example)[1:])
    cmd, rest = _leaf_of(argv)
    opts = _opts(cmd)
    for tok in rest:
        if tok.startswith("-") and tok != "-":
            assert tok.split("=")[0] in opts, f"{example}: unknown option {tok}"
    cmd.make_context("ragmeter", rest, resilient_parsing=True)  # type: ignore[attr-defined]


def test_demo_out_dash_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in (["demo", "--out", "-"], ["demo", "-o", "-", "--no-judge"]):
        code, out, err = run(capsys, *argv)
        assert code == EXIT_USAGE, err
        assert "--out" in err and "folder" in err and not out.strip()
        assert not (tmp_path / "-").exists()
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    code, _, err = run(capsys, "demo", "--out", "afile", "--no-judge")
    assert code == EXIT_USAGE and "is a file" in err


def test_verbose_logs_main_steps_with_times(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("name: t\nstore: r.sqlite\ntiers:\n  - name: judge_pipeline\n"
                   f"    options: {{items: {DEMO / 'judge_pipeline.jsonl'}}}\n")
    code, out, err = run(capsys, "run", str(cfg), "-q", "--json")
    assert code == 0 and "INFO ragmeter" not in err
    code, out, err = run(capsys, "-v", "run", str(cfg), "--json")
    assert code == 0, err
    json.loads(out)  # logging never touches stdout
    assert re.search(r"INFO ragmeter\.runner: tier judge_pipeline: ok in \d+\.\d\d s", err), err
    assert "INFO ragmeter.runner: run " in err
    assert re.search(r"INFO ragmeter\.data: read .*judge_pipeline\.jsonl: 40 record", err), err
    samples = FIX / "runner" / "samples.jsonl"
    code, _, err = run(capsys, "score", "generation", "--samples", str(samples), "-m", "rouge_l",
                       "-v")
    assert code == 0, err
    assert re.search(r"INFO ragmeter\.generation: metric rouge_l: \d+\.\d{3} s", err), err
    assert re.search(r"INFO ragmeter\.cli: scoring \d+ samples: done in", err), err
    code, _, err = run(capsys, "-vv", "run", str(cfg))
    assert code == 0 and "DEBUG ragmeter" in err
    code, _, err = run(capsys, "score", "generation", "--samples", str(samples), "-m", "rouge_l")
    assert code == 0 and "INFO ragmeter" not in err  # the next invocation is quiet again
