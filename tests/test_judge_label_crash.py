"""A labelling session killed with SIGKILL loses no saved label: the real `ragmeter label`
process (its page's POSTs over a real socket, and the terminal fallback over a pipe) is killed
mid-session; every label it acknowledged is in the file, and the next session resumes after
them."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from ragmeter.journal import Journal
from ragmeter.judge_trust.labels import load_labels
from test_judge_label_session import make_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def start_server(url: str, labels: Path, port: int, rater: str = "anna",
                 *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "label", "r1",
                             "--labels", str(labels), "--metric", "faithfulness", "--store", url,
                             "--port", str(port), "--rater", rater, "--lang", "en", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env())
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/label", timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stdout.read().decode() if proc.stdout else "") from None
            time.sleep(0.2)
    raise TimeoutError("ragmeter label did not start")


def page_token(base: str) -> str:
    html = urllib.request.urlopen(base + "/label?rater=anna", timeout=10).read().decode()
    data = re.search(r'<script type="application/json" id="rm-data">(.*?)</script>', html, re.S)
    assert data is not None
    return str(json.loads(data.group(1))["token"])


def get(base: str, path: str) -> dict:
    return json.loads(urllib.request.urlopen(base + path, timeout=10).read())


def post(base: str, token: str, body: dict) -> dict:
    req = urllib.request.Request(base + "/api/label", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "X-Ragmeter-Token": token,
                                          "Origin": base}, method="POST")
    return json.loads(urllib.request.urlopen(req, timeout=10).read())


def test_kill_9_of_the_labelling_server_loses_no_acknowledged_label(tmp_path: Path) -> None:
    url = make_run(tmp_path, n=1000)
    labels = tmp_path / "labels.jsonl"
    port = _free_port()
    proc = start_server(url, labels, port)
    base = f"http://127.0.0.1:{port}"
    acked: list[str] = []
    try:
        token = page_token(base)
        v = get(base, "/api/label?rater=anna")

        def kill_mid_session() -> None:   # while answers keep coming
            while len(acked) < 30 and proc.poll() is None:
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)

        killer = threading.Thread(target=kill_mid_session, daemon=True)
        killer.start()
        try:
            while True:   # label as fast as the server answers, until it is killed
                sid = v["item"]["sample_id"]
                v = post(base, token, {"rater": "anna", "index": v["index"], "sample_id": sid,
                                       "action": "label", "label": len(acked) % 2})
                acked.append(sid)
        except OSError:
            pass
        killer.join(30)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert 30 <= len(acked) < 1000
    Journal(labels).close()      # what the next session does first: a torn tail is dropped
    saved = load_labels(labels).values("faithfulness")
    assert set(acked) <= set(saved)
    assert all(saved[sid] == i % 2 for i, sid in enumerate(acked))
    assert len(saved) - len(acked) <= 1   # at most the answer in flight when it was killed
    # the next session resumes after the saved labels, with the same order
    proc = start_server(url, labels, port)
    try:
        v = get(base, "/api/label?rater=anna")
        assert v["index"] == len(saved) and v["labelled"] == len(saved)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0].decode()
    assert f"anna {len(saved)}" in out    # the summary on the way out


def test_kill_9_of_the_terminal_session_loses_no_saved_label(tmp_path: Path) -> None:
    url = make_run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "label", "r1",
                             "--labels", str(labels), "--metric", "faithfulness", "--store", url,
                             "--terminal", "--rater", "vera", "--lang", "en"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_env(), text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    saved_lines = 0
    try:
        for k in range(7):
            proc.stdin.write(f"{k % 2}\n")
            proc.stdin.flush()
            while True:   # each answer is acknowledged with "saved" once it is on disk
                line = proc.stdout.readline()
                assert line, "the terminal session ended early"
                if line.strip() == "saved":
                    saved_lines += 1
                    break
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    Journal(labels).close()
    saved = load_labels(labels).by_rater("faithfulness")["vera"]
    assert saved_lines == 7 and len(saved) == 7
    assert sorted(saved.values()).count(1.0) == 3
