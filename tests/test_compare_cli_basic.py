"""`ragmeter compare A B`: paired tests from store ids or EvalResult JSON files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.store import ResultStore, StoredRun, TierRecord
from ragmeter.runner.comparing import compare_runs


def _res(name: str, values: np.ndarray) -> EvalResult:
    r = EvalResult(name, meta={"tier": "retrieval"})
    ids = [f"q{i}" for i in range(len(values))]
    r.add(MetricResult("hit_rate@5", ids, values, Signature.make(metric="hit_rate@5")))
    r.add(MetricResult("mrr", ids, np.full(len(values), 0.5), Signature.make(metric="mrr")))
    return r


def _pair() -> tuple[EvalResult, EvalResult]:
    rng = np.random.default_rng(0)
    base = (rng.random(80) < 0.85).astype(float)
    worse = base.copy()
    worse[:30] = 0.0  # many samples lost: a clear regression
    return _res("bm25", base), _res("bm25", worse)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragmeter", "compare", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "COLUMNS": "220"})


def test_compare_runs_detects_regression():
    a, b = _pair()
    rows = compare_runs({"x": a}, {"y": b}, n_resamples=2000)
    by = {r.comparison.metric: r for r in rows}
    assert by["hit_rate@5"].verdict == "regression"
    assert by["hit_rate@5"].comparison.diff < 0
    assert by["mrr"].verdict == "no significant change"


def test_compare_cli_json_files(tmp_path):
    a, b = _pair()
    (tmp_path / "a.json").write_text(a.to_json(), encoding="utf-8")
    (tmp_path / "b.json").write_text(b.to_json(), encoding="utf-8")
    plain = _cli("a.json", "b.json", "--n-resamples", "2000", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "regression" in plain.stdout and "hit_rate@5" in plain.stdout
    failing = _cli("a.json", "b.json", "--n-resamples", "2000", "--fail-on-regression",
                   "--html", "cmp.html", "--md", "cmp.md", cwd=tmp_path)
    assert failing.returncode == 1
    html = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert 'class="regression"' in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", "")
    assert "🔴" in (tmp_path / "cmp.md").read_text(encoding="utf-8")
    same = _cli("a.json", "a.json", "--fail-on-regression", cwd=tmp_path)
    assert same.returncode == 0


def test_compare_cli_store_ids(tmp_path):
    a, b = _pair()
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    st = ResultStore(url)
    for rid, res in (("week1", a), ("week2", b)):
        st.save_run(StoredRun(id=rid, created_at=f"2026-01-0{rid[-1]}T00:00:00+00:00",
                              name="bench", tiers={"retrieval": TierRecord("retrieval", "ok",
                                                                           None, [res])}))
    out = _cli("week1", "week2", "--store", url, "--fail-on-regression", "--n-resamples",
               "2000", cwd=tmp_path)
    assert out.returncode == 1 and "regression" in out.stdout
    improved = _cli("week2", "week1", "--store", url, "--fail-on-regression",
                    "--n-resamples", "2000", cwd=tmp_path)
    assert improved.returncode == 0 and "improvement" in improved.stdout
    unknown = _cli("week1", "nope", "--store", url, cwd=tmp_path)
    assert unknown.returncode == 2 and "no run" in unknown.stderr
