"""A run interrupted in the middle of a batch of target calls, then ``--resume``: the
questions the target had already answered are not asked again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragmeter.cli.app import run as cli_run

BOT = '''
import json, os
from pathlib import Path

LOG = Path(os.environ["RAG_TEST_CALL_LOG"])


def answer(question):
    calls = LOG.read_text().splitlines() if LOG.exists() else []
    if os.environ.get("RAG_TEST_STOP_AT") and len(calls) + 1 == int(os.environ["RAG_TEST_STOP_AT"]):
        os.environ.pop("RAG_TEST_STOP_AT")
        raise KeyboardInterrupt   # the process is stopped in the middle of the batch
    LOG.write_text("\\n".join([*calls, question]) + "\\n")
    return {"answer": "ответ: " + question, "context_ids": ["d#0"]}
'''


# the interrupt leaves the interrupted batch's coroutines to be collected after its loop closed
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_resume_asks_no_finished_question_again(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    rows = [{"id": f"q{i}", "question": f"вопрос {i}", "type": "fact", "gold_doc_ids": ["d"],
             "reference": "ответ"} for i in range(10)]
    (tmp_path / "evalset.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "bench.yaml").write_text(yaml.safe_dump({
        "name": "resume", "batch_size": 10, "store": "store.sqlite",
        "datasets": [{"path": "evalset.jsonl", "format": "evalset"}],
        "target": {"kind": "python", "function": "bot.py:answer", "max_concurrency": 1},
        "tiers": [{"name": "e2e", "metrics": ["rouge_l"]}]}), encoding="utf-8")
    log = tmp_path / "calls.log"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAG_TEST_CALL_LOG", str(log))
    monkeypatch.setenv("RAG_TEST_STOP_AT", "7")
    code = cli_run(["run", "bench.yaml", "-q", "--run-id", "r1"])
    assert code != 0
    assert len(log.read_text().splitlines()) == 6            # six answered, the 7th stopped
    capsys.readouterr()
    assert cli_run(["run", "bench.yaml", "-q", "--resume", "r1", "--json"]) == 0
    asked = log.read_text().splitlines()
    assert len(asked) == 10 and len(set(asked)) == 10        # 0 finished questions re-asked
    out = json.loads(capsys.readouterr().out)
    res = out["tiers"]["e2e"]["results"]
    rouge = next(r for r in res if r["name"] == "target")["results"]["rouge_l"]
    assert rouge["aggregate"]["n"] == 10
