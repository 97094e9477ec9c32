"""Latency and throughput read as what they are: percentiles from the per-call durations (never
a mean of means; p50 ≠ p95 where the calls differ), their bootstrap CIs computed once per run
(never per batch), lower-is-better latency and higher-is-better throughput in requests/s,
compared on the statistic (paired only where the samples pair), and shown in a block of their
own in the decision table, the comparisons, the diff and the live page."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.results.records import EvalResult, MetricResult, Signature, compare_results
from ragmeter.stats.resampling import bootstrap_stat
from ragmeter.targets import TargetReply, TargetSignature
from ragmeter.targets.latency import latency_result

SIG = TargetSignature("http", "http://h/answer", "abc123")


def _replies(seconds: list[float], batch: str = "b1", in_flight: int = 4) -> list[TargetReply]:
    return [TargetReply(answer="a", latency_s=s, ttft_s=s / 3, batch=batch,
                        started_s=(i // in_flight) * max(seconds)) for i, s in enumerate(seconds)]


def _latency(name: str, seconds: list[float], ids: list[str] | None = None) -> EvalResult:
    ids = ids or [f"q{i}" for i in range(len(seconds))]
    return latency_result(ids, _replies(seconds), SIG, name=f"{name}:latency")


def _skewed(n: int, scale: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(scale * (0.1 + rng.lognormal(0.0, 0.8, size=n)))


def test_the_ci_of_a_percentile_is_the_bootstrap_of_the_statistic_computed_in_one_pass():
    from ragmeter.results.statistic import estimate, is_latency, statistic_of

    x = np.asarray(_skewed(300, 1.0, 1))
    for metric, counts in (("latency_p95", {}), ("latency_p50", {}),
                           ("throughput", {"wall_ms": 12_000})):
        stat = statistic_of(metric, counts, x)
        assert stat is not None
        old = bootstrap_stat(stat, x.size, seed=42, n_boot=1000)   # one index row at a time
        value, lo, hi = estimate(stat, seed=42, n_boot=1000)
        assert (value, lo, hi) == pytest.approx((old.value, old.ci_low, old.ci_high),
                                                rel=1e-12)
    res = _latency("bot", list(x))
    p50, p95 = res["latency_p50"].aggregate, res["latency_p95"].aggregate
    assert p50.mean == pytest.approx(np.quantile(x, 0.5))
    assert p95.mean == pytest.approx(np.quantile(x, 0.95)) and p95.mean > p50.mean * 1.5
    assert res["throughput"].higher_is_better and not res["latency_p95"].higher_is_better
    assert "unit:requests/s" in str(res["throughput"].signature)
    assert is_latency(res) and res.meta["block"] == "latency"


def test_a_faster_target_improves_latency_and_throughput_on_the_statistic():
    slow = _latency("a", _skewed(200, 1.0, 2))
    fast = _latency("b", [s * 0.5 for s in _skewed(200, 1.0, 2)])
    rows = {c.metric: c for c in compare_results(slow, fast)}
    for m in ("latency_p50", "latency_p95", "latency_p99", "ttft_p95"):
        c = rows[m]
        assert c.diff < 0 and c.significant and not c.regression, (m, c)
        assert c.method.endswith("(paired)")
    # each percentile is its own number, not the mean of the calls repeated
    assert rows["latency_p50"].mean_a != pytest.approx(rows["latency_p95"].mean_a)
    assert rows["latency_p95"].mean_a == pytest.approx(
        float(np.quantile(_skewed(200, 1.0, 2), 0.95)))
    tp = rows["throughput"]
    assert tp.diff > 0 and tp.significant and not tp.regression, tp
    # no shared sample: each side resampled on its own, still on the statistic
    other = _latency("c", [s * 0.5 for s in _skewed(150, 1.0, 3)],
                     ids=[f"x{i}" for i in range(150)])
    c = {c.metric: c for c in compare_results(slow, other)}["latency_p95"]
    assert c.method.endswith("(unpaired)") and c.diff < 0 and not c.regression


def test_the_decision_puts_latency_in_its_own_block_best_in_its_direction():
    from ragmeter.reports.decision import decide
    from ragmeter.reports.html import _decision_section
    from ragmeter.results.store import StoredRun, TierRecord

    def quality(name: str, shift: float) -> EvalResult:
        res = EvalResult(name)
        vals = np.clip(np.linspace(0.2, 0.9, 200) + shift, 0, 1)
        res.add(MetricResult("rouge_l", [f"q{i}" for i in range(200)], vals,
                             Signature.make(metric="rouge_l")))
        return res
    systems = [quality("a", 0.0), _latency("a", _skewed(200, 1.0, 2)),
               quality("b", 0.05), _latency("b", [s * 0.5 for s in _skewed(200, 1.0, 2)])]
    dec = decide("e2e", [(r.name, r) for r in systems])
    assert dec.systems == ["a", "b"] and dec.metrics == ["rouge_l"] and dec.primary == "rouge_l"
    lat = dec.latency
    assert lat is not None and lat.systems == ["a", "b"]
    assert lat.metrics[:3] == ["latency_p50", "latency_p95", "latency_p99"]
    assert lat.cells[("b", "latency_p95")].best and lat.cells[("b", "throughput")].best
    assert lat.cells[("a", "latency_p95")].significant
    run = StoredRun("r1", "2026-01-01T00:00:00+00:00", "bench",
                    tiers={"e2e": TierRecord("e2e", "ok", None, systems)})
    html = _decision_section(run, "en", {"e2e": dec})
    quality_table, block = html.split('data-block="latency"', 1)
    assert "latency_p95" not in quality_table.split("<table", 1)[1]
    assert "Latency and throughput" in html and "requests/s · higher is better" in block
    assert "s · lower is better" in block and "rouge_l" in dec.verdict("en")


def test_comparisons_and_the_diff_show_latency_once_in_its_block(tmp_path: Path):
    from ragmeter.reports.comparison import comparison_body
    from ragmeter.reports.svg import diff_chart
    from ragmeter.results.store import StoredRun, TierRecord
    from ragmeter.runner.comparing import compare_runs
    from ragmeter.view.diff import sample_changes

    a = StoredRun("ra", "2026-01-01T00:00:00+00:00", "bench", tiers={"e2e": TierRecord(
        "e2e", "ok", None, [_latency("bot", _skewed(100, 1.0, 4))])})
    b = StoredRun("rb", "2026-01-02T00:00:00+00:00", "bench", tiers={"e2e": TierRecord(
        "e2e", "ok", None, [_latency("bot", [s * 0.5 for s in _skewed(100, 1.0, 4)])])})
    rows = compare_runs(a.results(), b.results())
    assert {r.block for r in rows} == {"latency"}
    assert not any(r.verdict == "regression" for r in rows)
    worse, better = sample_changes(a, b)
    assert worse == [] and better == []          # never one row per sample and percentile

    class Src:
        def __init__(self, run: StoredRun) -> None:
            self.run, self.label = run, run.id
    body = comparison_body(Src(a), Src(b), rows, "en")
    assert "id=latency-compare" in body and "<td>regression</td>" not in body
    assert body.count("<tr class=\"improvement\">") >= 4   # p50, p95, p99, throughput ...
    # a lower-is-better metric that went down is drawn green, one that went up red
    from ragmeter.reports import svg
    chart = diff_chart([("latency", svg.Point(-0.2, -0.3, -0.1)),
                        ("recall", svg.Point(-0.2, -0.3, -0.1))], "B − A",
                       higher_is_better={"latency": False, "recall": True})
    assert chart.count("#55A868") >= 1 and chart.count("#C44E52") >= 1
    assert chart.index("#55A868") < chart.index("#C44E52")


def test_the_live_page_takes_percentiles_over_every_call_so_far():
    from ragmeter.view.live import TierProgress

    tier = TierProgress("e2e")
    calls = _skewed(80, 1.0, 5)
    for start in range(0, 80, 20):   # four batches, as the runner journals them
        ids = [f"q{i}" for i in range(start, start + 20)]
        lat = latency_result(ids, _replies(calls[start:start + 20], batch=f"b{start}"), SIG,
                             name="bot:latency")
        tier.add_batch({"sample_ids": ids, "results": [json.loads(json.dumps(
            lat.to_dict(aggregate=False)))]})
    rows = {r["metric"]: r for r in tier.to_dict()["latency"]}
    assert rows["latency_p50"]["value"] == pytest.approx(np.quantile(calls, 0.5))
    assert rows["latency_p95"]["value"] == pytest.approx(np.quantile(calls, 0.95))
    assert rows["latency_p95"]["value"] > rows["latency_p50"]["value"]
    assert rows["throughput"]["unit"] == "requests/s" and rows["throughput"]["higher_is_better"]
    assert rows["latency_p95"]["system"] == "bot" and not tier.to_dict()["values"]


@pytest.mark.slow
def test_a_run_journals_per_call_values_and_takes_each_ci_once(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    """Batches keep the calls' values, no aggregate; each latency statistic's bootstrap runs
    once over the merged run (the old per-batch bootstraps made a run 2.5-2.8× a bare
    client)."""
    import ragmeter.results.records as records
    from ragmeter.runner.config import parse_config
    from ragmeter.runner.engine import run_benchmark
    from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = records.estimate

    def counted(stat, **kw):
        calls.append(stat.kind)
        return real(stat, **kw)
    monkeypatch.setattr(records, "estimate", counted)
    with ExampleService(ServiceConfig()) as srv:
        cfg = parse_config({
            "name": "lat", "k": [1, 5], "batch_size": 4, "limit": 16,
            "run_dir": str(tmp_path / "runs"), "store": str(tmp_path / "store.sqlite"),
            "datasets": [{"name": "main", "path": str(DATA / "evalset.jsonl"),
                          "format": "evalset"}],
            "target": {"kind": "http", "name": "bot", "url": srv.url + "/answer"},
            "tiers": [{"name": "e2e", "metrics": ["rouge_l"]}]}, base_dir=tmp_path)
        run = run_benchmark(cfg)
    lat = next(r for r in run.tiers["e2e"].results if r.name == "bot:latency")
    assert len(lat["latency_p95"].sample_ids) == 16
    log = next((tmp_path / "runs").glob("*/progress.jsonl"))
    batches = [json.loads(x) for x in log.read_text().splitlines() if '"batch"' in x]
    assert len(batches) == 4
    for b in batches:
        for res in b["results"]:
            for m in res["results"].values():
                assert set(m["aggregate"]) == {"seed", "n_boot"}, m["aggregate"]
                assert len(m["per_sample"]) == 4
    assert len(calls) <= 7, calls      # 6 percentiles + throughput, once each
