"""Document-level gold only (XQuAD, BEIR-like sets): ``level=auto`` scores at document level and
says so; chunk ids of the ``<doc>_chunk_<n>`` form map to their document; a "nothing scored"
message carries its reason and its fix."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ragmeter.cli import app as cli
from ragmeter.data.evalset import load_evalset
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.retrieval.relevance import default_doc_of, doc_id_rule
from ragmeter.runner.gating import Threshold, check_thresholds

ROOT = Path(__file__).resolve().parents[1]
README_METRICS = ["hit_rate@1,5", "mrr", "ndcg@10"]


def _converter():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("squad_to_evalset",
                                                  ROOT / "scripts" / "squad_to_evalset.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SQUAD = {"version": "1.1", "data": [
    {"title": "Super Bowl 50", "paragraphs": [
        {"context": "Денвер Бронкос победили Каролину Пэнтерс со счётом 24:10.",
         "qas": [{"id": "q1", "question": "Кто победил?", "answers": [
             {"answer_start": 0, "text": "Денвер Бронкос"}]}]},
        {"context": "Матч прошёл на стадионе Левайс в Санта-Кларе.",
         "qas": [{"id": "q2", "question": "Где прошёл матч?", "answers": [
             {"answer_start": 24, "text": "Левайс"}]},
                 {"id": "q3", "question": "В каком городе?", "answers": [
                     {"answer_start": 35, "text": "Санта-Кларе"}]}]}]}]}


def test_doc_gold_only_scores_every_readme_metric_at_doc_level() -> None:
    samples = [Sample(id="a", gold_doc_ids=["d1"], retrieved_ids=["d2#0", "d1#3"]),
               Sample(id="b", gold_doc_ids=["d2"], retrieved_ids=["d2#1"])]
    res = evaluate_retrieval(samples, metrics=README_METRICS)
    for key in ("hit_rate@1", "hit_rate@5", "mrr", "ndcg@10"):
        agg = res[key].aggregate
        assert agg.n == 2 and agg.n_unscored == 0, key
        assert "level:doc(auto)" in str(res[key].signature)
    assert res["hit_rate@1"].values.tolist() == [0.0, 1.0]
    assert res["mrr"].values.tolist() == [0.5, 1.0]
    assert res.meta["level_auto"]["level"] == "doc"


def test_level_auto_follows_chunk_gold_when_present() -> None:
    samples = [Sample(id="a", gold_chunk_ids=["d1#3"], gold_doc_ids=["d1"],
                      retrieved_ids=["d1#0", "d1#3"])]
    res = evaluate_retrieval(samples, metrics=["hit_rate@1", "hit_rate@1(level=doc)"])
    assert res["hit_rate@1"].values.tolist() == [0.0]  # chunk level: d1#0 is not the gold chunk
    assert "level:chunk(auto)" in str(res["hit_rate@1"].signature)
    assert res["hit_rate@1(level=doc)"].values.tolist() == [1.0]


def test_explicit_chunk_level_on_doc_gold_is_unscored_with_reason() -> None:
    samples = [Sample(id="a", gold_doc_ids=["d1"], retrieved_ids=["d1#0"])]
    res = evaluate_retrieval(samples, metrics=["hit_rate@1(level=chunk)"])
    assert res["hit_rate@1(level=chunk)"].reasons == {0: "missing_field:gold_chunk_ids"}


def test_nothing_scored_gate_message_names_reason_and_fix() -> None:
    samples = [Sample(id="a", gold_doc_ids=["d1"], retrieved_ids=["d1#0"])]
    res = evaluate_retrieval(samples, metrics=["hit_rate@5(level=chunk)"])
    rows = check_thresholds(res, [Threshold("hit_rate@5(level=chunk)", min=0.5)])
    msg = rows[0].message
    assert "missing_field:gold_chunk_ids×1" in msg and "level=doc" in msg and "fix:" in msg


def test_nothing_scored_cli_message_names_reason_and_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q?", "gold_doc_ids": ["d1"],
                                "retrieved_ids": ["d1#0"]}) + "\n", encoding="utf-8")
    code = cli.run(["score", "retrieval", "--evalset", str(path), "--metrics", "mrr", "--level",
                    "chunk"])
    err = capsys.readouterr().err
    assert code == 3 and "missing_field:gold_chunk_ids" in err and "fix:" in err


def test_squad_converter_evalset_scores_everything_first_try(tmp_path: Path) -> None:
    conv = _converter()
    src = tmp_path / "squad.json"
    src.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    assert conv.main([str(src), str(tmp_path / "out")]) == 0
    loaded = load_evalset(tmp_path / "out" / "evalset.jsonl")
    assert [s.gold_doc_ids for s in loaded.samples] == [
        ["Super_Bowl_50-p0"], ["Super_Bowl_50-p1"], ["Super_Bowl_50-p1"]]
    assert loaded.samples[0].reference == "Денвер Бронкос"
    corpus = [json.loads(x) for x in (tmp_path / "out" / "corpus.jsonl").read_text().splitlines()]
    assert [d["doc_id"] for d in corpus] == ["Super_Bowl_50-p0", "Super_Bowl_50-p1"]
    # a retriever returns chunks '<doc>#<n>' of the corpus documents
    ranked = {"q1": ["Super_Bowl_50-p0#0"], "q2": ["Super_Bowl_50-p0#0", "Super_Bowl_50-p1#0"],
              "q3": ["Super_Bowl_50-p1#0"]}
    for s in loaded.samples:
        s.retrieved_ids = ranked[s.id]
    res = evaluate_retrieval(loaded.samples, metrics=README_METRICS)
    assert all(r.aggregate.n == 3 and r.aggregate.n_unscored == 0 for r in res)
    assert res["mrr"].aggregate.mean == pytest.approx((1 + 0.5 + 1) / 3)


def test_squad_converter_refuses_other_json(tmp_path: Path) -> None:
    src = tmp_path / "x.json"
    src.write_text("[1, 2]", encoding="utf-8")
    assert _converter().main([str(src), str(tmp_path / "out")]) == 2


def test_chunk_suffix_ids_map_to_their_document() -> None:
    assert default_doc_of("law_12_chunk_4") == "law_12"
    assert default_doc_of("law#2") == "law"
    assert default_doc_of("x_chunk_y") == "x_chunk_y"  # not the rule's form: its own document
    samples = [Sample(id="a", gold_chunk_ids=["law_12_chunk_4"], gold_doc_ids=["law_12"],
                      retrieved_ids=["law_12_chunk_4"])]
    res = evaluate_retrieval(samples, metrics=["hit_rate@1", "hit_rate@1(level=doc)"])
    assert res["hit_rate@1"].values.tolist() == [1.0]
    assert res["hit_rate@1(level=doc)"].values.tolist() == [1.0]
    assert "warnings" not in res.meta


def test_doc_id_pattern_and_unmapped_doc_gold_warning() -> None:
    samples = [Sample(id="a", gold_chunk_ids=["law12-part4"], gold_doc_ids=["law12"],
                      retrieved_ids=["law12-part4"])]
    res = evaluate_retrieval(samples, metrics=["hit_rate@1(level=doc)"])
    assert res["hit_rate@1(level=doc)"].values.tolist() == [0.0]
    assert "document gold cannot be mapped" in res.meta["warnings"][0]
    fixed = evaluate_retrieval(samples, metrics=["hit_rate@1(level=doc)"],
                               doc_id_pattern=r"(?P<doc>.+)-part\d+")
    assert fixed["hit_rate@1(level=doc)"].values.tolist() == [1.0]
    assert "warnings" not in fixed.meta
    assert doc_id_rule(r"(.+)-p\d+")("abc-p3") == "abc"
    with pytest.raises(ConfigError, match="group"):
        doc_id_rule(r".+-p\d+")


def test_doc_id_pattern_cli_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q?", "gold_doc_ids": ["law12"],
                                "gold_chunk_ids": ["law12-part4"],
                                "retrieved_ids": ["law12-part4"]}) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    code = cli.run(["score", "retrieval", "--evalset", str(path), "--metrics",
                    "hit_rate@1(level=doc)",
                    "--doc-id-pattern", r"(?P<doc>.+)-part\d+", "--out", str(out)])
    assert code == 0, capsys.readouterr()
    res = EvalResult.from_dict(json.loads(out.read_text()))
    assert res["hit_rate@1(level=doc)"].aggregate.mean == 1.0
