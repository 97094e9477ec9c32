"""Corpus ingestion (jsonl, folders of txt/md/html) and sentence-aware chunking."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ragmeter.errors import ConfigError, DataError
from ragmeter.retrieval.chunking import (
    ChunkingParams,
    chunk_documents,
    chunk_spans,
    chunk_text,
    doc_of_chunk,
)
from ragmeter.retrieval.corpus import Document, html_to_text, load_corpus


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
                              for r in rows) + "\n", encoding="utf-8")
    return path


def test_jsonl_loads_fields_and_metadata(tmp_path: Path) -> None:
    p = _write_jsonl(tmp_path / "c.jsonl", [
        {"doc_id": "a", "text": "Текст А.", "title": "A", "url": "http://x/a",
         "metadata": {"lang": "ru"}, "section": "law"},
        {"doc_id": 7, "text": "Text B."},
    ])
    docs = load_corpus(p)
    assert [d.doc_id for d in docs] == ["a", "7"]
    assert docs[0].title == "A" and docs[0].url == "http://x/a"
    assert docs[0].metadata == {"lang": "ru", "section": "law"}
    assert docs[1].title is None


def test_jsonl_every_bad_line_is_named(tmp_path: Path) -> None:
    p = _write_jsonl(tmp_path / "bad.jsonl", [
        {"doc_id": "a", "text": "ok"},
        "{not json",
        {"doc_id": "b", "text": "   "},
        {"text": "no id"},
        {"doc_id": "a", "text": "dup"},
        {"doc_id": "c", "text": "x", "metadata": [1]},
    ])
    with pytest.raises(DataError) as info:
        load_corpus(p)
    msg = str(info.value)
    problems = {(pr.line, pr.field) for pr in info.value.problems}
    assert problems == {(2, None), (3, "text"), (4, "doc_id"), (5, "doc_id"), (6, "metadata")}
    assert "bad.jsonl:2" in msg and "invalid JSON" in msg
    assert "empty document" in msg and "duplicate doc_id 'a' (first on line 1)" in msg


def test_missing_path_and_unsupported_type(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_corpus(tmp_path / "nope.jsonl")
    other = tmp_path / "c.csv"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match=r"c\.csv.*unsupported"):
        load_corpus(other)


def test_folder_txt_md_html(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Первый документ.", encoding="utf-8")
    (tmp_path / "sub" / "b.md").write_text("# Заголовок\n\nВторой.", encoding="utf-8")
    (tmp_path / "sub" / "c.html").write_text(
        "<html><head><title> Правила  общежития </title><style>p{color:red}</style></head>"
        "<body><script>var x = 1;</script><h1>Правила</h1><p>Тишина после 23:00.</p>"
        "<p>Гости&nbsp;до 22:00 &amp; по пропуску.</p></body></html>", encoding="utf-8")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    docs = {d.doc_id: d for d in load_corpus(tmp_path)}
    assert set(docs) == {"a", "sub/b", "sub/c"}
    html = docs["sub/c"]
    assert html.title == "Правила общежития"
    assert "var x" not in html.text and "color" not in html.text
    assert html.text.splitlines() == ["Правила", "Тишина после 23:00.",
                                      "Гости до 22:00 & по пропуску."]  # nbsp folded
    assert docs["sub/b"].metadata["source_path"] == "sub/b.md"


def test_folder_bad_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text("ok", encoding="utf-8")
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("привет".encode("cp1251"))
    (tmp_path / "scripts.html").write_text("<script>only()</script>", encoding="utf-8")
    (tmp_path / "good.md").write_text("same id as good.txt", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_corpus(tmp_path)
    by_file = {Path(p.source).name: p.message for p in info.value.problems}
    assert set(by_file) == {"empty.md", "latin1.txt", "scripts.html", "good.txt"}
    assert "not valid UTF-8" in by_file["latin1.txt"]
    assert "empty" in by_file["empty.md"] and "empty" in by_file["scripts.html"]
    assert "duplicate doc_id 'good'" in by_file["good.txt"]


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no \.txt/\.md/\.html"):
        load_corpus(tmp_path)


def test_html_to_text_keeps_blocks() -> None:
    text, title = html_to_text("<div>a<br>b</div><ul><li>c</li><li>d</li></ul>")
    assert text.splitlines() == ["a", "b", "c", "d"] and title is None


RU_TEXT = (
    "Общежитие предоставляется иногородним студентам. Заявление подаётся в деканат до 1 августа. "
    "Оплата вносится ежемесячно через банк. При заселении нужна справка о флюорографии. "
    "Гости допускаются до 22:00 по паспорту. Курение в общежитии запрещено. "
    "За нарушения правил студент может быть выселен. Т. е. правила обязательны для всех."
)


def test_chunks_respect_size_and_keep_whole_sentences() -> None:
    chunks = chunk_text(RU_TEXT, chunk_size_chars=120, overlap_chars=50)
    assert len(chunks) > 3
    for c in chunks:
        assert len(c) <= 120
        assert c[0].isupper() and c.rstrip()[-1] in ".!?"  # whole sentences only
    # razdel keeps "Т. е." inside one sentence
    assert any("Т. е. правила обязательны" in c for c in chunks)
    joined = " ".join(chunks)
    for sentence in ("Курение в общежитии запрещено.", "Оплата вносится ежемесячно через банк."):
        assert sentence in joined


def test_overlap_is_trailing_sentences_within_budget() -> None:
    size, overlap = 150, 70
    spans = chunk_spans(RU_TEXT, chunk_size_chars=size, overlap_chars=overlap)
    for (s0, e0), (s1, e1) in itertools.pairwise(spans):
        assert s1 > s0 and e1 > e0  # progress
        shared = max(0, e0 - s1)
        assert shared <= overlap
        if shared:
            assert RU_TEXT[s1:e0].strip() == RU_TEXT[s1:e0]  # starts on a sentence boundary
    no_overlap = chunk_spans(RU_TEXT, chunk_size_chars=size, overlap_chars=0)
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(no_overlap))
    # with overlap some consecutive chunks do share a sentence
    assert any(e0 > s1 for (_, e0), (s1, _) in itertools.pairwise(spans))


def test_long_sentence_split_at_word_boundaries() -> None:
    words = [f"слово{i}" for i in range(60)]
    text = " ".join(words) + "."
    chunks = chunk_text(text, chunk_size_chars=50, overlap_chars=0)
    assert all(len(c) <= 50 for c in chunks)
    assert " ".join(chunks).split() == text.split()  # no word cut, nothing lost
    giant = "x" * 130
    assert [len(c) for c in chunk_text(giant, chunk_size_chars=50, overlap_chars=10)] == [50, 50, 30]


def test_chunk_ids_stable_and_params_recorded() -> None:
    docs = [Document("law/1", RU_TEXT, title="Правила"), Document("faq", "Коротко. Ясно.")]
    a = chunk_documents(docs, chunk_size_chars=120, overlap_chars=40)
    b = chunk_documents([Document("law/1", RU_TEXT, title="Правила"),
                         Document("faq", "Коротко. Ясно.")], chunk_size_chars=120,
                        overlap_chars=40)
    assert [(c.chunk_id, c.text) for c in a] == [(c.chunk_id, c.text) for c in b]
    law = [c for c in a if c.doc_id == "law/1"]
    assert [c.chunk_id for c in law] == [f"law/1#{i}" for i in range(len(law))]
    assert all(doc_of_chunk(c.chunk_id) == c.doc_id for c in a)
    assert law[0].title == "Правила"
    assert RU_TEXT[law[1].metadata["char_start"]:law[1].metadata["char_end"]] == law[1].text
    c = chunk_documents(docs, chunk_size_chars=200, overlap_chars=40)
    assert [x.text for x in c if x.doc_id == "law/1"] != [x.text for x in law]
    p1, p2 = ChunkingParams(120, 40), ChunkingParams(200, 40)
    assert p1.signature_fields() == {"chunk_size": 120, "overlap": 40,
                                     "chunker": "razdel-sent-v1"}
    assert p1.signature_fields() != p2.signature_fields()


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_chunking_params(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        ChunkingParams(size, overlap)
