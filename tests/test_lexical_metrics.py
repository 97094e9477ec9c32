"""ROUGE (vectorised, Unicode-aware) and BLEU (sacrebleu): values, Cyrillic, edge cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import needs_extra
from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.metrics.lexical import corpus_bleu, lcs_length, rouge_batch
from ragmeter.metrics.registry import parse_metric
from ragmeter.text import make_tokenizer


def _dp_lcs(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j],
                                                                           t[i][j - 1])
    return t[-1][-1]


def test_bit_parallel_lcs_equals_dynamic_programming():
    rng = random.Random(7)
    for _ in range(400):
        a = [rng.randint(0, 5) for _ in range(rng.randint(0, 30))]
        b = [rng.randint(0, 5) for _ in range(rng.randint(0, 90))]
        assert lcs_length(a, b) == _dp_lcs(a, b)


def _rouge_score_reference(hyps, refs):
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    return [sc.score(r, h) for h, r in zip(hyps, refs, strict=True)]


ENGLISH = [
    ("The cat sat on the mat.", "A cat was sitting on the mat!"),
    ("Paris is the capital of France; it has 2.1M people.", "The capital of France is Paris."),
    ("", "non-empty reference"),
    ("the the the the", "the cat"),
    ("ROUGE-L uses the longest common subsequence.", "ROUGE-L: longest common subsequence"),
]


def test_identical_to_rouge_score_on_english_in_compat_mode():
    rng = random.Random(3)
    words = ["the", "a", "cat", "dog", "sat", "on", "mat", "with", "hat", "red", "big", "run",
             "42", "x9"]
    pairs = ENGLISH + [(" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))),
                        " ".join(rng.choice(words) for _ in range(rng.randint(1, 40))))
                       for _ in range(300)]
    hyps, refs = [p[0] for p in pairs], [p[1] for p in pairs]
    ref = _rouge_score_reference(hyps, refs)
    ours = rouge_batch(hyps, refs, tokenizer="rouge_score")
    for kind in ("rouge1", "rouge2", "rougeL"):
        for attr in ("precision", "recall", "fmeasure"):
            expected = np.array([getattr(r[kind], attr) for r in ref])
            assert np.array_equal(getattr(ours[kind], attr), expected), (kind, attr)


def test_cyrillic_rouge_where_rouge_score_gives_zero():
    h, r = "Кошка сидит на ковре", "на ковре сидит кошка"
    ref = _rouge_score_reference([h], [r])[0]
    assert ref["rouge1"].fmeasure == 0.0                      # rouge-score drops Cyrillic
    ours = rouge_batch([h], [r])
    assert ours["rouge1"].fmeasure[0] == pytest.approx(1.0)  # casefold: Кошка == кошка
    assert ours["rouge2"].fmeasure[0] == pytest.approx(1 / 3)  # only "на ковре" shared
    assert ours["rougeL"].fmeasure[0] == pytest.approx(2 / 4)  # LCS "сидит кошка"/"на ковре"


def test_russian_stemming_matches_inflections():
    needs_extra("retrieval", "Stemmer")
    h, r = "кошки сидели", "кошка сидела"
    assert rouge_batch([h], [r])["rouge1"].fmeasure[0] == 0.0
    assert rouge_batch([h], [r], stem="ru")["rouge1"].fmeasure[0] == pytest.approx(1.0)
    assert rouge_batch([h], [r], stem="auto")["rouge1"].fmeasure[0] == pytest.approx(1.0)
    assert make_tokenizer("unicode", "en")("Running dogs") == ["run", "dog"]


def test_precision_recall_hand_computed():
    res = rouge_batch(["a b c d"], ["a b x"])
    assert res["rouge1"].precision[0] == pytest.approx(2 / 4)
    assert res["rouge1"].recall[0] == pytest.approx(2 / 3)
    assert res["rouge2"].precision[0] == pytest.approx(1 / 3)
    assert res["rouge2"].recall[0] == pytest.approx(1 / 2)
    assert res["rougeL"].fmeasure[0] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_metric_results_edge_cases_and_signature():
    needs_extra("retrieval", "Stemmer")
    samples = [
        Sample(id="ok", response="Москва — столица России.", reference="Столица России — Москва."),
        Sample(id="empty", response="", reference="Столица России — Москва."),
        Sample(id="noref", response="Москва", reference=None),
        Sample(id="blankref", response="Москва", reference="  ... "),
    ]
    res = evaluate_generation(samples, ["rouge_1", "rouge_l(measure=p,stem=ru)", "bleu"])
    r1 = res["rouge_1"]
    assert r1.values[0] == pytest.approx(1.0)
    assert r1.values[1] == 0.0 and r1.counts["empty_response"] == 1
    assert r1.reasons == {2: "missing_field:reference", 3: "empty_input"}
    assert r1.mean == pytest.approx(0.5)
    sig = res["rouge_l(measure=p,stem=ru)"].signature
    assert sig.get("tok") == "unicode" and sig.get("stem") == "ru"
    assert str(parse_metric("rouge_l(stem=ru,measure=p)")) == "rouge_l(measure=p,stem=ru)"
    bleu = res["bleu"]
    assert "tok:intl" in bleu.signature.get("sacrebleu")
    assert bleu.values[1] == 0.0
    assert "bleu" in res.meta["corpus"]


def test_bleu_equals_sacrebleu():
    from sacrebleu.metrics import BLEU

    hyps = ["«Ёлки» — это ель, т.е. дерево.", "Кошка сидит на ковре."]
    refs = ["«Ёлки» — это ель, т.е. хвойное дерево.", "Кошка сидела на ковре."]
    samples = [Sample(id=str(i), response=h, reference=r) for i, (h, r) in
               enumerate(zip(hyps, refs, strict=True))]
    for tok in ("intl", "13a"):
        res = evaluate_generation(samples, [f"bleu(tokenize={tok})"])
        b = BLEU(tokenize=tok, effective_order=True)
        expected = [b.sentence_score(h, [r]).score for h, r in zip(hyps, refs, strict=True)]
        assert res[str(parse_metric(f"bleu(tokenize={tok})"))].values.tolist() == \
            pytest.approx(expected)
    score, sig = corpus_bleu(hyps, refs, "intl")
    assert score == pytest.approx(BLEU(tokenize="intl").corpus_score(hyps, [refs]).score)
    assert "tok:intl" in sig


def test_compat_tokenizer_rejects_stemming():
    from ragmeter.errors import ConfigError

    with pytest.raises(ConfigError, match="stem"):
        make_tokenizer("rouge_score", "ru")
    assert make_tokenizer("rouge_score")("Кошка cat-42!") == ["cat", "42"]


def test_bleu_without_any_usable_reference_is_unscored() -> None:
    samples = [Sample(id="a", user_input="q", response="hello"),
               Sample(id="b", user_input="q", response="x", reference="   ")]
    a = evaluate_generation(samples, ["bleu"])["bleu"].aggregate
    assert a.n == 0 and a.n_unscored == 2 and a.mean is None
    assert set(a.unscored_by_reason) == {"missing_field:reference", "empty_input"}
