"""Regression tests for gaps a reviewer reproduced on main: gold-only dataset hashes in every
signature, the production-judge accuracy band, no silent zeros for an evalset without a ranking,
BEIR corpus/queries from the CLI, one record-id scheme across containers, explicit formats that
do not silently remap another tool's fields, and the data language kept in results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import needs_extra
from ragmeter.cli import app as cli
from ragmeter.errors import EXIT_USAGE


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _sig(sig: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in sig.split("|"))


# 1. dataset hash over gold fields only ------------------------------------------------------------

def test_generation_data_signature_ignores_system_outputs(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gold = {"user_input": "q1", "reference": "Paris is the capital"}
    sigs = []
    for name, resp in (("h1", "Paris"), ("h2", "London")):
        f = _jsonl(tmp_path / f"{name}.jsonl", [{**gold, "response": resp}])
        code, out, err = run(capsys, "-q", "generation", "--samples", str(f),
                             "--metrics", "rouge_1", "--json")
        assert code == 0, err
        sigs.append(_sig(json.dumps(json.loads(out)).split('"signature": "')[1].split('"')[0]))
    assert sigs[0]["data"] == sigs[1]["data"]
    assert sigs[0]["outputs"] != sigs[1]["outputs"]  # the outputs are hashed apart


def test_generation_context_hashes_gold_and_outputs_apart() -> None:
    from ragmeter.data.hashing import gold_hash
    from ragmeter.data.sample import Sample
    from ragmeter.generation.context import GenerationContext

    a = [Sample(id="1", user_input="q", reference="r", response="x")]
    b = [Sample(id="1", user_input="q", reference="r", response="y")]
    assert GenerationContext(a).data_hash == GenerationContext(b).data_hash == gold_hash(a)
    assert GenerationContext(a).outputs_hash != GenerationContext(b).outputs_hash


def test_batched_generation_keeps_gold_data_and_whole_outputs_hashes() -> None:
    import ragmeter
    from ragmeter.data.hashing import gold_hash, outputs_hash
    from ragmeter.data.sample import Sample

    samples = [Sample(id=str(i), user_input=f"q{i}", reference="a b c", response=f"a {i}")
               for i in range(5)]
    whole = ragmeter.evaluate_generation(samples, metrics=["rouge_1"])["rouge_1"].signature
    batched = ragmeter.evaluate_generation(samples, metrics=["rouge_1"], batch_size=2)
    sig = batched["rouge_1"].signature
    assert sig.get("data") == whole.get("data") == gold_hash(samples)
    assert sig.get("outputs") == whole.get("outputs") == outputs_hash(samples)


def test_ux_sessions_hash_questions_as_data_and_answers_as_outputs() -> None:
    import numpy as np

    from ragmeter.tiers.ux import Session, evaluate_sessions

    class Fixed:
        name = "fixed"
        dim = 3

        def embed(self, texts: Sequence[str], kind: Any = "symmetric") -> Any:
            return np.array([[1.0, float(len(t)), 0.0] for t in texts]) / np.sqrt(
                1.0 + np.array([[len(t) ** 2] for t in texts], dtype=float))

    sigs = []
    answer_sets: list[list[str | None]] = [["a1", "a2", "a3"], ["b1", "b2", "b33"]]
    for answers in answer_sets:
        res = evaluate_sessions([Session("s", ["q1", "q22", "q333"], answers)], Fixed())
        sigs.append(res["context_preservation"].signature)
    assert sigs[0].get("data") == sigs[1].get("data")
    assert sigs[0].get("outputs") != sigs[1].get("outputs")


# 2. the production-judge accuracy band, in both languages ---------------------------------------

DEMO = Path(__file__).parents[1] / "src" / "ragmeter" / "demo" / "data"


def test_judge_pipeline_accuracy_band_applies_and_is_translated(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragmeter.reports.bands import classify, find_band

    band = find_band("cls_accuracy", "judge_pipeline")
    assert band is not None and band.label == "Accuracy (judge pipeline)"
    assert classify("cls_accuracy", 0.9, "judge_pipeline") == "good"
    assert find_band("cls_accuracy", "generation") is None  # a plain accuracy has no row
    assert band.title("ru") != band.label and band.title("en") == band.label

    res = tmp_path / "jp.json"
    code, _, err = run(capsys, "judge-pipeline", str(DEMO / "judge_pipeline.jsonl"),
                       "--out", str(res))
    assert code == 0, err
    for lang in ("ru", "en"):
        page = tmp_path / f"{lang}.html"
        code, _, err = run(capsys, "report", str(res), "--lang", lang, "--out", str(page))
        assert code == 0, err
        html = page.read_text(encoding="utf-8")
        assert band.title(lang) in html
        assert 'class="band mid"' in html  # accuracy 0.875 of the demo predictions: "good"
    assert "Accuracy (judge pipeline)" not in (tmp_path / "ru.html").read_text(encoding="utf-8")


# 3. no silent zeros at the front door -----------------------------------------------------------

def test_front_door_rejects_evalset_without_ranking() -> None:
    import ragmeter
    from ragmeter.data.sample import Sample
    from ragmeter.errors import DataError

    evalset = ragmeter.load_samples(DEMO / "evalset.jsonl").samples
    with pytest.raises(DataError, match="retrieved_ids"):
        ragmeter.evaluate_retrieval(evalset, metrics=["hit_rate@1", "mrr"])
    # one query without a ranking among others keeps the documented policy: scored 0, counted
    ranked = [Sample(id="a", user_input="q", gold_chunk_ids=["d1"], retrieved_ids=["d1"]),
              Sample(id="b", user_input="q", gold_chunk_ids=["d2"])]
    res = ragmeter.evaluate_retrieval(ranked, metrics=["hit_rate@1"])
    mr = res["hit_rate@1"]
    assert mr.mean == 0.5 and len(mr.sample_ids) == 2
    # a ranking that found nothing ([]) is a ranking: scored 0, not "no ranking"
    empty = [Sample(id="a", user_input="q", gold_chunk_ids=["d1"], retrieved_ids=[])]
    assert ragmeter.evaluate_retrieval(empty, metrics=["hit_rate@1"])["hit_rate@1"].mean == 0.0


# 4. BEIR corpus and folders from the CLI ----------------------------------------------------------

def _beir_folder(root: Path) -> Path:
    """A small BEIR dataset in the layout the BEIR repository documents."""
    root.mkdir()
    _jsonl(root / "corpus.jsonl", [
        {"_id": "d1", "title": "Library", "text": "The library opens at nine in building B."},
        {"_id": "d2", "title": "Canteen", "text": "The canteen serves lunch from noon to three."},
        {"_id": "d3", "title": "Dormitory", "text": "Dormitory rooms are assigned in August."},
    ])
    _jsonl(root / "queries.jsonl", [
        {"_id": "q1", "text": "When does the library open?"},
        {"_id": "q2", "text": "When is lunch served in the canteen?"},
    ])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n", encoding="utf-8")
    return root


def test_beir_corpus_loads_by_content(tmp_path: Path) -> None:
    from ragmeter.retrieval.corpus import load_corpus

    docs = load_corpus(_beir_folder(tmp_path / "b") / "corpus.jsonl")
    assert [d.doc_id for d in docs] == ["d1", "d2", "d3"]
    assert docs[0].title == "Library" and "_id" not in docs[0].metadata


def test_retrieval_and_retrievers_take_a_beir_folder(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    beir = _beir_folder(tmp_path / "b")
    results = tmp_path / "results.json"  # BEIR results: {qid: {doc_id: score}}
    results.write_text(json.dumps({"q1": {"d1": 0.9, "d2": 0.1}, "q2": {"d1": 0.8, "d2": 0.7}}),
                       encoding="utf-8")
    code, out, err = run(capsys, "retrieval", "--beir", str(beir), "--run", str(results),
                         "--metrics", "hit_rate@1,mrr", "--json")
    assert code == 0, err
    means = {k: r["aggregate"]["mean"] for k, r in json.loads(out)["results"].items()}
    assert means == {"hit_rate@1": 0.5, "mrr": 0.75}
    code, _, err = run(capsys, "retrieval", "--beir", str(beir))
    assert code == EXIT_USAGE and "--run" in err

    needs_extra("retrieval", "bm25s", "Stemmer")
    code, _, err = run(capsys, "retrievers", "--beir", str(beir), "--out", str(tmp_path / "o"),
                       "-r", "bm25", "-k", "1,2", "--no-charts")
    assert code == 0, err
    table = json.loads((tmp_path / "o" / "comparison.json").read_text(encoding="utf-8"))
    assert "bm25" in json.dumps(table) and "level=doc" in json.dumps(table)


# 5. one id scheme for records without an id -------------------------------------------------------

def test_ids_by_record_index_in_every_container(tmp_path: Path) -> None:
    needs_extra("pandas")
    import pandas as pd

    from ragmeter.data.loaders import from_records, load_samples

    rows = [{"user_input": "Когда сессия?", "response": "В январе.", "reference": "В январе.",
             "retrieved_contexts": ["Сессия в январе."]},
            {"user_input": "Where?", "response": "B.", "reference": "Building B.",
             "retrieved_contexts": ["It's in building B."]}]
    df = pd.DataFrame(rows)
    files = {"jsonl": tmp_path / "r.jsonl", "csv": tmp_path / "r.csv",
             "json": tmp_path / "r.json", "parquet": tmp_path / "r.parquet"}
    df.to_json(files["jsonl"], orient="records", lines=True, force_ascii=False)
    df.to_csv(files["csv"], index=False)  # list cells as Python reprs, like RAGAS's to_csv
    files["json"].write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    needs_extra("parquet")
    df.to_parquet(files["parquet"])
    ids = {name: [s.id for s in load_samples(f).samples] for name, f in files.items()}
    ids["records"] = [s.id for s in from_records(rows).samples]
    assert all(v == ["#0", "#1"] for v in ids.values()), ids


def test_line_numbers_stay_in_errors(tmp_path: Path) -> None:
    from ragmeter.data.loaders import load_samples
    from ragmeter.errors import DataError

    f = tmp_path / "bad.jsonl"
    f.write_text('{"user_input": "q"}\n\n{"user_input": 3}\n', encoding="utf-8")
    with pytest.raises(DataError) as e:
        load_samples(f)
    assert e.value.problems[0].line == 3


# 6. an explicit format never silently remaps another tool's fields ------------------------------

DEEPEVAL_ROWS = [{"input": "Когда сессия?", "actual_output": "В январе.",
                  "expected_output": "Сессия в январе.", "context": ["Зимняя сессия: январь."]}]


@pytest.mark.parametrize(("rows", "fmt", "likely"), [
    (DEEPEVAL_ROWS, "samples", "deepeval"),
    (DEEPEVAL_ROWS, "hf", "deepeval"),
    (DEEPEVAL_ROWS, "evalset", "deepeval"),
    ([{"user_input": "q", "response": "a", "retrieved_contexts": ["c"]}], "evalset", "ragas"),
    ([{"question": "q", "chunk_id": "c1", "chunk_text": "t", "answer": "a"}], "samples",
     "synthetic"),
])
def test_explicit_format_on_another_layout_names_the_likely_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[dict[str, object]],
        fmt: str, likely: str) -> None:
    from ragmeter.data.loaders import load_dataset_file, load_samples
    from ragmeter.errors import DataError

    f = tmp_path / "x.json"
    f.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    for load in (load_samples, load_dataset_file):
        with pytest.raises(DataError, match=f"--format {likely}"):
            load(f, format=fmt)
    code, _, err = run(capsys, "generation", "--samples", str(f), "--format", fmt,
                       "--metrics", "rouge_1")
    assert code == EXIT_USAGE and f"--format {likely}" in err


def test_deepeval_context_stays_gold_under_its_own_format(tmp_path: Path) -> None:
    from ragmeter.data.loaders import load_samples

    f = tmp_path / "x.json"
    f.write_text(json.dumps(DEEPEVAL_ROWS, ensure_ascii=False), encoding="utf-8")
    for fmt in ("deepeval", "auto"):
        s = load_samples(f, format=fmt).samples[0]
        assert s.reference_contexts == ["Зимняя сессия: январь."] and s.retrieved_contexts is None
        assert s.user_input == "Когда сессия?" and not s.metadata


# 7. the data language travels with the results --------------------------------------------------

def test_reports_from_results_json_follow_the_recorded_language(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import ragmeter
    from ragmeter.data.sample import Sample

    ru = [Sample(id="1", user_input="Когда начинается зимняя сессия?", reference="В январе.",
                 response="В январе.", retrieved_ids=["d1"], gold_chunk_ids=["d1"])]
    assert ragmeter.evaluate_generation(ru, metrics=["rouge_1"]).meta["lang"] == "ru"
    assert ragmeter.evaluate_retrieval(ru, metrics=["mrr"]).meta["lang"] == "ru"

    f = _jsonl(tmp_path / "allru.jsonl", [{"user_input": "Где находится библиотека?",
                                           "reference": "В корпусе Б.", "response": "В корпусе Б."}])
    res = tmp_path / "allru.json"
    code, _, err = run(capsys, "generation", "--samples", str(f), "--metrics", "rouge_1",
                       "--out", str(res))
    assert code == 0, err
    page = tmp_path / "r.html"
    code, _, err = run(capsys, "report", str(res), "--out", str(page))
    assert code == 0, err
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>\n<html lang=ru>")
    code, _, err = run(capsys, "report", str(res), "--lang", "en", "--out", str(page))
    assert code == 0 and "<html lang=en>" in page.read_text(encoding="utf-8")


# 8. one home per concept ----------------------------------------------------------------------

SRC = Path(__file__).parents[1] / "src" / "ragmeter"


def test_metric_names_are_split_by_the_registry_only() -> None:
    from ragmeter.cli.commands.retrieval import build_metrics
    from ragmeter.metrics.registry import metric_base, with_cutoffs
    from ragmeter.reports.decision import base_name, rank_metrics

    assert metric_base("hit_rate@1(level=doc)") == base_name("hit_rate@1(level=doc)") == "hit_rate@1"
    assert with_cutoffs("recall(level=doc)", [5, 10]) == "recall@5,10(level=doc)"
    assert [str(m) for m in build_metrics("recall(level=doc)", [5], "chunk")] == \
        ["recall@5(level=doc)"]
    assert rank_metrics(["rouge_1", "hit_rate@1(level=doc)", "mrr"])[0] == "mrr"
    decision = (SRC / "reports" / "decision.py").read_text(encoding="utf-8")
    assert "re.compile" not in decision and 'split("@")' not in decision
    assert 'partition("(")' not in (SRC / "cli" / "commands" / "retrieval.py").read_text(
        encoding="utf-8")


def test_dataset_formats_have_one_home() -> None:
    from ragmeter.cli import common
    from ragmeter.data.formats import FORMATS
    from ragmeter.runner.config import DATASET_FORMATS

    assert DATASET_FORMATS is FORMATS
    assert common._check_format("deepeval") == "deepeval"
    with pytest.raises(Exception, match="--format"):
        common._check_format("xml")


def test_masking_has_one_home() -> None:
    import ragmeter.judges.openai_http as http

    assert not hasattr(http, "redact") and not hasattr(__import__("ragmeter.cli.common",
                                                                  fromlist=["x"]), "_mask")


def test_data_layer_names_keys_and_the_cli_names_options(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragmeter.data.loaders import from_records, load_samples
    from ragmeter.errors import ConfigError

    f = _jsonl(tmp_path / "s.jsonl", [{"user_input": "q", "response": "a", "reference": "a"}])
    with pytest.raises(ConfigError) as e:
        load_samples(f, format="xml")
    assert e.value.key == "format" and "--format" not in str(e.value)
    with pytest.raises(ConfigError) as e:
        from_records([{"q": 1}], column_map={"user_input": "missing"})
    assert e.value.key == "column_map" and "--map" not in str(e.value)
    code, _, err = run(capsys, "generation", "--samples", str(f), "--format", "xml")
    assert code == EXIT_USAGE and "option '--format'" in err
    code, _, err = run(capsys, "generation", "--samples", str(f), "--map", "user_input=zz",
                       "--metrics", "rouge_1")
    assert code == EXIT_USAGE and "option '--map'" in err and "'zz'" in err
