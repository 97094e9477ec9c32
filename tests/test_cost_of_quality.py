"""Cost of quality: what an answer of the measured system costs (``cost_per_answer``, from
the target's reported token usage at its ``price_in`` / ``price_out``), what judging a sample
costs (``judge_cost_per_sample``), calls without usage counted as unknown and shown, the
quality–latency–cost front of an A/B of targets, ``check --max cost_per_answer=…`` and a
priced ``--estimate`` — all over real sockets against the reference service and the mock
judge server."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.cost.pricing import USAGE_UNKNOWN, Price, estimate_usage, known_usage
from ragmeter.errors import ConfigError
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.reports.decision import decide
from ragmeter.reports.html import render_run_html
from ragmeter.reports.markdown import run_markdown
from ragmeter.runner.config import parse_config
from ragmeter.runner.costing import estimate_run
from ragmeter.runner.engine import run_benchmark
from ragmeter.runner.gating import Threshold, check_thresholds
from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig
from ragmeter.targets.tier_hooks import plan_lines, planned_target_calls

ROOT = Path(__file__).resolve().parents[1]


def _rows(start: int, stop: int) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (DATA / "evalset.jsonl").read_text(encoding="utf-8")
            .splitlines() if x.strip()]
    return rows[start:stop]


def _samples(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps({
        "id": r["id"], "user_input": r["question"], "reference": r.get("reference") or "",
        "response": r.get("reference") or "an answer",
        "retrieved_contexts": [r.get("reference") or "a context"]},
        ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def _config(tmp: Path, data: Path, targets: list[dict[str, Any]], **extra: Any) -> Any:
    return parse_config({
        "name": extra.pop("name", "cost"), "k": [1, 5], "batch_size": 4, "seed": 7,
        "run_dir": str(tmp / "runs"), "store": f"sqlite:///{tmp / 'store.sqlite'}",
        "datasets": [{"name": "main", "path": str(data), "format": "samples"}],
        "targets": targets, "tiers": extra.pop("tiers", [{"name": "e2e",
                                                          "metrics": ["rouge_l"]}]),
        **extra}, base_dir=tmp)


def _result(run: Any, name: str, tier: str = "e2e") -> Any:
    return next(r for r in run.tiers[tier].results if r.name == name)


# -- a target that reports its usage on some calls only -------------------------------------

def half_reporting(question: str) -> dict[str, Any]:
    """Answers every question; reports usage (OpenAI style) for questions of an even number
    of words only."""
    words = question.split()
    out: dict[str, Any] = {"answer": " ".join(words[:6])}
    if len(words) % 2 == 0:
        out["usage"] = {"prompt_tokens": 10 * len(words), "completion_tokens": 7}
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("mixed")
    os.environ.setdefault("RAGMETER_CACHE_DIR", str(tmp / "cache"))
    rows = _rows(0, 12)
    cfg = _config(tmp, _samples(tmp / "s.jsonl", rows), [
        {"name": "half", "kind": "python", "function": half_reporting,
         "price_in": 2.5, "price_out": 10.0}])
    return run_benchmark(cfg), rows


def test_every_call_that_reports_usage_is_priced_and_the_rest_are_unknown(mixed) -> None:
    run, rows = mixed
    mr = _result(run, "half:latency").results["cost_per_answer"]
    by_id = dict(zip(mr.sample_ids, mr.values, strict=True))
    reporting = [r for r in rows if len(r["question"].split()) % 2 == 0]
    silent = [r for r in rows if len(r["question"].split()) % 2 == 1]
    assert reporting and silent, "the set must have both kinds of question"
    for r in reporting:   # 100 % of the calls that report usage are priced, exactly
        want = (10 * len(r["question"].split()) * 2.5 + 7 * 10.0) / 1e6
        assert by_id[r["id"]] == pytest.approx(want, rel=1e-12), r["id"]
    for r in silent:      # never 0: unknown, with its reason
        assert math.isnan(by_id[r["id"]])
    agg = mr.aggregate
    assert agg.n == len(reporting) and agg.unscored_by_reason == {USAGE_UNKNOWN: len(silent)}
    assert agg.ci_low is not None and agg.ci_low <= agg.mean <= agg.ci_high
    assert not mr.higher_is_better
    sig = mr.signature.as_dict()
    assert sig["metric"] == "cost_per_answer" and sig["price_in"] == "2.5"
    assert sig["price_out"] == "10"


def test_the_unknown_count_is_shown_wherever_the_cost_is(mixed) -> None:
    run, rows = mixed
    n_silent = sum(1 for r in rows if len(r["question"].split()) % 2 == 1)
    html = render_run_html(run, "en")
    assert f"usage unknown: {n_silent}" in html
    md = run_markdown(run, lang="en")
    line = next(x for x in md.splitlines() if x.startswith("| half |")
                and "usage unknown" in x)
    assert f"(usage unknown: {n_silent})" in line
    rows_ = check_thresholds({r.name: r for r in run.tiers["e2e"].results},
                             [Threshold("cost_per_answer", max=1.0)])
    assert rows_ and all(f"{USAGE_UNKNOWN}: {n_silent}" in r.message for r in rows_)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAGMETER_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def test_check_max_cost_per_answer_gates_a_stored_run(mixed, tmp_path) -> None:
    run, _ = mixed
    store = run.config["store"]
    mean = _result(run, "half:latency").results["cost_per_answer"].aggregate.mean
    ok = _cli("gate", run.id, "--store", store, "--max", f"cost_per_answer={mean * 2}",
              cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASSED" in ok.stdout and "usage_unknown" in ok.stdout
    bad = _cli("gate", run.id, "--store", store, "--max", f"cost_per_answer={mean / 2}",
               cwd=tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAILED" in bad.stdout and "> max" in bad.stdout


def test_a_price_must_be_a_non_negative_number(tmp_path) -> None:
    data = _samples(tmp_path / "s.jsonl", _rows(0, 2))
    for bad in (-1, "cheap", True):
        with pytest.raises(ConfigError, match=r"price_in.*must be (>= 0|a number)"):
            _config(tmp_path, data, [{"name": "t", "kind": "http",
                                      "url": "http://127.0.0.1:9/answer", "price_in": bad}])


def test_usage_of_zero_and_zero_or_none_is_unknown_not_free() -> None:
    assert not known_usage(None, None) and not known_usage(0, 0) and not known_usage(None, 0)
    assert known_usage(5, None) and known_usage(0, 3)
    assert Price(1.0, 2.0).of_usage(0, 0) is None
    assert Price(1.0, 2.0).of_usage(1_000_000, 500_000) == pytest.approx(2.0)


# -- an A/B of targets: the quality-latency-cost front ----------------------------------------

def ab_cost_run(tmp: Path, n: int = 8) -> tuple[str, Any]:
    """Three priced targets over HTTP (OpenAI-compatible, streamed, reporting usage):
    ``short`` answers one sentence, ``long`` three (better rouge_l, slower, more tokens),
    ``slow`` the same answers as ``short``, slower and dearer — beaten on all three."""
    data = _samples(tmp / "samples.jsonl", _rows(0, n))
    with ExampleService(ServiceConfig(sentences=1)) as a, \
            ExampleService(ServiceConfig(sentences=3, latency_s=0.03)) as b, \
            ExampleService(ServiceConfig(sentences=1, latency_s=0.08)) as c:
        cfg = _config(tmp, data, [
            {"name": "short", "kind": "openai", "url": a.url + "/v1", "price_in": 1.0,
             "price_out": 4.0},
            {"name": "long", "kind": "openai", "url": b.url + "/v1", "price_in": 1.0,
             "price_out": 4.0},
            {"name": "slow", "kind": "openai", "url": c.url + "/v1", "price_in": 5.0,
             "price_out": 20.0}], name="ab-cost")
        run = run_benchmark(cfg)
    return str(cfg.store), run


@pytest.fixture(scope="module")
def ab(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    return ab_cost_run(tmp_path_factory.mktemp("ab"))


def test_the_front_of_an_ab_of_targets_is_found_and_marked(ab) -> None:
    _, run = ab
    results = run.tiers["e2e"].results
    costs = {r.name: r.results["cost_per_answer"].aggregate for r in results
             if "cost_per_answer" in r.results}
    assert set(costs) == {"short:latency", "long:latency", "slow:latency"}
    assert all(a.n == 8 and a.n_unscored == 0 for a in costs.values())   # all priced
    dec = decide("e2e", [(r.name, r) for r in results])
    assert dec.front_dims == ["rouge_l", "latency_p50", "cost_per_answer"]
    assert sorted(dec.front) == ["long", "short"]
    html = render_run_html(run, "en")
    block = html[html.index("data-block=\"latency\""):]
    block = block[:block.index("</table>")]
    for name in ("short", "long"):
        assert f"<th scope=row>{name} <span class=front" in block
    assert "<th scope=row>slow</th>" in block
    assert "pareto-note" in html and "<code>cost_per_answer</code>" in html
    md = run_markdown(run, lang="en")
    assert "| short ◆ |" in md and "| long ◆ |" in md and "| slow |" in md


def test_no_front_without_two_targets_or_with_an_unpriced_one(ab) -> None:
    _, run = ab
    results = [r for r in run.tiers["e2e"].results if r.name.startswith("short")]
    assert decide("e2e", [(r.name, r) for r in results]).front == []
    # a target without a price: the cost dimension is left out, not counted as free
    stripped = []
    for r in run.tiers["e2e"].results:
        if r.name == "slow:latency":
            r = type(r)(r.name, meta=dict(r.meta), results={
                k: v for k, v in r.results.items() if k != "cost_per_answer"})
        stripped.append((r.name, r))
    dec = decide("e2e", stripped)
    assert dec.front_dims == ["rouge_l", "latency_p50"]


# -- the evaluation's cost: every judge call of a sample, follow-ups included ---------------

def test_judge_cost_per_sample_prices_every_judge_call_of_the_sample(tmp_path,
                                                                     monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    data = _samples(tmp_path / "s.jsonl", _rows(0, 5))
    with MockJudgeServer(MockConfig(record_bodies=True)) as srv:
        cfg = parse_config({
            "name": "judged", "seed": 7, "run_dir": str(tmp_path / "runs"),
            "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
            "datasets": [{"name": "main", "path": str(data), "format": "samples"}],
            # price_in 1e6 per 1M tokens, price_out 0: a sample's cost is its input tokens
            "judges": [{"name": "j", "backend": "openai", "base_url": srv.base_url,
                        "model": "m", "api_key_env": None, "price_in": 1_000_000.0,
                        "price_out": 0.0}],
            "tiers": [{"name": "generation", "dataset": "main", "judge": "j",
                       "metrics": ["faithfulness", "answer_relevance"]}]}, base_dir=tmp_path)
        run = run_benchmark(cfg)
        bodies = [json.loads(b) if isinstance(b, (str, bytes)) else b for b in srv.received]
    cost = next(r for r in run.tiers["generation"].results if r.name == "judge:cost")
    mr = cost.results["judge_cost_per_sample"]
    assert mr.aggregate.n == 5 and mr.aggregate.n_unscored == 0
    # the mock reports prompt_tokens = characters // 4 + 1 for every request it received:
    # the samples' costs add up to every call, the claim checks that follow a claims call too
    sent = sum(sum(len(str(m.get("content") or "")) for m in b["messages"]) // 4 + 1
               for b in bodies)
    assert len(bodies) > 2 * 5   # claims, their checks and the relevance questions
    assert float(np.nansum(mr.values)) == pytest.approx(sent)
    assert mr.signature.as_dict()["judge_prices"] == "1e+06/0"
    # the evaluation's cost is not a system to choose between
    assert "judge:cost" not in decide("generation", [
        (r.name, r) for r in run.tiers["generation"].results]).systems


# -- --estimate: priced, within ±10 % of the priced actual ----------------------------------

def _estimate(tmp: Path, data: Path, target: list[dict[str, Any]]) -> Any:
    with planned_target_calls() as plan:
        estimate_run(_config(tmp, data, target, name="now"))
    return plan


def _actual(run: Any) -> tuple[float, Any]:
    mr = _result(run, "bot:latency").results["cost_per_answer"]
    return float(np.nansum(mr.values)), mr.aggregate


def test_estimate_of_a_priced_target_is_within_ten_percent_of_the_actual(tmp_path,
                                                                         monkeypatch) -> None:
    """The reference set split in halves: the first half asked once (its usage recorded),
    then the second half estimated — each call at the mean usage of the recorded ones — and
    run; then the second half estimated again, now at its own recorded usage."""
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    rows = _rows(0, 10_000)
    half = len(rows) // 2
    earlier = _samples(tmp_path / "earlier.jsonl", rows[:half])
    now = _samples(tmp_path / "now.jsonl", rows[half:])
    with ExampleService(ServiceConfig(sentences=2)) as svc:
        target = [{"name": "bot", "kind": "openai", "url": svc.url + "/v1", "price_in": 3.0,
                   "price_out": 15.0}]
        cold = _estimate(tmp_path, now, target)
        guess = cold.estimates()[0]
        assert guess.basis == 0 and guess.calls == len(rows) - half and guess.cost
        assert "rough guess" in plan_lines(cold)[-1]
        run_benchmark(_config(tmp_path, earlier, target, name="earlier"))  # usage recorded
        plan = _estimate(tmp_path, now, target)
        est, line = plan.estimates()[0], plan_lines(plan)[-1]
        assert svc.counts["ok"] == half        # the estimates sent nothing
        run = run_benchmark(_config(tmp_path, now, target, name="now"))
        again = _estimate(tmp_path, now, target).estimates()[0]
    actual, agg = _actual(run)
    assert agg.n == len(rows) - half and agg.n_unscored == 0
    assert est.basis == half and est.same == 0 and est.cost is not None
    assert abs(est.cost / actual - 1) <= 0.10, (est.cost, actual)
    assert f"mean usage of {half} recorded call(s)" in line
    # asked before: each call at its own recorded usage
    assert again.same == len(rows) - half and again.cost == pytest.approx(actual, rel=1e-9)


def test_estimate_usage_without_any_recorded_usage_is_a_stated_guess() -> None:
    e = estimate_usage("t", [10, 20], [(None, None), (0, 0)], Price(1.0, 1.0))
    assert e.basis == 0 and e.tokens_in == 30 + 2 * 4 and e.tokens_out == 400
    assert estimate_usage("t", [10], [], None).cost is None
    assert "no price set" in estimate_usage("t", [10], [], None).line()
