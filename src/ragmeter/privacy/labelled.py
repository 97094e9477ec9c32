"""The labelled personal-data set: short Russian and English texts with their identifier and
name spans, split into *dev* and *test* halves by a hash of the item id.

The items are written from templates (questions and messages as students and clients write
them) filled with identifiers that carry valid checksums, names in several grammatical cases,
and look-alikes that must not be flagged (order numbers with a wrong checksum, dates that are
not birth dates, capitalised words that are not names). ``python -m ragmeter.privacy.labelled``
rewrites ``data/pii_labelled.jsonl``; the detectors are tuned on *dev* only and reported on
*test* (:mod:`ragmeter.privacy.evaluate`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.privacy.templates import NEGATIVES, TEMPLATES
from ragmeter.privacy.templates_more import NEGATIVES_MORE, TEMPLATES_MORE

DATA = Path(__file__).parent / "data" / "pii_labelled.jsonl"
KINDS = ("snils", "inn", "ogrn", "card", "phone", "email", "passport", "record_book",
         "birth_date", "address", "person")
#: slot names that stand for a labelled kind written another way
VARIANTS = {"personlow": "person", "personlat": "person", "dobyear": "birth_date",
            "passport_series": "passport", "passport_number": "passport"}


@dataclass
class Item:
    """One labelled text: ``spans`` are ``(start, end, kind)``."""

    id: str
    lang: str
    text: str
    spans: list[tuple[int, int, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "lang": self.lang, "text": self.text,
                "spans": [{"start": a, "end": b, "kind": k, "text": self.text[a:b]}
                          for a, b, k in self.spans]}


def split_of(item_id: str) -> str:
    """``dev`` or ``test``: fixed by the first byte of the id's SHA-256."""
    return "dev" if hashlib.sha256(item_id.encode()).digest()[0] % 2 == 0 else "test"


def template_of(item_id: str) -> str:
    """The template an item was filled from (``ru-012-3`` → ``ru-012``; negatives are their
    own template)."""
    return item_id if "-neg-" in item_id else item_id.rsplit("-", 1)[0]


def load_labelled(split: str | None = None, path: Path = DATA) -> list[Item]:
    """Items of the set (one half with ``split``)."""
    out = []
    for line in path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        item = Item(d["id"], d["lang"], d["text"],
                    [(s["start"], s["end"], s["kind"]) for s in d["spans"]])
        if split is None or split_of(item.id) == split:
            out.append(item)
    return out


# --- making identifiers (valid checksums) --------------------------------------------------------
def _digits(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(10) for _ in range(n)]


def _snils(rng: random.Random) -> str:
    d = [1, *_digits(rng, 8)]
    s = sum(x * (9 - i) for i, x in enumerate(d))
    c = s if s < 100 else 0 if s in (100, 101) else s % 101
    c = 0 if c == 100 else c
    n = "".join(map(str, d))
    return rng.choice([f"{n[:3]}-{n[3:6]}-{n[6:]} {c:02d}", f"{n}{c:02d}",
                       f"{n[:3]}-{n[3:6]}-{n[6:]}-{c:02d}"])


def _inn_check(d: list[int], w: list[int]) -> int:
    return sum(a * b for a, b in zip(d, w, strict=False)) % 11 % 10


def _inn(rng: random.Random) -> str:
    if rng.random() < 0.5:
        d = [7, 7, *_digits(rng, 7)]
        return "".join(map(str, [*d, _inn_check(d, [2, 4, 10, 3, 5, 9, 4, 6, 8])]))
    d = [5, 0, *_digits(rng, 8)]
    d.append(_inn_check(d, [7, 2, 4, 10, 3, 5, 9, 4, 6, 8]))
    d.append(_inn_check(d, [3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8]))
    return "".join(map(str, d))


def _ogrn(rng: random.Random) -> str:
    if rng.random() < 0.6:
        body = "1" + "".join(map(str, _digits(rng, 11)))
        return body + str(int(body) % 11 % 10)
    body = "3" + "".join(map(str, _digits(rng, 13)))
    return body + str(int(body) % 13 % 10)


def _card(rng: random.Random) -> str:
    d = [rng.choice([2, 4, 5]), *_digits(rng, 14)]
    total = 0
    for i, x in enumerate(reversed(d)):
        y = x * 2 if i % 2 == 0 else x
        total += y - 9 if y > 9 else y
    d.append((10 - total % 10) % 10)
    n = "".join(map(str, d))
    return rng.choice([" ".join(n[i:i + 4] for i in range(0, 16, 4)), n,
                       "-".join(n[i:i + 4] for i in range(0, 16, 4))])


def _phone(rng: random.Random, lang: str) -> str:
    a, b, c, e = rng.randrange(900, 999), rng.randrange(100, 999), rng.randrange(10, 99), \
        rng.randrange(10, 99)
    ru = [f"+7 ({a}) {b}-{c}-{e}", f"8 {a} {b} {c} {e}", f"+7{a}{b}{c}{e}", f"8-{a}-{b}-{c}-{e}",
          f"8({a}){b}-{c}-{e}", f"+7 {a} {b}-{c}-{e}"]
    intl = [f"+44 20 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
            f"+1 ({rng.randrange(201, 989)}) {rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
            f"+49 30 {rng.randrange(100000, 999999)}", f"+1-{rng.randrange(201, 989)}-"
            f"{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}"]
    return rng.choice(ru if lang == "ru" and rng.random() < 0.8 else intl + ru[:1])


RU_FIRST_M = ["Иван", "Пётр", "Алексей", "Дмитрий", "Сергей", "Андрей", "Михаил", "Никита",
              "Артём", "Егор", "Кирилл", "Максим", "Роман", "Олег", "Тимур"]
RU_FIRST_F = ["Мария", "Анна", "Елена", "Ольга", "Наталья", "Дарья", "Ксения", "Алина",
              "Екатерина", "Юлия", "Полина", "Виктория", "Софья", "Ирина", "Татьяна"]
RU_LAST = ["Иванов", "Петров", "Сидоров", "Смирнов", "Кузнецов", "Попов", "Соколов", "Лебедев",
           "Козлов", "Новиков", "Морозов", "Волков", "Соловьёв", "Васильев", "Зайцев",
           "Павлов", "Семёнов", "Голубев", "Виноградов", "Богданов", "Воробьёв", "Фёдоров",
           "Михайлов", "Беляев", "Тарасов", "Белов", "Комаров", "Орлов", "Киселёв", "Макаров"]
RU_PATR = ["Иванович", "Петрович", "Сергеевич", "Алексеевич", "Андреевич", "Дмитриевич",
           "Михайлович", "Олегович"]
EN_FIRST = ["John", "Emily", "Michael", "Sarah", "David", "Olivia", "James", "Emma",
            "Daniel", "Sophia", "Thomas", "Laura", "Robert", "Anna", "William", "Grace"]
EN_LAST = ["Smith", "Johnson", "Brown", "Clarke", "Taylor", "Wilson", "Davies", "Evans",
           "Thompson", "Walker", "Hughes", "Green", "Lewis", "Harris", "Martin", "Cooper"]

#: case endings: (masc. surname, fem. surname, masc. patronymic suffix, fem. patronymic suffix)
_CASES = {"nom": ("", "а", "", "на"), "gen": ("а", "ой", "а", "ны"), "dat": ("у", "ой", "у", "не"),
          "acc": ("а", "у", "а", "ну"), "ins": ("ым", "ой", "ем", "ной")}


def _first_case(name: str, female: bool, case: str) -> str:
    if case == "nom":
        return name
    if female:
        stem, last = name[:-1], name[-1]
        soft = last == "я"
        end = {"gen": "и" if soft or stem[-1] in "гкхжчшщ" else "ы", "dat": "е",
               "acc": "ю" if soft else "у", "ins": "ей" if soft else "ой"}[case]
        if name.endswith("ия") and case == "dat":
            end = "и"
        return stem + end
    if name.endswith("а"):  # Никита: declined like a feminine name
        return _first_case(name, True, case)
    if name == "Пётр":
        name = "Петр"
    if name.endswith("й"):
        return name[:-1] + {"gen": "я", "dat": "ю", "acc": "я", "ins": "ем"}[case]
    return name + {"gen": "а", "dat": "у", "acc": "а", "ins": "ом"}[case]


def _ru_person(rng: random.Random, case: str) -> str:
    female = rng.random() < 0.5
    first = rng.choice(RU_FIRST_F if female else RU_FIRST_M)
    last = rng.choice(RU_LAST)
    patr = rng.choice(RU_PATR)
    m_s, f_s, m_p, f_p = _CASES[case]
    last_c = last + (f_s if female else m_s)
    if case == "ins" and not female:
        last_c = last + "ым"
    patr_c = (patr[:-2] + "ич" + m_p) if not female else (patr[:-4] + "ов" + f_p
                                                           if patr.endswith("ович")
                                                           else patr[:-4] + "ев" + f_p)
    first_c = _first_case(first, female, case)
    style = rng.randrange(5)
    if style == 0:
        return f"{last_c} {first_c} {patr_c}"
    if style == 1:
        return f"{first_c} {last_c}"
    if style == 2:
        return f"{last_c} {first[0]}. {patr[0]}."
    if style == 3:
        return f"{first_c} {patr_c} {last_c}"
    return f"{last_c} {first_c}"


def _en_person(rng: random.Random) -> str:
    first, last = rng.choice(EN_FIRST), rng.choice(EN_LAST)
    return rng.choice([f"{first} {last}", f"{first} {last}", f"Dr. {first} {last}",
                       f"Ms. {first} {last}" if first in EN_FIRST[1::2] else f"Mr. {last}",
                       f"{first[0]}. {last}"])


def _email(rng: random.Random) -> str:
    user = rng.choice(["ivanov.m", "anna_petrova", "j.smith", "student2024", "k.orlov",
                       "olivia.brown", "d-morozov", "info.dekanat"])
    return f"{user}{rng.randrange(1, 99)}@" + rng.choice(["mail.ru", "yandex.ru", "gmail.com",
                                                          "edu.spbu.ru", "outlook.com"])


def _birth(rng: random.Random, lang: str) -> str:
    y, m, d = rng.randrange(1960, 2008), rng.randrange(1, 13), rng.randrange(1, 29)
    ru_months = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
                 "сентября", "октября", "ноября", "декабря"]
    en_months = ["January", "February", "March", "April", "May", "June", "July", "August",
                 "September", "October", "November", "December"]
    if lang == "ru":
        return rng.choice([f"{d:02d}.{m:02d}.{y}", f"{d} {ru_months[m - 1]} {y} г.",
                           f"{d} {ru_months[m - 1]} {y} года", f"{d:02d}.{m:02d}.{y % 100:02d}"])
    return rng.choice([f"{y}-{m:02d}-{d:02d}", f"{d} {en_months[m - 1]} {y}",
                       f"{en_months[m - 1]} {d}, {y}", f"{d:02d}/{m:02d}/{y}"])


def _passport(rng: random.Random) -> str:
    s, n = f"{rng.randrange(1, 99):02d}{rng.randrange(0, 25):02d}", f"{rng.randrange(10**5, 10**6)}"
    return rng.choice([f"{s} {n}", f"{s[:2]} {s[2:]} {n}", f"{s}{n}", f"{s} № {n}"])


def _record_book(rng: random.Random) -> str:
    return rng.choice([f"{rng.randrange(10, 25)}-{rng.randrange(1000, 9999)}",
                       f"{rng.randrange(1000000, 9999999)}",
                       f"{rng.randrange(18, 25)}{rng.choice('АБВМ')}{rng.randrange(100, 9999):04d}",
                       f"{rng.randrange(100000, 999999)}"])


_CITIES_RU = ["Москва", "Казань", "Тверь", "Самара", "Омск", "Пермь", "Томск", "Сочи"]
_STREETS_RU = ["Ленина", "Садовая", "Мира", "Гагарина", "Лесная", "Школьная", "Победы",
               "Набережная", "Советская", "Молодёжная"]
_CITIES_EN = ["London", "Leeds", "Bristol", "Boston", "Denver", "Austin", "York"]
_STREETS_EN = ["Baker", "High", "Church", "Maple", "Oak", "Station", "Park", "Mill"]


def _address(rng: random.Random, lang: str) -> str:
    n, k = rng.randrange(1, 120), rng.randrange(1, 300)
    if lang == "ru":
        city, street = rng.choice(_CITIES_RU), rng.choice(_STREETS_RU)
        return rng.choice([f"г. {city}, ул. {street}, д. {n}, кв. {k}",
                           f"ул. {street}, д. {n}, кв. {k}", f"{city}, ул. {street} {n}-{k}",
                           f"{rng.randrange(100000, 999999)}, г. {city}, пр. {street}, "
                           f"д. {n}, корп. {rng.randrange(1, 4)}, кв. {k}",
                           f"пер. {street}, дом {n}, квартира {k}"])
    city, street = rng.choice(_CITIES_EN), rng.choice(_STREETS_EN)
    return rng.choice([f"{n} {street} Street, {city}", f"Flat {k}, {n} {street} Road, {city}",
                       f"{n} {street} Avenue, Apt {k}", f"{n} {street} Lane, {city} "
                       f"{rng.choice('ABDEL')}{rng.randrange(1, 20)} {rng.randrange(1, 9)}"
                       f"{rng.choice('ABDEH')}{rng.choice('JKLNP')}",
                       f"ul. {rng.choice(['Lenina', 'Mira', 'Gagarina'])} {n}, apt. {k}, "
                       f"{rng.choice(['Tomsk', 'Kazan', 'Omsk'])}"])


_LATIN_RU = {"Иванов": "Ivanov", "Петров": "Petrov", "Смирнов": "Smirnov", "Козлов": "Kozlov",
             "Орлов": "Orlov", "Волков": "Volkov", "Морозов": "Morozov", "Лебедев": "Lebedev"}


def _latin_person(rng: random.Random) -> str:
    from ragmeter.privacy.names_en import name_lists

    if rng.random() < 0.3:      # a Russian name transliterated
        first = rng.choice(["Ivan", "Olga", "Dmitry", "Yulia", "Sergei", "Anastasia", "Pavel"])
        last = rng.choice(sorted(_LATIN_RU.values()))
        last += "a" if first in ("Olga", "Yulia", "Anastasia") else ""
        return rng.choice([f"{first} {last}", f"{last} {first}", f"{first[0]}. {last}"])
    first_names, surnames = name_lists()
    first, last = rng.choice(sorted(first_names)), rng.choice(sorted(surnames))
    return rng.choice([f"{first} {last}", f"{first} {last}", f"{first[0]}. {last}", first])


def make_value(kind: str, rng: random.Random, lang: str, case: str = "nom") -> str:
    """A fresh value of ``kind`` (or of one of the :data:`VARIANTS`)."""
    if kind == "personlow":
        return _ru_person(rng, case).lower() if rng.random() < 0.5 else \
            _first_case(rng.choice(RU_FIRST_F + RU_FIRST_M), False, case).lower()
    if kind == "personlat":
        return _latin_person(rng)
    if kind == "dobyear":
        return str(rng.randrange(1950, 2008))
    if kind == "passport_series":
        return f"{rng.randrange(1, 99):02d} {rng.randrange(0, 25):02d}"
    if kind == "passport_number":
        return f"{rng.randrange(10**5, 10**6)}"
    if kind == "address":
        return _address(rng, lang)
    if kind == "person":
        return _ru_person(rng, case) if lang == "ru" else _en_person(rng)
    if kind == "phone":
        return _phone(rng, lang)
    if kind == "birth_date":
        return _birth(rng, lang)
    return {"snils": _snils, "inn": _inn, "ogrn": _ogrn, "card": _card, "email": _email,
            "passport": _passport, "record_book": _record_book}[kind](rng)


def _bad_checksum(kind: str, rng: random.Random) -> str:
    """A number shaped like ``kind`` whose checksum is wrong (a look-alike)."""
    good = make_value(kind, rng, "ru")
    digits = [i for i, ch in enumerate(good) if ch.isdigit()]
    i = digits[-1]
    return good[:i] + str((int(good[i]) + rng.randrange(1, 9)) % 10) + good[i + 1:]


_SLOT = re.compile(r"\{(\w+)(?::(\w+))?\}")
_TITLE = re.compile(r"(?:Mr|Mrs|Ms|Dr)\.\s+")


def fill(template: str, rng: random.Random, lang: str, item_id: str) -> Item:
    """``template`` with each ``{kind[:case]}`` slot filled; ``{bad_kind}`` slots are
    look-alikes with a wrong checksum (unlabelled)."""
    text, spans, pos = "", [], 0
    for m in _SLOT.finditer(template):
        text += template[pos:m.start()]
        kind, case = m.group(1), m.group(2) or "nom"
        if kind.startswith("bad_"):
            text += _bad_checksum(kind[4:], rng)
        else:
            value = make_value(kind, rng, lang, case)
            title = _TITLE.match(value) if kind == "person" else None
            if title:               # a title is not personal data: outside the span
                text += title.group(0)
                value = value[title.end():]
            spans.append((len(text), len(text) + len(value), VARIANTS.get(kind, kind)))
            text += value
        pos = m.end()
    text += template[pos:]
    return Item(item_id, lang, text, spans)


def build(seed: int = 20260101, repeats: int = 4) -> list[Item]:
    """Every template ``repeats`` times (fresh values each), plus the negatives once."""
    rng = random.Random(seed)
    items: list[Item] = []
    for r in range(repeats):
        for lang, group in TEMPLATES.items():
            for i, t in enumerate(group):
                items.append(fill(t, rng, lang, f"{lang}-{i:03d}-{r}"))
    for lang, group in NEGATIVES.items():
        for i, t in enumerate(group):
            items.append(fill(t, rng, lang, f"{lang}-neg-{i:03d}"))
    more = random.Random(seed + 1)      # the later templates: the items above stay as they were
    for r in range(repeats):
        for lang, group in TEMPLATES_MORE.items():
            for i, t in enumerate(group):
                items.append(fill(t, more, lang, f"{lang}2-{i:03d}-{r}"))
    for lang, group in NEGATIVES_MORE.items():
        for i, t in enumerate(group):
            items.append(fill(t, more, lang, f"{lang}2-neg-{i:03d}"))
    return items


def main() -> int:
    items = build()
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text("".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in items),
                    "utf-8")
    n_dev = sum(split_of(i.id) == "dev" for i in items)
    sys.stdout.write(f"wrote {DATA}: {len(items)} items ({n_dev} dev, {len(items) - n_dev} test)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
