"""Hostile ``python`` and ``command`` targets cannot hang ragmeter, leave processes behind or
take a run down: a function that never returns, ``SystemExit`` from a function, a program
(and its child) that keeps stdout open, a JSON Lines program that stops answering, replies
over ``max_reply_bytes``, invalid Unicode. Real threads, real processes, real CLI runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.targets import TargetSession

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _session(cfg: dict[str, Any], tmp_path: Path) -> TargetSession:
    return TargetSession(cfg, store=tmp_path / "replies.sqlite")


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _running(marker: str) -> list[str]:
    """Command lines of the processes still running that carry ``marker``."""
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines()
            if marker in line and "ps -eo" not in line and not line.lstrip().startswith("Z")]


def _wait_gone(marker: str, within: float = 5.0) -> list[str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = _running(marker)
        if not left:
            return []
        time.sleep(0.1)
    return _running(marker)


def _python(tmp_path: Path, code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (ragmeter from this checkout); a hang fails the test."""
    script = _script(tmp_path, f"run_{uuid.uuid4().hex[:6]}.py", code)
    try:
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout, env={**ENV, "RAGMETER_CACHE_DIR":
                                                    str(tmp_path / "cache")}, cwd=tmp_path)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"ragmeter did not exit within {timeout} s: {exc.stdout!r} {exc.stderr!r}")


# --------------------------------------------------------------------------- python kind
def test_a_function_that_never_returns_is_a_timeout_and_cannot_keep_the_process_alive(
        tmp_path: Path) -> None:
    _script(tmp_path, "hang_rag.py", """
        import threading

        def answer(question):
            threading.Event().wait()      # never returns
    """)
    proc = _python(tmp_path, """
        import json, sys, time
        sys.path.insert(0, ".")
        import ragmeter
        t0 = time.perf_counter()
        res = ragmeter.evaluate([{"id": f"q{i}", "question": f"q{i}", "reference": "r"}
                                 for i in range(3)],
                                target={"kind": "python", "function": "hang_rag:answer",
                                        "timeout_s": 0.5, "max_retries": 0},
                                metrics=["rouge_l"], record=False)
        agg = res["rouge_l"].aggregate
        print(json.dumps({"n": agg.n, "reasons": dict(agg.unscored_by_reason),
                          "took": time.perf_counter() - t0}))
    """, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["n"] == 0
    assert list(got["reasons"]) and all(r.startswith("target_timeout") for r in got["reasons"])
    assert got["took"] < 10


def test_async_function_blocking_its_loop_is_a_timeout(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    async def blocks(question: str) -> str:
        release.wait(30)        # blocks the loop it runs on, not ragmeter's
        return "late"

    t0 = time.perf_counter()
    try:
        out = _session({"kind": "python", "function": blocks, "timeout_s": 0.3,
                        "max_retries": 0}, tmp_path).answer([Sample("a", "q")])
    finally:
        release.set()
    assert out[0].metadata["target_error"].startswith("target_timeout")
    assert time.perf_counter() - t0 < 5


def test_system_exit_from_a_function_is_that_samples_error(tmp_path: Path) -> None:
    def leaves(question: str) -> str:
        if question == "bad":
            raise SystemExit(7)
        if question == "ctrl-c":
            raise KeyboardInterrupt
        return "fine"

    async def leaves_async(question: str) -> str:
        raise SystemExit(9)

    s = _session({"kind": "python", "function": leaves}, tmp_path)
    out = s.answer([Sample("a", "bad"), Sample("b", "ok"), Sample("c", "ctrl-c")])
    assert out[0].metadata["target_error"] == "target_error: SystemExit: 7"
    assert out[1].response == "fine"
    assert out[2].metadata["target_error"].startswith("target_error: KeyboardInterrupt")
    out = _session({"kind": "python", "function": leaves_async}, tmp_path).answer(
        [Sample("a", "q")])
    assert out[0].metadata["target_error"] == "target_error: SystemExit: 9"


def test_system_exit_does_not_become_ragmeters_exit_code(tmp_path: Path) -> None:
    _script(tmp_path, "exit_rag.py", """
        def answer(question):
            raise SystemExit(7)
    """)
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"id": "a", "user_input": "q", "reference": "r"}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "ragmeter", "score", "generation", "--samples",
                           str(samples), "--metrics", "rouge_l", "--target",
                           "exit_rag.py:answer"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**ENV, "RAGMETER_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 3, proc.stdout + proc.stderr    # lost work, not exit 7
    assert "target_error" in proc.stderr


def test_lone_surrogate_from_a_function_is_replaced_and_counted(tmp_path: Path) -> None:
    def odd(question: str) -> dict[str, Any]:
        return {"answer": "ok \ud800 then", "contexts": ["a\udfffb"],
                "metadata": {"k\ud801": "v"}}

    s = _session({"kind": "python", "function": odd}, tmp_path)
    out = s.answer([Sample("a", "q")])
    assert out[0].response == "ok \ufffd then"
    assert out[0].retrieved_contexts == ["a\ufffdb"]
    assert out[0].metadata["target_call"]["invalid_text"] == 3
    again = _session({"kind": "python", "function": odd}, tmp_path)
    again.caller.mode = "replay"      # the reply was stored: it is valid UTF-8
    assert again.answer([Sample("a", "q")])[0].response == "ok \ufffd then"


def test_a_reply_over_max_reply_bytes_is_unscored(tmp_path: Path) -> None:
    def huge(question: str) -> dict[str, Any]:
        return {"answer": "x" * 5000, "contexts": ["y" * 10]}

    s = _session({"kind": "python", "function": huge, "max_reply_bytes": 4096}, tmp_path)
    out = s.answer([Sample("a", "q")])
    assert out[0].metadata["target_error"].startswith("target_reply_too_large")
    s = _session({"kind": "python", "function": huge, "max_reply_bytes": 8192}, tmp_path)
    assert s.answer([Sample("a", "q")])[0].response == "x" * 5000


# --------------------------------------------------------------------------- command kind
def test_timed_out_commands_leave_no_process_behind(tmp_path: Path) -> None:
    marker = f"{31 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    s = _session({"kind": "command", "command": ["sh", "-c", f"sleep {marker}; echo {{}}"],
                  "timeout_s": 0.5, "max_retries": 0}, tmp_path)
    out = s.answer([Sample(f"q{i}", "q") for i in range(4)])
    assert all(x.metadata["target_error"].startswith("target_timeout") for x in out)
    assert _wait_gone(f"sleep {marker}") == []


def test_a_child_holding_stdout_does_not_hold_the_call(tmp_path: Path) -> None:
    marker = f"{41 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    prog = _script(tmp_path, "leaves_child.sh", f"""
        cat > /dev/null
        sleep {marker} &
        echo '{{"answer": "done"}}'
    """)
    s = _session({"kind": "command", "command": ["sh", str(prog)], "timeout_s": 20,
                  "max_retries": 0}, tmp_path)
    t0 = time.perf_counter()
    out = s.answer([Sample("a", "q")])
    assert out[0].response == "done", out[0].metadata.get("target_error")
    assert time.perf_counter() - t0 < 10
    assert _wait_gone(f"sleep {marker}") == []


def test_a_json_lines_program_that_stops_answering_is_restarted(tmp_path: Path) -> None:
    prog = _script(tmp_path, "mute.py", """
        import json, sys, threading
        for line in sys.stdin:
            req = json.loads(line)
            if req["question"] == "mute":
                threading.Event().wait()      # stops answering anything, for good
            print(json.dumps({"answer": "a:" + req["question"], "call": req["call"]}),
                  flush=True)
    """)
    s = _session({"kind": "command", "command": [sys.executable, str(prog)], "jsonl": True,
                  "timeout_s": 1.0, "max_retries": 1, "retry_initial_s": 0.01,
                  "max_concurrency": 1}, tmp_path)
    t0 = time.perf_counter()
    out = s.answer([Sample("a", "one"), Sample("b", "mute"), Sample("c", "two")])
    assert out[0].response == "a:one" and out[2].response == "a:two"
    assert out[1].metadata["target_error"].startswith("target_timeout")
    assert time.perf_counter() - t0 < 15


def test_a_json_lines_program_whose_child_keeps_stdout_open_ends(tmp_path: Path) -> None:
    marker = f"{251 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    prog = _script(tmp_path, "forks.sh", f"""
        sleep {marker} &
        while read -r line; do
          n=$(printf '%s' "$line" | sed 's/.*"call": *\\([0-9]*\\).*/\\1/')
          echo "{{\\"answer\\": \\"ok\\", \\"call\\": $n}}"
        done
        trap '' TERM
        sleep {marker}
    """)
    proc = _python(tmp_path, f"""
        import json, ragmeter
        res = ragmeter.evaluate([{{"id": "a", "question": "q", "reference": "ok"}}],
                                target={{"kind": "command", "command": ["sh", {str(prog)!r}],
                                        "jsonl": True, "timeout_s": 5}},
                                metrics=["rouge_l"], record=False)
        print(json.dumps({{"mean": res["rouge_l"].aggregate.mean}}))
    """, timeout=40)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["mean"] == 1.0
    assert _wait_gone(f"sleep {marker}") == []


def test_an_interrupted_run_leaves_no_command_running(tmp_path: Path) -> None:
    marker = f"{61 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    script = _script(tmp_path, "interrupted.py", f"""
        import ragmeter
        ragmeter.evaluate([{{"id": f"q{{i}}", "question": "q", "reference": "r"}}
                           for i in range(4)],
                          target={{"kind": "command", "command": ["sh", "-c",
                                  "sleep {marker}"], "timeout_s": 120}},
                          metrics=["rouge_l"], record=False)
    """)
    proc = subprocess.Popen([sys.executable, str(script)], env=ENV, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # Ctrl-C as a terminal gives it, even from a session started in
                            # the background of a shell without job control (SIGINT ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not _running(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(f"sleep {marker}"), "the command never started"
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("ragmeter did not exit after an interrupt")
    assert _wait_gone(f"sleep {marker}") == []


def test_command_replies_over_the_limit_and_invalid_utf8(tmp_path: Path) -> None:
    big = _script(tmp_path, "big.py", """
        import json, sys
        sys.stdin.read()
        print(json.dumps({"answer": "x" * 100000}))
    """)
    s = _session({"kind": "command", "command": [sys.executable, str(big)],
                  "max_reply_bytes": 10000}, tmp_path)
    assert s.answer([Sample("a", "q")])[0].metadata["target_error"].startswith(
        "target_reply_too_large")
    odd = _script(tmp_path, "odd.py", r"""
        import sys
        sys.stdin.read()
        sys.stdout.buffer.write(b'{"answer": "bad \xff byte and \\ud800 escape"}\n')
    """)
    out = _session({"kind": "command", "command": [sys.executable, str(odd)]},
                   tmp_path).answer([Sample("a", "q")])
    assert out[0].response == "bad \ufffd byte and \ufffd escape"
    assert out[0].metadata["target_call"]["invalid_text"] == 2


def test_json_lines_reply_over_the_limit_is_that_calls_reason(tmp_path: Path) -> None:
    prog = _script(tmp_path, "lines.py", """
        import json, sys
        for line in sys.stdin:
            req = json.loads(line)
            size = 50000 if req["question"] == "big" else 10
            print(json.dumps({"call": req["call"], "answer": "y" * size}), flush=True)
    """)
    s = _session({"kind": "command", "command": [sys.executable, str(prog)], "jsonl": True,
                  "max_reply_bytes": 10000, "max_concurrency": 1}, tmp_path)
    out = s.answer([Sample("a", "small"), Sample("b", "big"), Sample("c", "small2")])
    assert out[0].response == "y" * 10 and out[2].response == "y" * 10
    assert out[1].metadata["target_error"].startswith("target_reply_too_large")


def test_a_program_that_is_not_installed_is_a_config_error(tmp_path: Path) -> None:
    from ragmeter.errors import ConfigError

    with pytest.raises(ConfigError, match=r"target\.command.*not on the PATH"):
        _session({"kind": "command", "command": ["no-such-rag-cli-xyz", "--x"]}, tmp_path)


def test_a_replay_needs_no_program(tmp_path: Path) -> None:
    prog = tmp_path / "rag.sh"
    prog.write_text("#!/bin/sh\ncat > /dev/null\necho '{\"answer\": \"recorded\"}'\n",
                    encoding="utf-8")
    prog.chmod(0o755)
    cfg = {"kind": "command", "command": [str(prog)]}
    assert _session(cfg, tmp_path).answer([Sample("a", "q")])[0].response == "recorded"
    prog.unlink()                       # the system is gone; its replies are recorded
    replay = TargetSession(cfg, store=tmp_path / "replies.sqlite", mode="replay")
    assert replay.answer([Sample("a", "q")])[0].response == "recorded"
