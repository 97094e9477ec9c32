"""CLI: `ragmeter serve mock-judge` options and `ragmeter judge check` against the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import needs_extra
from ragmeter.cli.app import app
from ragmeter.errors import UsageError
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

runner = CliRunner()


def test_mock_judge_help_lists_options() -> None:
    out = runner.invoke(app, ["serve", "mock-judge", "--help"])
    assert out.exit_code == 0
    for opt in ("--port", "--latency-ms", "--fault-rate", "--max-concurrency"):
        assert opt in out.output


def test_mock_judge_rejects_unknown_fault() -> None:
    out = runner.invoke(app, ["serve", "mock-judge", "--faults", "429,meteor"])
    assert isinstance(out.exception, UsageError) and "--faults" in str(out.exception)


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
    needs_extra("tiny-judge", "xllamacpp")
    out = runner.invoke(app, ["judge", "demo", "--tiny"])
    assert out.exit_code in (0, 1)
    assert "demo judge" in out.output


@pytest.mark.parametrize("bad", ["--fault-rate=1.5", "--port=70000"])
def test_mock_judge_validates_numbers(bad: str) -> None:
    out = runner.invoke(app, ["serve", "mock-judge", bad])
    assert isinstance(out.exception, UsageError)


def test_mock_judge_command_serves_until_stopped() -> None:
    import subprocess
    import sys
    import time
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "ragmeter.cli.app", "serve", "mock-judge",
                             "--port",
                             "0", "--latency-ms", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 30
        while "listening on" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline() if proc.stderr else ""
        assert "listening on" in line, line
        base = line.split("listening on ")[1].split()[0]
        from ragmeter.judges import JudgeConfig, JudgeRequest, make_judge

        judge = make_judge(JudgeConfig(name="dry", backend="mock", base_url=base,
                                       api_key_env=None, no_cache=True))
        req = JudgeRequest(messages=({"role": "user", "content": "x"},),
                           schema={"type": "object", "properties": {"n": {"type": "integer"}},
                                   "required": ["n"]}, prompt_version="dry@1")
        assert judge.ask_many([req])[0].ok
        with urllib.request.urlopen(base[:-3] + "/stats", timeout=5) as resp:
            assert json.loads(resp.read())["requests"] == 1
    finally:
        proc.terminate()
        proc.wait(10)


def test_mock_backend_without_url_starts_its_own_server() -> None:
    from ragmeter.judges import JudgeConfig, JudgeRequest, make_judge

    judge = make_judge(JudgeConfig(name="m", backend="mock", api_key_env=None, no_cache=True))
    req = JudgeRequest(messages=({"role": "user", "content": "x"},),
                       schema={"type": "object", "properties": {"ok": {"type": "boolean"}},
                               "required": ["ok"]}, prompt_version="m@1")
    rep = judge.ask_many([req])[0]
    assert rep.ok and isinstance(rep.data["ok"], bool)
