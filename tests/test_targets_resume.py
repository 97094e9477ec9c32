"""``kill -9`` in the middle of a batch of target calls, then ``--resume``: the questions the
target had already answered are not asked again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ragmeter.cli.app import run as cli_run

ROOT = Path(__file__).resolve().parent.parent

BOT = '''
import os, time
from pathlib import Path

LOG = Path(os.environ["RAG_TEST_CALL_LOG"])


def answer(question):
    time.sleep(float(os.environ.get("RAG_TEST_SLEEP", "0")))
    with LOG.open("a", encoding="utf-8") as fh:
        fh.write(question + "\\n")
    return {"answer": "ответ: " + question, "context_ids": ["d#0"]}
'''


@pytest.mark.slow
def test_kill_9_then_resume_asks_no_finished_question_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    rows = [{"id": f"q{i}", "question": f"вопрос {i}", "type": "fact", "gold_doc_ids": ["d"],
             "reference": "ответ"} for i in range(12)]
    (tmp_path / "evalset.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "bench.yaml").write_text(yaml.safe_dump({
        "name": "resume", "batch_size": 12, "store": "store.sqlite",
        "datasets": [{"path": "evalset.jsonl", "format": "evalset"}],
        "target": {"kind": "python", "function": "bot.py:answer", "max_concurrency": 1},
        "tiers": [{"name": "e2e", "metrics": ["rouge_l"]}]}), encoding="utf-8")
    log = tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAG_TEST_CALL_LOG": str(log),
           "RAG_TEST_SLEEP": "0.3", "RAGMETER_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "ragmeter", "run", "bench.yaml", "-q",
                             "--run-id", "r1"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not log.exists() or len(log.read_text().splitlines()) < 5:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    answered = len(log.read_text().splitlines())
    assert 5 <= answered < 12
    monkeypatch.chdir(tmp_path)
    for key in ("RAG_TEST_CALL_LOG", "RAGMETER_CACHE_DIR"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("RAG_TEST_SLEEP", "0")
    assert cli_run(["run", "bench.yaml", "-q", "--resume", "r1", "--json"]) == 0
    asked = log.read_text().splitlines()
    # at most the one call in flight at the kill is asked twice
    assert len(set(asked)) == 12 and len(asked) <= 13
    out = json.loads(capsys.readouterr().out)
    res = out["tiers"]["e2e"]["results"]
    rouge = next(r for r in res if r["name"] == "target")["results"]["rouge_l"]
    assert rouge["aggregate"]["n"] == 12
