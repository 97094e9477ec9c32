"""A plain function is a judge (``make_judge(fn)``) and receives what it is promised: each
request's messages and schema, the metrics the call is asked for, the call kind and the
sample, also on a repair call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ragmeter import make_judge
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges.base import JudgeRequest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script, paris

METRICS = ["faithfulness", "context_recall", "e2e_score"]


def test_a_judge_function_receives_metric_call_kind_and_sample() -> None:
    seen: list[JudgeRequest] = []
    script = make_script()

    def my_judge(request: JudgeRequest) -> Any:
        seen.append(request)
        return script(request)

    samples = [paris(1), paris(2)]
    res = evaluate_generation(samples, METRICS, judge=make_judge(my_judge))
    assert all(res[m].aggregate.n == 2 for m in METRICS)
    assert {r.sample_id for r in seen} == {"s1", "s2"}
    kinds = {r.kind for r in seen}
    assert kinds == {"claims", "verify", "answer"}
    for r in seen:
        asked = r.metric.split(",")
        assert asked and set(asked) <= set(METRICS), r.metric
        assert r.schema["title"] == r.prompt_version        # the real request, as sent
    answer = {r.metric for r in seen if r.kind == "answer"}
    claims = {r.metric for r in seen if r.kind == "claims"}
    assert answer == {"e2e_score"}
    # one claims call per sample serves both claim metrics
    assert claims == {"context_recall,faithfulness"}
    assert sum(r.kind == "claims" for r in seen) == 2


def test_a_repair_call_keeps_the_metric_kind_and_sample() -> None:
    seen: list[JudgeRequest] = []
    script = make_script()

    def my_judge(request: JudgeRequest) -> Any:
        seen.append(request)
        if request.kind == "answer" and len(request.messages) == 2:
            return "I think the answer is fine."               # not JSON: repaired once
        return script(request)

    res = evaluate_generation([paris(1)], ["e2e_score"], judge=make_judge(my_judge))
    assert res["e2e_score"].aggregate.n == 1
    first, repair = seen
    assert len(repair.messages) == 4 and repair.messages[2]["role"] == "assistant"
    assert (repair.metric, repair.kind, repair.sample_id) == (first.metric, first.kind, "s1")
    assert first.metric == "e2e_score"
