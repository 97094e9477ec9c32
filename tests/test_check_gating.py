"""CI gating: thresholds, missing metrics, CI bounds, exit codes of `ragmeter gate`."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult
from ragmeter.results.store import ResultStore
from ragmeter.runner.gating import Threshold, check_thresholds, thresholds_from_cli
from ragmeter.testing import assert_metrics

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def _result() -> EvalResult:
    r = EvalResult("bm25")
    r.add(builders.metric("hit_rate@5", [1, 1, 1, 0, 1, 1, 0, 1, 1, 1]))  # mean 0.8
    r.add(builders.metric("latency_s", [0.5, 0.7, 0.6, 0.9, 0.4, 0.5, 0.6, 0.8, 0.7, 0.6],
                          hib=False))
    r.add(builders.metric("faithfulness", [np.nan] * 3, reasons={0: "timeout", 1: "timeout",
                                                                 2: "parse_error"}))
    return r


def test_thresholds_pass_fail_and_missing():
    rows = check_thresholds(_result(), [Threshold("hit_rate@5", min=0.8),
                                        Threshold("latency_s", max=0.6),
                                        Threshold("ndcg@10", min=0.5),
                                        Threshold("faithfulness", min=0.7)])
    by = {r.metric: r for r in rows}
    assert by["hit_rate@5"].passed  # 0.8 >= 0.8
    assert not by["latency_s"].passed and "> max 0.6" in by["latency_s"].message
    assert not by["ndcg@10"].passed and "missing from run" in by["ndcg@10"].message
    assert not by["faithfulness"].passed and "no scored sample" in by["faithfulness"].message


def test_ci_bound_is_stricter():
    r = _result()
    mean = r["hit_rate@5"].aggregate
    assert check_thresholds(r, [Threshold("hit_rate@5", min=0.75)])[0].passed
    row = check_thresholds(r, [Threshold("hit_rate@5", min=0.75)], use_ci_bound=True)[0]
    assert not row.passed and row.checked_value == mean.ci_low < 0.75
    assert "CI lower bound" in row.message


def test_alias_and_target_qualifier():
    res = {"retrieval/bm25": builders.retrieval_result("bm25"),
           "retrieval/dense": builders.retrieval_result("dense")}
    rows = check_thresholds(res, [Threshold("doc_hit@5", min=0.0)])
    assert {r.target for r in rows} == {"retrieval/bm25", "retrieval/dense"}
    assert all(r.metric == "hit_rate@5(level=doc)" for r in rows)
    only = check_thresholds(res, [Threshold("mrr", min=0.0, target="dense")])
    assert [r.target for r in only] == ["retrieval/dense"]


def test_cli_threshold_parsing():
    th = thresholds_from_cli(["hit_rate@5=0.8", "dense:mrr=0.5"], ["hit_rate@5=0.99"])
    assert th[0] == Threshold("hit_rate@5", 0.8, 0.99, None)
    assert th[1] == Threshold("mrr", 0.5, None, "dense")
    with pytest.raises(ConfigError, match="--min"):
        thresholds_from_cli(["hit_rate@5"])
    with pytest.raises(ConfigError, match="number"):
        thresholds_from_cli(["hit_rate@5=high"])


def test_assert_metrics_helper():
    r = _result()
    assert_metrics(r, min={"hit_rate@5": 0.8}, max={"latency_s": 1.0})
    with pytest.raises(AssertionError) as info:
        assert_metrics(r, min={"hit_rate@5": 0.9, "ndcg@10": 0.1})
    text = str(info.value)
    assert "2 of 2" in text and "FAIL" in text and "missing from run" in text
    assert "hit_rate@5" in text and "0.8000" in text and ">= 0.9" in text


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**__import__("os").environ,
                                                                "COLUMNS": "200"})


def test_check_cli_exit_codes(tmp_path):
    path = tmp_path / "bm25.json"
    path.write_text(_result().to_json(), encoding="utf-8")
    ok = _cli("gate", str(path), "--min", "hit_rate@5=0.8", "--max", "latency_s=0.9",
              cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASSED" in ok.stdout
    bad = _cli("gate", str(path), "--min", "hit_rate@5=0.9", "--min", "ndcg@10=0.5",
               cwd=tmp_path)
    assert bad.returncode == 1
    assert "FAIL" in bad.stdout and "missing from run" in bad.stdout and "ndcg@10" in bad.stdout
    strict = _cli("gate", str(path), "--min", "hit_rate@5=0.75", "--use-ci-bound",
                  cwd=tmp_path)
    assert strict.returncode == 1
    usage = _cli("gate", str(path), cwd=tmp_path)
    assert usage.returncode == 2 and "no thresholds" in usage.stderr


def test_check_cli_on_store_run_uses_config_thresholds(tmp_path):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    run = builders.make_run("gate-run")
    run.config["thresholds"] = {"bm25:hit_rate@10": {"min": 0.99}, "mrr": {"min": 0.0}}
    ResultStore(url).save_run(run)
    out = _cli("gate", "gate-run", "--store", url, cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "hit_rate@10" in out.stdout and "FAIL" in out.stdout
    passing = _cli("gate", "latest", "--store", url, "--min", "mrr=0.0", cwd=tmp_path)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    missing = _cli("gate", "no-such-run", "--store", url, "--min", "mrr=0", cwd=tmp_path)
    assert missing.returncode == 2 and "no run" in missing.stderr
    # JSON written by the check table is not required; the stored JSON export round-trips
    exported = tmp_path / "run.json"
    ResultStore(url).export("gate-run", exported)
    again = _cli("gate", str(exported), "--min", "mrr=0.0", cwd=tmp_path)
    assert again.returncode == 0 and json.loads(exported.read_text())["id"] == "gate-run"
