"""One config validator (ragmeter.schema): the benchmark, target, judge and tier-option readers
name the file, the line and the dotted key of a bad value, and share the same rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.errors import ConfigError
from ragmeter.judges.config import JudgeConfig, load_judge_configs
from ragmeter.runner.config import load_config
from ragmeter.targets.config import load_target

BENCH = """\
name: lines
datasets:
  - {name: main, path: data.jsonl}
judges:
  - name: j
    backend: mock
tiers:
  - name: retrieval
  - name: ux
    options: {limit: 6, n_repeatz: 2}
"""


def _error(fn: object, *args: object, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        fn(*args, **kwargs)  # type: ignore[operator]
    return exc.value


def test_bench_config_error_names_file_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text("", encoding="utf-8")
    path = tmp_path / "bench.yaml"
    path.write_text(BENCH, encoding="utf-8")
    err = _error(load_config, path)
    assert err.key == "tiers[1].options.n_repeatz"
    assert str(err).startswith(f"{path}:10: config key 'tiers[1].options.n_repeatz': unknown")
    # a wrong value inside a judge: the judge's own key line
    path.write_text(BENCH.replace("backend: mock", "backend: mock\n    max_tokens: 0"),
                    encoding="utf-8")
    err = _error(load_config, path)
    assert str(err) == f"{path}:7: config key 'judges[0].max_tokens': must be >= 1, got 0"


def test_judge_file_error_names_the_judge_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "judges.yaml"
    path.write_text("defaults: {backend: mock, temperature: 0}\njudges:\n  - name: a\n"
                    "  - name: b\n    temperature: hot\n", encoding="utf-8")
    err = _error(load_judge_configs, path)
    assert str(err) == (f"{path}:5: config key 'judges[1].temperature': must be a number, "
                        "got 'hot'")
    # a bad default is reported where it is written
    path.write_text("defaults: {backend: mock, temperature: 9}\njudges:\n  - name: a\n",
                    encoding="utf-8")
    assert str(_error(load_judge_configs, path)).startswith(
        f"{path}:1: config key 'defaults.temperature': must be <= 2")


def test_target_file_error_names_line_under_the_callers_key(tmp_path: Path) -> None:
    path = tmp_path / "rag.yaml"
    path.write_text("target:\n  kind: http\n  url: http://127.0.0.1:9/ask\n"
                    "  max_retries: many\n", encoding="utf-8")
    err = _error(load_target, path, key="targets[1]")
    assert str(err) == (f"{path}:4: config key 'targets[1].max_retries': must be an integer, "
                        "got 'many'")


def test_judge_built_in_python_is_checked_by_the_same_rules() -> None:
    assert str(_error(JudgeConfig, backend="mock", top_p=0)) == \
        "config key 'top_p': must be > 0, got 0"
    assert str(_error(JudgeConfig, backend="mock", language="de")) == \
        "config key 'language': unknown language 'de' (allowed: auto, ru, en)"
    one: object = "api.example.com"  # a single host stands for a list of one
    assert JudgeConfig(backend="mock", allow_hosts=one).allow_hosts == (  # type: ignore[arg-type]
        "api.example.com",)


def test_schema_costs_no_heavy_import() -> None:
    """The validator is in-house so that reading a config pulls in no pydantic."""
    code = ("import sys, ragmeter.schema, ragmeter.runner.config, ragmeter.judges.config, "
            "ragmeter.targets.config; print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
