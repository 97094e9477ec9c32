"""Benchmark config validation: every error names its dotted key and the allowed values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ragmeter.errors import ConfigError
from ragmeter.runner.config import load_config, parse_config
from ragmeter.runner.example import example_config

BASE = {
    "name": "b",
    "datasets": [{"path": "data.jsonl"}],
    "judges": [{"name": "main", "backend": "mock"},
               {"name": "second", "backend": "openai", "base_url": "http://127.0.0.1:1/v1",
                "model": "m"}],
    "tiers": ["retrieval", {"name": "tier2", "judge": "second"}],
}


def _with(**changes):
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data.update(changes)
    return data


def _err(data) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, base_dir="/tmp")
    return info.value


def test_valid_config_is_typed():
    cfg = parse_config(_with(k=[10, 1, 5, 5], thresholds={"hit_rate@5": {"min": 0.8}}), "/tmp")
    assert cfg.k == (1, 5, 10)
    assert [t.name for t in cfg.tiers] == ["retrieval", "generation"]  # tier2 alias
    assert cfg.tiers[1].judge == "second"
    assert cfg.judges[1].base_url == "http://127.0.0.1:1/v1"
    assert cfg.datasets[0].path == Path("/tmp/data.jsonl")
    assert cfg.thresholds[0].metric == "hit_rate@5" and cfg.thresholds[0].min == 0.8
    assert cfg.fingerprint() == parse_config(_with(k=[10, 1, 5, 5], thresholds={
        "hit_rate@5": {"min": 0.8}}), "/tmp").fingerprint()


@pytest.mark.parametrize("data, key, allowed", [
    (_with(colour="red"), "colour", "tiers"),
    (_with(judges=[{"name": "a", "backend": "mock"}, {"name": "b", "backend": "claude"}]),
     "judges[1].backend", "openai"),
    (_with(judges=[{"name": "a", "backend": "mock", "temprature": 0}]),
     "judges[0].temprature", "temperature"),
    (_with(tiers=["retrieval", "tier9"]), "tiers[1].name", "judge_pipeline"),
    (_with(tiers=[{"name": "generation", "judge": "nobody"}]), "tiers[0].judge", "second"),
    (_with(tiers=[{"name": "generation", "judges": ["main", "zzz"]}]), "tiers[0].judges[1]",
     "main"),
    (_with(datasets=[{"path": "a", "format": "xml"}]), "datasets[0].format", "evalset"),
    (_with(retrievers=[{"type": "bm25"}]), "corpus", None),
    (_with(corpus={"path": "c"}, retrievers=[{"type": "splade"}]), "retrievers[0].type",
     "hybrid"),
    (_with(corpus={"path": "c", "chunking": {"chunk_size_chars": 100, "overlap_chars": 100}}),
     "corpus.chunking.overlap_chars", None),
    (_with(k=[5, 0]), "k[1]", None),
    (_with(seed="x"), "seed", None),
    (_with(thresholds={"mrr": {"minimum": 0.5}}), "thresholds.mrr.minimum", "min"),
    (_with(thresholds={"mrr": {"min": "high"}}), "thresholds.mrr", None),
    (_with(tiers=[]), "tiers", "retrieval"),
    (_with(judges=[{"name": "a", "backend": "openai", "base_url": "http://x", "model": "m",
                    "api_key": "sk-1234"}]), "judges[0].api_key", None),
    (_with(tiers=[{"name": "generation", "metrics": ["no_such_metric_xyz"]}]),
     "tiers[0].metrics[0]", None),
    (_with(plugins={"retrieval": "x:y"}), "plugins.retrieval", None),
])
def test_errors_name_the_key(data, key, allowed):
    err = _err(data)
    assert err.key == key, str(err)
    assert f"'{key}'" in str(err)
    if allowed:
        assert err.allowed and allowed in err.allowed, str(err)
        assert "allowed:" in str(err)


def test_unknown_tier_lists_every_tier():
    err = _err(_with(tiers=["nope"]))
    from ragmeter.tiers.registry import tier_names

    assert set(tier_names()) <= set(err.allowed or [])


def test_no_password_in_config():
    err = _err(_with(store="postgresql://u:hunter2@db/x"))
    assert err.key == "store" and "RAGMETER_STORE_URL" in str(err)
    assert "hunter2" not in str(err)
    ok = parse_config(_with(store="postgresql://u@db/x", judges=[{
        "name": "j", "backend": "openai", "base_url": "http://h/v1", "model": "m",
        "extra_headers": {"Authorization": "Bearer abcdefghijklmnop"}}], tiers=["retrieval"]),
        "/tmp")
    masked = str(ok.masked())
    assert "abcdefghijklmnop" not in masked and "postgresql://u@db/x" in masked


def test_example_config_parses(tmp_path):
    cfg = parse_config(yaml.safe_load(example_config()), tmp_path)
    assert cfg.name == "my-rag-bench"
    assert [t.name for t in cfg.tiers] == ["retrieval", "generation", "e2e"]
    assert {j.backend for j in cfg.judges} == {"openai", "local-demo"}
    assert [r.type for r in cfg.retrievers] == ["bm25", "dense", "hybrid"]
    assert cfg.thresholds


def test_init_cli_writes_valid_config(tmp_path):
    path = tmp_path / "sub" / "bench.yaml"
    out = subprocess.run([sys.executable, "-m", "ragmeter", "init", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "# " in path.read_text(encoding="utf-8")  # commented
    assert load_config(path).name == "my-rag-bench"
    again = subprocess.run([sys.executable, "-m", "ragmeter", "init", str(path)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "--force" in again.stderr


def test_load_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_demo_banner_only_for_demo_judges_that_were_used():
    from ragmeter.results.store import TierRecord
    from ragmeter.runner.engine import demo_judges

    cfg = parse_config({"name": "x", "judges": [{"name": "d", "backend": "local-demo"},
                                                {"name": "m", "backend": "mock"}],
                        "tiers": [{"name": "generation", "judge": "m"}, "e2e"]}, "/tmp")
    ran = {"generation": TierRecord("generation")}
    assert demo_judges(cfg, {**ran, "e2e": TierRecord("e2e", "not_run", "no data")}) == []
    assert demo_judges(cfg, {**ran, "e2e": TierRecord("e2e")}) == ["d"]  # default judge


def test_store_path_relative_to_config(tmp_path: Path) -> None:
    from ragmeter.runner.config import parse_config

    for store in ("results.sqlite", "sqlite:///results.sqlite"):
        cfg = parse_config({"name": "x", "store": store, "tiers": ["ux"]}, base_dir=tmp_path)
        assert str(tmp_path / "results.sqlite") in str(cfg.store), store
    cfg = parse_config({"name": "x", "store": "sqlite:////abs/r.sqlite", "tiers": ["ux"]},
                       base_dir=tmp_path)
    assert cfg.store == "sqlite:////abs/r.sqlite"
