"""BEIR datasets: a corpus loaded by content, and a BEIR folder (corpus, queries, qrels) given
to `ragmeter score retrieval` and `ragmeter score baselines`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import needs_extra, run_cli, write_jsonl
from ragmeter.errors import EXIT_USAGE

run = run_cli
_jsonl = write_jsonl


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
    code, out, err = run(capsys, "score", "retrieval", "--beir", str(beir), "--run", str(results),
                         "--metrics", "hit_rate@1,mrr", "--json")
    assert code == 0, err
    means = {k: r["aggregate"]["mean"] for k, r in json.loads(out)["results"].items()}
    assert means == {"hit_rate@1": 0.5, "mrr": 0.75}
    code, _, err = run(capsys, "score", "retrieval", "--beir", str(beir))
    assert code == EXIT_USAGE and "--run" in err

    needs_extra("retrieval", "bm25s", "Stemmer")
    code, _, err = run(capsys, "score", "baselines", "--beir", str(beir), "--out",
                       str(tmp_path / "o"),
                       "-r", "bm25", "-k", "1,2", "--no-charts")
    assert code == 0, err
    table = json.loads((tmp_path / "o" / "comparison.json").read_text(encoding="utf-8"))
    assert "bm25" in json.dumps(table) and "level=doc" in json.dumps(table)


def test_line_numbers_stay_in_errors(tmp_path: Path) -> None:
    from ragmeter.data.loaders import load_samples
    from ragmeter.errors import DataError

    f = tmp_path / "bad.jsonl"
    f.write_text('{"user_input": "q"}\n\n{"user_input": 3}\n', encoding="utf-8")
    with pytest.raises(DataError) as e:
        load_samples(f)
    assert e.value.problems[0].line == 3
