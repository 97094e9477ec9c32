"""Values lost to backend or parse errors fail the command above a small share (exit 3),
with a per-reason summary; unscored reasons that are properties of the data never count."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ragmeter.cli.app import run as cli
from ragmeter.errors import WorkFailedError
from ragmeter.judges.mock_server import MockConfig, MockJudgeServer
from ragmeter.results.lost import DEFAULT_MAX_LOST, check_lost, is_lost, lost_work
from ragmeter.results.records import MetricResult, Signature

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "generation"))
from fake_judge import make_script

SCRIPT = make_script()


def _metric(name: str, n: int, reasons: dict[int, str]) -> MetricResult:
    vals = np.ones(n)
    for i in reasons:
        vals[i] = np.nan
    return MetricResult(name, [f"q{i}" for i in range(n)], vals,
                        Signature.make(metric=name), reasons=reasons)


def test_data_property_reasons_are_not_lost_work() -> None:
    assert is_lost("parse_error") and is_lost("http_5xx") and is_lost("timeout")
    for reason in ("missing_field:reference", "empty_input", "no_gold", "no_relevant",
                   "refused", None):
        assert not is_lost(reason)


def test_lost_share_counts_against_attempted_values_only() -> None:
    m = _metric("faithfulness", 100, {**{i: "missing_field:reference" for i in range(50)},
                                      50: "parse_error", 51: "http_5xx"})
    (loss,) = lost_work([m])
    assert (loss.lost, loss.attempted) == (2, 50)  # 48 scored + 2 lost; the 50 without
    assert loss.by_reason == {"parse_error": 1, "http_5xx": 1}  # a reference are the data's


def test_lost_above_the_default_share_fails_with_per_reason_summary() -> None:
    m = _metric("faithfulness", 100, {i: "parse_error" for i in range(5)} | {5: "timeout"})
    with pytest.raises(WorkFailedError) as exc:
        check_lost(lost_work([m]))
    msg = str(exc.value)
    assert "faithfulness: 6 of 100 values lost (6.0%; parse_error×5, timeout×1)" in msg
    assert "--max-lost" in msg and exc.value.exit_code == 3


def test_small_loss_only_warns_and_data_gaps_are_silent() -> None:
    m = _metric("faithfulness", 100, {0: "http_5xx"})
    assert check_lost(lost_work([m])) == ["faithfulness: 1 of 100 values lost "
                                          "(1.0%; http_5xx×1)"]
    gaps = _metric("answer_correctness", 10, {i: "missing_field:reference" for i in range(9)})
    assert check_lost(lost_work([gaps])) == []
    assert DEFAULT_MAX_LOST == 0.02


def _samples(tmp_path: Path, n: int) -> Path:
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps({
        "id": str(i), "user_input": f"Where is city {i}? [ar=2]", "response": f"City {i}.",
        "retrieved_contexts": [f"[rel=2] City {i}."]}) + "\n" for i in range(n)), "utf-8")
    return data


def _garbage_for(bad: set[int]):
    def reply(body, schema):
        text = " ".join(m["content"] for m in body["messages"])  # the repair call too
        if any(f"city {i}?" in text for i in bad):
            return "<html>502 Bad Gateway</html>"  # HTTP 200 with a non-JSON body
        return SCRIPT(SimpleNamespace(schema=schema, messages=body["messages"]))
    return reply


def _generation(tmp_path: Path, url: str, *extra: str) -> int:
    return cli(["score", "generation", "--samples", str(_samples(tmp_path, 20)), "--metrics",
                "answer_relevance", "--judge-url", url, "--judge-model", "m",
                "--judge-key-env", "", *extra])


def test_generation_with_unparseable_replies_exits_3(tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with MockJudgeServer(MockConfig(reply_fn=_garbage_for({3, 7}))) as srv:
        code = _generation(tmp_path, srv.base_url)
    err = capsys.readouterr().err
    assert code == 3, err
    assert "answer_relevance: 2 of 20 values lost (10.0%; parse_error×2)" in err


def test_max_lost_accepts_the_loss_and_warns(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with MockJudgeServer(MockConfig(reply_fn=_garbage_for({3, 7}))) as srv:
        code = _generation(tmp_path, srv.base_url, "--max-lost", "0.2")
    err = capsys.readouterr().err
    assert code == 0, err
    assert "lost work (within --max-lost 0.2): answer_relevance: 2 of 20" in err


def test_max_lost_out_of_range_is_a_usage_error(tmp_path: Path, capsys) -> None:
    code = _generation(tmp_path, "http://127.0.0.1:9", "--max-lost", "1.5")
    assert code == 2 and "--max-lost" in capsys.readouterr().err
