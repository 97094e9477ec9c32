"""Personal-data detectors (checksums, context words, names), the consistent and reversible
pseudonymiser, and the detector figures on the unseen test half of the labelled set."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data import load_samples
from ragmeter.errors import MissingExtraError
from ragmeter.privacy.checksums import inn_ok, luhn_ok, ogrn_ok, snils_ok
from ragmeter.privacy.detect import find_identifiers
from ragmeter.privacy.labelled import build, load_labelled, split_of
from ragmeter.privacy.pseudonymise import Pseudonymiser, load_map, restore


def test_checksums_accept_valid_and_reject_one_digit_off() -> None:
    for ok, good in ((snils_ok, "11223344595"), (inn_ok, "7707083893"),
                     (inn_ok, "500100732259"), (ogrn_ok, "1027700132195"),
                     (ogrn_ok, "304500116000157"), (luhn_ok, "4111111111111111")):
        assert ok(good), good
        bad = good[:-1] + str((int(good[-1]) + 1) % 10)
        assert not ok(bad), bad
    assert not snils_ok("00100199800")  # too small to carry a checksum


def test_structured_identifiers_with_and_without_context() -> None:
    text = ("СНИЛС 112-233-445 95, ИНН 7707083893, ОГРН 1027700132195, карта "
            "4111 1111 1111 1111, тел. +7 (912) 345-67-89, почта a.b@mail.ru, паспорт 4510 "
            "123456, зачётная книжка № 20-1234, дата рождения 01.02.2003.")
    kinds = {f.kind: f.text for f in find_identifiers(text)}
    assert kinds == {"snils": "112-233-445 95", "inn": "7707083893", "ogrn": "1027700132195",
                     "card": "4111 1111 1111 1111", "phone": "+7 (912) 345-67-89",
                     "email": "a.b@mail.ru", "passport": "4510 123456",
                     "record_book": "20-1234", "birth_date": "01.02.2003"}
    # look-alikes: wrong checksums, a date and a number without their context words
    assert find_identifiers("Заказ 4111 1111 1111 1112, сессия 09.01.2026, аудитория 4510 "
                            "123456, счёт 7707083894.") == []


def test_labelled_set_split_is_fixed_by_id_and_has_enough_items() -> None:
    items = load_labelled()
    assert len(items) >= 300 and {i.lang for i in items} == {"ru", "en"}
    assert [i.to_dict() for i in build()] == [i.to_dict() for i in items]  # reproducible
    dev, test = load_labelled("dev"), load_labelled("test")
    assert len(dev) + len(test) == len(items) and min(len(dev), len(test)) > 100
    assert all(split_of(i.id) == "test" for i in test)
    for it in items:
        for a, b, _ in it.spans:
            assert it.text[a:b].strip() == it.text[a:b] and b > a


needs_ner = pytest.mark.skipif(
    __import__("importlib").util.find_spec("natasha") is None,
    reason="needs the 'privacy' extra (pip install 'ragmeter[privacy]')")


@needs_ner
def test_detector_figures_on_the_unseen_test_half() -> None:
    from ragmeter.privacy.evaluate import score

    rows = {r.kind: r for r in score(load_labelled("test"), n_boot=200)}
    assert rows["structured"].recall is not None and rows["structured"].recall >= 0.99
    assert all(rows[k].recall == 1.0 for k in ("snils", "inn", "ogrn", "card"))
    assert rows["person"].recall is not None and rows["person"].recall >= 0.90
    assert rows["person"].precision is not None and rows["person"].precision >= 0.9
    assert rows["structured"].precision is not None and rows["structured"].precision >= 0.95


@needs_ner
def test_the_same_person_is_the_same_token_across_inflections() -> None:
    p = Pseudonymiser()
    a = p("Студентка Иванова Мария Петровна подала заявление.")
    b = p("Передайте Ивановой Марии Петровне, что пересдача завтра.")
    c = p("Позвоните Петру Сидорову: 8 912 345 67 89 или +7 (912) 345-67-89.")
    assert "[PERSON_1]" in a and "[PERSON_1]" in b and "Иванов" not in a + b
    assert "[PERSON_2]" in c and c.count("[PHONE_1]") == 2
    assert p.counts["person"] == 3 and p.counts["phone"] == 2
    assert p.restore(b).startswith("Передайте Иванова Мария Петровна")  # first form seen
    assert p.redaction_counts() == {"redacted_person": 3, "redacted_phone": 2}


@needs_ner
def test_map_is_written_only_where_asked_and_reverses(tmp_path: Path) -> None:
    p = Pseudonymiser()
    text = "Я Иван Петров, СНИЛС 112-233-445 95, e-mail ivan@mail.ru."
    masked = p(text)
    assert "112-233-445" not in masked and "ivan@mail.ru" not in masked
    path = p.save_map(tmp_path / "keep" / "map.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert restore(masked, load_map(path)) == text
    assert json.loads(path.read_text("utf-8"))["version"] == "pii-v1"


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import ragmeter.privacy.names as names

    monkeypatch.setattr(names, "natasha_available", lambda: False)
    with pytest.raises(MissingExtraError, match=r"ragmeter\[privacy\]"):
        Pseudonymiser()
    p = Pseudonymiser(names=False, detect=find_identifiers)  # identifiers alone need nothing
    assert p("ИНН 7707083893") == "ИНН [INN_1]"


@needs_ner
def test_import_with_pseudonymise_writes_tokens_only(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from ragmeter.cli import app as cli

    src = tmp_path / "log.jsonl"
    rows = [{"id": "1", "question": "Меня зовут Иван Петров, телефон +7 912 345-67-89.",
             "answer": "Иван Петров, ваша заявка принята."},
            {"id": "2", "question": "Перезвоните Ивану Петрову на 8 912 345 67 89.",
             "contexts": ["Студент Петров И. С., зачётная книжка № 21-0456."]}]
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    map_path = tmp_path / "secret" / "map.json"
    monkeypatch.setenv("RAGMETER_PSEUDONYMISE_MAP", str(map_path))
    out = tmp_path / "s.jsonl"
    assert cli.run(["--pseudonymise", "traces", "import", str(src), "--out", str(out)]) == 0, \
        capsys.readouterr()
    written = out.read_text("utf-8")
    for raw in ("Иван", "Петров", "912", "21-0456"):
        assert raw not in written, raw
    first, second = (json.loads(x) for x in written.splitlines())
    assert first["user_input"] == "Меня зовут [PERSON_1], телефон [PHONE_1]."
    assert second["user_input"] == "Перезвоните [PERSON_1] на [PHONE_1]."
    meta = json.loads((tmp_path / "s.import.json").read_text("utf-8"))
    assert meta["privacy"]["pii"] == "pii-v1" and meta["privacy"]["redacted_phone"] == 2
    assert "Иван" not in json.dumps(meta, ensure_ascii=False)
    assert "Иван Петров" in load_map(map_path).values()



def _otlp_turn(i: int) -> dict[str, Any]:
    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    span = {"traceId": f"c{i:07d}", "spanId": f"s{i}", "name": "turn",
            "startTimeUnixNano": str(10**18 + i * 10**9),
            "endTimeUnixNano": str(10**18 + i * 10**9 + 5),
            "attributes": [attr("input.value", f"вопрос {i}, мой ИНН 7707083893"),
                           attr("output.value", f"ответ {i}"), attr("session.id", "s1")]}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_pseudonymised_sample_covers_its_history() -> None:
    from ragmeter.data.sample import Sample
    from ragmeter.privacy.pseudonymise import pseudonymise_sample

    p = Pseudonymiser(names=False, detect=find_identifiers)
    s = Sample(id="t2", user_input="а дальше?", history=[
        {"role": "user", "content": "мой ИНН 7707083893"},
        {"role": "assistant", "content": "принято"}])
    out = pseudonymise_sample(s, p)
    assert out.history == [{"role": "user", "content": "мой ИНН [INN_1]"},
                           {"role": "assistant", "content": "принято"}]


@needs_ner
def test_import_with_pseudonymise_leaves_no_raw_value_in_a_sampled_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Turns left out by --sample travel inside the kept turns' history: they are
    pseudonymised like every other text."""
    from ragmeter.cli import app as cli

    src = tmp_path / "log.jsonl"
    src.write_text("\n".join(json.dumps(_otlp_turn(i), ensure_ascii=False) for i in range(6)),
                   "utf-8")
    monkeypatch.setenv("RAGMETER_PSEUDONYMISE_MAP", str(tmp_path / "map.json"))
    dest = tmp_path / "s.jsonl"
    assert cli.run(["--pseudonymise", "traces", "import", str(src), "--out", str(dest), "--sample", "2",
                    "--seed", "3"]) == 0, capsys.readouterr()
    written = dest.read_text("utf-8")
    assert "[INN_1]" in written and "7707083893" not in written
    assert any(len(s.history or []) > 0 for s in load_samples(dest).samples)


@needs_ner
def test_pseudonymise_ends_with_its_command(tmp_path: Path) -> None:
    """`cli.run(["--pseudonymise", ...])` in a process does not leave every judge built after
    it (by library code, in the same process) wrapped."""
    from ragmeter.cli import app as cli
    from ragmeter.privacy.judge import active

    src = tmp_path / "log.jsonl"
    src.write_text(json.dumps({"id": "1", "question": "Где деканат?", "answer": "Корпус 2."},
                              ensure_ascii=False), "utf-8")
    assert cli.run(["--pseudonymise", "import", str(src), "--out",
                    str(tmp_path / "s.jsonl")]) == 0
    assert active() == (None, None)
