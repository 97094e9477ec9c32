"""Multi-turn samples: earlier turns in ``history``, the current turn in ``user_input``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.data.hashing import gold_hash
from ragmeter.data.loaders import load_samples
from ragmeter.data.sample import Sample
from ragmeter.errors import DataError


def test_history_loads_with_roles_and_plain_strings(tmp_path: Path) -> None:
    f = tmp_path / "conv.jsonl"
    rows = [{"id": "s1-t2", "question": "А если заочно?", "answer": "140 000 рублей.",
             "history": [{"role": "user", "content": "Сколько стоит очно?"},
                         {"role": "assistant", "content": "280 000 рублей в год."}]},
            {"id": "s2-t2", "question": "А в субботу?",
             "chat_history": ["Когда открыта библиотека?", "С 9:00."]}]
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    a, b = load_samples(f).samples
    assert a.history == rows[0]["history"] and a.turn == 1
    assert b.history == [{"role": "user", "content": "Когда открыта библиотека?"},
                         {"role": "assistant", "content": "С 9:00."}]


@pytest.mark.parametrize("history,msg", [
    ("text", "must be a list"),
    ([{"role": "bot", "content": "x"}], "role must be one of"),
    ([{"role": "user", "content": 3}], "content must be a string"),
])
def test_bad_history_names_line_and_field(tmp_path: Path, history: object, msg: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"id": "x", "question": "q", "history": history}), "utf-8")
    with pytest.raises(DataError) as e:
        load_samples(f)
    assert "bad.jsonl:1 field 'history'" in str(e.value) and msg in str(e.value)


def test_history_is_part_of_the_dataset_identity() -> None:
    plain = Sample(id="1", user_input="А если заочно?")
    conv = Sample(id="1", user_input="А если заочно?",
                  history=[{"role": "user", "content": "Сколько стоит очно?"}])
    assert gold_hash([plain]) != gold_hash([conv])
    assert gold_hash([plain]) == gold_hash([Sample(id="1", user_input="А если заочно?")])


def test_question_answer_turns_and_metadata_history_are_read(tmp_path: Path) -> None:
    f = tmp_path / "synth.jsonl"
    rows = [{"id": "c1", "question": "А если заочно?",
             "history": [{"question": "Сколько стоит очно?", "answer": "280 000 рублей."}]},
            {"id": "c2", "question": "А в субботу?", "gold_doc_ids": ["lib"],
             "metadata": {"history": [{"question": "Когда открыта библиотека?",
                                       "answer": "С 9:00."}]}},
            {"id": "c3", "question": "q", "metadata": {"history": "free text, not turns"}}]
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    a, b, c = load_samples(f).samples
    assert a.history == [{"role": "user", "content": "Сколько стоит очно?"},
                         {"role": "assistant", "content": "280 000 рублей."}]
    assert b.history is not None and b.turn == 1
    assert c.history is None and c.metadata["history"] == "free text, not turns"


def test_ux_sessions_become_one_sample_per_follow_up_turn(tmp_path: Path) -> None:
    from ragmeter.data.conversations import load_session_samples

    f = tmp_path / "sessions.jsonl"
    f.write_text(json.dumps({"session_id": "s1", "turns": [
        {"question": "Когда сессия?", "answer": "С 9 января."},
        {"question": "А летняя?", "answer": "С 10 июня."},
        {"question": "А у выпускников?", "answer": "До 25 мая."}]}, ensure_ascii=False), "utf-8")
    got = load_session_samples(f)
    assert [s.id for s in got] == ["s1#1", "s1#2"]
    assert got[1].turn == 2 and got[1].history is not None and len(got[1].history) == 4
    assert got[1].metadata == {"session_id": "s1", "turn": 2}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"session_id": "s", "turns": [{"question": ""}]}), "utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:1 field 'turns\[0\].question'"):
        load_session_samples(bad)
