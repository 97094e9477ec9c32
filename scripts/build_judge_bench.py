"""Build the bundled judge benchmark from our own templates (labels correct by construction).

Writes ``src/ragmeter/judge_trust/data/judge_bench.jsonl``. Every fact is about a fictional
region (towns, rivers, companies, people invented for this file); every item is produced by a
template whose label follows from how the answer was made (copied fact → supported, perturbed
fact → not supported, and so on). Deterministic: the same script gives the same file.

Usage: PYTHONPATH=src python scripts/build_judge_bench.py [--check]
(``--check`` fails when the shipped file differs from what the script produces.)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/ragmeter/judge_trust/data/judge_bench.jsonl"

MONTHS = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
          "сентября", "октября", "ноября", "декабря"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December"]


@dataclass(frozen=True)
class Town:
    name: str
    en: str
    founded: int
    population: int
    river: str
    river_en: str
    mayor: str
    mayor_en: str
    industry: str          # "основная отрасль — ..."
    not_industry: str      # something the town does NOT do
    industry_en: str
    distance: int          # km to the regional centre
    railway: bool


@dataclass(frozen=True)
class Company:
    name: str
    en: str
    day: int
    month: int
    year: int
    town: str
    employees: int
    ceo: str
    ceo_en: str
    product: str           # "выпускает ..."
    not_product: str
    product_en: str
    revenue: int           # млн руб. за 2024 год
    abroad: bool           # has branches abroad


TOWNS = [
    Town("Верхнеозёрск", "Verkhneozyorsk", 1763, 48200, "Кедровка", "Kedrovka",
         "Ирина Волкова", "Irina Volkova", "лесозаготовка", "добыча угля", "logging", 142, True),
    Town("Ключевск", "Klyuchevsk", 1821, 31500, "Ясеневка", "Yasenevka",
         "Олег Миронов", "Oleg Mironov", "производство стекла", "рыболовство", "glassmaking",
         87, False),
    Town("Светлоярск", "Svetloyarsk", 1698, 12900, "Серебрянка", "Serebryanka",
         "Марина Кузьмина", "Marina Kuzmina", "туризм", "металлургия", "tourism", 211, True),
    Town("Кедроград", "Kedrograd", 1904, 76400, "Быстрица", "Bystritsa",
         "Павел Орлов", "Pavel Orlov", "машиностроение", "виноделие", "engineering", 35, True),
    Town("Малиновск", "Malinovsk", 1847, 9300, "Ольховка", "Olkhovka",
         "Светлана Белова", "Svetlana Belova", "молочное животноводство", "судостроение",
         "dairy farming", 178, False),
    Town("Тихореченск", "Tikhorechensk", 1782, 22700, "Тихая", "Tikhaya",
         "Григорий Зайцев", "Grigory Zaytsev", "хлебопечение", "нефтепереработка",
         "baking", 64, True),
    Town("Ольховск", "Olkhovsk", 1869, 17800, "Луговая", "Lugovaya",
         "Елена Фролова", "Elena Frolova", "сыроварение", "производство бумаги",
         "cheese making", 120, False),
    Town("Грановск", "Granovsk", 1735, 54100, "Каменка", "Kamenka",
         "Андрей Соколов", "Andrey Sokolov", "добыча гранита", "выращивание риса",
         "granite quarrying", 96, True),
    Town("Медвежинск", "Medvezhinsk", 1911, 6400, "Светлая", "Svetlaya",
         "Наталья Егорова", "Natalya Egorova", "охотничий туризм", "автомобилестроение",
         "hunting tourism", 256, False),
    Town("Лесогорск", "Lesogorsk", 1798, 39600, "Берёзовка", "Beryozovka",
         "Виктор Никитин", "Viktor Nikitin", "производство мебели", "добыча золота",
         "furniture making", 73, True),
    Town("Заречинск", "Zarechinsk", 1856, 27300, "Чистая", "Chistaya",
         "Ольга Лебедева", "Olga Lebedeva", "приборостроение", "выращивание хлопка",
         "instrument making", 49, True),
    Town("Звонковск", "Zvonkovsk", 1927, 14600, "Звонкая", "Zvonkaya",
         "Дмитрий Карпов", "Dmitry Karpov", "рыбоводство", "производство цемента",
         "fish farming", 163, False),
]

COMPANIES = [
    Company("Северный вектор", "Northern Vector", 14, 3, 2009, "Верхнеозёрск", 340,
            "Анна Смирнова", "Anna Smirnova", "складские погрузчики", "сельхозтехнику",
            "warehouse forklifts", 1280, True),
    Company("Кедр-Логистик", "Kedr Logistics", 2, 11, 2014, "Кедроград", 1150,
            "Максим Ершов", "Maxim Yershov", "грузовые прицепы", "программное обеспечение",
            "freight trailers", 4620, False),
    Company("Озёрные системы", "Lake Systems", 27, 6, 2001, "Верхнеозёрск", 215,
            "Татьяна Громова", "Tatyana Gromova", "системы очистки воды", "бытовую химию",
            "water purification systems", 760, True),
    Company("Ясень Агро", "Yasen Agro", 9, 4, 2017, "Ключевск", 96,
            "Роман Титов", "Roman Titov", "семена овощных культур", "удобрения",
            "vegetable seeds", 310, False),
    Company("Тихоречный хлеб", "Tikhorechye Bread", 30, 8, 1996, "Тихореченск", 480,
            "Людмила Осипова", "Lyudmila Osipova", "хлеб и выпечку", "кондитерские "
            "изделия", "bakery products", 1540, False),
    Company("Ключевая энергия", "Key Energy", 18, 1, 2012, "Ключевск", 620,
            "Сергей Горин", "Sergey Gorin", "солнечные панели", "аккумуляторы",
            "solar panels", 3900, True),
    Company("Светлояр Медиа", "Svetloyar Media", 5, 9, 2019, "Светлоярск", 58,
            "Алина Рябова", "Alina Ryabova", "туристические путеводители", "телепередачи",
            "travel guides", 95, False),
    Company("Грановский камень", "Granovsk Stone", 21, 5, 1988, "Грановск", 1730,
            "Николай Власов", "Nikolai Vlasov", "гранитную плитку", "кирпич",
            "granite tiles", 5870, True),
    Company("Лесогорская мебель", "Lesogorsk Furniture", 11, 2, 2005, "Лесогорск", 890,
            "Ксения Белкина", "Ksenia Belkina", "мебель из массива сосны", "матрасы",
            "solid pine furniture", 2210, True),
    Company("Заречные приборы", "Zarechny Instruments", 3, 10, 1999, "Заречинск", 430,
            "Игорь Пахомов", "Igor Pakhomov", "метеостанции", "медицинские приборы",
            "weather stations", 1090, False),
    Company("Ольховский сыр", "Olkhovsk Cheese", 16, 7, 2011, "Ольховск", 170,
            "Вера Чернова", "Vera Chernova", "твёрдые сыры", "йогурты", "hard cheeses",
            640, False),
    Company("Звонкая рыба", "Ringing Fish", 24, 12, 2016, "Звонковск", 75,
            "Артём Лаптев", "Artyom Laptev", "охлаждённую форель", "рыбные консервы",
            "chilled trout", 205, True),
]


def num(n: int) -> str:
    """48200 → '48 200' (Russian digit grouping)."""
    return f"{n:,}".replace(",", " ")


def num_en(n: int) -> str:
    return f"{n:,}"


def other(items: list, i: int, step: int = 5):
    return items[(i + step) % len(items)]


def perturb(n: int, i: int) -> int:
    """A clearly different but plausible number."""
    factors = (1.3, 0.7, 1.5, 0.6, 1.2, 0.8)
    m = int(round(n * factors[i % len(factors)], -1 if n >= 100 else 0))
    return m if m != n else n + 10


class Bench:
    def __init__(self) -> None:
        self.items: list[dict] = []
        self.counter: dict[str, int] = {}

    def add(self, lang: str, task: str, kind: str, label: object, **fields: object) -> None:
        key = f"{lang}-{task}-{kind}"
        self.counter[key] = self.counter.get(key, 0) + 1
        item = {"id": f"{key}-{self.counter[key]:03d}", "lang": lang, "task": task,
                "kind": kind, "label": label}
        item.update({k: v for k, v in fields.items() if v is not None})
        self.items.append(item)


# ----------------------------------------------------------------- faithfulness (Russian)
def faithfulness_ru(b: Bench) -> None:
    for i, t in enumerate(TOWNS):
        ctx = (f"Город {t.name} расположен на реке {t.river}. По данным переписи на 1 января "
               f"2025 года, население города составляло {num(t.population)} человек.")
        yes = i % 2 == 0
        pop = t.population if yes else perturb(t.population, i)
        b.add("ru", "faithfulness", "numbers", "yes" if yes else "no",
              question=f"Сколько человек живёт в городе {t.name}?", context=ctx,
              answer=f"В городе {t.name} живёт {num(pop)} человек.")
    for i, c in enumerate(COMPANIES):
        ctx = (f"Компания «{c.name}» выпускает {c.product}. В 2024 году её выручка составила "
               f"{num(c.revenue)} млн рублей, а численность персонала — {num(c.employees)} "
               f"человек.")
        yes = i % 2 == 1
        rev = c.revenue if yes else perturb(c.revenue, i + 1)
        b.add("ru", "faithfulness", "numbers", "yes" if yes else "no",
              question=f"Какой была выручка компании «{c.name}» в 2024 году?", context=ctx,
              answer=f"Выручка «{c.name}» в 2024 году — {num(rev)} млн рублей.")
    # dates
    for i, c in enumerate(COMPANIES):
        ctx = (f"Компания «{c.name}» была основана {c.day} {MONTHS[c.month - 1]} {c.year} года "
               f"в городе {c.town}. Сейчас в ней работает {num(c.employees)} человек.")
        mode = i % 3
        if mode == 0:
            ans, lab = f"«{c.name}» основана в {c.year} году.", "yes"
        elif mode == 1:
            ans, lab = f"«{c.name}» основана в {c.year + 2 + i % 3} году.", "no"
        else:
            m = (c.month + 4) % 12
            ans, lab = (f"Компанию «{c.name}» основали {c.day} {MONTHS[m]} {c.year} года.",
                        "no")
        b.add("ru", "faithfulness", "dates", lab,
              question=f"Когда основана компания «{c.name}»?", context=ctx, answer=ans)
    for i, t in enumerate(TOWNS):
        ctx = (f"Первое упоминание о поселении на месте города {t.name} относится к "
               f"{t.founded} году. Статус города оно получило в {t.founded + 120} году.")
        yes = i % 2 == 1
        year = t.founded + 120 if yes else t.founded
        b.add("ru", "faithfulness", "dates", "yes" if yes else "no",
              question=f"Когда {t.name} получил статус города?", context=ctx,
              answer=f"{t.name} стал городом в {year} году.")
    # negation
    for i, t in enumerate(TOWNS):
        ctx = (f"В городе {t.name} не ведётся {t.not_industry}. Основная отрасль города — "
               f"{t.industry}.")
        mode = i % 3
        if mode == 0:
            ans, lab = f"В городе {t.name} ведётся {t.not_industry}.", "no"
        elif mode == 1:
            ans, lab = f"Главная отрасль города {t.name} — {t.industry}.", "yes"
        else:
            ans, lab = f"{t.not_industry.capitalize()} в городе {t.name} не ведётся.", "yes"
        b.add("ru", "faithfulness", "negation", lab,
              question=f"Чем занимаются в городе {t.name}?", context=ctx, answer=ans)
    for i, c in enumerate(COMPANIES):
        if c.abroad:
            ctx = f"У компании «{c.name}» есть филиалы за рубежом, головной офис — в городе {c.town}."
        else:
            ctx = (f"У компании «{c.name}» нет филиалов за рубежом; все её подразделения "
                   f"находятся в городе {c.town}.")
        claim_abroad = i % 2 == 0
        ans = (f"У «{c.name}» есть зарубежные филиалы." if claim_abroad
               else f"У «{c.name}» нет зарубежных филиалов.")
        lab = "yes" if claim_abroad == c.abroad else "no"
        b.add("ru", "faithfulness", "negation", lab,
              question=f"Есть ли у компании «{c.name}» филиалы за рубежом?", context=ctx,
              answer=ans)
    # inference
    for i, c in enumerate(COMPANIES):
        gap = 2 + i % 4
        ctx = (f"Компания «{c.name}» основана в {c.year} году. Первый собственный склад она "
               f"открыла через {gap} {'года' if gap < 5 else 'лет'} после основания.")
        yes = i % 2 == 0
        year = c.year + gap if yes else c.year + gap + 1
        b.add("ru", "faithfulness", "inference", "yes" if yes else "no",
              question=f"В каком году «{c.name}» открыла первый склад?", context=ctx,
              answer=f"Первый склад «{c.name}» открыт в {year} году.")
    for i, t in enumerate(TOWNS):
        u = other(TOWNS, i, 3)
        ctx = (f"Население города {t.name} — {num(t.population)} человек. Население города "
               f"{u.name} — {num(u.population)} человек.")
        bigger, smaller = (t, u) if t.population > u.population else (u, t)
        yes = i % 2 == 1
        a, bb = (bigger, smaller) if yes else (smaller, bigger)
        b.add("ru", "faithfulness", "inference", "yes" if yes else "no",
              question=f"Какой город больше: {t.name} или {u.name}?", context=ctx,
              answer=f"В городе {a.name} живёт больше людей, чем в городе {bb.name}.")
    # partial support: two claims, the second one supported or not
    for i, c in enumerate(COMPANIES):
        ctx = (f"Генеральный директор компании «{c.name}» — {c.ceo}. Компания выпускает "
               f"{c.product}.")
        yes = i % 2 == 1
        prod = c.product if yes else c.not_product
        b.add("ru", "faithfulness", "partial", "yes" if yes else "no",
              question=f"Кто руководит компанией «{c.name}» и что она выпускает?", context=ctx,
              answer=f"Компанией «{c.name}» руководит {c.ceo}; компания выпускает {prod}.")
    for i, t in enumerate(TOWNS):
        ctx = (f"Город {t.name} стоит на реке {t.river}. Мэр города — {t.mayor}.")
        yes = i % 2 == 0
        dist = "" if yes else f" Город находится в {t.distance} км от областного центра."
        ans = f"{t.name} стоит на реке {t.river}, его мэр — {t.mayor}.{dist}"
        b.add("ru", "faithfulness", "partial", "yes" if yes else "no",
              question=f"Что известно о городе {t.name}?", context=ctx, answer=ans)
    # refusals: "the documents do not say" — faithful only when they indeed do not say
    for i, c in enumerate(COMPANIES):
        says = i % 2 == 0
        ctx = (f"Компания «{c.name}» зарегистрирована в городе {c.town}."
               + (f" Её выручка за 2024 год составила {num(c.revenue)} млн рублей." if says
                  else " Сведения о выручке компания не публикует."))
        b.add("ru", "faithfulness", "refusal", "no" if says else "yes",
              question=f"Какова выручка компании «{c.name}» за 2024 год?", context=ctx,
              answer="В предоставленных документах нет сведений о выручке компании.")
    for i, t in enumerate(TOWNS):
        says = i % 2 == 1
        ctx = (f"Город {t.name} расположен на реке {t.river}."
               + (f" Мэр города — {t.mayor}." if says else ""))
        b.add("ru", "faithfulness", "refusal", "no" if says else "yes",
              question=f"Кто мэр города {t.name}?", context=ctx,
              answer="К сожалению, в найденных документах не сказано, кто мэр этого города.")


# ----------------------------------------------------------------- answer relevance 0/1/2
def answer_relevance_ru(b: Bench) -> None:
    for i, c in enumerate(COMPANIES):
        q = f"Когда основана компания «{c.name}» и сколько в ней сотрудников?"
        full = (f"Компания «{c.name}» основана в {c.year} году, в ней работает "
                f"{num(c.employees)} человек.")
        half = f"Компания «{c.name}» основана в {c.year} году."
        off = f"Компания «{c.name}» выпускает {c.product}."
        grade = (2, 1, 0)[i % 3]
        b.add("ru", "answer_relevance", "two-part", grade, question=q,
              answer=(full, half, off)[(2, 1, 0).index(grade)])
    for i, t in enumerate(TOWNS):
        q = f"Сколько человек живёт в городе {t.name}?"
        grade = (0, 2, 1)[i % 3]
        answers = {2: f"В городе {t.name} живёт {num(t.population)} человек.",
                   1: f"В городе {t.name} живёт " + ("несколько тысяч человек."
                                                     if t.population < 10000 else
                                                     "больше десяти тысяч человек."
                                                     if t.population < 20000 else
                                                     "несколько десятков тысяч человек."),
                   0: f"Город {t.name} стоит на реке {t.river}."}
        b.add("ru", "answer_relevance", "vague", grade, question=q, answer=answers[grade])
    for i, c in enumerate(COMPANIES):
        q = f"Кто руководит компанией «{c.name}» и в каком городе она находится?"
        u = other(TOWNS, i, 2)
        grade = (1, 0, 2)[i % 3]
        answers = {2: f"Компанией «{c.name}» руководит {c.ceo}, она находится в городе "
                      f"{c.town}.",
                   1: f"Компанией «{c.name}» руководит {c.ceo}.",
                   0: f"Город {u.name} основан в {u.founded} году."}
        b.add("ru", "answer_relevance", "person", grade, question=q, answer=answers[grade])
    for i, t in enumerate(TOWNS[:9]):
        q = f"На какой реке стоит город {t.name} и кто его мэр?"
        grade = (2, 0, 1)[i % 3]
        answers = {2: f"{t.name} стоит на реке {t.river}, мэр города — {t.mayor}.",
                   1: f"{t.name} стоит на реке {t.river}.",
                   0: "Извините, я не могу помочь с этим вопросом."}
        b.add("ru", "answer_relevance", "two-part", grade, question=q, answer=answers[grade])


# ----------------------------------------------------------------- context relevance 0/1/2
def context_relevance_ru(b: Bench) -> None:
    # every question asks two things: 2 = the context gives both, 1 = one of them, 0 = neither
    for i, c in enumerate(COMPANIES):
        q = f"Кто руководит компанией «{c.name}» и когда она основана?"
        u = other(TOWNS, i, 4)
        grade = (2, 0, 1)[i % 3]
        ctxs = {2: f"Компания «{c.name}» основана в {c.year} году. С {c.year + 3} года её "
                   f"генеральный директор — {c.ceo}.",
                1: f"Компания «{c.name}» основана в {c.year} году в городе {c.town}.",
                0: f"Город {u.name} стоит на реке {u.river}; основная отрасль — {u.industry}."}
        b.add("ru", "context_relevance", "person", grade, question=q, context=ctxs[grade])
    for i, t in enumerate(TOWNS):
        q = f"Сколько жителей в городе {t.name} и на какой реке он стоит?"
        c = other(COMPANIES, i, 3)
        grade = (1, 2, 0)[i % 3]
        ctxs = {2: f"Город {t.name} стоит на реке {t.river}. На 1 января 2025 года в нём "
                   f"проживало {num(t.population)} человек.",
                1: f"Город {t.name} стоит на реке {t.river}; мэр города — {t.mayor}.",
                0: f"Компания «{c.name}» выпускает {c.product}."}
        b.add("ru", "context_relevance", "numbers", grade, question=q, context=ctxs[grade])
    for i, c in enumerate(COMPANIES):
        q = f"Что выпускает компания «{c.name}» и сколько у неё сотрудников?"
        d = other(COMPANIES, i, 5)
        grade = (0, 1, 2)[i % 3]
        ctxs = {2: f"Компания «{c.name}» выпускает {c.product}; в ней работает "
                   f"{num(c.employees)} человек.",
                1: f"Компания «{c.name}» выпускает {c.product} и поставляет их заказчикам по "
                   f"всей области.",
                0: f"Компания «{d.name}» выпускает {d.product}."}
        b.add("ru", "context_relevance", "product", grade, question=q, context=ctxs[grade])
    for i, t in enumerate(TOWNS[:9]):
        q = f"Когда основан город {t.name} и кто его мэр?"
        grade = (2, 1, 0)[i % 3]
        u = other(TOWNS, i, 6)
        ctxs = {2: f"Поселение на месте города {t.name} впервые упоминается в {t.founded} "
                   f"году. Сейчас мэр города — {t.mayor}.",
                1: f"Поселение на месте города {t.name} впервые упоминается в {t.founded} "
                   f"году.",
                0: f"Мэр города {u.name} — {u.mayor}."}
        b.add("ru", "context_relevance", "dates", grade, question=q, context=ctxs[grade])


# ----------------------------------------------------------------- factual correctness
def factual_ru(b: Bench) -> None:
    for i, c in enumerate(COMPANIES):
        ref = (f"Компания «{c.name}» основана в {c.year} году в городе {c.town}; её "
               f"возглавляет {c.ceo}.")
        mode = i % 4
        q = f"Расскажите о компании «{c.name}»."
        if mode == 0:
            ans, lab = f"«{c.name}» появилась в {c.year} году в городе {c.town}.", "yes"
        elif mode == 1:
            ans, lab = f"«{c.name}» появилась в {c.year - 3} году в городе {c.town}.", "no"
        elif mode == 2:
            ans, lab = f"Компанию «{c.name}» возглавляет {c.ceo}.", "yes"
        else:
            ans, lab = f"Компанию «{c.name}» возглавляет {other(COMPANIES, i, 1).ceo}.", "no"
        b.add("ru", "factual_correctness", "company", lab, question=q, reference=ref,
              answer=ans)
    for i, t in enumerate(TOWNS):
        ref = (f"В городе {t.name} живёт {num(t.population)} человек; город стоит на реке "
               f"{t.river}.")
        q = f"Что известно о городе {t.name}?"
        mode = i % 4
        if mode == 0:
            ans, lab = f"{t.name} расположен на реке {t.river}.", "yes"
        elif mode == 1:
            ans, lab = f"{t.name} расположен на реке {other(TOWNS, i, 2).river}.", "no"
        elif mode == 2:
            ans, lab = f"Население города {t.name} — около {num(t.population)} человек.", "yes"
        else:
            ans, lab = (f"Население города {t.name} — около "
                        f"{num(perturb(t.population, i))} человек.", "no")
        b.add("ru", "factual_correctness", "town", lab, question=q, reference=ref, answer=ans)
    for i, c in enumerate(COMPANIES):
        ref = f"В компании «{c.name}» работает {num(c.employees)} человек."
        yes = i % 2 == 1
        n = c.employees if yes else perturb(c.employees, i + 2)
        b.add("ru", "factual_correctness", "numbers", "yes" if yes else "no",
              question=f"Сколько сотрудников в компании «{c.name}»?", reference=ref,
              answer=f"Штат «{c.name}» — {num(n)} сотрудников.")


# ----------------------------------------------------------------- production gate
def gate_ru(b: Bench) -> None:
    for i, c in enumerate(COMPANIES):
        ctx = (f"Компания «{c.name}» основана {c.day} {MONTHS[c.month - 1]} {c.year} года. "
               f"Генеральный директор — {c.ceo}. Компания выпускает {c.product}.")
        q = f"Что выпускает компания «{c.name}»?"
        mode = i % 4
        if mode == 0:
            ans, lab = f"«{c.name}» выпускает {c.product}.", "yes"
        elif mode == 1:
            ans, lab = f"«{c.name}» выпускает {c.not_product}.", "no"
        elif mode == 2:
            ans, lab = f"Генеральный директор «{c.name}» — {c.ceo}.", "no"
        else:
            ans, lab = (f"«{c.name}» производит {c.product}; её генеральный директор — "
                        f"{c.ceo}.", "yes")
        b.add("ru", "production_gate", "product", lab, question=q, context=ctx, answer=ans)
    for i, t in enumerate(TOWNS):
        ctx = (f"Город {t.name} находится в {t.distance} км от областного центра. "
               + ("Через город проходит железная дорога." if t.railway
                  else "Железной дороги в городе нет, добраться можно только автобусом."))
        q = f"Можно ли доехать до города {t.name} на поезде?"
        mode = i % 3
        if mode == 0:
            ans = ("Да, через город проходит железная дорога." if t.railway
                   else "Нет, железной дороги там нет — можно доехать на автобусе.")
            lab = "yes"
        elif mode == 1:
            ans = ("Нет, железной дороги там нет." if t.railway
                   else "Да, до города можно доехать на поезде.")
            lab = "no"
        else:
            ans, lab = "В найденных документах нет информации о транспорте до этого города.", \
                "no"
        b.add("ru", "production_gate", "transport", lab, question=q, context=ctx, answer=ans)
    for i, t in enumerate(TOWNS[:8]):
        ctx = f"Мэр города {t.name} — {t.mayor}. Приём граждан ведётся по вторникам."
        q = f"Кто мэр города {t.name}?"
        yes = i % 2 == 0
        ans = (f"Мэр города {t.name} — {t.mayor}." if yes
               else f"Мэр города {t.name} — {other(TOWNS, i, 1).mayor}.")
        b.add("ru", "production_gate", "person", "yes" if yes else "no", question=q,
              context=ctx, answer=ans)


# ----------------------------------------------------------------- English subset
def english(b: Bench) -> None:
    for i, c in enumerate(COMPANIES[:8]):
        ctx = (f"{c.en} was founded on {MONTHS_EN[c.month - 1]} {c.day}, {c.year}, and "
               f"employs {num_en(c.employees)} people. It makes {c.product_en}.")
        yes = i % 2 == 0
        n = c.employees if yes else perturb(c.employees, i)
        b.add("en", "faithfulness", "numbers", "yes" if yes else "no",
              question=f"How many people work at {c.en}?", context=ctx,
              answer=f"{c.en} employs {num_en(n)} people.")
    for i, t in enumerate(TOWNS[:8]):
        ctx = (f"{t.en} lies on the {t.river_en} river. Its mayor is {t.mayor_en}.")
        says = i % 2 == 1
        if not says:
            ctx = f"{t.en} lies on the {t.river_en} river and was founded in {t.founded}."
        b.add("en", "faithfulness", "refusal", "no" if says else "yes",
              question=f"Who is the mayor of {t.en}?", context=ctx,
              answer="The provided documents do not say who the mayor is.")
    for i, c in enumerate(COMPANIES[:9]):
        grade = (2, 1, 0)[i % 3]
        answers = {2: f"{c.en} was founded in {c.year} and employs {num_en(c.employees)} "
                      f"people.",
                   1: f"{c.en} was founded in {c.year}.",
                   0: f"{c.en} makes {c.product_en}."}
        b.add("en", "answer_relevance", "two-part", grade,
              question=f"When was {c.en} founded and how many people work there?",
              answer=answers[grade])
    for i, t in enumerate(TOWNS[:9]):
        grade = (0, 2, 1)[i % 3]
        u = other(TOWNS, i, 4)
        ctxs = {2: f"{t.en} lies on the {t.river_en} river. On 1 January 2025 it had "
                   f"{num_en(t.population)} residents.",
                1: f"{t.en} lies on the {t.river_en} river; its mayor is {t.mayor_en}.",
                0: f"{u.en} lies on the {u.river_en} river; its main industry is "
                   f"{u.industry_en}."}
        b.add("en", "context_relevance", "numbers", grade,
              question=f"How many people live in {t.en} and on which river does it lie?",
              context=ctxs[grade])
    for i, c in enumerate(COMPANIES[:8]):
        ref = f"{c.en} was founded in {c.year} in {TOWN_EN[c.town]} and is led by {c.ceo_en}."
        yes = i % 2 == 1
        year = c.year if yes else c.year + 4
        b.add("en", "factual_correctness", "company", "yes" if yes else "no",
              question=f"Tell me about {c.en}.", reference=ref,
              answer=f"{c.en} was founded in {year}.")
    for i, c in enumerate(COMPANIES[:8]):
        ctx = f"{c.en} makes {c.product_en}. Its chief executive is {c.ceo_en}."
        mode = i % 4
        ans, lab = ((f"{c.en} makes {c.product_en}.", "yes"),
                    (f"{c.en} makes {other(COMPANIES, i, 3).product_en}.", "no"),
                    (f"The chief executive of {c.en} is {c.ceo_en}.", "no"),
                    (f"It produces {c.product_en}.", "yes"))[mode]
        b.add("en", "production_gate", "product", lab,
              question=f"What does {c.en} make?", context=ctx, answer=ans)


TOWN_EN = {t.name: t.en for t in TOWNS}


def build() -> list[dict]:
    b = Bench()
    faithfulness_ru(b)
    answer_relevance_ru(b)
    context_relevance_ru(b)
    factual_ru(b)
    gate_ru(b)
    english(b)
    return b.items


BEHAVIOURS = Path(__file__).resolve().parent / "judge_bench_behaviours"


def behaviours() -> list[dict]:
    """Hand-written items for the behaviour tasks (tab-separated files beside this script):
    refusal vs answer (``judged_refusal``), conversation turns whose claims rest on earlier
    turns (``history_faithfulness``) and citing sentences vs the passage they cite
    (``citation_support``); labels written with each item."""
    items: list[dict] = []

    def add(task: str, kind: str, lang: str, label: str, **fields: object) -> None:
        n = sum(1 for i in items if i["task"] == task and i["lang"] == lang) + 1
        items.append({"id": f"{lang}-{task}-{kind}-{n:03d}", "lang": lang, "task": task,
                      "kind": kind, "label": label, **fields})

    def rows(name: str) -> list[list[str]]:
        text = (BEHAVIOURS / name).read_text(encoding="utf-8")
        return [line.split("\t") for line in text.splitlines() if line.strip()]

    for lang, q, a, label in rows("refusal.tsv"):
        add("judged_refusal", "refusal", lang, label, question=q, answer=a)
    for lang, prev_q, prev_a, q, ctx, a, label in rows("conversation.tsv"):
        add("history_faithfulness", "conversation", lang, label, question=q, context=ctx,
            answer=a, history=[{"role": "user", "content": prev_q},
                               {"role": "assistant", "content": prev_a}])
    for lang, ctx, a, label in rows("citation.tsv"):
        add("citation_support", "citation", lang, label, context=ctx, answer=a)
    random.Random(7).shuffle(items)
    n = len(items)        # the hard refusal kinds come after, so the items above keep their order
    for lang, q, a, label, kind in rows("refusal_hard.tsv"):
        add("judged_refusal", kind, lang, label, question=q, answer=a)
    return items[:n] + random.Random(8).sample(items[n:], len(items) - n)


def main() -> int:
    from judge_bench_pairs import PAIRS_OUT, pairs_text  # English translations of ru items

    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    rng = random.Random(20260123)
    templated = build()
    items = list(templated)
    rng.shuffle(items)  # mix tasks so a --limit subset covers every task
    items += behaviours()  # after the templated items: their order (and --limit subsets) stays
    text = "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)
    outputs = ((OUT, text), (PAIRS_OUT, pairs_text(templated)))
    if args.check:
        stale = [p for p, t in outputs if not p.exists() or p.read_text(encoding="utf-8") != t]
        for p in stale:
            print(f"{p} is stale: run scripts/build_judge_bench.py", file=sys.stderr)
        return 1 if stale else 0
    for p, t in outputs:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(t, encoding="utf-8")
    from collections import Counter

    print(f"wrote {len(items)} items to {OUT}, {outputs[1][1].count(chr(10))} to {PAIRS_OUT}")
    for (lang, task), n in sorted(Counter((i["lang"], i["task"]) for i in items).items()):
        labels = Counter(str(i["label"]) for i in items if i["lang"] == lang and i["task"] == task)
        print(f"  {lang} {task:20s} {n:4d}  labels {dict(sorted(labels.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
