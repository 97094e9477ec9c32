"""JudgeConfig validation (ConfigError names the key) and config files (incl. seed 001 YAML)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import ConfigError
from ragmeter.judges import JudgeConfig, RetryPolicy, make_judge
from ragmeter.judges.config import configs_from_mapping, load_judge_configs

OK = dict(name="j", backend="openai", base_url="https://openrouter.ai/api/v1", model="m")


@pytest.mark.parametrize(("change", "key"), [
    (dict(backend="bogus"), "backend"),
    (dict(base_url=None), "base_url"),
    (dict(base_url="openrouter.ai"), "base_url"),
    (dict(model=""), "model"),
    (dict(temperature=-1.0), "temperature"),
    (dict(temperature="hot"), "temperature"),
    (dict(max_tokens=0), "max_tokens"),
    (dict(timeout_s=0), "timeout_s"),
    (dict(max_concurrency=0), "max_concurrency"),
    (dict(price_in=-1.0), "price_in"),
    (dict(seed=1.5), "seed"),
    (dict(language="de"), "language"),
    (dict(retry=RetryPolicy(initial=5, max=1)), "retry.max"),
    (dict(retry=RetryPolicy(max_retries=-1)), "retry.max_retries"),
    (dict(retry=RetryPolicy(multiplier=0.5)), "retry.multiplier"),
    (dict(backend="gguf", gguf_path=None), "gguf_path"),
    (dict(backend="recorded"), "record_path"),
])
def test_validation_names_the_key(change: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        JudgeConfig(**{**OK, **change})  # type: ignore[arg-type]
    assert err.value.key == key
    assert f"'{key}'" in str(err.value)


def test_retry_delays() -> None:
    r = RetryPolicy()  # seed 001: 2 s → 30 s, ×2
    assert [r.delay(i) for i in range(1, 7)] == [2, 4, 8, 16, 30, 30]


def test_from_dict_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="'modle'"):
        JudgeConfig.from_dict({**OK, "modle": "x"})
    with pytest.raises(ConfigError, match=r"retry\.inital"):
        JudgeConfig.from_dict({**OK, "retry": {"inital": 1}})
    cfg = JudgeConfig.from_dict({**OK, "retry": {"initial": 0.5, "max": 4}})
    assert cfg.retry.initial == 0.5 and cfg.retry.max == 4


def test_judges_list_with_defaults() -> None:
    cfgs = configs_from_mapping({"defaults": {"backend": "openai", "base_url": "http://h/v1",
                                              "retry": {"max_retries": 2}},
                                 "judges": [{"name": "a", "model": "x"},
                                            {"name": "b", "model": "y",
                                             "retry": {"initial": 1.0}}]})
    assert [c.model for c in cfgs] == ["x", "y"]
    assert cfgs[1].retry.max_retries == 2 and cfgs[1].retry.initial == 1.0


SPRING = """
spring:
  ai:
    retry:
      on-http-codes: [ 429 ]
      backoff:
        initial-interval: 2000ms
        max-interval: 30000ms
        multiplier: 2
    openai:
      base-url: https://openrouter.ai/api
      api-key: ${OPENROUTER_API_KEY}
      chat:
        options:
          model: google/gemini-2.5-flash
          temperature: 0.0
    chat-models:
      default-options:
        temperature: 0.0
        max-tokens: 1000
      list:
        - { id: anthropic/claude-4.5-sonnet }
        - { id: google/gemini-2.5-flash }
        - { id: openai/gpt-4o-mini }
"""


def test_seed_001_application_yaml(tmp_path: Path) -> None:
    p = tmp_path / "application.yaml"
    p.write_text(SPRING)
    cfgs = load_judge_configs(p)
    assert [c.model for c in cfgs] == ["anthropic/claude-4.5-sonnet", "google/gemini-2.5-flash",
                                       "openai/gpt-4o-mini"]
    c = cfgs[0]
    assert c.base_url == "https://openrouter.ai/api/v1"
    assert c.api_key_env == "OPENROUTER_API_KEY" and c.max_tokens == 1000
    assert (c.retry.initial, c.retry.max, c.retry.multiplier) == (2.0, 30.0, 2.0)
    assert len({make_judge(x).name for x in cfgs}) == 3  # type: ignore[attr-defined]


def test_literal_key_in_spring_yaml_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(SPRING.replace("${OPENROUTER_API_KEY}", "sk-literal"))
    with pytest.raises(ConfigError, match="environment variable"):
        load_judge_configs(p)


def test_price_table_fills_unset_prices() -> None:
    cfgs = configs_from_mapping({
        "prices": {"x": [0.3, 2.5], "y": {"in": 1.0, "out": 4.0}},
        "defaults": {"backend": "openai", "base_url": "http://h/v1"},
        "judges": [{"name": "a", "model": "x"}, {"name": "b", "model": "y"},
                   {"name": "c", "model": "x", "price_in": 9.0}],
    })
    assert [(c.price_in, c.price_out) for c in cfgs] == [(0.3, 2.5), (1.0, 4.0), (9.0, 0.0)]
    with pytest.raises(ConfigError, match=r"prices\.x"):
        configs_from_mapping({"prices": {"x": [1]}, "backend": "openai",
                              "base_url": "http://h/v1", "model": "x"})


def test_cost_from_prices_in_replies() -> None:
    from ragmeter.judges import JudgeRequest, ScriptedJudge
    from ragmeter.judges.backend import Completion

    cfg = JudgeConfig(name="p", backend="scripted", model="p", api_key_env=None, no_cache=True,
                      price_in=2.0, price_out=10.0)
    judge = ScriptedJudge(lambda r: Completion('{"v": 1}', tokens_in=1000, tokens_out=100),
                          config=cfg)
    req = JudgeRequest(messages=({"role": "user", "content": "x"},),
                       schema={"type": "object"}, prompt_version="p@1")
    rep = judge.ask_many([req])[0]
    assert rep.cost == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
    assert judge.last_stats.cost == pytest.approx(rep.cost)
    assert judge.last_stats.tokens_in == 1000 and judge.last_stats.p50_s is not None
