"""Latency metrics of a target: percentiles, throughput and error rate with CIs, kept through
serialisation and the runner's merge of batches."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.results.records import EvalResult
from ragmeter.runner.engine import merge_batches
from ragmeter.targets import TargetReply, TargetSignature
from ragmeter.targets.latency import latency_result, wall_time

SIG = TargetSignature("http", "http://h/answer", "abc123")


def _replies(n: int = 40, fail_every: int = 10) -> list[TargetReply]:
    out = []
    for i in range(n):
        if i % fail_every == fail_every - 1:
            out.append(TargetReply(reason="target_http_5xx", detail="HTTP 500"))
        else:
            lat = 0.1 + 0.01 * i
            out.append(TargetReply(answer="a", latency_s=lat, ttft_s=lat / 2, batch="b1",
                                   started_s=(i // 4) * 0.5))
    return out


def test_percentiles_throughput_and_error_rate() -> None:
    reps = _replies()
    ids = [f"q{i}" for i in range(len(reps))]
    res = latency_result(ids, reps, SIG)
    lat = np.array([r.latency_s for r in reps if r.ok])
    assert res["latency_p95"].aggregate.mean == pytest.approx(np.quantile(lat, 0.95))
    assert res["ttft_p50"].aggregate.mean == pytest.approx(np.quantile(lat / 2, 0.5))
    a = res["latency_p95"].aggregate
    assert a.ci_low is not None and a.ci_high is not None and a.ci_low <= a.mean <= a.ci_high
    assert a.n == 36 and a.unscored_by_reason == {"target_http_5xx": 4}
    wall = wall_time(reps)
    assert wall is not None
    assert res["throughput"].aggregate.mean == pytest.approx(36 / wall, rel=1e-3)
    assert res["error_rate"].aggregate.mean == pytest.approx(0.1)
    assert not res["latency_p95"].higher_is_better
    assert "target:http" in str(res["latency_p95"].signature)


def test_statistics_survive_json_and_merged_batches() -> None:
    reps = _replies()
    ids = [f"q{i}" for i in range(len(reps))]
    whole = latency_result(ids, reps, SIG)
    back = EvalResult.from_dict(whole.to_dict())
    for key in ("latency_p95", "ttft_p99", "throughput"):
        assert back[key].aggregate.mean == pytest.approx(whole[key].aggregate.mean)
    halves = [latency_result(ids[:20], reps[:20], SIG).to_dict(),
              latency_result(ids[20:], reps[20:], SIG).to_dict()]
    merged = merge_batches([[h] for h in halves])[0]
    assert merged["latency_p95"].aggregate.mean == pytest.approx(
        whole["latency_p95"].aggregate.mean)
    assert merged["latency_p95"].aggregate.n == 36
