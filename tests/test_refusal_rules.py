"""Refusals in both directions: the detector (clause cues + the refusal classifier) and the
refusal metrics and gates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ragmeter
from ragmeter.data.sample import Sample
from ragmeter.metrics.refusal import detect_refusal, detector_name, is_refusal
from ragmeter.metrics.refusal_data import load_labels, rule_accuracy

DEMO_EVALSET = Path(ragmeter.__file__).parent / "demo" / "data" / "evalset.jsonl"
METRICS = ["answer_rate", "over_refusal", "unsupported_answer", "abstention_recall",
           "abstention_precision"]


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_detector_reaches_095_balanced_accuracy_on_the_unseen_half(lang: str) -> None:
    acc = rule_accuracy(lang, "test")
    assert acc.n_refusals >= 40 and acc.n_answers >= 40
    assert acc.balanced_accuracy >= 0.95, acc.line()
    assert acc.ci[0] is not None and acc.ci[0] <= acc.balanced_accuracy <= (acc.ci[1] or 1)


def test_labelled_set_was_split_by_id_hash_before_the_rules() -> None:
    import hashlib
    rows = load_labels()
    assert len(rows) >= 400 and {r["lang"] for r in rows} == {"ru", "en"}
    for r in rows:
        h = int(hashlib.sha256(r["id"].encode()).hexdigest(), 16) % 2
        assert r["split"] == ("dev" if h == 0 else "test")


@pytest.mark.parametrize("text,refused,kind", [
    ("В базе знаний нет информации об этом.", True, "statement"),
    ("По этому вопросу лучше обратиться в деканат.", True, "redirect"),
    ("Извините за задержку! Заявление подаётся до 15 января.", False, None),
    ("Возможно, я ошибаюсь, но практика длится четыре недели.", False, None),
    ("Про стоимость сведений нет, но заселение начинается 25 августа.", False, None),
    ("Обратитесь в деканат: именно декан подписывает индивидуальный план.", False, None),
    ("I couldn't find anything about that. Please contact the registrar.", True, "statement"),
    ("Sorry, I can't give exact figures, but tuition is about 280,000 roubles.", False, None),
    ("", True, "empty"),
    # the same refusal in other word orders, and wrapped in courtesy that is no content
    ("Ответить на этот вопрос я, увы, не в состоянии.", True, "statement"),
    ("Я не в состоянии ответить на этот вопрос. Надеюсь на ваше понимание.", True,
     "statement"),
    ("That question is one I can't answer. Thank you for your understanding.", True,
     "statement"),
    ("Нет, справка не нужна.", False, None),          # a negation that answers
    ("Нет.", False, None),                            # a bare "no" to a yes/no question
    ("Уточните, пожалуйста, о какой программе речь?", True, "question"),
])
def test_detector_cases(text: str, refused: bool, kind: str | None) -> None:
    v = detect_refusal(text)
    assert v.refused is refused and v.kind == kind, v
    assert v.probability is not None and (v.probability >= 0.5) is refused


def test_metrics_count_both_directions() -> None:
    s = [Sample(id="1", user_input="q", response="Нет данных.", gold_doc_ids=["d"]),
         Sample(id="2", user_input="q", response="Стипендия 3000 рублей.", gold_doc_ids=["d"]),
         Sample(id="3", user_input="q", response="Не знаю.", type="negative"),
         Sample(id="4", user_input="q", response="Общежитие есть.", type="negative"),
         Sample(id="5", user_input="q", response="Стипендию платят 25-го числа.")]
    r = ragmeter.evaluate_generation(s, METRICS)
    assert r["answer_rate"].aggregate.mean == pytest.approx(3 / 5)
    assert r["over_refusal"].aggregate.mean == 0.5 and r["over_refusal"].aggregate.n == 2
    assert r["unsupported_answer"].aggregate.mean == 0.5
    assert r["abstention_precision"].aggregate.mean == 0.5
    assert "no_answerability_label" in r["over_refusal"].reasons.values()
    assert f"refusal:{detector_name().split()[0]}" in str(r["over_refusal"].signature)


def _gate(tmp_path: Path, name: str, answer: str) -> int:
    rows = [json.loads(line) for line in DEMO_EVALSET.read_text("utf-8").splitlines()]
    assert any(r.get("type") == "negative" for r in rows)
    data = tmp_path / f"{name}.jsonl"
    with data.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({**r, "response": answer}, ensure_ascii=False) + "\n")
    out = tmp_path / f"{name}.json"
    run = [sys.executable, "-m", "ragmeter"]
    proc = subprocess.run([*run, "score", "generation", "--samples", str(data), "--metrics", "answer_rate,over_refusal,unsupported_answer",
                           "--out", str(out), "-q"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    gate = subprocess.run([*run, "gate", str(out), "--max", "over_refusal=0.05", "--max",
                           "unsupported_answer=0.05"], capture_output=True, text=True)
    return gate.returncode


def test_check_fails_always_answer_and_always_refuse(tmp_path: Path) -> None:
    assert is_refusal("В базе знаний нет информации об этом.")
    assert _gate(tmp_path, "always_answer", "Стипендия выплачивается до 25-го числа.") == 1
    assert _gate(tmp_path, "always_refuse", "В базе знаний нет информации об этом.") == 1


def test_abstention_f1_and_risk_coverage_area() -> None:
    from ragmeter.metrics.refusal import abstention_summary

    def make(conf_right: float, conf_wrong: float) -> list[Sample]:
        out = []
        for i in range(20):   # 10 answerable answered (right), 10 unanswerable
            neg = i >= 10
            wrong = neg and i % 2 == 0           # 5 unanswerable answered: wrong behaviour
            out.append(Sample(id=str(i), user_input="q", type="negative" if neg else None,
                              gold_doc_ids=None if neg else ["d"],
                              response="Ответ 5." if (not neg or wrong) else "Не знаю.",
                              metadata={"confidence": conf_wrong if wrong else conf_right}))
        return out

    good, bad = abstention_summary(make(0.9, 0.1)), abstention_summary(make(0.1, 0.9))
    assert good["f1"].value == pytest.approx(2 * 1.0 * 0.5 / 1.5)   # precision 1, recall 0.5
    assert good["aurc"].value < bad["aurc"].value                   # wrong ones most confident
    assert good["curve"][0] == (0.05, 0.0) and bad["curve"][0] == (0.05, 1.0)
    assert good["aurc"].ci_low is not None and good["n"] == 20
