"""Id-based context precision / recall (seed 003)."""

from __future__ import annotations

import pytest

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation


def test_id_context_precision_recall_hand_computed():
    samples = [
        Sample(id="a", retrieved_ids=["c1", "x", "c2", "c1"], gold_chunk_ids=["c1", "c2", "c3"]),
        Sample(id="b", retrieved_ids=["x", "y"], gold_chunk_ids=["c9"]),
        Sample(id="neg", retrieved_ids=["x"], gold_chunk_ids=[], type="negative"),
        Sample(id="nogold", retrieved_ids=["x"]),
        Sample(id="noret", gold_chunk_ids=["c1"]),
    ]
    res = evaluate_generation(samples, ["id_context_precision", "id_context_recall",
                                        "id_context_precision@1"])
    p, r = res["id_context_precision"], res["id_context_recall"]
    assert p.values[0] == pytest.approx((1 / 1 + 2 / 3) / 2)   # duplicate c1 counted once
    assert p.values[1] == 0.0
    assert r.values[0] == pytest.approx(2 / 3)
    assert r.values[1] == 0.0
    assert p.reasons == {2: "missing_field:gold_chunk_ids", 3: "missing_field:gold_chunk_ids",
                         4: "missing_field:retrieved_ids"}
    assert p.counts == {"no_gold": 1, "negative": 1}
    assert res["id_context_precision@1"].values[0] == 1.0
    assert res["id_context_precision@1"].signature.get("k") == "1"


def test_id_set_precision_matches_ragas_docs_example() -> None:
    s = Sample(id="1", user_input="q", retrieved_ids=["doc_1", "doc_2", "doc_3", "doc_4"],
               gold_chunk_ids=["doc_1", "doc_4", "doc_5", "doc_6"])
    res = evaluate_generation([s], ["id_set_precision", "id_context_precision",
                                    "id_context_recall"])
    assert res["id_set_precision"].aggregate.mean == pytest.approx(0.5)
    assert res["id_context_precision"].aggregate.mean == pytest.approx(0.75)  # rank-aware
    assert res["id_context_recall"].aggregate.mean == pytest.approx(0.5)
