"""RecordedJudge: record through a real judge, replay offline by stable request hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.errors import ConfigError, DataError
from ragmeter.judges import (
    Judge,
    JudgeConfig,
    JudgeRequest,
    RecordedJudge,
    ScriptedJudge,
    make_judge,
)
from ragmeter.judges.cache import request_hash

FIXTURE = Path(__file__).parent / "fixtures" / "judge" / "recorded_yes_no.jsonl"
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["verdict"]}


def req(text: str) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": text},), schema=SCHEMA,
                        prompt_version="rec@1", metric="m")


def test_record_then_replay(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    inner = ScriptedJudge(lambda r: {"verdict": "yes" if "да" in r.messages[0]["content"]
                                     else "no"})
    rec = RecordedJudge(path, record_with=inner)
    first = rec.ask_many([req("да"), req("нет"), req("bad")])
    assert [r.data for r in first] == [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "no"}]
    assert inner.scripted.calls == 3
    assert len(path.read_text().splitlines()) == 3
    replay = RecordedJudge(path)  # no real judge: offline
    assert isinstance(replay, Judge)
    again = replay.ask_many([req("нет"), req("да")])
    assert [r.data for r in again] == [{"verdict": "no"}, {"verdict": "yes"}]
    assert all(r.extra["replayed"] and r.cached for r in again)
    assert replay.last_stats.calls == 0 and replay.last_stats.cached == 2
    missing = replay.ask_many([req("new")])[0]
    assert missing.reason == "backend_error" and "no recorded reply" in (missing.detail or "")
    with pytest.raises(ConfigError, match="re-record"):
        RecordedJudge(path, strict=True).ask_many([req("new")])
    # recording more appends, without asking again for known requests
    RecordedJudge(path, record_with=inner).ask_many([req("да"), req("new")])
    assert inner.scripted.calls == 4 and len(path.read_text().splitlines()) == 4


def test_checked_in_fixture_replays() -> None:
    judge = make_judge(JudgeConfig(name="fx", backend="recorded", record_path=str(FIXTURE),
                                   api_key_env=None))
    replies = judge.ask_many([req("Is Paris in France?"), req("Is Paris in Peru?")])
    assert [r.data["verdict"] for r in replies] == ["yes", "no"]


def test_hash_is_stable_across_processes() -> None:
    # the fixture stores the hash; if the hashing scheme changed, this fails loudly
    line = json.loads(FIXTURE.read_text().splitlines()[0])
    assert line["request_hash"] == request_hash(req("Is Paris in France?"))


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        RecordedJudge(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request_hash": "x", "reply": {}}\nnot json\n{"reply": {}}\n')
    with pytest.raises(DataError) as err:
        RecordedJudge(bad)
    assert "bad.jsonl:2" in str(err.value)
