"""Resumable runs: kill -9 / Ctrl-C a real `ragmeter run` subprocess mid-run, then --resume.

The tier is a plug-in (tests/fixtures/runner/slow_tier.py) that sleeps per sample and appends
every sample id it processes to a log file, so the test can prove no finished sample is redone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from ragmeter.results.store import ResultStore
from ragmeter.runner.config import parse_config
from ragmeter.runner.engine import ProgressLog, merge_batches, run_benchmark

FIX = Path(__file__).parent / "fixtures" / "runner"
N_SAMPLES = 40


def _setup(tmp_path: Path, batch_size: int = 4) -> Path:
    for name in ("slow_tier.py", "samples.jsonl"):
        shutil.copy(FIX / name, tmp_path / name)
    cfg = {"name": "resume-bench", "seed": 11, "batch_size": batch_size,
           "run_dir": "runs", "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
           "datasets": [{"name": "main", "path": "samples.jsonl", "format": "samples"}],
           "plugins": {"toy": "slow_tier.py:run"},
           "tiers": ["toy"]}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _env(log: Path, sleep: float) -> dict[str, str]:
    env = dict(os.environ)
    env["RAGMETER_TEST_TIER_LOG"] = str(log)
    env["RAGMETER_TEST_TIER_SLEEP"] = str(sleep)
    env.pop("RAGMETER_STORE_URL", None)
    return env


def _cmd(*args: str) -> list[str]:
    # the toy tier loses every 5th value to a parse error on purpose; this test is about
    # resuming, so the loss is accepted (--max-lost 1) instead of failing the run (exit 3)
    return [sys.executable, "-m", "ragmeter", "run", *args, "--quiet", "--max-lost", "1"]


def _finished_batches(progress: Path) -> int:
    if not progress.exists():
        return 0
    return sum(1 for line in progress.read_text(encoding="utf-8").splitlines()
               if '"type": "batch"' in line)


def _ctrl_c_default() -> None:
    """The child takes Ctrl-C as a user's terminal gives it, even when the test session was
    started in the background of a shell without job control (SIGINT ignored, inherited)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_and_interrupt(cfg: Path, run_id: str, log: Path, sig: int) -> subprocess.Popen:
    proc = subprocess.Popen(_cmd(str(cfg), "--run-id", run_id), env=_env(log, 0.06),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_default)
    progress = cfg.parent / "runs" / run_id / "progress.jsonl"
    deadline = time.time() + 90
    while _finished_batches(progress) < 3:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "run made no progress"
        time.sleep(0.02)
    time.sleep(0.1)  # let it get into the middle of the next batch
    proc.send_signal(sig)
    proc.wait(timeout=60)
    return proc


def _results(store_url: str, run_id: str):
    run = ResultStore(store_url).load_run(run_id)
    return run, run.tiers["toy"].results[0]


def _assert_equal_results(a, b) -> None:
    assert list(a.results) == list(b.results)
    for key in a.results:
        ma, mb = a.results[key], b.results[key]
        assert ma.sample_ids == mb.sample_ids
        assert np.array_equal(ma.values, mb.values, equal_nan=True)
        assert ma.reasons == mb.reasons
        assert ma.counts == mb.counts
        assert ma.aggregate == mb.aggregate


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_resume_after_interrupt_equals_clean_run(tmp_path, sig):
    cfg = _setup(tmp_path)
    log1 = tmp_path / "processed-1.txt"
    proc = _start_and_interrupt(cfg, "r-int", log1, sig)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""
        # Ctrl-C saves the partial run, marked as interrupted
        store_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
        assert ResultStore(store_url).load_run("r-int").status == "interrupted"

    progress = tmp_path / "runs" / "r-int" / "progress.jsonl"
    records = [json.loads(x) for x in progress.read_text(encoding="utf-8").splitlines()
               if x.strip().startswith("{") and x.strip().endswith("}")]
    finished = [sid for r in records if r["type"] == "batch" for sid in r["sample_ids"]]
    assert 12 <= len(finished) < N_SAMPLES
    if sig == signal.SIGINT:
        _assert_interrupted_run_keeps_finished_batches(tmp_path, cfg, finished)
    processed_before = log1.read_text(encoding="utf-8").split()
    assert set(finished) <= set(processed_before)

    log2 = tmp_path / "processed-2.txt"
    out = subprocess.run(_cmd(str(cfg), "--resume", "r-int"), env=_env(log2, 0.0),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    redone = log2.read_text(encoding="utf-8").split()
    assert not set(redone) & set(finished), "a finished sample was processed again"
    assert len(redone) == len(set(redone))
    assert set(redone) | set(finished) == {f"q{i}" for i in range(1, N_SAMPLES + 1)}

    log3 = tmp_path / "processed-3.txt"
    clean = subprocess.run(_cmd(str(cfg), "--run-id", "r-clean"), env=_env(log3, 0.0),
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stderr
    store_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    resumed_run, resumed = _results(store_url, "r-int")
    _, fresh = _results(store_url, "r-clean")
    assert resumed_run.status == "complete" and resumed_run.meta["resumed"] is True
    _assert_equal_results(resumed, fresh)
    assert resumed["toy_score"].aggregate.n_unscored == 8  # q5, q10, ... q40


def _assert_interrupted_run_keeps_finished_batches(tmp_path: Path, cfg: Path,
                                                   finished: list[str]) -> None:
    """Ctrl-C stores every finished batch: the cut-off tier is ``partial`` with the values of
    exactly the finished samples, and ``ragmeter report`` shows them."""
    store_url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run = ResultStore(store_url).load_run("r-int")
    rec = run.tiers["toy"]
    assert rec.status == "partial", rec
    assert f"after {len(finished)} of {N_SAMPLES} samples" in (rec.reason or "")
    toy = rec.results[0]["toy_score"]
    order = sorted(finished, key=lambda sid: int(sid.lstrip("q")))
    assert toy.sample_ids == order
    assert toy.aggregate.n + toy.aggregate.n_unscored == len(finished)
    assert rec.stats is not None
    report = subprocess.run([sys.executable, "-m", "ragmeter", "report", "r-int", "--store",
                             store_url, "--format", "md", "--lang", "en", "--out", "-"],
                            capture_output=True, text=True, timeout=120,
                            env=_env(tmp_path / "unused.txt", 0.0))
    assert report.returncode == 0, report.stderr
    assert "partial" in report.stdout and "toy_score" in report.stdout


def test_resume_rejects_changed_config(tmp_path):
    cfg_path = _setup(tmp_path)
    cfg = parse_config(yaml.safe_load(cfg_path.read_text()), tmp_path)
    os.environ.pop("RAGMETER_TEST_TIER_SLEEP", None)
    run_benchmark(cfg, run_id="r1")
    data = yaml.safe_load(cfg_path.read_text())
    data["seed"] = 12
    changed = parse_config(data, tmp_path)
    from ragmeter.errors import ConfigError, RagmeterError

    with pytest.raises(ConfigError, match="differs"):
        run_benchmark(changed, resume="r1")
    with pytest.raises(RagmeterError, match="already exists"):
        run_benchmark(cfg, run_id="r1")
    with pytest.raises(RagmeterError, match="cannot resume"):
        run_benchmark(cfg, resume="nope")


def test_torn_last_record_is_dropped(tmp_path):
    path = tmp_path / "progress.jsonl"
    good = {"type": "batch", "tier": "t", "sample_ids": ["a"], "results": []}
    path.write_text(json.dumps(good) + "\n" + '{"type": "batch", "tier": "t", "sam',
                    encoding="utf-8")
    log = ProgressLog(path)
    assert log.records == [good]
    log.append({"type": "tier", "tier": "t", "status": "ok"})
    log.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["batch", "tier"]


def test_merge_batches_orders_by_dataset_and_sums_counts():
    from ragmeter.results.records import EvalResult, MetricResult, Signature

    def part(ids, vals):
        r = EvalResult("s")
        r.add(MetricResult("m", ids, np.array(vals), Signature.make(metric="m"),
                           counts={"negative": 1}))
        return [r.to_dict()]

    merged = merge_batches([part(["b", "c"], [0.2, 0.3]), part(["a"], [0.1])],
                           {"a": 0, "b": 1, "c": 2})
    m = merged[0]["m"]
    assert m.sample_ids == ["a", "b", "c"]
    assert m.values.tolist() == [0.1, 0.2, 0.3]
    assert m.counts == {"negative": 2}


def test_broken_and_missing_tiers_are_recorded_not_raised(tmp_path):
    cfg_path = _setup(tmp_path)
    data = yaml.safe_load(cfg_path.read_text())
    data["plugins"]["broken"] = "slow_tier.py:broken"
    data["tiers"] = ["broken", "judge_quality", "toy"]
    cfg = parse_config(data, tmp_path)
    run = run_benchmark(cfg, run_id="r-broken")
    assert run.tiers["broken"].status == "error"
    assert "boom" in (run.tiers["broken"].reason or "")
    assert run.tiers["judge_quality"].status == "not_run"
    assert "judge" in (run.tiers["judge_quality"].reason or "")
    assert run.tiers["toy"].status == "ok"
    stored = ResultStore(cfg.store).load_run("r-broken")
    assert stored.tiers["judge_quality"].status == "not_run"


def test_tier_selection_and_limit(tmp_path):
    cfg_path = _setup(tmp_path)
    data = yaml.safe_load(cfg_path.read_text())
    data["plugins"]["broken"] = "slow_tier.py:broken"
    data["tiers"] = ["toy", "broken"]
    cfg = parse_config(data, tmp_path)
    run = run_benchmark(cfg, run_id="r-sel", tiers=["toy"], limit=7)
    assert run.tiers["toy"].results[0]["even_len"].sample_ids == [f"q{i}" for i in range(1, 8)]
    assert run.tiers["broken"].status == "not_run"
    assert "not selected" in (run.tiers["broken"].reason or "")


def test_tier_sample_ids_and_limit_options(tmp_path):
    cfg_path = _setup(tmp_path)
    data = yaml.safe_load(cfg_path.read_text())
    data["tiers"] = [{"name": "toy", "options": {"sample_ids": ["q3", "q1"]}}]
    run = run_benchmark(parse_config(data, tmp_path), run_id="r-ids")
    first = next(iter(next(iter(run.results().values()))))
    assert first.sample_ids == ["q3", "q1"]
    data["tiers"] = [{"name": "toy", "options": {"sample_ids": ["nope"]}}]
    run = run_benchmark(parse_config(data, tmp_path), run_id="r-ids-bad")
    assert run.tiers["toy"].status == "error" and "nope" in (run.tiers["toy"].reason or "")
