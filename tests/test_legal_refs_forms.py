"""Legal references in the forms people write them: laws by short title, listed and ranged
parts and points, genitive plurals, ordinals, «ФЗ № N», «п.п.», «этой же статьи», spans."""

from __future__ import annotations

import pytest

from ragmeter.metrics.legal_refs import find_legal_refs, parse_legal_refs


def _tuples(text: str) -> list[str]:
    return [str(r) for r in parse_legal_refs(text)]


@pytest.mark.parametrize("text,expected", [
    ("Продавец отвечает по статье 18 Закона о защите прав потребителей.",
     ["2300-1, ст. 18"]),
    ("Оператор нарушил ст. 9 Федерального закона «О персональных данных».",
     ["152-ФЗ, ст. 9"]),
    ("Так прямо сказано в Законе об образовании в Российской Федерации.", ["273-ФЗ"]),
    ("Выплату считают по ст. 12 Закона об ОСАГО.", ["40-ФЗ, ст. 12"]),
    ("Порядок выхода участника описан в ст. 26 закона об ООО.", ["14-ФЗ, ст. 26"]),
    ("Требования к рекламе — в статье 5 ФЗ \"О рекламе\".", ["38-ФЗ, ст. 5"]),
    ("Срок установлен ст. 36 ФЗ № 229.", ["229-ФЗ, ст. 36"]),
    ("Срок — ст. 36 Федерального закона N 229-ФЗ.", ["229-ФЗ, ст. 36"]),
])
def test_laws_by_short_title_and_by_number(text: str, expected: list[str]) -> None:
    assert _tuples(text) == expected


def test_listed_and_ranged_parts_points_and_articles_give_one_reference_each() -> None:
    assert _tuples("Основания — в ч. 1 и 3 ст. 5 ТК РФ.") == [
        "ТК РФ, ст. 5, ч. 1", "ТК РФ, ст. 5, ч. 3"]
    refs = parse_legal_refs("См. пункты 2–4 статьи 10 ГК РФ.")
    assert [str(r) for r in refs] == ["ГК РФ, ст. 10, п. 2", "ГК РФ, ст. 10, п. 3",
                                      "ГК РФ, ст. 10, п. 4"]
    assert all(r.range for r in refs)
    assert _tuples("Убытки взыскивают по правилам статей 15 и 393 ГК РФ.") == [
        "ГК РФ, ст. 15", "ГК РФ, ст. 393"]
    assert _tuples("части первая и вторая статьи 22 ТК РФ") == [
        "ТК РФ, ст. 22, ч. 1", "ТК РФ, ст. 22, ч. 2"]
    assert _tuples("пп. «а» и «б» п. 3 ст. 8 НК РФ") == [
        "НК РФ, ст. 8, п. 3, пп. а", "НК РФ, ст. 8, п. 3, пп. б"]


def test_ordinals_subpoints_and_anaphora() -> None:
    assert _tuples("Его уволили по 81-й статье ТК РФ.") == ["ТК РФ, ст. 81"]
    assert _tuples("Основание — п.п. «в» п. 3 ст. 7 НК РФ.") == ["НК РФ, ст. 7, п. 3, пп. в"]
    refs = parse_legal_refs("Смотрите ст. 20 ЖК РФ, а также ч. 2 этой же статьи.")
    assert [str(r) for r in refs] == ["ЖК РФ, ст. 20", "ЖК РФ, ст. 20, ч. 2"]
    assert refs[1].anaphoric and not refs[0].anaphoric
    assert _tuples("По ст. 139 УК РФ; квалифицирующий признак — ч. 3 указанной статьи.") == [
        "УК РФ, ст. 139", "УК РФ, ст. 139, ч. 3"]
    assert _tuples("ст. 5 ТК РФ и ст. 8 того же кодекса") == ["ТК РФ, ст. 5", "ТК РФ, ст. 8"]


def test_every_reference_has_the_span_it_was_read_from() -> None:
    text = "Сначала ч. 2 ст. 81 ТК РФ, потом Закон о рекламе и ст. 15 ГК РФ."
    refs = find_legal_refs(text)
    assert [str(r) for r in refs] == ["ТК РФ, ст. 81, ч. 2", "38-ФЗ", "ГК РФ, ст. 15"]
    spans = [text[r.span[0]:r.span[1]] for r in refs if r.span]
    assert spans == ["ч. 2 ст. 81 ТК РФ", "Закон о рекламе", "ст. 15 ГК РФ"]
    # "N" is read as "№" without moving any span
    text = "Закон N 2300-1, ст. 15"
    assert next(text[r.span[0]:r.span[1]] for r in find_legal_refs(text) if r.span).startswith(
        "Закон N 2300-1")


@pytest.mark.parametrize("text", [
    "Раздел 3 и глава 5 договора аренды регулируют ремонт.",
    "По п. 3.2 договора оплата вносится до 10 числа.",
    "Статья в журнале «Закон» вышла 15 мая, стр. 12.",
    "Декларацию 3-НДФЛ подают до 30 апреля, сумма 15 000 рублей.",
    "Приказ № 152-к от 01.09.2025 подписан деканом.",
    "Консультация о защите прав потребителей проходит по вторникам.",
])
def test_distractors_are_not_references(text: str) -> None:
    assert parse_legal_refs(text) == []
