"""Query rewriting: retrieval on the raw follow-up, the system's rewrite and a gold rewrite."""

from __future__ import annotations

import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.results.records import compare_metric
from ragmeter.retrieval.base import Chunk
from ragmeter.tiers.rewrites import arm_question, evaluate_rewrites

DOCS = {
    "fees-full": "Очное обучение на программе Информатика стоит 280 000 рублей в год.",
    "fees-part": "Заочное обучение на программе Информатика стоит 140 000 рублей в год.",
    "dorm": "Общежитие номер три находится на улице Ленина, дом 15.",
    "library": "Библиотека работает с девяти утра до восьми вечера по будням.",
    "sport": "Спорткомплекс Полярник открыт с понедельника по субботу.",
}


def _samples() -> list[Sample]:
    hist = [{"role": "user", "content": "Сколько стоит очное обучение на Информатике?"}]
    return [
        Sample(id="t1", user_input="А если заочно?", history=hist, gold_doc_ids=["fees-part"],
               metadata={"rewrite": "Сколько стоит заочное обучение на Информатике?",
                         "gold_rewrite": "Стоимость заочного обучения на программе Информатика"}),
        Sample(id="t2", user_input="А где оно?", gold_doc_ids=["dorm"],
               metadata={"rewrite": "Где находится общежитие номер три?"}),
        Sample(id="t3", user_input="А в субботу?", gold_doc_ids=["sport"],
               metadata={"gold_rewrite": "Открыт ли спорткомплекс Полярник в субботу?"}),
    ]


def test_arm_questions() -> None:
    s = _samples()
    assert arm_question(s[0], "raw") == "А если заочно?"
    assert arm_question(s[1], "gold_rewrite") is None
    assert arm_question(s[2], "system_rewrite") is None


def test_rewrites_retrieve_what_the_raw_follow_up_misses() -> None:
    needs_extra("retrieval", "bm25s", "Stemmer")
    from ragmeter.retrieval.retrievers import make_retriever

    r = make_retriever("bm25")
    r.index([Chunk(f"{d}#0", d, t) for d, t in DOCS.items()])
    out = evaluate_rewrites(_samples(), r, k=3, metrics=["hit_rate@1", "mrr"])
    assert list(out) == ["raw", "system_rewrite", "gold_rewrite"]
    raw, system = out["raw"]["hit_rate@1"], out["system_rewrite"]["hit_rate@1"]
    assert raw.aggregate.n == 3 and system.aggregate.n == 2
    assert system.aggregate.mean == 1.0 and raw.aggregate.mean < 1.0
    assert "query:system_rewrite" in str(system.signature)
    paired = compare_metric(raw, system, n_resamples=200, seed=1)
    assert paired is not None
    with pytest.raises(KeyError):
        out["missing"]
