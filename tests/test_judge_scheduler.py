"""Scheduler: in-flight cap, adaptive concurrency on 429, sync/async entry points, progress."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragmeter.calls.errors import CallError
from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, ScriptedJudge, make_judge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.judges.stats import ProgressInfo

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def req(i: int) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": f"item {i}"},), schema=SCHEMA,
                        prompt_version="sched@1")


def cfg(base_url: str, **kw: object) -> JudgeConfig:
    base = dict(name="s", backend="openai", base_url=base_url, model="mock", api_key_env=None,
                no_cache=True, timeout_s=5.0, retry=RetryPolicy(initial=0.01, max=0.1))
    base.update(kw)
    return JudgeConfig(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("cap", [1, 5])
def test_peak_in_flight_never_above_cap(cap: int) -> None:
    with MockJudgeServer(MockConfig(latency_ms=100)) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=cap))
        replies = judge.ask_many([req(i) for i in range(4 * cap)])
        stats = srv.stats()
    assert all(r.ok for r in replies)
    assert stats["peak_in_flight"] <= cap
    assert stats["peak_in_flight"] == cap  # and the cap is actually used
    assert judge.last_stats.peak_in_flight <= cap  # type: ignore[attr-defined]


def test_scripted_judge_respects_cap_too() -> None:
    judge = ScriptedJudge(lambda r: {"ok": True}, latency_s=0.02)
    judge.config = judge.config.with_(max_concurrency=3)
    judge._states.clear()
    judge.ask_many([req(i) for i in range(15)])
    assert judge.scripted.peak_in_flight == 3


def test_adaptive_concurrency_on_429_recovers_every_item() -> None:
    mock = MockConfig(latency_ms=40, max_concurrency=4, reject_over_cap=True,
                      retry_after_s=0.05)
    with MockJudgeServer(mock) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=16,
                               retry=RetryPolicy(initial=0.02, max=0.2, max_retries=8)))
        replies = judge.ask_many([req(i) for i in range(80)])
        stats = srv.stats()
    assert all(r.ok for r in replies), {r.reason for r in replies}
    st = judge.last_stats  # type: ignore[attr-defined]
    assert st.concurrency_cuts >= 1
    # without backing off, 16 in flight against a cap of 4 would be rejected ~3 times per
    # success (~240); the adaptive limit keeps it near one rejection per item or fewer
    assert stats["rejected_over_cap"] <= 120


def test_retry_after_sets_the_retry_delay_not_the_backoff() -> None:
    # (the delay itself: tests/test_judge_retry.py) end to end: two 429s with Retry-After 0.2 s cost ~0.4 s, not 2 s + 4 s of backoff
    with MockJudgeServer(MockConfig(script=["429", "429", "ok"], retry_after_s=0.2)) as srv:
        judge = make_judge(cfg(srv.base_url, retry=RetryPolicy(initial=2.0, max=30.0)))
        t0 = time.perf_counter()
        rep = judge.ask_many([req(0)])[0]
        wall = time.perf_counter() - t0
    assert rep.ok and rep.extra["retries"] == 2
    assert 0.4 <= wall < 1.5


def test_learned_limit_persists_across_ask_many_calls() -> None:
    mock = MockConfig(latency_ms=40, max_concurrency=4, reject_over_cap=True,
                      retry_after_s=0.05)
    with MockJudgeServer(mock) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=16,
                               retry=RetryPolicy(initial=0.02, max=0.2, max_retries=8)))
        first = judge.ask_many([req(i) for i in range(40)])
        rejected_first = srv.stats()["rejected_over_cap"]
        learned = judge._limits  # type: ignore[attr-defined]
        assert learned is not None and learned[0].ceiling <= 5
        srv.reset()
        second = judge.ask_many([req(i) for i in range(40, 80)])  # a new event loop
        stats = srv.stats()
    assert all(r.ok for r in first + second)
    assert rejected_first >= 8  # the first batch had to learn: 16 sent against 4
    # the second starts at the learned limit: at most a probe or two is refused
    assert stats["rejected_over_cap"] <= 3
    assert stats["peak_in_flight"] <= 4


def test_ask_many_works_inside_a_running_loop() -> None:
    judge = ScriptedJudge(lambda r: {"ok": True})

    async def inner() -> bool:
        return judge.ask_many([req(0)])[0].ok  # sync call from async code: runs in a thread

    assert asyncio.run(inner())


def test_aask_many_in_several_loops_reuses_nothing_stale() -> None:
    with MockJudgeServer(MockConfig()) as srv:
        judge = make_judge(cfg(srv.base_url))
        for _ in range(3):  # RAGAS's "Event loop is closed" case: new loop each time
            out = asyncio.run(judge.aask_many([req(1), req(2)]))
            assert all(r.ok for r in out)
        assert srv.stats()["requests"] == 6


def test_progress_callback_reaches_total() -> None:
    seen: list[ProgressInfo] = []
    judge = ScriptedJudge(lambda r: {"ok": True}, progress=seen.append)
    judge.ask_many([req(i) for i in range(7)])
    assert seen[-1].done == seen[-1].total == 7
    assert seen[-1].eta_s == 0 or seen[-1].eta_s is not None
    assert [p.done for p in seen] == sorted(p.done for p in seen)


def test_backend_exception_is_unscored_not_raised() -> None:
    def boom(r: JudgeRequest) -> dict:
        raise RuntimeError("kaputt")

    rep = ScriptedJudge(boom).ask_many([req(0)])[0]
    assert rep.reason == "backend_error" and "kaputt" in (rep.detail or "")


def test_scripted_backend_error_retries() -> None:
    calls = {"n": 0}

    def flaky(r: JudgeRequest) -> dict:
        calls["n"] += 1
        if calls["n"] == 1:
            raise CallError("http_5xx", "boom", retryable=True)
        return {"ok": False}

    rep = ScriptedJudge(flaky).ask_many([req(0)])[0]
    assert rep.ok and rep.data == {"ok": False} and rep.attempts == 2


def test_duplicate_requests_in_one_batch_cost_one_call() -> None:
    judge = ScriptedJudge(lambda r: {"ok": True})
    replies = judge.ask_many([req(1), req(1), req(2)])
    assert judge.scripted.calls == 2
    assert all(r.ok for r in replies)
    assert judge.last_stats.calls == 2 and judge.last_stats.replies == 3
    assert replies[1].extra["deduplicated"] and replies[1].data == replies[0].data


def test_rich_progress_bar_renders() -> None:
    import io

    from rich.console import Console

    from ragmeter.judges import rich_progress

    buf = io.StringIO()
    with rich_progress("judging", console=Console(file=buf, width=120)) as cb:
        ScriptedJudge(lambda r: {"ok": True}, progress=cb).ask_many([req(i) for i in range(5)])
    text = buf.getvalue()
    assert "5/5" in text and "calls 5" in text and "unscored 0" in text
