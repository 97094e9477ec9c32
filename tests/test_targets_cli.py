"""``--target`` on ``ragmeter score generation`` / ``ragmeter score retrieval``, ``--replay`` (identical
values, no call), ``--estimate`` (calls counted, none sent), an unreachable target (exit 3),
and ``ragmeter.evaluate`` with a plain function."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import ragmeter
from ragmeter.cli.app import app
from ragmeter.targets.example_service import DATA, ExampleService, ServiceConfig

EVALSET = DATA / "evalset.jsonl"


@pytest.fixture(scope="module")
def service() -> Iterator[ExampleService]:
    with ExampleService(ServiceConfig()) as srv:
        yield srv


def _target_file(tmp_path: Path, url: str, **extra: Any) -> Path:
    cfg = {"kind": "http", "url": url + "/answer", "version_header": "X-RAG-Version",
           "entries": {"retrieve": {"url": url + "/retrieve"},
                       "generate": {"url": url + "/generate"}}, **extra}
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _run(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner().invoke(app, args, catch_exceptions=False)


def test_generation_target_then_replay_is_identical_with_no_call(
        service: ExampleService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _target_file(tmp_path, service.url)
    args = ["score", "generation", "--samples", str(EVALSET), "--metrics", "rouge_l,bleu",
            "--target", str(target)]
    live = _run([*args, "--out", str(tmp_path / "live.json")], tmp_path, monkeypatch)
    assert live.exit_code == 0, live.output
    before = service.counts["requests"]
    rep = _run([*args, "--replay", "--out", str(tmp_path / "replay.json")], tmp_path,
               monkeypatch)
    assert rep.exit_code == 0, rep.output
    assert service.counts["requests"] == before          # not one call in replay
    a = json.loads((tmp_path / "live.json").read_text())
    b = json.loads((tmp_path / "replay.json").read_text())
    assert a["results"] == b["results"]                  # values, CIs, signatures, latency
    assert {"rouge_l", "latency_p95", "ttft_p50", "throughput", "error_rate"} <= set(
        a["results"])
    assert "target:http" in a["results"]["rouge_l"]["signature"]
    assert "target_version:example-1" in a["results"]["rouge_l"]["signature"]
    assert b["meta"]["target_calls"]["sent"] == 0 and b["meta"]["target_calls"]["cached"]


def test_generation_target_generate_entry_uses_gold_context(
        service: ExampleService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = tmp_path / "gold.jsonl"
    samples.write_text(json.dumps({"id": "a", "user_input": "q", "reference": "Один. Два.",
                                   "reference_contexts": ["Один. Два. Три."]}) + "\n")
    res = _run(["score", "generation", "--samples", str(samples), "--metrics", "rouge_l",
                "--target",
                str(_target_file(tmp_path, service.url)), "--target-entry", "generate",
                "--out", str(tmp_path / "g.json")], tmp_path, monkeypatch)
    assert res.exit_code == 0, res.output
    got = json.loads((tmp_path / "g.json").read_text())
    assert got["results"]["rouge_l"]["aggregate"]["mean"] == pytest.approx(1.0)


def test_retrieval_target_ranks_questions(service: ExampleService, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    res = _run(["score", "retrieval", "--evalset", str(EVALSET), "--target",
                str(_target_file(tmp_path, service.url)), "-k", "1,5", "--level", "both",
                "--out", str(tmp_path / "r.json")], tmp_path, monkeypatch)
    assert res.exit_code == 0, res.output
    got = json.loads((tmp_path / "r.json").read_text())["results"]
    chunk = got["hit_rate@5(level=chunk)"]["aggregate"]["mean"]
    assert chunk > 0.5
    assert got["hit_rate@5(level=doc)"]["aggregate"]["mean"] >= chunk
    assert "latency_p50" in got


def test_estimate_counts_target_calls_and_sends_none(service: ExampleService, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = service.counts["requests"]
    res = _run(["score", "generation", "--samples", str(EVALSET), "--metrics", "rouge_l",
                "--target",
                str(_target_file(tmp_path, service.url)), "--estimate"], tmp_path, monkeypatch)
    assert res.exit_code == 0, res.output
    n = sum(1 for line in EVALSET.read_text(encoding="utf-8").splitlines() if line.strip())
    assert f"target calls: {n} (answer" in res.output
    assert service.counts["requests"] == before


def test_unreachable_target_exits_3_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = _target_file(tmp_path, f"http://127.0.0.1:{port}", retry_initial_s=0.01)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    from ragmeter.cli.app import run

    code = run(["score", "generation", "--samples", str(EVALSET), "--metrics", "rouge_l",
                "--target",
                str(target)])
    assert code == 3
    assert "unreachable" in capsys.readouterr().err


def test_front_door_evaluate_with_a_function(tmp_path: Path) -> None:
    def my_rag(question: str) -> dict[str, Any]:
        return {"answer": question, "context_ids": ["dorm-payment#0", "admission-documents#0"]}

    res = ragmeter.evaluate(EVALSET, target=my_rag, metrics=["hit_rate@2", "rouge_l"],
                            store=tmp_path / "r.sqlite")
    assert {"hit_rate@2", "rouge_l", "latency_p50", "error_rate"} <= set(res.results)
    assert res["error_rate"].aggregate.mean == 0.0
    assert res["hit_rate@2"].aggregate.n > 0


def test_front_door_unmapped_reply_is_unscored_with_the_path(tmp_path: Path) -> None:
    res = ragmeter.evaluate(
        [{"id": "a", "question": "q", "reference": "r", "gold_doc_ids": ["d"]}],
        target={"kind": "python", "function": lambda q: {"text_out": q}},
        metrics=["rouge_l", "hit_rate@1"], store=tmp_path / "r.sqlite")
    for key in ("rouge_l", "hit_rate@1"):
        agg = res[key].aggregate
        assert agg.n == 0 and agg.n_unscored == 1
        assert next(iter(agg.unscored_by_reason)).startswith("target_unmapped: answer")
