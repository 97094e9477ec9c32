"""Slices end to end: ``--by`` on the result commands, the ``slices`` config key, per-slice
tests in ``compare`` with the family adjusted, and the decision table's slice lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.reports.decision import decide
from ragmeter.reports.slices import slices_html, slices_markdown
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.results.slices import SliceSpec, attach_slices
from ragmeter.runner.config import parse_config

FIX = Path(__file__).parent / "fixtures" / "retrieval"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "COLUMNS": "200", "RAGMETER_CACHE_DIR": str(cwd / "cache"),
           "PYTHONPATH": src}
    env.pop("RAGMETER_STORE_URL", None)
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def _samples() -> list[Sample]:
    kinds = ["fact"] * 30 + ["howto"] * 25 + ["rare"] * 5
    return [Sample(id=f"q{i}", user_input="q", type=k) for i, k in enumerate(kinds)]


def _pair() -> tuple[EvalResult, EvalResult]:
    rng = np.random.default_rng(3)
    a = rng.uniform(0.4, 1.0, 60)
    b = np.clip(a + rng.normal(0, 0.02, 60), 0, 1)
    b[30:55] = np.clip(b[30:55] - 0.3, 0, 1)       # a regression hidden in the average
    out = []
    for name, v in (("base", a), ("new", b)):
        r = EvalResult(name)
        r.add(MetricResult("mrr", [f"q{i}" for i in range(60)], v, Signature.make(metric="mrr")))
        attach_slices([r], _samples(), SliceSpec(("type",), 10, "holm"))
        out.append(r)
    return out[0], out[1]


def test_retrieval_by_type_prints_slices_and_keeps_them(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = _cli("score", "retrieval", "--evalset", str(FIX / "evalset.jsonl"), "--by", "type",
             "--min-n", "2", "--out", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "worst slice (mrr): type=" in p.stdout
    assert "withheld (n<2)" in p.stdout        # a type with one question
    meta = json.loads(out.read_text())["meta"]
    assert meta["slices"]["by"] == ["type"] and meta["slice_table"]["min_n"] == 2
    bad = _cli("score", "retrieval", "--evalset", str(FIX / "evalset.jsonl"), "--by", "sectoin",
               cwd=tmp_path)
    assert bad.returncode == 2 and "sectoin" in bad.stderr
    qrels = _cli("score", "retrieval", "--qrels", str(FIX / "qrels.txt"), "--run",
                 str(FIX / "run.txt"),
                 "--by", "type", cwd=tmp_path)
    assert qrels.returncode == 2 and "--evalset or --samples" in qrels.stderr


def test_compare_by_slice_finds_the_hidden_regression(tmp_path: Path) -> None:
    a, b = _pair()
    (tmp_path / "a.json").write_text(a.to_json(), encoding="utf-8")
    (tmp_path / "b.json").write_text(b.to_json(), encoding="utf-8")
    p = _cli("--json", "compare", "a.json", "b.json", "--by", "type", "--n-resamples", "2000",
             "--fail-on-regression", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    (table,) = doc["slices"]
    assert "correction:holm" in table["signature"]
    regressed = [t["label"] for t in table["tests"] if t["regression"]]
    assert regressed == ["type=howto"]
    assert all(t["p_adjusted"] >= t["p_value"] for t in table["tests"])


def test_decision_table_has_worst_and_regressed_slice_lines() -> None:
    a, b = _pair()
    dec = decide("retrieval", [("base", a), ("new", b)], n_resamples=2000)
    lines = dec.slice_lines()
    assert lines[0].startswith("Worst slice (mrr): ") and "type=howto" in lines[0]
    assert "2 slice cell(s) withheld" in lines[0]   # the rare type, in each system
    assert lines[1].startswith("Regressed slices (mrr, vs base; holm, family of 2)")
    assert "new type=howto" in lines[1]
    assert lines[1] in dec.verdict()
    md = slices_markdown(dec.slice_tests[0])
    assert "p_adj=" in md and "withheld" in md
    assert "<table" in slices_html(dec.slices["base"])


def test_slices_config_key_is_validated(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text('{"id": "q1", "user_input": "q"}\n', encoding="utf-8")
    base = {"name": "x", "datasets": [{"name": "m", "path": "s.jsonl"}], "tiers": ["retrieval"]}
    cfg = parse_config({**base, "slices": {"by": ["type", "section"], "min_n": 5}}, tmp_path)
    assert cfg.slices == SliceSpec(("type", "section"), 5, "holm")
    with pytest.raises(ConfigError, match=r"slices\.correction"):
        parse_config({**base, "slices": {"by": "type", "correction": "bonferroni"}}, tmp_path)
    with pytest.raises(ConfigError, match="slices"):
        parse_config({**base, "slices": {"by": "type", "min": 5}}, tmp_path)


def test_results_about_other_things_are_not_sliced() -> None:
    r = EvalResult("labels")
    r.add(MetricResult("silhouette", ["cluster-a"], np.array([0.3]),
                       Signature.make(metric="silhouette")))
    attach_slices([r], _samples(), SliceSpec(("type",)))
    assert "slices" not in r.meta
    dec = decide("tier0", [("labels", r)])
    assert dec.slice_lines() == [] and dec.slices == {}


def test_html_report_and_viewer_show_the_slice_tables() -> None:
    from ragmeter.reports.slices import decision_slices, decision_slices_html

    a, b = _pair()
    dec = decide("retrieval", [("base", a), ("new", b)], n_resamples=2000)
    tables = decision_slices(dec)
    assert [tb.system for tb in tables][-1] == "new" and tables[-1].tests
    html = decision_slices_html(dec)
    assert html.count('<table class="slices">') == len(tables)
    assert 'class="regressed"' in html and "type=howto" in html
