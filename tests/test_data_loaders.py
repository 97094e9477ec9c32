"""Loaders: every bad line reported with file/line/field; skip_invalid counts; csv/json/jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import needs_extra
from ragmeter.data.evalset import load_evalset, write_evalset
from ragmeter.data.hashing import canonical_json, dataset_hash, mapping_hash, pairs_hash
from ragmeter.data.loaders import load_samples, read_records, record_to_sample
from ragmeter.data.sample import Sample
from ragmeter.errors import DataError

FIX = Path(__file__).parent / "fixtures" / "retrieval"


def test_bad_jsonl_lists_every_problem() -> None:
    with pytest.raises(DataError) as info:
        load_samples(FIX / "bad_samples.jsonl")
    got = {(p.line, p.field) for p in info.value.problems}
    assert got == {(2, "gold_doc_ids"), (3, "type"), (4, None), (5, "id"), (6, "gold_doc_id"),
                   (7, "retrieved_scores")}
    text = str(info.value)
    assert "bad_samples.jsonl:4" in text and "invalid JSON" in text
    assert "did you mean 'gold_doc_ids'" in text
    assert "duplicate id 'a' (first on line 1)" in text
    assert "field 'type': must be a string, got int" in text
    assert "--skip-invalid" in text


def test_skip_invalid_keeps_good_records_and_counts() -> None:
    res = load_samples(FIX / "bad_samples.jsonl", skip_invalid=True)
    assert [s.id for s in res.samples] == ["a", "g"]
    assert res.lines == [1, 9]
    assert res.n_skipped == 6
    assert res.n_records == 8
    assert res.samples[1].metadata == {"notes": "n"}
    assert res.samples[1].retrieved_ids == []


def test_seed003_names_map_to_sample() -> None:
    res = load_evalset(FIX / "evalset.jsonl")
    s = res.samples[0]
    assert s.user_input == "Что такое договор дарения?"
    assert s.metadata == {"notes": "ст. 572 ГК РФ", "source": "ruslawod"}
    assert s.retrieved_scores == [0.91, 0.85, 0.40]
    assert [x.type for x in res.samples].count("negative") == 2


def test_csv_lists_json_or_pipe() -> None:
    res = load_samples(FIX / "samples.csv")
    a, b, c = res.samples
    assert a.retrieved_ids == ["gk-572#0", "gk-454#0"] and a.retrieved_scores == [0.9, 0.4]
    assert b.retrieved_ids == ["gk-200#0", "gk-196#1"] and b.retrieved_scores == [0.7, 0.6]
    assert b.user_input == "Срок давности, общий?"
    assert c.gold_doc_ids is None and c.type == "negative"
    assert res.lines == [2, 3, 4]


def test_json_samples_object_with_line_numbers() -> None:
    with pytest.raises(DataError) as info:
        load_samples(FIX / "samples.json")
    (p,) = info.value.problems
    assert (p.line, p.field) == (4, "retrieved_ids")
    assert "item 0 is dict" in p.message  # an integer id is read as text, an object is not


def test_json_list_and_invalid_json(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text('[\n {"id": "x", "user_input": "q"},\n {"id": "y", "type": 3}\n]')
    with pytest.raises(DataError) as info:
        load_samples(p)
    assert [(q.line, q.field) for q in info.value.problems] == [(3, "type")]
    p.write_text('[{"id": "x",}]')
    with pytest.raises(DataError, match="invalid JSON"):
        load_samples(p)
    p.write_text('"just a string"')
    with pytest.raises(DataError, match="list of records"):
        load_samples(p)


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        load_samples(tmp_path / "nope.jsonl")


def test_record_validation_details() -> None:
    s, probs = record_to_sample({"question": "q", "user_input": "other"}, source="x", line=3)
    assert s is None and probs[0].field == "user_input" and "conflicts" in probs[0].message
    s, probs = record_to_sample({"retrieved_ids": ["a"], "retrieved_scores": [1.0, 2.0]})
    assert s is None and "2 items" in probs[0].message
    s, probs = record_to_sample({"retrieved_scores": [float("nan")]})
    assert s is None and probs[0].field == "retrieved_scores"
    s, probs = record_to_sample({"gold_grades": {"a": "high"}})
    assert s is None and probs[0].field == "gold_grades"
    s, probs = record_to_sample([1, 2])
    assert s is None and "JSON object" in probs[0].message
    s, probs = record_to_sample({"question": "q", "my_extra": 5}, line=7, index=6)
    assert s is not None and not probs and s.id == "#6" and s.metadata == {"my_extra": 5}


def test_evalset_rules(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    rows = [
        {"id": "1", "question": "q", "gold_doc_ids": [], "type": "fact"},
        {"id": "2", "question": "q", "gold_doc_ids": ["d"], "type": "negative"},
        {"question": "q", "gold_doc_ids": ["d"]},
        {"id": "4", "question": "", "gold_doc_ids": ["d"]},
        {"id": "5", "question": "ok", "gold_doc_ids": ["d"]},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(DataError) as info:
        load_evalset(p)
    assert [(x.line, x.field) for x in info.value.problems] == [
        (1, "gold_doc_ids"), (2, "gold_doc_ids"), (3, "id"), (4, "question")]
    res = load_evalset(p, skip_invalid=True)
    assert [s.id for s in res.samples] == ["5"] and res.n_skipped == 4


def test_evalset_round_trip(tmp_path: Path) -> None:
    res = load_evalset(FIX / "evalset.jsonl")
    out = tmp_path / "out.jsonl"
    write_evalset(res.samples, out)
    again = load_evalset(out)
    assert [s.to_dict() for s in again.samples] == [s.to_dict() for s in res.samples]
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert list(first)[:5] == ["id", "question", "gold_doc_ids", "gold_chunk_ids", "type"]
    assert first["notes"] == "ст. 572 ГК РФ"


def test_read_records_reports_csv_extra_cells(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("id,question\n1,a\n2,b,c\n")
    records, problems = read_records(p)
    assert [line for line, _ in records] == [2]
    assert problems[0].line == 3


def test_hashes_are_stable_and_canonical() -> None:
    a = [Sample(id="1", user_input="вопрос", gold_doc_ids=["d"])]
    b = [Sample(id="1", user_input="вопрос", gold_doc_ids=["d"])]
    assert dataset_hash(a) == dataset_hash(b) and len(dataset_hash(a)) == 12
    assert len(dataset_hash(a, short=False)) == 64
    assert dataset_hash(a) != dataset_hash([Sample(id="1", user_input="вопрос")])
    assert canonical_json({"b": 1, "a": "я"}) == '{"a":"я","b":1}'
    q1 = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    q2 = {"q2": {"c": 2}, "q1": {"b": 0, "a": 1}}
    assert mapping_hash(q1) == mapping_hash(q2)
    assert pairs_hash(q1) == pairs_hash(q2) != pairs_hash({"q1": {"a": 1}, "q2": {"c": 2}})
    # pinned: a change of the canonical form must be deliberate
    assert dataset_hash([{"id": "x", "a": [1]}]) == __import__("hashlib").sha256(
        b'{"a":[1],"id":"x"}\n').hexdigest()[:12]
    assert pairs_hash({"q": {"d": 1}}) == __import__("hashlib").sha256(
        b"q\x1fd\x1f1").hexdigest()[:12]


def test_single_context_alias(tmp_path) -> None:
    p = tmp_path / "items.jsonl"
    p.write_text('{"id": "a", "question": "q", "answer": "x", "context": "one text"}\n'
                 '{"id": "b", "question": "q", "answer": "y", "context": ["t1", "t2"]}\n',
                 encoding="utf-8")
    samples = load_samples(p).samples
    assert samples[0].retrieved_contexts == ["one text"]
    assert samples[1].retrieved_contexts == ["t1", "t2"]


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


# --- one reading path: line endings and byte-order marks the same for every input -------------
def test_cr_only_line_endings_end_lines_in_json_lines_csv_and_json(tmp_path: Path) -> None:
    from ragmeter.data.loaders import iter_samples

    files = {"s.jsonl": '{"id": "a", "question": "q1"}\r{"id": "b", "question": "q2"}\r',
             "s.csv": "id,question\ra,q1\rb,q2\r",
             "s.tsv": "id\tquestion\ra\tq1\rb\tq2\r",
             "s.json": '[{"id": "a", "question": "q1"},\r{"id": "b",\r "question": "q2"}]\r'}
    lines = {"s.jsonl": [1, 2], "s.csv": [2, 3], "s.tsv": [2, 3], "s.json": [1, 2]}
    for name, text in files.items():
        p = tmp_path / name
        p.write_bytes(text.encode())
        res = load_samples(p)
        assert [(s.id, s.user_input) for s in res.samples] == [("a", "q1"), ("b", "q2")], name
        assert res.lines == lines[name], name
        assert [s.id for s in iter_samples(p)] == ["a", "b"], name
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "a", "question": "q1"}\r{"id": "b", "question": }\r')
    with pytest.raises(DataError) as info:
        load_samples(bad)
    assert [p.line for p in info.value.problems] == [2]


def test_bom_and_cr_accepted_in_judge_bench_items_and_tier0_input(tmp_path: Path) -> None:
    from ragmeter.judge_trust.bench import load_bench
    from ragmeter.tiers.tier0 import load_labelled_texts

    items = [{"id": "i1", "lang": "en", "task": "answer_relevance", "label": 2,
              "question": "Where?", "answer": "Here."},
             {"id": "i2", "lang": "en", "task": "production_gate", "label": "no",
              "question": "Where?", "context": "There.", "answer": "Here."}]
    texts = [{"text": t, "label": lab} for t, lab in (("alpha", "a"), ("alef", "a"),
                                                      ("beta", "b"), ("bet", "b"))]
    for sep in ("\n", "\r\n", "\r"):
        bench = tmp_path / "bench.jsonl"
        bench.write_bytes(b"\xef\xbb\xbf" + sep.join(json.dumps(r) for r in items).encode())
        assert [i.id for i in load_bench(bench)] == ["i1", "i2"]
        t0 = tmp_path / "texts.jsonl"
        t0.write_bytes(b"\xef\xbb\xbf" + sep.join(json.dumps(r) for r in texts).encode())
        got = load_labelled_texts(t0)
        assert got.texts == ["alpha", "alef", "beta", "bet"] and got.labels == list("aabb")
    t0.write_bytes("{\"text\": \"й\", \"label\": \"a\"}\n".encode("cp1251"))
    with pytest.raises(DataError, match="not UTF-8"):  # a clear error, not a traceback
        load_labelled_texts(t0)
    with pytest.raises(DataError, match="file not found"):
        load_bench(tmp_path / "missing.jsonl")
