"""CLI: `ragmeter mock-judge` options and `ragmeter judge check` against the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli.app import app
from ragmeter.errors import ConfigError
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

runner = CliRunner()


def test_mock_judge_help_lists_options() -> None:
    out = runner.invoke(app, ["mock-judge", "--help"])
    assert out.exit_code == 0
    for opt in ("--port", "--latency-ms", "--fault-rate", "--max-concurrency"):
        assert opt in out.output


def test_mock_judge_rejects_unknown_fault() -> None:
    out = runner.invoke(app, ["mock-judge", "--faults", "429,meteor"])
    assert isinstance(out.exception, ConfigError) and "--faults" in str(out.exception)


def test_judge_check_against_fake_server(tmp_path: Path) -> None:
    with MockJudgeServer(MockConfig(script=["500"])) as srv:
        cfg = tmp_path / "judges.yaml"
        cfg.write_text(
            "defaults: {backend: openai, api_key_env: null, retry: {initial: 0.01, max: 0.02}}\n"
            f"judges:\n  - {{name: a, model: m1, base_url: '{srv.base_url}'}}\n"
            f"  - {{name: b, model: m2, base_url: '{srv.base_url}'}}\n")
        out = runner.invoke(app, ["judge", "check", str(cfg), "--n", "3"])
        stats = srv.stats()
    assert out.exit_code == 0, out.output
    assert "judge check" in out.output and "m1" in out.output and "m2" in out.output
    assert stats["requests"] == 7  # 2 judges × 3 probes + 1 retried 500


def test_judge_demo_status_runs() -> None:
    out = runner.invoke(app, ["judge", "demo", "--tiny"])
    assert out.exit_code in (0, 1)
    assert "demo judge" in out.output


@pytest.mark.parametrize("bad", ["--fault-rate=1.5", "--port=70000"])
def test_mock_judge_validates_numbers(bad: str) -> None:
    out = runner.invoke(app, ["mock-judge", bad])
    assert isinstance(out.exception, ConfigError)
