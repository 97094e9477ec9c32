"""A step that scored nothing is not "ok"; the demo says what ran, what was skipped and how
to get it, and exits non-zero when a step failed; a local judge's timeout is off unless set."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console

from ragmeter.errors import WorkFailedError
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.gguf import LOCAL_TIMEOUT_S, local_timeout_s
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.results.lost import scored_nothing
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.store import StoredRun, TierRecord

FIX = Path(__file__).parent / "fixtures" / "runner"


def _result(values: list[float], reason: str = "timeout") -> EvalResult:
    vals = np.asarray(values, dtype=float)
    res = EvalResult("demo")
    res.add(MetricResult("faithfulness", [f"q{i}" for i in range(len(vals))], vals,
                         Signature.make(metric="faithfulness"),
                         reasons={i: reason for i in np.flatnonzero(np.isnan(vals))}))
    return res


def test_scored_nothing_names_the_reasons() -> None:
    assert scored_nothing([_result([np.nan] * 6)]) == "no value scored (timeout×6)"
    assert scored_nothing([_result([np.nan] * 5 + [1.0])]) is None
    assert scored_nothing([]) is None


def test_tier_whose_every_call_failed_is_an_error_not_ok(tmp_path: Path) -> None:
    from ragmeter.runner.config import parse_config
    from ragmeter.runner.engine import run_benchmark

    shutil.copy(FIX / "samples.jsonl", tmp_path / "samples.jsonl")
    with MockJudgeServer(MockConfig(fault_rate=1.0, fault_kinds=("500",))) as srv:
        cfg = parse_config({
            "name": "t", "store": f"sqlite:///{tmp_path / 's.sqlite'}",
            "run_dir": str(tmp_path / "runs"),
            "datasets": [{"name": "answers", "path": "samples.jsonl", "format": "samples"}],
            "judges": [{"name": "j", "backend": "openai", "base_url": srv.base_url,
                        "model": "m", "api_key_env": None,
                        "retry": {"max_retries": 0, "initial": 0.01}}],
            "tiers": [{"name": "generation", "dataset": "answers", "judge": "j",
                       "metrics": ["answer_relevance"]}]}, base_dir=tmp_path)
        run = run_benchmark(cfg, limit=3)
    tier = run.tiers["generation"]
    assert tier.status == "error" and "no value scored (http_5xx×3)" in (tier.reason or "")
    assert run.status == "failed"


def _run(tiers: dict[str, TierRecord]) -> StoredRun:
    return StoredRun(id="r", created_at="2026-01-01T00:00:00+00:00", name="demo",
                     signature="s", config={}, git_commit=None, tiers=tiers)


def _verdict(run: StoredRun, skipped: bool) -> str:
    from ragmeter.cli.commands.demo import _verdict

    buf = io.StringIO()
    _verdict(run, skipped=skipped, enable="pip install 'ragmeter[local-judge]'",
             err=Console(file=buf, width=300))
    return buf.getvalue()


def test_no_judge_demo_says_what_was_skipped_and_how_to_get_it() -> None:
    run = _run({"tier0": TierRecord("tier0", "ok"),
                "retrieval": TierRecord("retrieval", "not_run", "needs ragmeter[retrieval]")})
    text = _verdict(run, skipped=True)
    assert "demo: 1 of 4 tiers ran" in text
    assert "skipped by --no-judge: e2e, judge_quality" in text
    assert "pip install 'ragmeter[local-judge]'" in text and "not run: retrieval" in text


def test_demo_with_a_step_that_scored_nothing_exits_3() -> None:
    run = _run({"tier0": TierRecord("tier0", "ok"),
                "e2e": TierRecord("e2e", "error", "no value scored (timeout×36)")})
    with pytest.raises(WorkFailedError, match="e2e: no value scored"):
        _verdict(run, skipped=False)


def test_demo_that_lost_judge_calls_exits_3() -> None:
    res = _result([1.0] * 20 + [np.nan] * 4)
    run = _run({"e2e": TierRecord("e2e", "ok", None, [res])})
    with pytest.raises(WorkFailedError, match="4 of 24 values lost"):
        _verdict(run, skipped=False)


def test_local_judge_timeout_is_off_unless_configured() -> None:
    assert local_timeout_s(JudgeConfig(name="d", backend="local-demo")) == LOCAL_TIMEOUT_S
    assert local_timeout_s(JudgeConfig(name="d", backend="local-demo", timeout_s=300)) == 300


def test_tiny_local_judge_carries_the_local_timeout() -> None:
    from ragmeter.judges.gguf import TINY_MODEL, demo_judge_status, load_demo_judge

    if not demo_judge_status(TINY_MODEL).available:
        pytest.skip("the tiny test judge needs the tiny-judge extra")
    judge = load_demo_judge(tiny=True)
    assert judge is not None and judge.config.timeout_s == LOCAL_TIMEOUT_S


def test_demo_generation_step_asks_only_metrics_its_data_can_score() -> None:
    from ragmeter.demo.pipeline import DATA_DIR, DEMO_DIR

    raw = yaml.safe_load((DEMO_DIR / "bench.yaml").read_text("utf-8"))
    gen = next(t for t in raw["tiers"] if isinstance(t, dict) and t["name"] == "generation")
    first = json.loads((DATA_DIR / "evalset.jsonl").read_text("utf-8").splitlines()[0])
    if "retrieved_ids" not in first:  # id context metrics need the sample's ranking
        assert not [m for m in gen["metrics"] if m.startswith("id_context")]
    e2e = next(t for t in raw["tiers"] if isinstance(t, dict) and t["name"] == "e2e")
    assert e2e.get("batch_size") == 1  # progress after every judged sample
