"""The API key never appears in logs, reprs, replies, stats, errors or the cache file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, make_judge
from ragmeter.judges.cache import reply_to_json
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.secrets import mask, register_secret

SECRET = "sk-test-SECRET123"
SCHEMA = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}


def test_secret_never_leaks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("RAGMETER_TEST_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    reqs = [JudgeRequest(messages=({"role": "user", "content": f"x{i}"},), schema=SCHEMA,
                         prompt_version="s@1") for i in range(4)]
    texts: list[str] = []
    with MockJudgeServer(MockConfig(require_api_key=SECRET, script=["500", "invalid_json",
                                                                    "truncated"])) as srv:
        cfg = JudgeConfig(name="sec", backend="openai", base_url=srv.base_url, model="m",
                          api_key_env="RAGMETER_TEST_KEY", cache_dir=str(tmp_path),
                          retry=RetryPolicy(initial=0.01, max=0.01))
        judge = make_judge(cfg)
        replies = judge.ask_many(reqs)
        assert sum(r.ok for r in replies) >= 3  # the key was sent and accepted
        # a wrong key: the 401 path and its error detail
        monkeypatch.setenv("RAGMETER_TEST_KEY", SECRET + "X")
        bad = make_judge(cfg.with_(no_cache=True)).ask_many(reqs[:1])[0]
        assert bad.reason == "http_4xx"
        texts += [repr(judge), repr(cfg), repr(judge.backend), str(judge.last_stats.as_dict()),  # type: ignore[attr-defined]
                  repr(bad), str(reply_to_json(bad))]
    texts += [repr(r) for r in replies] + [str(reply_to_json(r)) for r in replies]
    texts += [rec.getMessage() for rec in caplog.records]
    for text in texts:
        assert SECRET not in text
    for f in tmp_path.iterdir():  # sqlite file, WAL, shm
        assert SECRET.encode() not in f.read_bytes()


def test_mask_replaces_a_registered_secret() -> None:
    register_secret(SECRET)
    assert mask(f"bad key {SECRET} here") == "bad key *** here"


def test_config_holds_only_the_variable_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_TEST_KEY", SECRET)
    cfg = JudgeConfig(name="x", backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                      api_key_env="RAGMETER_TEST_KEY")
    assert cfg.api_key() == SECRET
    assert SECRET not in repr(cfg) and SECRET not in str(vars(cfg))


def test_header_values_from_environment_stay_out_of_reprs(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("RAGMETER_TEST_KEY", SECRET)
    cfg = JudgeConfig(name="x", backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                      api_key_env=None,
                      extra_headers={"X-Title": "ragmeter", "X-Key": "${RAGMETER_TEST_KEY}"})
    assert cfg.headers() == {"X-Title": "ragmeter", "X-Key": SECRET}
    assert SECRET not in repr(cfg) and "RAGMETER_TEST_KEY" not in repr(cfg)
