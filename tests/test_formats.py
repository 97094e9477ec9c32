"""Other tools' files, written in their documented layouts (or by the tool's own writer where
it is installed: pandas/pyarrow for CSV repr cells, Parquet and DataFrames), load into the right
ragmeter fields; encodings and the regression cases of the loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import needs_extra
from ragmeter.cli import app as cli
from ragmeter.data import load_qrels, load_run, load_samples
from ragmeter.data.beir import load_beir
from ragmeter.data.formats import detect_format, parse_map
from ragmeter.data.hashing import gold_hash
from ragmeter.data.loaders import from_pandas, from_records, load_dataset_file
from ragmeter.data.sample import Sample
from ragmeter.errors import EXIT_USAGE, ConfigError, DataError, UsageError

RAGAS_ROWS = [
    {"user_input": "Когда зимняя сессия?", "retrieved_contexts": ["Зимняя сессия: 9–31 января.",
                                                                   "Летняя сессия в июне."],
     "response": "С 9 по 31 января.", "reference": "Зимняя сессия проходит с 9 по 31 января.",
     "reference_contexts": ["Зимняя сессия: 9–31 января."]},
    {"user_input": "Where's the library?", "retrieved_contexts": ["It's in building B, 'red' wing."],
     "response": "Building B.", "reference": "In building B.",
     "reference_contexts": ["It's in building B, 'red' wing."]},
]


def _check_ragas(samples: list[Sample]) -> None:
    assert len(samples) == 2
    a, b = samples
    assert a.user_input == RAGAS_ROWS[0]["user_input"]
    assert a.retrieved_contexts == RAGAS_ROWS[0]["retrieved_contexts"]
    assert a.reference_contexts == RAGAS_ROWS[0]["reference_contexts"]
    assert a.response == "С 9 по 31 января." and a.reference.startswith("Зимняя")
    assert b.retrieved_contexts == ["It's in building B, 'red' wing."]


def test_ragas_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "ragas.jsonl"  # EvaluationDataset.to_jsonl: one sample dict per line
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in RAGAS_ROWS), "utf-8")
    _check_ragas(load_samples(p).samples)


def test_ragas_to_csv_python_repr_cells(tmp_path: Path) -> None:
    needs_extra("pandas")
    import pandas as pd
    p = tmp_path / "ragas.csv"  # EvaluationDataset.to_csv = to_pandas().to_csv(index=False)
    pd.DataFrame(RAGAS_ROWS).to_csv(p, index=False)
    assert "['Зимняя" in p.read_text("utf-8")  # list cells are Python reprs
    _check_ragas(load_samples(p).samples)


def test_ragas_csv_literal_eval_is_safe(tmp_path: Path) -> None:
    p = tmp_path / "evil.csv"
    p.write_text('user_input,retrieved_contexts\nq,"[__import__(\'os\').system(\'echo x\')]"\n',
                 "utf-8")
    with pytest.raises(DataError, match="retrieved_contexts"):
        load_samples(p)


DEEPEVAL_CASES = [
    {"input": "What is the fee?", "actual_output": "500 rubles.",
     "expected_output": "There is no fee.", "retrieval_context": ["Retakes cost 500 rubles."],
     "context": ["Retakes are free of charge."], "additional_metadata": {"team": "qa"},
     "name": "case-1"},
    {"input": "Dorm price?", "actual_output": "950 rubles.", "expected_output": "950 rubles.",
     "retrieval_context": ["Dorm: 950 rubles."], "context": ["Dorm: 950 rubles."]},
]


def _check_deepeval(samples: list[Sample]) -> None:
    a = samples[0]
    assert a.user_input == "What is the fee?" and a.response == "500 rubles."
    assert a.reference == "There is no fee."
    assert a.retrieved_contexts == ["Retakes cost 500 rubles."]
    # DeepEval's `context` is the GOLD context
    assert a.reference_contexts == ["Retakes are free of charge."]
    assert samples[1].reference_contexts == ["Dorm: 950 rubles."]


def test_deepeval_json(tmp_path: Path) -> None:
    p = tmp_path / "cases.json"
    p.write_text(json.dumps(DEEPEVAL_CASES, indent=2), "utf-8")
    loaded = load_samples(p)
    _check_deepeval(loaded.samples)
    assert loaded.samples[0].metadata["team"] == "qa"
    assert loaded.samples[0].id == "case-1" and loaded.samples[1].id == "#1"


def test_deepeval_csv(tmp_path: Path) -> None:
    p = tmp_path / "cases.csv"
    p.write_text("input,actual_output,expected_output,context,retrieval_context\n"
                 '"What is the fee?","500 rubles.","There is no fee.",'
                 '"Retakes are free of charge.","Retakes cost 500 rubles."\n'
                 '"Dorm price?","950 rubles.","950 rubles.","Dorm: 950 rubles.",'
                 '"Dorm: 950 rubles.;Other: 1200"\n', "utf-8")
    samples = load_samples(p).samples
    _check_deepeval(samples)
    assert samples[1].retrieved_contexts == ["Dorm: 950 rubles.", "Other: 1200"]


def test_hf_jsonl_and_parquet(tmp_path: Path) -> None:
    needs_extra("pandas")
    needs_extra("parquet")
    import pandas as pd
    df = pd.DataFrame(RAGAS_ROWS)
    j = tmp_path / "train.jsonl"  # datasets.Dataset.to_json: JSON Lines
    df.to_json(j, orient="records", lines=True, force_ascii=False)
    _check_ragas(load_samples(j).samples)
    pq = tmp_path / "train.data"  # Parquet detected by content, not by name
    df.to_parquet(pq)
    loaded = load_samples(pq)
    _check_ragas(loaded.samples)
    assert [s.id for s in loaded.samples] == ["#0", "#1"]


def test_from_pandas_with_numpy_cells_and_map() -> None:
    needs_extra("pandas")
    import pandas as pd
    np = pytest.importorskip("numpy")
    df = pd.DataFrame({"prompt": ["q1", "q2"], "ctx": [np.array(["a", "b"]), np.array(["c"])],
                       "ans": ["x", float("nan")]})
    loaded = from_pandas(df, column_map={"user_input": "prompt", "retrieved_contexts": "ctx",
                                         "response": "ans"})
    s1, s2 = loaded.samples
    assert s1.retrieved_contexts == ["a", "b"] and s1.response == "x"
    assert s2.response is None and s2.retrieved_contexts == ["c"]


def test_from_records_list_of_dicts() -> None:
    loaded = from_records([{"question": "q", "contexts": ["c1"], "answer": "a"}])
    assert loaded.samples[0].user_input == "q" and loaded.samples[0].retrieved_contexts == ["c1"]
    with pytest.raises(ConfigError, match="column_map"):  # the data layer names no CLI option
        from_records([{"q": 1}], column_map={"user_input": "missing"})


def test_parse_map() -> None:
    assert parse_map(["user_input=prompt,response=out"]) == {"user_input": "prompt",
                                                             "response": "out"}
    for bad in (["nope"], ["user=prompt"], ["user_input=a", "user_input=b"]):
        with pytest.raises(UsageError):
            parse_map(bad)


def test_beir_folder_and_results(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "T", "text": "alpha"}\n{"_id": "d2", "title": "", "text": "b"}\n',
        "utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "what?"}\n', "utf-8")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n"
                                                 "q1\td2\t0\n", "utf-8")
    samples, corpus = load_beir(tmp_path)
    assert samples[0].gold_doc_ids == ["d1"] and samples[0].gold_grades == {"d1": 2}
    assert [d["id"] for d in corpus] == ["d1", "d2"]
    assert load_qrels(tmp_path / "qrels" / "test.tsv") == {"q1": {"d1": 2, "d2": 0}}
    res = tmp_path / "results.json"  # BEIR EvaluateRetrieval results: {qid: {doc: score}}
    res.write_text('{"q1": {"d1": 0.9, "d2": 0.1}}', "utf-8")
    assert load_run(res) == {"q1": {"d1": 0.9, "d2": 0.1}}


def test_trec_bom_and_blank_lines_accepted_comments_and_other_columns_named(
        tmp_path: Path) -> None:
    q = tmp_path / "qrels.txt"
    q.write_bytes("\ufeffq1 0 d1 1\n\nq2 0 d2 1\n".encode())
    assert load_qrels(q) == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    r = tmp_path / "run.txt"
    r.write_bytes("\ufeffq1 Q0 d1 1 2.5 tag\n\nq2 Q0 d2 1 1.0 tag\n".encode())
    assert load_run(r) == {"q1": {"d1": 2.5}, "q2": {"d2": 1.0}}
    q.write_bytes("\ufeff# judged by two people\nq1 0 d1 1 extra\nq2 0 d2 1\n".encode())
    with pytest.raises(DataError) as err:
        load_qrels(q)
    assert [(p.line, p.field) for p in err.value.problems] == [(1, None), (2, "rel")]
    r.write_bytes("\ufeffq1 Q0 d1 1 2.5 tag more\n# comment\nq2 Q0 d2 1 1.0\n".encode())
    with pytest.raises(DataError) as err:
        load_run(r)
    assert [(p.line, p.field) for p in err.value.problems] == [(1, "tag"), (2, None), (3, "tag")]
    j = tmp_path / "qrels.json"
    j.write_bytes('\ufeff{"q1": {"d1": 1}}'.encode())  # BOM JSON is JSON, not TREC
    assert load_qrels(j) == {"q1": {"d1": 1}}


def test_separators_inside_json_strings_do_not_split(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    rows = [{"id": "a", "user_input": "one\u2028two\u0085three\u2029"}, {"id": "b", "user_input": "x"}]
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    s = load_samples(p).samples
    assert [x.id for x in s] == ["a", "b"] and "\u2028" in s[0].user_input


def test_encoding_errors_are_clear(tmp_path: Path) -> None:
    p = tmp_path / "cp1251.jsonl"
    p.write_bytes('{"id": "a", "user_input": "ok"}\n{"id": "b", "user_input": "привет"}\n'
                  .encode("cp1251"))
    with pytest.raises(DataError, match=r"cp1251.jsonl:2: not UTF-8.*iconv"):
        load_samples(p)
    p16 = tmp_path / "u16.jsonl"
    p16.write_bytes('{"id": "a"}'.encode("utf-16"))
    with pytest.raises(DataError, match="UTF-16"):
        load_samples(p16)
    sur = tmp_path / "sur.jsonl"
    sur.write_text('{"id": "a", "user_input": "bad \\ud800 text"}\n', "utf-8")
    with pytest.raises(DataError, match="lone surrogate"):
        load_samples(sur)


def test_compact_json_array_ids_by_index_stable_under_reformatting(tmp_path: Path) -> None:
    rows = [{"question": f"q{i}", "chunk_id": f"c{i}", "confluence_url": f"https://w/{i}",
             "chunk_text": f"text {i}"} for i in range(3)]
    compact = tmp_path / "synthetic.json"
    compact.write_text(json.dumps(rows, ensure_ascii=False, separators=(",", ":")), "utf-8")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(rows, ensure_ascii=False, indent=4), "utf-8")
    a, b = load_samples(compact).samples, load_samples(pretty).samples
    assert [s.id for s in a] == ["#0", "#1", "#2"] == [s.id for s in b]
    assert a[1].gold_chunk_ids == ["c1"] and a[1].gold_doc_ids == ["https://w/1"]
    assert a[1].reference_contexts == ["text 1"] and a[1].user_input == "q1"


def test_format_by_content_and_hint(tmp_path: Path) -> None:
    p = tmp_path / "evalset_but_deepeval.txt"
    p.write_text(json.dumps(DEEPEVAL_CASES), "utf-8")
    assert detect_format([(None, r) for r in DEEPEVAL_CASES]) == "deepeval"
    _check_deepeval(load_samples(p).samples)
    trec = tmp_path / "samples.jsonl"
    trec.write_text("q1 0 d1 1\nq2 0 d2 1\n", "utf-8")
    with pytest.raises(DataError, match="TREC"):
        load_samples(trec)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "title": "t", "text": "x"}\n', "utf-8")
    with pytest.raises(DataError, match="BEIR corpus"):
        load_samples(corpus)


def test_dataset_file_detects_evalset_by_content(tmp_path: Path) -> None:
    p = tmp_path / "data.jsonl"  # no "evalset" in the name
    p.write_text('{"id": "q1", "question": "q", "gold_doc_ids": [], "type": "fact"}\n', "utf-8")
    with pytest.raises(DataError, match="gold_doc_ids"):
        load_dataset_file(p)


def test_gold_hash_ignores_system_outputs() -> None:
    a = Sample(id="1", user_input="q", gold_doc_ids=["d"], response="x", retrieved_ids=["d"])
    b = Sample(id="1", user_input="q", gold_doc_ids=["d"], response="y", retrieved_ids=["e"])
    c = Sample(id="1", user_input="q", gold_doc_ids=["e"])
    assert gold_hash([a]) == gold_hash([b]) != gold_hash([c])


def test_samples_given_as_qrels_names_the_likely_format(tmp_path: Path) -> None:
    p = tmp_path / "qrels.json"
    p.write_text("\n".join(json.dumps(r) for r in RAGAS_ROWS), "utf-8")
    with pytest.raises(DataError, match="looks like JSON Lines records"):
        load_qrels(p)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.run(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


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
    code, _, err = run(capsys, "score", "generation", "--samples", str(f), "--format", fmt,
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


# --- the format table: a new layout is one declaration ----------------------------------------
def test_a_new_format_is_one_declaration(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ragmeter.cli.common import _check_format
    from ragmeter.data.format_reference import readme_table, render_markdown
    from ragmeter.data.formats import FORMATS, Format, declare_format
    from ragmeter.data.loaders import iter_samples

    rows = [{"ticket_text": "Как сбросить пароль?", "agent_reply": "Через портал.",
             "kb_article": 17, "queue": "it"},
            {"ticket_text": "Где столовая?", "agent_reply": "В корпусе B.",
             "kb_article": "kb-2"}]
    p = tmp_path / "tickets.json"
    p.write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
    with FORMATS.scoped():
        # the whole declaration of the new layout:
        declare_format(Format(
            "helpdesk", "a help-desk export",
            fields={"ticket_text": "user_input", "agent_reply": "reference",
                    "kb_article": "gold_doc_ids"},
            requires=("ticket_text",)))
        for fmt in ("auto", "helpdesk"):  # detected by content, and chosen by name
            a, b = load_samples(p, format=fmt).samples
            assert (a.user_input, a.reference, a.gold_doc_ids) == (
                "Как сбросить пароль?", "Через портал.", ["17"])
            assert b.gold_doc_ids == ["kb-2"] and a.metadata == {"queue": "it"}
        assert [s.user_input for s in iter_samples(p)] == [r["ticket_text"] for r in rows]
        assert _check_format("helpdesk") == "helpdesk"          # --format choices
        with pytest.raises(DataError, match="--format helpdesk"):  # never silently remapped
            load_samples(p, format="samples")
        with pytest.raises(ConfigError, match="helpdesk"):      # errors list it
            load_samples(p, format="xml")
        assert "`helpdesk`" in render_markdown() and "`helpdesk`" in readme_table()
    assert "helpdesk" not in FORMATS
    with pytest.raises(UsageError, match="allowed: auto, samples"):
        _check_format("helpdesk")
    # the committed reference is generated from the table
    root = Path(__file__).parents[1]
    out = subprocess.run([sys.executable, "-m", "ragmeter.data.format_reference", "--check"],
                         capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(root / "src")})
    assert out.returncode == 0, out.stderr  # stale: python -m ragmeter.data.format_reference


def test_format_declaration_maps_only_to_ragmeter_fields() -> None:
    from ragmeter.data.formats import Format

    with pytest.raises(ValueError, match="unknown field"):
        Format("x", "x", fields={"a": "user_question"})


# --- issue: the production system's synthetic golden set loads as is -------------------------
GOLDEN = [{"question": f"Вопрос {i}?", "chunk_id": 1000 + i, "chunk_text": f"Текст {i}.",
           "confluence_url": f"https://wiki.example/pages/{i}",
           "ground_truth_answer": f"Ответ {i}."} for i in range(50)]


def test_synthetic_golden_set_with_integer_chunk_ids_and_ground_truth_answer_loads(
        tmp_path: Path) -> None:
    p = tmp_path / "golden.json"
    p.write_text(json.dumps(GOLDEN, ensure_ascii=False, separators=(",", ":")), "utf-8")
    for load in (load_samples, load_dataset_file):
        samples = load(p).samples
        assert len(samples) == 50
        s = samples[7]
        assert s.gold_chunk_ids == ["1007"] and s.reference == "Ответ 7."
        assert s.gold_doc_ids == ["https://wiki.example/pages/7"]
        assert s.reference_contexts == ["Текст 7."] and s.user_input == "Вопрос 7?"
        assert "ground_truth_answer" not in s.metadata
    j = tmp_path / "golden.jsonl"
    j.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in GOLDEN), "utf-8")
    assert load_samples(j, format="synthetic").samples[0].gold_chunk_ids == ["1000"]


def test_integer_ids_in_id_lists_are_read_as_text_but_bools_are_not(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text('{"id": 1, "question": "q", "gold_doc_ids": [3], "gold_chunk_ids": [3, "c4"],'
                 ' "retrieved_ids": [3, 5]}\n', "utf-8")
    (s,) = load_dataset_file(p).samples
    assert (s.id, s.gold_doc_ids, s.gold_chunk_ids, s.retrieved_ids) == (
        "1", ["3"], ["3", "c4"], ["3", "5"])
    p.write_text('{"id": "a", "question": "q", "gold_doc_ids": [true]}\n', "utf-8")
    with pytest.raises(DataError, match="item 0 is bool"):
        load_samples(p)
