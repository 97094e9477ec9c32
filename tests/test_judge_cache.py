"""Cache: identical rerun makes 0 calls; the key covers what changes output and nothing else."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, ScriptedJudge, make_judge
from ragmeter.judges.cache import JudgeCache, cache_key, request_hash
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

#: request_hash of a fixed request before the key and hash shared one serialisation
KNOWN_HASH = "0aa5eae629780ae1acad7045ce72beefad657c8cab19a9338665e0f660153bec"

SCHEMA = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
REQ = JudgeRequest(messages=({"role": "user", "content": "hello"},), schema=SCHEMA,
                   prompt_version="p@1")
BASE = dict(backend="openai", model="m", temperature=0.0, seed=0, max_tokens=100)


def key(req: JudgeRequest = REQ, **kw: object) -> str:
    return cache_key(req, **{**BASE, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("change", [
    dict(backend="gguf"), dict(model="m2"), dict(temperature=0.7), dict(seed=1),
    dict(seed=None), dict(max_tokens=50),
])
def test_key_changes_with_output_relevant_settings(change: dict) -> None:
    assert key(**change) != key()


@pytest.mark.parametrize("req2", [
    replace(REQ, messages=({"role": "user", "content": "hello!"},)),
    replace(REQ, messages=({"role": "system", "content": "hello"},)),
    replace(REQ, schema={**SCHEMA, "required": []}),
    replace(REQ, prompt_version="p@2"),
    replace(REQ, max_tokens=7),
    replace(REQ, temperature=0.5),
])
def test_key_changes_with_request(req2: JudgeRequest) -> None:
    assert key(req2) != key()


def test_key_ignores_labels_and_equal_effective_settings() -> None:
    # metric / sample id are labels; request max_tokens equal to the default changes nothing
    assert key(replace(REQ, metric="x", sample_id="7")) == key()
    assert key(replace(REQ, max_tokens=100, temperature=0.0)) == key()
    assert request_hash(replace(REQ, metric="x")) == request_hash(REQ)


def test_key_ignores_retries_timeouts_concurrency_spelling_and_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K1", "sk-one")
    monkeypatch.setenv("K2", "sk-two")
    a = JudgeConfig(name="a", backend="openai", base_url="http://127.0.0.1:1/v1", model="m",
                    api_key_env="K1", cache_dir=str(tmp_path))
    # the same endpoint spelled differently, another key, other retries/timeouts/concurrency
    b = a.with_(name="b", base_url="HTTP://127.0.0.1:1/v1/", api_key_env="K2", timeout_s=5,
                max_concurrency=3, retry=RetryPolicy(initial=0.1, max=1, max_retries=9))
    assert make_judge(a).key_for(REQ) == make_judge(b).key_for(REQ)  # type: ignore[attr-defined]
    # credentials in the URL are not part of the endpoint's identity
    creds = a.with_(base_url="http://user:pw@127.0.0.1:1/v1", api_key_env=None)
    assert make_judge(a).key_for(REQ) == make_judge(creds).key_for(REQ)  # type: ignore[attr-defined]
    for other in (a.with_(model="other"), a.with_(base_url="http://127.0.0.1:2/v1"),
                  a.with_(cache_namespace="staging")):
        assert make_judge(a).key_for(REQ) != make_judge(other).key_for(REQ)  # type: ignore[attr-defined]
    # the fake server never shares a namespace with a real endpoint at the same URL
    mock = a.with_(backend="mock")
    assert make_judge(a).key_for(REQ) != make_judge(mock).key_for(REQ)  # type: ignore[attr-defined]


@pytest.mark.parametrize("change", [dict(endpoint="http://b/v1"), dict(namespace="x")])
def test_key_changes_with_endpoint_and_namespace(change: dict) -> None:
    assert key(**change) != key()


def test_identical_rerun_makes_zero_calls(tmp_path: Path) -> None:
    reqs = [replace(REQ, messages=({"role": "user", "content": f"q{i}"},)) for i in range(20)]
    with MockJudgeServer(MockConfig(latency_ms=5)) as srv:
        cfg = JudgeConfig(name="c", backend="mock", base_url=srv.base_url, model="m",
                          api_key_env=None, cache_dir=str(tmp_path))
        first = make_judge(cfg).ask_many(reqs)
        n1 = srv.stats()["requests"]
        judge2 = make_judge(cfg)  # a new judge object, same cache directory
        second = judge2.ask_many(reqs)
        n2 = srv.stats()["requests"]
    assert n1 == 20 and n2 == 20  # 0 calls on the rerun
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    assert [r.data for r in first] == [r.data for r in second]
    assert judge2.last_stats.calls == 0 and judge2.last_stats.cached == 20  # type: ignore[attr-defined]


def test_no_cache_option_calls_again(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda r: {"v": 1},
                          config=JudgeConfig(name="s", backend="scripted", model="s",
                                             api_key_env=None, cache_dir=str(tmp_path),
                                             no_cache=True))
    judge.ask_many([REQ])
    judge.ask_many([REQ])
    assert judge.scripted.calls == 2
    assert not (tmp_path / "judge_cache.sqlite").exists()


def test_only_successful_replies_are_cached(tmp_path: Path) -> None:
    answers = iter(["not json", "still not json", '{"v": 3}'])
    cfg = JudgeConfig(name="s", backend="scripted", model="s", api_key_env=None,
                      cache_dir=str(tmp_path))
    judge = ScriptedJudge(lambda r: next(answers), config=cfg)
    bad = judge.ask_many([REQ])[0]
    assert bad.reason == "parse_error"
    assert len(JudgeCache(tmp_path)) == 0
    good = judge.ask_many([REQ])[0]  # not served from cache: asked again
    assert good.ok and good.data == {"v": 3} and not good.cached
    assert len(JudgeCache(tmp_path)) == 1
    third = judge.ask_many([REQ])[0]
    assert third.cached and third.data == {"v": 3}
    assert judge.scripted.calls == 3


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "env"))
    cfg = JudgeConfig(name="s", backend="scripted", model="s", api_key_env=None)
    judge = ScriptedJudge(lambda r: {"v": 1}, config=cfg)
    judge.ask_many([REQ])
    assert (tmp_path / "env" / "judge_cache.sqlite").exists()


def test_one_digest_gives_the_cache_key_and_the_request_hash() -> None:
    from ragmeter.judges.cache import digest

    settings = dict(backend="openai", model="m", temperature=0.0, seed=7, max_tokens=64,
                    endpoint="http://h", namespace="ns")
    for r in (JudgeRequest(messages=({"role": "user", "content": "Привет \"x\""},),
                           schema={"type": "object"}, prompt_version="p@1"),
              JudgeRequest(messages=({"role": "system", "content": "s"},
                                     {"role": "user", "content": "q"}),
                           schema={"type": "string"}, prompt_version="p@2", max_tokens=9,
                           temperature=0.5)):
        d = digest(r, **settings)  # type: ignore[arg-type]
        assert d.key == cache_key(r, **settings)  # type: ignore[arg-type]
        assert d.hash == request_hash(r)
    # the stored provenance hash of a known request stays what it was
    known = JudgeRequest(messages=({"role": "user", "content": "q"},), schema={"type": "object"},
                         prompt_version="v@1")
    assert request_hash(known) == KNOWN_HASH


@settings(max_examples=200, deadline=None)
@given(temperature=st.one_of(st.none(), st.floats(0, 2)), max_tokens=st.one_of(st.none(),
       st.integers(1, 4000)), seed=st.one_of(st.none(), st.integers(0, 99)),
       top_p=st.one_of(st.none(), st.floats(0, 1)), logprobs=st.booleans(),
       text=st.text(max_size=30), namespace=st.sampled_from(["default", "mock:x", "ж"]),
       system=st.sampled_from(["s", "Ты — судья. \"JSON\"\n", "s"]),
       role=st.sampled_from(["user", "assistant", "tool", "ж"]))
def test_cache_keys_are_hashes_of_the_canonical_json(temperature, max_tokens, seed, top_p,
                                                     logprobs, text, namespace, system,
                                                     role) -> None:
    """The key and the hash written out from their parts equal the SHA-256 of the canonical
    JSON of the whole dicts (sorted keys, no spaces) — the keys every stored reply has."""
    import hashlib
    import json

    from ragmeter.judges.base import JudgeRequest
    from ragmeter.judges.cache import CACHE_FORMAT, digest_and_messages

    def canonical(obj: object) -> str:
        return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False,
                                         separators=(",", ":")).encode()).hexdigest()

    req = JudgeRequest(messages=({"role": "system", "content": system},
                                 {"role": role, "content": text},
                                 {"role": "system", "content": system + text}),
                       schema={"type": "object", "title": "t@1"}, prompt_version="t@1",
                       max_tokens=max_tokens, temperature=temperature)
    dig, msgs = digest_and_messages(req, backend="openai", model="m", temperature=0.0, seed=seed,
                                    max_tokens=1000, endpoint="http://x", namespace=namespace,
                                    top_p=top_p, logprobs=logprobs)
    base = {"messages": list(req.messages), "schema": req.schema, "prompt_version": "t@1"}
    keyed = {**base, "format": CACHE_FORMAT, "namespace": namespace, "endpoint": "http://x",
             "backend": "openai", "model": "m",
             "temperature": temperature if temperature is not None else 0.0,
             "max_tokens": max_tokens if max_tokens is not None else 1000, "seed": seed}
    if top_p is not None:
        keyed["top_p"] = top_p
    if logprobs:
        keyed["logprobs"] = 1
    assert dig.key == canonical(keyed)
    assert dig.hash == canonical({**base, "max_tokens": max_tokens, "temperature": temperature})
    assert json.loads(msgs) == list(req.messages)
