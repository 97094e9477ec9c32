"""A kill during ``ragmeter testset generate`` loses only the calls in flight.

A real ``ragmeter testset generate`` process asks the fake OpenAI-compatible server over HTTP with 8
calls in flight: the server answers the first 12 requests (a scripted generator reads their
passages) and holds every later one. Once the 12 replies are out, the process is killed with
SIGKILL. Every one of the 12 must be in the progress file, and ``--resume`` against a server
that answers everything must ask again exactly the calls that were in flight — none of the 12
finished ones (before, replies were written wave by wave: the 12 finished calls of an
unfinished wave of 16 were asked again).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conftest import needs_extra
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

ROOT = Path(__file__).parents[1]
FIX = ROOT / "tests" / "fixtures" / "synth"
sys.path.insert(0, str(FIX))

from scripted_generator import ScriptedGenerator  # noqa: E402

ANSWERED = 12
IN_FLIGHT = 8


class Recorder:
    """The server side: which requests (by their messages) got an answer."""

    def __init__(self) -> None:
        self.gen = ScriptedGenerator()
        self.answered: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
        with self.lock:
            self.answered.append(_key(body))
        return self.gen(SimpleNamespace(schema=schema or {}, messages=body["messages"]))


def _key(body: dict[str, Any] | str) -> str:
    if isinstance(body, str):
        body = json.loads(body)
    assert isinstance(body, dict)
    return json.dumps(body["messages"], ensure_ascii=False, sort_keys=True)


def _generate(url: str, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           "RAGMETER_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "ragmeter", "testset", "generate", "--corpus",
           str(FIX / "corpus_ru.jsonl"), "--out", str(tmp_path / "set.jsonl"), "--n", "12",
           "--seed", "3", "--generator-url", url, "--generator-model", "m",
           "--generator-key-env", "", "--concurrency", str(IN_FLIGHT), "--embedder", "none",
           *extra]
    return subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _replies(progress: Path) -> list[dict[str, Any]]:
    if not progress.exists():
        return []
    out = []
    for line in progress.read_text("utf-8").splitlines()[1:]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue   # a line being written
        if rec.get("kind") == "reply":
            out.append(rec)
    return out


def test_resume_after_a_kill_reasks_only_the_calls_in_flight(tmp_path: Path) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    progress = tmp_path / "set.progress.jsonl"
    first = Recorder()
    script = ["ok"] * ANSWERED + ["timeout"] * 500   # "timeout": held for hang_s
    with MockJudgeServer(MockConfig(script=script, hang_s=120, reply_fn=first,
                                    record_bodies=True)) as srv:
        proc = _generate(srv.base_url, tmp_path)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            st = srv.stats()
            if st["ok"] >= ANSWERED and st["in_flight"] >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        settle = time.monotonic() + 10   # the client writes what it received
        while time.monotonic() < settle and len(_replies(progress)) < ANSWERED:
            time.sleep(0.05)
        in_flight = srv.stats()["in_flight"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        arrived = [_key(b) for b in srv.received]
    assert proc.returncode == -signal.SIGKILL
    assert len(first.answered) == ANSWERED and in_flight >= 1
    held = set(arrived) - set(first.answered)   # (a slow call may also have a hedge)
    assert 1 <= len(held) <= in_flight
    logged = _replies(progress)
    assert len(logged) == ANSWERED, f"{len(logged)} of {ANSWERED} finished replies on disk"

    second = Recorder()
    with MockJudgeServer(MockConfig(reply_fn=second)) as srv:
        proc = _generate(srv.base_url, tmp_path, "--resume")
        _, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 3), err[-3000:]
    reasked = set(first.answered) & set(second.answered)
    assert not reasked, f"{len(reasked)} finished call(s) asked again"
    assert held <= set(second.answered)   # the calls in flight are asked again
    after = _replies(progress)
    keys = [(r["stage"], r["key"]) for r in after]
    assert len(keys) == len(set(keys)), "a finished call was logged twice"
