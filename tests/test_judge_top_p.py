"""``top_p`` in judge configs: validated, sent and keyed only when set.

Requests go over real HTTP to the mock judge server (which records the bodies it receives);
the default cache key is pinned to the value computed before ``top_p`` existed.
"""

from __future__ import annotations

import json
import math

import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.config import JudgeConfig, configs_from_mapping
from ragmeter.judges.factory import make_judge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

REQ = JudgeRequest(messages=({"role": "user", "content": "Is Paris in France?"},),
                   schema={"type": "object", "properties": {"v": {"type": "string"}}},
                   prompt_version="probe/v1")


def _cfg(**kw: object) -> JudgeConfig:
    return JudgeConfig(backend="openai", base_url="http://127.0.0.1:9/v1", model="m",
                       no_cache=True, **kw)  # type: ignore[arg-type]


def test_default_cache_key_is_unchanged() -> None:
    assert make_judge(_cfg()).key_for(REQ) == (
        "81c614e4e57773eefd397eaa3c4335cbcdb95ec45aa09417eb8ebeb327499eb5")


def test_top_p_enters_the_cache_key_when_set() -> None:
    keys = {make_judge(_cfg(top_p=p)).key_for(REQ) for p in (None, 0.9, 0.5)}
    assert len(keys) == 3


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, math.nan, "high", True])
def test_bad_top_p_is_a_clear_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="top_p"):
        configs_from_mapping({"backend": "openai", "base_url": "http://x/v1", "model": "m",
                              "top_p": bad})


def test_top_p_from_mappings_and_spring_config() -> None:
    (cfg,) = configs_from_mapping({"backend": "openai", "base_url": "http://x/v1",
                                   "model": "m", "top_p": 1})
    assert cfg.top_p == 1
    spring = {"spring": {"ai": {"openai": {"base-url": "http://x"},
                                "chat-models": {"default-options": {"top-p": 0.8},
                                                "list": [{"id": "a/b"}]}}}}
    assert configs_from_mapping(spring)[0].top_p == 0.8
    spring["spring"]["ai"]["chat-models"]["default-options"] = {}  # type: ignore[index]
    assert configs_from_mapping(spring)[0].top_p is None


def test_top_p_is_sent_only_when_set_and_signed() -> None:
    with MockJudgeServer(MockConfig(record_bodies=True)) as srv:
        bodies = []
        for top_p in (None, 0.9):
            cfg = JudgeConfig(backend="openai", base_url=srv.base_url, model="m",
                              api_key_env=None, no_cache=True, top_p=top_p)
            res = evaluate_generation(
                [Sample(id="s", user_input="Where is Paris?", response="In France.")],
                ["answer_relevance"], judge=make_judge(cfg))
            bodies.append(json.loads(srv.received[-1]))
            sig = res["answer_relevance"].signature
            assert sig.get("judge_top_p") == (None if top_p is None else "0.9")
    assert "top_p" not in bodies[0]
    assert bodies[1]["top_p"] == 0.9
