"""`ragmeter run` end to end on real tiers: BM25 retrieval over a tiny Russian corpus, Tier 2
scored by the in-process mock judge, a tier without its data recorded as not run; then the
report, the gate, and a second run that takes every judge reply from the persistent cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_extra
from ragmeter.results.store import ResultStore

FIX = Path(__file__).parent / "fixtures" / "runner"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "RAGMETER_CACHE_DIR": str(cwd / "cache")}
    env.pop("RAGMETER_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


@pytest.mark.slow
def test_run_real_tiers_report_and_gate(tmp_path):
    needs_extra("retrieval", "bm25s", "Stemmer")
    for name in ("bench_retrieval.yaml", "corpus.jsonl", "evalset.jsonl", "samples.jsonl"):
        shutil.copy(FIX / name, tmp_path / name)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = _run("run", "bench_retrieval.yaml", "--store", url, "--run-id", "w1", "--limit",
                 "10", "--check", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    run = ResultStore(url).load_run("w1")
    assert [t for t in run.tiers] == ["retrieval", "generation", "judge_pipeline"]
    assert run.tiers["judge_pipeline"].status == "not_run"
    assert "options.items" in (run.tiers["judge_pipeline"].reason or "")

    bm25 = run.tiers["retrieval"].results[0]
    assert bm25.name == "bm25"
    hit3 = bm25["hit_rate@3(level=doc)"]
    # 9 answerable questions; the negative one is outside the population, and counted
    assert hit3.aggregate.n == 9 and hit3.counts.get("negative") == 1
    assert hit3.aggregate.mean >= 0.5
    assert 0.0 < bm25["mrr(level=doc)"].aggregate.mean <= 1.0

    gen = run.tiers["generation"]
    assert gen.status == "ok", gen.reason
    assert gen.stats["llm_calls"] > 0 and gen.stats["tokens_in"] > 0
    assert gen.results and all(len(m.sample_ids) == 10 for m in gen.results[0].results.values())

    # a second run of the same benchmark takes every judge reply from the cache
    second = _run("run", "bench_retrieval.yaml", "--store", url, "--run-id", "w2", "--limit",
                  "10", "-t", "generation", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    again = ResultStore(url).load_run("w2").tiers["generation"]
    assert again.stats["llm_calls"] == 0
    assert again.stats["cached_calls"] == gen.stats["llm_calls"]
    for key, m in gen.results[0].results.items():
        assert again.results[0][key].by_id() == m.by_id()

    report = _run("report", "w1", "--store", url, "--out", "w1.html", "--lang", "en",
                  cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "w1.html").read_text(encoding="utf-8")
    assert "Сколько дней длится ежегодный отпуск?" in html
    assert "options.items" in html and 'data-chart="forest"' in html
    assert "<b>bm25</b>" in html and "hit(s)" in html  # what the retriever found, per sample
    md = _run("report", "w1", "--store", url, "--format", "md", "--out", "-", "--lang", "en",
              cwd=tmp_path)
    assert "| retrieval | bm25 |" in md.stdout and "Quality gate" in md.stdout

    gate = _run("gate", "w1", "--store", url, "--min", "hit_rate@1(level=doc)=1.01",
                cwd=tmp_path)
    assert gate.returncode == 1 and "FAIL" in gate.stdout
    listed = _run("runs", "list", "--store", url, cwd=tmp_path)
    assert "w1" in listed.stdout and "w2" in listed.stdout
    shown = _run("runs", "show", "w1", "--store", url, cwd=tmp_path)
    assert "hit_rate@3(level=doc)" in shown.stdout
    exported = _run("runs", "export", "w1", "--format", "parquet", "--store", url, "--out",
                    "w1.parquet", cwd=tmp_path)
    assert exported.returncode == 0 and (tmp_path / "w1.parquet").stat().st_size > 0


@pytest.mark.slow
def test_judge_quality_repeats_are_fresh_calls_on_every_run(tmp_path):
    """Judge quality measures repeated *calls*: a rerun must not replay the persistent cache."""
    import yaml

    for name in ("bench_retrieval.yaml", "corpus.jsonl", "evalset.jsonl", "samples.jsonl"):
        shutil.copy(FIX / name, tmp_path / name)
    cfg = yaml.safe_load((tmp_path / "bench_retrieval.yaml").read_text(encoding="utf-8"))
    judge_names = [j["name"] for j in cfg["judges"]]
    cfg["tiers"] = [{"name": "judge_quality", "judges": judge_names[:1], "dataset": "answers",
                     "options": {"n_repeats": 2}}]
    (tmp_path / "jq.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    for rid in ("j1", "j2"):
        proc = _run("run", "jq.yaml", "--store", url, "--run-id", rid, "--limit", "4",
                    cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        tier = ResultStore(url).load_run(rid).tiers["judge_quality"]
        assert tier.status == "ok", tier.reason
        assert tier.stats["cached_calls"] == 0 and tier.stats["llm_calls"] >= 8


def test_errored_tier_keeps_the_whole_reason() -> None:
    from ragmeter.errors import DataError, RecordProblem
    from ragmeter.runner.engine import _reason

    exc = DataError(RecordProblem("data/e.jsonl", 7, "gold_doc_ids", "must be a list"))
    text = _reason(exc)
    assert "data/e.jsonl:7 field 'gold_doc_ids': must be a list" in text
