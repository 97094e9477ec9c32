"""The metric reference comes from the registry: CLI table, JSON and docs/metrics.md agree,
and the committed docs/metrics.md is regenerated whenever a metric changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ragmeter.cli.app import app
from ragmeter.metrics.reference import default_path, metric_reference, render_markdown
from ragmeter.metrics.registry import list_specs

runner = CliRunner()


def test_docs_metrics_md_is_current() -> None:
    if not default_path().is_file():
        pytest.skip("needs a source checkout: docs/metrics.md is not part of an installed ragmeter")
    # a fresh interpreter: only ragmeter's own metrics (tests register toy ones in-process)
    out = subprocess.run([sys.executable, "-m", "ragmeter.metrics.reference", "--check"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(default_path().parents[1] / "src")})
    assert out.returncode == 0, out.stderr  # stale: run `python -m ragmeter.metrics.reference`
    assert "# Metric reference" in default_path().read_text(encoding="utf-8")


def test_every_registered_metric_is_listed_once() -> None:
    names = [e["name"] for e in metric_reference()]
    assert sorted(names) == sorted(s.name for s in list_specs())
    md = render_markdown()
    for name in names:
        assert md.count(f"### `{name}`") == 1


def test_cli_json_has_parameters_defaults_direction_and_formula() -> None:
    out = runner.invoke(app, ["metrics", "--json"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    data = {e["name"]: e for e in json.loads(out.output)}
    ndcg = data["ndcg"]
    assert ndcg["direction"] == "higher is better" and ndcg["cutoff"] == "optional"
    assert {p["name"]: p["default"] for p in ndcg["params"]} == {"level": "auto",
                                                                  "gain": "linear"}
    assert "log2" in ndcg["formula"]
    assert data["judge_error_rate"]["direction"] == "lower is better"


def test_cli_table_and_unknown_family() -> None:
    out = runner.invoke(app, ["metrics", "--family", "retrieval"], env={"COLUMNS": "250"})
    assert out.exit_code == 0 and "hit_rate" in out.output and "rouge_l" not in out.output
    assert "[top-1 score ≥ threshold]" in out.output  # formulas are not eaten as markup
    bad = runner.invoke(app, ["metrics", "--family", "nope"])
    assert bad.exit_code != 0
