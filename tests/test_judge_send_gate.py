"""The send gate: every request that reaches a backend passes ``before_send`` first (first
tries, retries, repairs, hedged duplicates), cache hits never do, and a refusal stops the
batch without one more request reaching the server."""

from __future__ import annotations

import pytest

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, ScriptedJudge, make_judge
from ragmeter.judges.base import SendGate
from ragmeter.judges.llm_judge import EngineJudge
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Stop(KeyboardInterrupt):
    """Like the budget's stop: a KeyboardInterrupt subclass, not an Exception."""


class CountingGate:
    def __init__(self, limit: int | None = None):
        self.limit = limit
        self.before = 0
        self.after = 0
        self.cost = 0.0
        self.tokens = 0

    def before_send(self, request: JudgeRequest) -> None:
        if self.limit is not None and self.before >= self.limit:
            raise Stop(f"stopped after {self.before} sends")
        self.before += 1

    def after_send(self, request: JudgeRequest, reply_cost: float, tokens_in: int,
                   tokens_out: int) -> None:
        self.after += 1
        self.cost += reply_cost
        self.tokens += tokens_in + tokens_out


def req(i: int) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": f"item {i}"},), schema=SCHEMA,
                        prompt_version="gate@1")


def judge_for(url: str, **kw: object) -> EngineJudge:
    base: dict[str, object] = dict(
        name="g", backend="openai", base_url=url, model="m", api_key_env=None, no_cache=True,
        timeout_s=1.0, max_concurrency=8, price_in=1.0, price_out=2.0,
        retry=RetryPolicy(initial=0.01, max=0.05, max_retries=4))
    base.update(kw)
    judge = make_judge(JudgeConfig(**base))  # type: ignore[arg-type]
    assert isinstance(judge, EngineJudge)
    return judge


def test_counting_gate_is_a_send_gate() -> None:
    assert isinstance(CountingGate(), SendGate)


def test_every_request_the_server_receives_passed_the_gate() -> None:
    mock = MockConfig(fault_rate=0.3, fault_kinds=("429", "500", "invalid_json", "truncated"),
                      retry_after_s=0.01, seed=5)
    with MockJudgeServer(mock) as srv:
        judge = judge_for(srv.base_url)
        gate = CountingGate()
        judge.send_gate = gate
        replies = judge.ask_many([req(i) for i in range(60)])
        received = srv.stats()["requests"]
    assert len(replies) == 60
    assert received > 60                    # faults made retries and repairs
    assert gate.before == gate.after == received
    assert gate.cost > 0 and gate.tokens > 0


@pytest.mark.parametrize("limit", [1, 25, 70])
def test_a_gate_stop_means_the_server_receives_at_most_n(limit: int) -> None:
    mock = MockConfig(fault_rate=0.3, fault_kinds=("429", "500", "timeout", "invalid_json"),
                      retry_after_s=0.01, hang_s=2.0, seed=11)
    with MockJudgeServer(mock) as srv:
        judge = judge_for(srv.base_url)
        gate = CountingGate(limit)
        judge.send_gate = gate
        with pytest.raises(Stop):
            judge.ask_many([req(i) for i in range(80)])
        received = srv.stats()["requests"]
    assert received <= limit
    assert gate.before == limit             # it did send up to the limit


def test_cache_hits_and_in_batch_duplicates_never_pass_the_gate(tmp_path: object) -> None:
    judge = ScriptedJudge(lambda r: {"ok": True},
                          config=JudgeConfig(name="s", backend="scripted", model="s",
                                             api_key_env=None, cache_dir=str(tmp_path)))
    gate = CountingGate()
    judge.send_gate = gate
    judge.ask_many([req(0), req(1), req(0)])
    assert gate.before == 2                 # the duplicate shared the first call
    judge.ask_many([req(0), req(1)])        # both from the cache
    assert gate.before == 2


def test_replies_received_before_a_stop_are_cached(tmp_path: object) -> None:
    cfg = JudgeConfig(name="s", backend="scripted", model="s", api_key_env=None,
                      cache_dir=str(tmp_path), max_concurrency=1)
    judge = ScriptedJudge(lambda r: {"ok": True}, config=cfg)
    judge.send_gate = CountingGate(3)
    with pytest.raises(Stop):
        judge.ask_many([req(i) for i in range(6)])
    again = ScriptedJudge(lambda r: {"ok": True}, config=cfg)
    gate = CountingGate()
    again.send_gate = gate
    replies = again.ask_many([req(i) for i in range(6)])
    assert sum(r.cached for r in replies) == 3 and gate.before == 3


def test_hedged_duplicates_pass_the_gate() -> None:
    # 12 quick calls teach the engine the usual latency; call 13 hangs and is hedged
    script = ["ok"] * 12 + ["timeout"]
    with MockJudgeServer(MockConfig(latency_ms=20, script=script, hang_s=20)) as srv:
        judge = judge_for(srv.base_url, max_concurrency=4, timeout_s=10.0)
        gate = CountingGate()
        judge.send_gate = gate
        judge.ask_many([req(i) for i in range(12)])
        judge.ask_many([req(100 + i) for i in range(8)])
        received = srv.stats()["requests"]
    assert judge.last_stats.decisions["hedged"] >= 1
    assert gate.before == received == 12 + 8 + judge.last_stats.decisions["hedged"]
    assert gate.after == gate.before        # the cancelled loser is accounted too


def test_a_stopped_hedge_keeps_the_first_call() -> None:
    script = ["ok"] * 12 + ["timeout"]
    with MockJudgeServer(MockConfig(latency_ms=20, script=script, hang_s=1.5)) as srv:
        judge = judge_for(srv.base_url, max_concurrency=1, timeout_s=3.0)
        judge.ask_many([req(i) for i in range(12)])
        judge.send_gate = CountingGate(1)   # the hung first try passes; its hedge may not
        with pytest.raises(Stop):
            judge.ask_many([req(100), req(101)])
        received = srv.stats()["requests"]
    assert received == 12 + 1


def test_a_stop_does_not_wait_out_the_backoff_of_other_calls() -> None:
    import time

    # two calls get a 429 asking for 5 s; the third send, at once, is refused by the gate
    mock = MockConfig(latency_ms=50, fault_rate=1.0, fault_kinds=("429",), retry_after_s=5.0)
    with MockJudgeServer(mock) as srv:
        judge = judge_for(srv.base_url, max_concurrency=4)
        judge.send_gate = CountingGate(2)
        t0 = time.perf_counter()
        with pytest.raises(Stop):
            judge.ask_many([req(i) for i in range(4)])
        wall = time.perf_counter() - t0
    assert wall < 4.0
