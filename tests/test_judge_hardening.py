"""The judge engine under real-world load: cache identity, sporadic 429s, hung calls,
endpoint pools, credentials in URLs, per-sample chains, write-through cache and kill -9."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragmeter.calls.limiter import AdaptiveLimiter
from ragmeter.errors import ConfigError, UsageError
from ragmeter.judges import (
    JudgeCache,
    JudgeConfig,
    JudgeRequest,
    RetryPolicy,
    ScriptedJudge,
    make_judge,
)
from ragmeter.judges.llm_judge import ask_chained
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

SCHEMA = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
FAST = RetryPolicy(initial=0.01, max=0.05, max_retries=2)


def req(i: int, **kw: Any) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": f"question {i}"},), schema=SCHEMA,
                        prompt_version="hard@1", metric="m", sample_id=str(i), **kw)


def dead_url() -> str:
    with socket.socket() as s:          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def cfg(base_url: Any, tmp_path: Path | None = None, **kw: Any) -> JudgeConfig:
    base: dict[str, Any] = dict(name="j", backend="openai", base_url=base_url, model="gpt-real",
                                api_key_env=None, retry=FAST, timeout_s=5.0)
    if tmp_path is None:
        base["no_cache"] = True
    else:
        base["cache_dir"] = str(tmp_path)
    return JudgeConfig(**{**base, **kw})


# -- cache identity ----------------------------------------------------------------------------
def test_mock_run_then_dead_endpoint_replays_nothing(tmp_path: Path) -> None:
    reqs = [req(i) for i in range(10)]
    with MockJudgeServer(MockConfig()) as srv:      # a dry run with the real model name
        first = make_judge(cfg(srv.base_url, tmp_path)).ask_many(reqs)
    assert all(r.ok for r in first)
    dead = make_judge(cfg(dead_url(), tmp_path))
    replies = dead.ask_many(reqs)
    assert [r.reason for r in replies] == ["connection_error"] * 10
    assert not any(r.cached for r in replies)
    assert dead.last_stats.cached == 0  # type: ignore[attr-defined]


def test_cache_is_per_endpoint_and_namespace(tmp_path: Path) -> None:
    reqs = [req(i) for i in range(6)]
    # an unmarked server stands in for a real endpoint: its replies are cached
    with MockJudgeServer(MockConfig(mark_replies=False)) as srv:
        make_judge(cfg(srv.base_url, tmp_path)).ask_many(reqs)
        n = srv.stats()["requests"]
        spelled = srv.base_url.replace("http://", "HTTP://") + "/"
        again = make_judge(cfg(spelled, tmp_path)).ask_many(reqs)
        assert srv.stats()["requests"] == n == 6 and all(r.cached for r in again)
        other_ns = make_judge(cfg(srv.base_url, tmp_path, cache_namespace="staging"))
        assert not any(r.cached for r in other_ns.ask_many(reqs))
    replies = make_judge(cfg(dead_url(), tmp_path)).ask_many(reqs)
    assert [r.reason for r in replies] == ["connection_error"] * 6
    info = JudgeCache(tmp_path).info()
    assert info["entries"] == 12 and {g["namespace"] for g in info["groups"]} == {
        "default", "staging"}


def test_cache_cli_info_and_clear(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    judge = ScriptedJudge(lambda r: {"v": 1},
                          config=JudgeConfig(name="s", backend="scripted", model="s",
                                             api_key_env=None, cache_dir=str(tmp_path)))
    judge.ask_many([req(i) for i in range(3)])
    ns = replace(judge.config, cache_namespace="other")
    ScriptedJudge(lambda r: {"v": 2}, config=ns).ask_many([req(9)])
    runner = CliRunner()
    r = runner.invoke(app, ["judge", "cache", "info", "--cache-dir", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    import json

    info = json.loads(r.output)
    assert info["entries"] == 4
    r = runner.invoke(app, ["judge", "cache", "clear", "--cache-dir", str(tmp_path),
                            "--namespace", "other", "--yes"])
    assert r.exit_code == 0 and "1 " in r.output, r.output
    assert len(JudgeCache(tmp_path)) == 3
    r = runner.invoke(app, ["judge", "cache", "clear", "--cache-dir", str(tmp_path), "--yes"])
    assert r.exit_code == 0 and len(JudgeCache(tmp_path)) == 0
    r = runner.invoke(app, ["judge", "cache", "info", "--cache-dir", str(tmp_path / "none")])
    assert isinstance(r.exception, UsageError) and "no judge cache" in str(r.exception)


# -- limiter -------------------------------------------------------------------------------------
def test_sporadic_429s_keep_the_window() -> None:
    """20 % random 429s with the window always full: no cut, the limit stays at the cap."""
    import random

    async def scenario() -> AdaptiveLimiter:
        rng = random.Random(3)
        lim = AdaptiveLimiter(16)
        slots = [await lim.acquire() for _ in range(16)]
        for _ in range(600):
            s = slots.pop(0)
            await lim.release(s, "rate_limited" if rng.random() < 0.2 else "ok", 1.0)
            while lim.in_flight < lim.limit:
                slots.append(await lim.acquire())
        return lim

    lim = asyncio.run(scenario())
    assert lim.cuts == 0 and lim.limit == 16 and lim.sporadic > 80


def test_sustained_overload_still_cuts() -> None:
    async def scenario() -> AdaptiveLimiter:
        lim = AdaptiveLimiter(16)
        slots = [await lim.acquire() for _ in range(16)]
        for s in slots[6:]:                     # a server with 6 slots refuses the rest
            await lim.release(s, "rate_limited", 1.0)
        return lim

    lim = asyncio.run(scenario())
    # 6 is below half the limit, so not trusted as a slot count: halve, keep a ceiling
    assert lim.cuts == 1 and lim.limit == 8 and lim.ceiling == 15


def test_refusals_separated_by_concurrency_cut_to_the_slot_count() -> None:
    async def scenario() -> AdaptiveLimiter:
        lim = AdaptiveLimiter(16)
        for _ in range(3):                      # a server with 12 slots: 4 of 16 refused
            slots = [await lim.acquire() for _ in range(lim.limit)]
            for s in slots[12:]:
                await lim.release(s, "rate_limited", 1.0)
            for s in slots[:12]:
                await lim.release(s, "ok")
        return lim

    lim = asyncio.run(scenario())
    assert lim.cuts >= 1 and lim.limit == lim.ceiling == 12


def test_hung_call_is_hedged_not_waited_for() -> None:
    # 12 quick calls teach the engine the usual latency; call 13 hangs past the timeout
    script = ["ok"] * 12 + ["timeout"]
    with MockJudgeServer(MockConfig(latency_ms=20, script=script, hang_s=20)) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=4, timeout_s=10.0))
        judge.ask_many([req(i) for i in range(12)])
        t0 = time.perf_counter()
        replies = judge.ask_many([req(100 + i) for i in range(8)])
        wall = time.perf_counter() - t0
    assert all(r.ok for r in replies)
    assert wall < 3.0  # not the 10 s timeout
    assert judge.last_stats.decisions["hedged"] >= 1  # type: ignore[attr-defined]


# -- endpoint pools --------------------------------------------------------------------------
def test_pool_spreads_calls_and_takes_a_failing_endpoint_out() -> None:
    good = MockJudgeServer(MockConfig(latency_ms=10)).start()
    bad = MockJudgeServer(MockConfig(fault_rate=1.0, fault_kinds=("500",))).start()
    try:
        judge = make_judge(cfg((good.base_url, bad.base_url), max_concurrency=4,
                               retry=RetryPolicy(initial=0.01, max=0.05, max_retries=6)))
        replies = judge.ask_many([req(i) for i in range(60)])
        stats = judge.last_stats  # type: ignore[attr-defined]
        assert all(r.ok for r in replies)
        assert stats.decisions["endpoint_out"] >= 1
        assert bad.stats()["requests"] <= 12   # a few failures, then out (and a probe)
        assert good.stats()["ok"] == 60
    finally:
        good.stop()
        bad.stop()


def test_pool_of_two_healthy_endpoints_uses_both() -> None:
    servers = [MockJudgeServer(MockConfig(latency_ms=30)).start() for _ in range(2)]
    try:
        judge = make_judge(cfg(tuple(s.base_url for s in servers), max_concurrency=4))
        assert all(r.ok for r in judge.ask_many([req(i) for i in range(40)]))
        counts = [s.stats()["ok"] for s in servers]
        assert sum(counts) == 40 and min(counts) >= 10
    finally:
        for s in servers:
            s.stop()


def test_pool_config_pairs_urls_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KA", "sk-a")
    monkeypatch.setenv("KB", "sk-b")
    c = JudgeConfig.from_dict({"backend": "openai", "model": "m", "base_url": "http://h/v1",
                               "api_key_env": ["KA", "KB"]})
    eps = c.endpoints()
    assert [e.api_key_env for e in eps] == ["KA", "KB"] and len({e.url for e in eps}) == 1
    with pytest.raises(ConfigError, match="api_key_env"):
        JudgeConfig(backend="openai", model="m", base_url=("http://a/v1", "http://b/v1",
                                                           "http://c/v1"),
                    api_key_env=("KA", "KB")).endpoints()


# -- credentials in URLs -----------------------------------------------------------------------
def test_url_credentials_become_basic_auth_and_never_leak(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    token = base64.b64encode(b"alice:s3cr3t-pw").decode()
    with MockJudgeServer(MockConfig(require_authorization=f"Basic {token}")) as srv:
        url = srv.base_url.replace("http://", "http://alice:s3cr3t-pw@")
        judge = make_judge(cfg(url, api_key_env="OPENAI_API_KEY"))
        assert all(r.ok for r in judge.ask_many([req(1)]))
        assert "s3cr3t" not in repr(judge.config) and "s3cr3t" not in repr(judge.backend)
    dead = dead_url().replace("http://", "http://alice:s3cr3t-pw@")
    rep = make_judge(cfg(dead)).ask_many([req(1)])[0]
    assert rep.reason == "connection_error"
    assert "s3cr3t" not in (rep.detail or "") and "alice" not in (rep.detail or "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-also")
    with pytest.raises(ConfigError, match="credentials in the URL"):
        make_judge(cfg(url, api_key_env="OPENAI_API_KEY"))


# -- per-sample chains -------------------------------------------------------------------------
def test_followups_start_when_their_own_reply_arrives() -> None:
    started: dict[str, float] = {}

    async def model(r: JudgeRequest) -> Any:
        text = r.messages[-1]["content"]
        started[text] = time.perf_counter()
        await asyncio.sleep(1.0 if text == "claims 0" else 0.05)
        return {"v": 1}

    def chain(i: int) -> JudgeRequest:
        def then(rep: Any) -> list[JudgeRequest]:
            return [replace(req(i), messages=({"role": "user", "content": f"verify {i}"},))]
        return replace(req(i), messages=({"role": "user", "content": f"claims {i}"},),
                       then=then)

    judge = ScriptedJudge(model)
    t0 = time.perf_counter()
    replies = judge.ask_many([chain(i) for i in range(4)])
    assert len(replies) == 8 and all(r.ok for r in replies)
    assert [r.extra["messages"][-1]["content"] for r in replies[:4]] == [
        f"claims {i}" for i in range(4)]
    # sample 1's verify call did not wait for sample 0's slow claims call
    assert started["verify 1"] - t0 < 0.5 and started["verify 0"] - t0 >= 1.0
    # any other judge gets the same replies phase by phase
    class Plain:
        name, model, demo = "plain", "p", False

        def ask_many(self, rs: list[JudgeRequest]) -> list[Any]:
            return judge.ask_many(rs)

    assert len(ask_chained(Plain(), [chain(i) for i in range(3)])) == 6


# -- generator through the engine ------------------------------------------------------------
def test_generator_runs_on_the_engine_and_is_counted() -> None:
    from ragmeter.generation.client import GeneratorClient, GeneratorConfig
    from ragmeter.tiers.context import CountingJudge, TierStats

    with MockJudgeServer(MockConfig(script=["429", "truncated"], retry_after_s=0.01,
                                    reply_fn=lambda body, schema: "Paris.")) as srv:
        gcfg = GeneratorConfig(base_url=srv.base_url, model="gen", api_key_env=None,
                               retry=FAST)
        stats = TierStats()
        client = GeneratorClient(gcfg, judge=CountingJudge(
            make_judge(gcfg.judge_config().with_(no_cache=True)), stats))
        gens = client.generate_many([("Where?", ["Paris is in France."]), ("Q2", [])])
        server = srv.stats()
    assert [g.text for g in gens] == ["Paris.", "Paris."]
    assert stats.llm_calls == 2 and stats.tokens_in > 0
    assert server["with_response_format"] == 0   # text mode
    assert server["requests"] == 4                # a 429 retried, a truncation widened


# -- write-through cache and kill -9 -----------------------------------------------------------
CHILD = textwrap.dedent("""
    import sys
    from ragmeter.judges import JudgeConfig, JudgeRequest, make_judge
    url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    judge = make_judge(JudgeConfig(name="k", backend="mock", base_url=url, model="m",
                                   api_key_env=None, cache_dir=cache, max_concurrency=4),
                       progress=lambda p: print(p.done, flush=True))
    schema = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
    judge.ask_many([JudgeRequest(messages=({"role": "user", "content": f"q{i}"},),
                                 schema=schema, prompt_version="k@1") for i in range(n)])
""")


@pytest.mark.slow
def test_kill_9_then_resume_reasks_no_finished_call(tmp_path: Path) -> None:
    n = 120
    cache = tmp_path / "cache"
    with MockJudgeServer(MockConfig(latency_ms=40, record_bodies=True)) as srv:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
        proc = subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(cache), str(n)],
                                stdout=subprocess.PIPE, text=True, env=env)
        acknowledged = 0
        try:
            assert proc.stdout is not None
            while acknowledged < 30:
                line = proc.stdout.readline()
                assert line, "child ended early"
                acknowledged = int(line)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        stored = len(JudgeCache(cache))
        assert stored >= acknowledged       # every acknowledged reply was committed
        assert stored < n                   # killed mid-batch
        srv.reset()
        srv.received.clear()
        # no hedging here: a hedged duplicate of a slow unfinished call (the machine may be
        # loaded) is an extra request, though not a re-asked finished one
        judge = make_judge(JudgeConfig(name="k", backend="mock", base_url=srv.base_url,
                                       model="m", api_key_env=None, cache_dir=str(cache),
                                       hedge_after_p90=None))
        schema = {"type": "object", "properties": {"v": {"type": "integer"}},
                  "required": ["v"]}
        replies = judge.ask_many([JudgeRequest(messages=({"role": "user", "content": f"q{i}"},),
                                               schema=schema, prompt_version="k@1")
                                  for i in range(n)])
        assert all(r.ok for r in replies)
        assert sum(r.cached for r in replies) == stored
        # 0 finished calls asked again: the questions sent are exactly the unfinished ones (a
        # retry of one of them on a loaded machine is the same question, not a re-asked one)
        asked = {json.loads(b)["messages"][-1]["content"] for b in srv.received}
        cached = {f"q{i}" for i, r in enumerate(replies) if r.cached}
        assert not asked & cached
        assert len(asked) == n - stored


def test_generation_mock_run_then_dead_endpoint_scores_nothing(tmp_path: Path) -> None:
    """The user-level story: judged metrics dry-run against the fake server with the real
    model name, then the same config against an endpoint that is down: every value is
    unscored (connection_error); nothing is replayed from the cache."""
    import math

    from ragmeter.data.sample import Sample
    from ragmeter.generation.evaluate import evaluate_generation

    samples = [Sample(id=f"q{i}", user_input=f"Where is {i}?", response=f"It is in {i}.",
                      retrieved_contexts=[f"{i} is here."]) for i in range(5)]

    def run(url: str) -> Any:
        judge = make_judge(cfg(url, tmp_path))
        return evaluate_generation(samples, ["answer_relevance"], judge=judge)[
            "answer_relevance"]

    with MockJudgeServer(MockConfig()) as srv:
        first = run(srv.base_url)
    assert not any(math.isnan(v) for v in first.values)
    second = run(dead_url())
    assert all(math.isnan(v) for v in second.values)
    assert set(second.reasons.values()) == {"connection_error"}
