"""Every fault kind against the fake server: recovered by retry/repair, or unscored with reason."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, make_judge
from ragmeter.judges.base import UNSCORED_REASONS
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer, find_schema
from ragmeter.judges.parsing import example_instance

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                   "score": {"type": "integer", "minimum": 0, "maximum": 2}},
    "required": ["verdict", "score"],
}


def req(i: int = 0) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "system", "content": "judge"},
                                  {"role": "user", "content": f"question {i}"}),
                        schema=SCHEMA, prompt_version="test@1", metric="m", sample_id=str(i))


def cfg(base_url: str, **kw: object) -> JudgeConfig:
    base = dict(name="t", backend="openai", base_url=base_url, model="mock", api_key_env=None,
                no_cache=True, timeout_s=2.0, max_concurrency=4,
                retry=RetryPolicy(initial=0.01, max=0.05, max_retries=3))
    base.update(kw)
    return JudgeConfig(**base)  # type: ignore[arg-type]


def ask(mock: MockConfig, n: int = 1, **kw: object):
    with MockJudgeServer(mock) as srv:
        judge = make_judge(cfg(srv.base_url, **kw))
        replies = judge.ask_many([req(i) for i in range(n)])
        return replies, srv.stats(), judge


@pytest.mark.parametrize("fault", ["429", "500", "timeout"])
def test_transient_fault_is_retried_and_recovered(fault: str) -> None:
    replies, stats, judge = ask(MockConfig(script=[fault], hang_s=3, retry_after_s=0.01),
                                timeout_s=0.3)
    r = replies[0]
    assert r.ok, r
    assert r.attempts == 2 and r.extra["retries"] == 1
    assert stats["requests"] == 2
    assert judge.last_stats.retries == 1


@pytest.mark.parametrize(("fault", "reason"), [("429", "rate_limited"), ("500", "http_5xx"),
                                               ("timeout", "timeout")])
def test_persistent_fault_is_unscored_with_reason(fault: str, reason: str) -> None:
    replies, stats, _ = ask(MockConfig(script=[fault] * 10, hang_s=3, retry_after_s=0.01),
                            timeout_s=0.3, retry=RetryPolicy(initial=0.01, max=0.02,
                                                             max_retries=2))
    r = replies[0]
    assert not r.ok and r.data is None
    assert r.reason == reason and reason in UNSCORED_REASONS
    assert r.attempts == 3 and "after 2 retries" in (r.detail or "")
    assert stats["requests"] == 3


def test_invalid_json_gets_one_repair_then_scores() -> None:
    replies, stats, _ = ask(MockConfig(script=["invalid_json"]))
    r = replies[0]
    assert r.ok and r.extra["repaired"] is True and r.attempts == 2
    assert stats["requests"] == 2


@pytest.mark.parametrize(("fault", "reason"), [("invalid_json", "parse_error"),
                                               ("schema_error", "schema_error")])
def test_invalid_reply_twice_is_unscored(fault: str, reason: str) -> None:
    replies, stats, _ = ask(MockConfig(script=[fault, fault]))
    r = replies[0]
    assert r.reason == reason and r.data is None
    assert "after one repair" in (r.detail or "")
    assert r.raw is not None  # the raw reply is kept for inspection
    assert stats["requests"] == 2


def test_truncated_reply_is_detected() -> None:
    replies, stats, _ = ask(MockConfig(script=["truncated", "truncated"]))
    assert replies[0].reason == "truncated"
    assert "finish_reason=length" in (replies[0].detail or "")
    # retried once with twice the output budget, never repaired
    assert stats["requests"] == 2 and replies[0].extra["truncation_retry"] is True


def test_truncated_reply_retried_once_with_a_larger_budget() -> None:
    seen: list[int] = []

    def reply(body: dict, schema: dict | None) -> object:
        seen.append(int(body["max_tokens"]))
        return example_instance(SCHEMA, 0)

    replies, _, judge = ask(MockConfig(script=["truncated"], reply_fn=reply))
    assert replies[0].ok and replies[0].attempts == 2
    assert judge.last_stats.decisions["truncation_retry"] == 1
    assert len(seen) == 2 and seen[1] == 2 * seen[0]


def test_refusal_is_unscored() -> None:
    replies, _, _ = ask(MockConfig(script=["refusal"]))
    assert replies[0].reason == "refused"


def test_rejected_response_format_falls_back_to_schema_in_prompt() -> None:
    with MockJudgeServer(MockConfig(supports_response_format=False)) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=2))
        replies = judge.ask_many([req(i) for i in range(6)])
        first = srv.stats()
        again = judge.ask_many([req(i) for i in range(6, 9)])
        second = srv.stats()
    assert all(r.ok for r in replies + again)
    assert all(r.extra["structured"] is False for r in replies + again)
    # at most the in-flight calls of the first run paid for the discovery
    assert 1 <= first["with_response_format"] <= 2
    assert first["requests"] == 6 + first["with_response_format"]
    # the judge remembers: the next run sends no response_format at all
    assert second["with_response_format"] == first["with_response_format"]
    assert second["requests"] == first["requests"] + 3


def test_find_schema_reads_prompt_instruction() -> None:
    from ragmeter.judges.prompts import schema_instruction

    body = {"messages": [{"role": "system", "content": "x\n" + schema_instruction(SCHEMA, "ru")}]}
    assert find_schema(body) == SCHEMA


def test_auth_error_is_not_retried() -> None:
    replies, stats, _ = ask(MockConfig(require_api_key="right"))
    r = replies[0]
    assert r.reason == "http_4xx" and "401" in (r.detail or "")
    assert r.attempts == 1 and stats["requests"] == 1


def test_connection_refused_is_unscored() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = make_judge(cfg(f"http://127.0.0.1:{port}/v1",
                           retry=RetryPolicy(initial=0.01, max=0.01, max_retries=1)))
    r = judge.ask_many([req()])[0]
    assert r.reason == "connection_error" and r.attempts == 2


def test_retry_after_is_honoured() -> None:
    t0 = time.perf_counter()
    replies, _, _ = ask(MockConfig(script=["429"], retry_after_s=0.4))
    assert replies[0].ok
    assert time.perf_counter() - t0 >= 0.4


def test_retry_budget_bounds_retries_over_the_run() -> None:
    replies, stats, judge = ask(MockConfig(script=["500"] * 50), n=5,
                                retry=RetryPolicy(initial=0.01, max=0.01, max_retries=5,
                                                  budget=2))
    assert all(r.reason == "http_5xx" for r in replies)
    assert judge.last_stats.retries == 2
    assert stats["requests"] == 5 + 2
    assert sum("retry budget spent" in (r.detail or "") for r in replies) >= 3


def test_random_faults_lose_no_sample() -> None:
    mock = MockConfig(latency_ms=5, fault_rate=0.3, hang_s=2, retry_after_s=0.01, seed=3,
                      fault_kinds=("429", "500", "timeout", "invalid_json", "truncated",
                                   "schema_error"))
    replies, _, judge = ask(mock, n=60, timeout_s=0.3, max_concurrency=16,
                            retry=RetryPolicy(initial=0.01, max=0.05, max_retries=4))
    assert len(replies) == 60
    for r in replies:
        assert r.ok or r.reason in UNSCORED_REASONS
        assert (r.data is None) == (r.reason is not None)
    st = judge.last_stats
    assert st.scored + st.unscored == 60
    assert st.scored >= 45
    assert sum(st.reasons.values()) == st.unscored


def test_text_mode_call_returns_text_without_response_format() -> None:
    from ragmeter.judges import TEXT_SCHEMA

    text_req = JudgeRequest(messages=({"role": "user", "content": "say OK"},),
                            schema=TEXT_SCHEMA, prompt_version="text@1")
    with MockJudgeServer(MockConfig(script=["500"])) as srv:
        judge = make_judge(cfg(srv.base_url))
        rep = judge.ask_many([text_req])[0]
        stats = srv.stats()
    assert rep.ok and rep.data == "OK" and rep.attempts == 2  # retried like any call
    assert stats["with_response_format"] == 0


def test_rejected_parameters_are_adapted_once() -> None:
    with MockJudgeServer(MockConfig(reject_params=("max_tokens", "seed"))) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=1))
        replies = judge.ask_many([req(i) for i in range(3)])
        stats = srv.stats()
    assert all(r.ok for r in replies), [r.detail for r in replies]
    assert stats["faults"] == {"param:max_tokens": 1, "param:seed": 1}
    assert stats["requests"] == 5


def test_rejected_parameters_are_adapted_by_every_call_in_flight() -> None:
    # calls sent before the first rejection came back are rejected too: each is sent again
    # adapted (they used to come back unscored http_4xx once another call had adapted)
    with MockJudgeServer(MockConfig(reject_params=("max_tokens",), latency_ms=50)) as srv:
        judge = make_judge(cfg(srv.base_url, max_concurrency=8))
        replies = judge.ask_many([req(i) for i in range(8)])
        stats = srv.stats()
    assert all(r.ok for r in replies), [r.detail for r in replies]
    assert stats["faults"]["param:max_tokens"] >= 2      # several were in flight


def test_parse_retry_after_forms() -> None:
    import email.utils

    from ragmeter.calls.http import parse_retry_after

    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after(future) or 0) <= 31


# -- 8. the judge circuit breaker ----------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_endpoint_fails_fast() -> None:
    from ragmeter.judges import get_prompt, make_judge
    from ragmeter.judges.config import JudgeConfig

    port = _closed_port()
    cfg = JudgeConfig(name="dead", backend="openai", base_url=f"http://127.0.0.1:{port}/v1",
                      model="m", api_key_env=None, no_cache=True)
    tpl = get_prompt("yes_no")
    reqs = [tpl.request("en", question=f"q{i}", text="t", metric="probe", sample_id=str(i))
            for i in range(6)]
    t0 = time.monotonic()
    replies = make_judge(cfg).ask_many(reqs)
    took = time.monotonic() - t0
    assert all(r.reason == "connection_error" for r in replies)
    assert all("endpoint unreachable" in (r.detail or "") for r in replies)
    # the default backoff alone (2+4+8+16+30+30 s per call) would take 90 s
    assert took < 20, took


def test_breaker_stays_closed_after_a_success() -> None:
    from ragmeter.calls.breaker import Breaker
    from ragmeter.calls.errors import CallError

    refused = CallError("connection_error", "refused", retryable=True, unreachable=True)
    b = Breaker(1, after=3)
    b.record(0, None)
    for _ in range(5):
        b.record(0, refused)
    assert not b.tripped
    b = Breaker(2, after=3)
    for _ in range(5):
        b.record(0, refused)
    assert not b.tripped        # the second endpoint never refused
    b.record(1, CallError("http_5xx", "HTTP 500", retryable=True))
    for _ in range(3):
        b.record(1, refused)
    assert b.tripped and "endpoint unreachable: refused" in (b.detail or "")

    async def sleep_is_cut() -> float:
        b2 = Breaker(1, after=1)
        t0 = time.monotonic()
        task = asyncio.ensure_future(b2.sleep(30))
        await asyncio.sleep(0.05)
        b2.record(0, refused)
        await task
        return time.monotonic() - t0

    assert asyncio.run(sleep_is_cut()) < 5
