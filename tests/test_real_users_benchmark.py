"""Real-users benchmark: logged URL → corpus doc (normalised), retrieval evaluated at doc
level, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json

import pytest

from conftest import needs_extra
from ragmeter.data.sql import LoggedQuestion, LogQuery
from ragmeter.errors import DataError
from ragmeter.retrieval.base import Chunk, Hit
from ragmeter.retrieval.corpus import Document
from ragmeter.tiers.real_users import (
    DEFAULT_METRICS,
    cap_cutoffs,
    corpus_url_index,
    evaluate_real_users,
    logged_to_samples,
    normalize_url,
)


@pytest.mark.parametrize("raw, want", [
    ("https://wiki.example.com/pages/1", "https://wiki.example.com/pages/1"),
    ("HTTP://Wiki.Example.COM/pages/1/", "https://wiki.example.com/pages/1"),
    ("https://wiki.example.com:443/pages/1#section", "https://wiki.example.com/pages/1"),
    ("https://wiki.example.com/pages/viewpage.action?utm_source=x&pageId=42&gclid=abc",
     "https://wiki.example.com/pages/viewpage.action?pageId=42"),
    ("https://wiki.example.com/p?b=2&a=1", "https://wiki.example.com/p?a=1&b=2"),
    ("https://wiki.example.com/pages/%D0%BE%D1%82%D0%BF%D1%83%D1%81%D0%BA",
     "https://wiki.example.com/pages/%D0%BE%D1%82%D0%BF%D1%83%D1%81%D0%BA"),
    ("https://wiki.example.com/pages/отпуск/", "https://wiki.example.com/pages/%D0%BE%D1%82%D0%BF%D1%83%D1%81%D0%BA"),
    ("wiki.example.com/pages/1", "https://wiki.example.com/pages/1"),
    ("http://wiki.example.com:8090/x", "https://wiki.example.com:8090/x"),
    ("", None), ("   ", None), (None, None),
])
def test_normalize_url(raw, want) -> None:
    assert normalize_url(raw) == want


def _docs() -> list[Document]:
    return [
        Document("vacation", "Отпуск оформляется через портал самообслуживания. Заявление на "
                 "отпуск подаётся за две недели.", "Отпуск",
                 "https://wiki.example.com/pages/vacation/"),
        Document("vpn", "VPN: установите клиент, подключите VPN профиль компании и войдите.",
                 "VPN", "https://wiki.example.com/pages/vpn"),
        Document("wifi", "Пароль Wi-Fi для гостей выдаёт служба IT. Wi-Fi сеть офиса.",
                 "Wi-Fi", "https://wiki.example.com/pages/wifi"),
        Document("nourl", "Документ без ссылки про пропуск и охрану.", "Пропуск", None),
    ]


class FixedRetriever:
    """Test double: returns the given doc order for every query."""

    name = "fixed"

    def __init__(self, order: dict[str, list[str]]):
        self.order = order
        self.chunks: list[Chunk] = []

    def index(self, chunks) -> None:
        self.chunks = list(chunks)

    def search(self, queries, k):
        return [[Hit(f"{d}#0", d, 1.0 / (r + 1)) for r, d in enumerate(self.order[q][:k])]
                for q in queries]

    def signature_fields(self):
        return {"kind": "fixed"}


def test_mapping_counts_unmatched() -> None:
    index, clashes = corpus_url_index(_docs())
    assert index["https://wiki.example.com/pages/vacation"] == "vacation" and not clashes
    rows = [LoggedQuestion("1", "q", None, "http://wiki.example.com/pages/vpn/#x", 5, None),
            LoggedQuestion("2", "q", None, "https://wiki.example.com/pages/other", 5, None)]
    samples, counts, unmatched = logged_to_samples(rows, index)
    assert [s.gold_doc_ids for s in samples] == [["vpn"]]
    assert counts == {"url_not_in_corpus": 1} and unmatched == [rows[1].url]


def test_end_to_end_fixed_retriever_hand_computed(db) -> None:
    order = {"Как оформить отпуск?": ["vacation", "vpn"],
             "Как подключить VPN?": ["wifi", "vpn"],
             "Какой пароль от Wi-Fi?": ["vpn", "vacation", "nourl"]}
    res = evaluate_real_users(_docs(), db_url=db.url, query=LogQuery(db_schema=db.schema),
                              retriever=FixedRetriever(order), k=3,
                              metrics=["hit_rate@1(level=doc)", "mrr(level=doc)"])
    assert res.meta["counts"] == {"null_url": 1, "null_question": 1, "url_not_in_corpus": 1}
    assert res.meta["n_read"] == 6 and res.meta["n_evaluated"] == 3
    assert res["hit_rate@1(level=doc)"].values.tolist() == [1.0, 0.0, 0.0]
    assert res["mrr(level=doc)"].mean == pytest.approx((1 + 0.5 + 0) / 3)
    sig = res["mrr(level=doc)"].signature.as_dict()
    assert sig.get("source") == "real_users"
    assert "ragmeter-test" not in str(res.meta) + str(sig)  # the PG test password
    assert db.kind == "sqlite" or "***" in res.meta["db"]


def test_real_users_cutoffs_capped_at_ranking_depth(db) -> None:
    order = {"Как оформить отпуск?": ["vacation", "vpn"],
             "Как подключить VPN?": ["wifi", "vpn"],
             "Какой пароль от Wi-Fi?": ["vpn", "vacation", "nourl"]}
    res = evaluate_real_users(_docs(), db_url=db.url, query=LogQuery(db_schema=db.schema),
                              retriever=FixedRetriever(order), k=3)
    ks = {r.signature.as_dict().get("k") for r in res}
    assert all(k in ("1", "3", "full", 1, 3) for k in ks), ks
    assert "hit_rate@5(level=doc)" not in res.results and "ndcg@10(level=doc)" not in res.results
    assert "hit_rate@3(level=doc)" in res.results
    assert res.meta["capped_cutoffs"]["hit_rate@10(level=doc)"] == "hit_rate@3(level=doc)"
    kept, capped = cap_cutoffs(DEFAULT_METRICS, 10)
    assert kept == [str(m) for m in DEFAULT_METRICS] and not capped


def test_end_to_end_bm25(db) -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    res = evaluate_real_users(_docs(), db_url=db.url,
                              query=LogQuery(db_schema=db.schema, min_score=5),
                              retriever="bm25", k=3, metrics=["hit_rate@1(level=doc)"])
    # score = 5 keeps 'отпуск' and 'Wi-Fi' (null URL and empty question excluded, counted)
    assert res.meta["n_evaluated"] == 2
    assert res["hit_rate@1(level=doc)"].mean == 1.0


def test_no_mappable_question_is_an_error(db) -> None:
    docs = [Document("x", "текст", None, "https://elsewhere.example.org/x")]
    with pytest.raises(DataError, match="no logged question maps"):
        evaluate_real_users(docs, db_url=db.url, query=LogQuery(db_schema=db.schema),
                            retriever=FixedRetriever({}))
    with pytest.raises(DataError, match="no corpus document has a 'url'"):
        evaluate_real_users([Document("x", "t")], db_url=db.url,
                            query=LogQuery(db_schema=db.schema), retriever=FixedRetriever({}))


def test_cli_bad_column_lists_real_ones(db, tmp_path) -> None:
    from typer.testing import CliRunner

    from ragmeter.cli.app import app

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"doc_id": d.doc_id, "text": d.text, "url": d.url})
                                for d in _docs()), encoding="utf-8")
    args = ["score", "real-users", "--corpus", str(corpus), "--db-url", db.url, "-k", "3",
            *(["--schema", db.schema] if db.schema else [])]
    r = CliRunner().invoke(app, [*args, "--url-col", "link"])
    assert r.exit_code != 0 and "confluence_url" in str(r.exception)
    needs_extra("retrieval", "bm25s", "Stemmer")  # the run below uses the default BM25
    out = tmp_path / "ru.json"
    r = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["meta"]["n_evaluated"] == 3 and "ragmeter-test" not in out.read_text()
