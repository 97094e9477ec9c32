"""The refusal detector's training corpus: Russian and English answers generated from our own
templates and vocabularies (``data/refusal_corpus/*.yaml``), labelled by construction.

A refusal is a *core* (the system lacks the information, cannot or will not answer, does not
know, the question is out of its scope, a reason it may not say, a colloquial "no idea"), a
redirect that only sends the user elsewhere, or a clarifying question that gives nothing —
each optionally wrapped in courtesy (apologies, greetings, "thank you for your
understanding") and followed by a redirect. An answer gives substantive information: a plain
fact, an apology then a fact, a hedged fact, a partial answer with a redirect or a "no data on
X, but…", a negated fact ("no, the certificate is not needed"), a short answer ("Ответ: …",
"Twice a year."), a colloquial fact. Fourteen
domains (universities, legal aid, banks, telecom, government services, pharmacies,
marketplaces, insurance, HR, transport, housing, clinics, taxes, delivery) give topics,
places and facts; typos, lower case and missing punctuation are added at random.

Each item carries its ``family`` (label, kind and template), so held-out checks can leave out
whole templates rather than rows. Deterministic for a seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

LANGS = ("ru", "en")
#: refusal kinds and answer kinds with their shares in the corpus
REFUSAL_KINDS = {"lack_info": 0.19, "inability": 0.14, "ignorance": 0.14, "scope": 0.08,
                 "reason": 0.08, "colloquial": 0.07, "redirect": 0.16, "clarify": 0.14}
ANSWER_KINDS = {"plain": 0.22, "apology": 0.15, "hedged": 0.16, "partial": 0.18,
                "negation": 0.14, "short": 0.08, "colloquial": 0.07}


@dataclass(frozen=True)
class CorpusItem:
    """One generated answer: ``refused`` is its label by construction."""

    id: str
    lang: str
    text: str
    refused: bool
    kind: str
    family: str


@lru_cache(maxsize=4)
def _load(name: str) -> Any:
    path = resources.files("ragmeter.metrics").joinpath("data", "refusal_corpus", name)
    return yaml.safe_load(path.read_text("utf-8"))


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def _low(s: str) -> str:
    return s[:1].lower() + s[1:] if s and not s[:2].isupper() else s


_NEG_HEAD = re.compile(r"^(?:Нет|No)[,.]\s+")


def _slots(domain: dict[str, Any], rng: random.Random, lang: str) -> dict[str, str]:
    topic = rng.choice(domain["topics"])
    place = rng.choice(domain["places"])
    fact = rng.choice(domain["facts"])
    neg = rng.choice(domain["neg"])
    words = _load(f"templates_{lang}.yaml").get("question_words") or ["что"]
    s = {"about": topic[1], "to": place[0], "at": place[1], "fact": fact, "neg": neg,
         "fact_l": _low(fact), "neg_l": _low(_NEG_HEAD.sub("", neg)),
         "question_word": rng.choice(words)}
    s["gen" if lang == "ru" else "topic"] = topic[0]
    s["About"], s["Topic"] = _cap(s["about"]), _cap(topic[0])
    return s


def _fill(template: str, slots: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: slots.get(m.group(1), m.group(0)), template)


def _join(before: str | None, core: str) -> str:
    if not before:
        return core
    if before.endswith((",", "но", "что", "but", "afraid")):
        return f"{before} {_low(core)}"
    return f"{before} {core}"


def _pick(shares: dict[str, float], rng: random.Random) -> str:
    return rng.choices(list(shares), weights=list(shares.values()))[0]


def _refusal(lang: str, kind: str, slots: dict[str, str], rng: random.Random
             ) -> tuple[str, str]:
    t = _load(f"templates_{lang}.yaml")
    if kind in ("redirect", "clarify"):
        i = rng.randrange(len(t[kind]))
        core, family = _fill(t[kind][i], slots), f"{kind}-{i}"
        if kind == "redirect" and rng.random() < 0.2:      # two ways of sending elsewhere
            core += " " + _fill(rng.choice(t["redirect"]), slots)
    else:
        group = t["refusal"][kind]
        i = rng.randrange(len(group))
        core, family = _fill(group[i], slots), f"{kind}-{i}"
        if kind != "colloquial" and rng.random() < 0.15:   # two refusal statements
            other = t["refusal"][rng.choice(["lack_info", "inability", "ignorance"])]
            core += " " + _fill(rng.choice(other), slots)
        if kind != "colloquial" and rng.random() < 0.3:
            core += " " + _fill(rng.choice(t["redirect"]), slots)
    if kind != "colloquial":
        if rng.random() < 0.45:
            core = _join(rng.choice(t["courtesy_before"]), core)
        if rng.random() < 0.35:
            core += " " + rng.choice(t["courtesy_after"])
    return core, family


def _answer(lang: str, kind: str, domain: dict[str, Any], slots: dict[str, str],
            rng: random.Random) -> tuple[str, str]:
    t = _load(f"templates_{lang}.yaml")
    if kind == "plain":
        facts = rng.sample(domain["facts"], k=min(len(domain["facts"]), rng.choice([1, 1, 2])))
        return " ".join(facts), f"plain-{len(facts)}"
    group = t["answer"][kind]
    i = rng.randrange(len(group))
    return _fill(group[i], slots), f"{kind}-{i}"


_LETTERS = {"ru": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "en": "abcdefghijklmnopqrstuvwxyz"}


def _typo(word: str, rng: random.Random, lang: str) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    op = rng.randrange(4)
    if op == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if op == 1:
        return word[:i] + word[i + 1:]
    if op == 2:
        return word[:i] + word[i] + word[i:]
    return word[:i] + rng.choice(_LETTERS[lang]) + word[i + 1:]


def noisy(text: str, rng: random.Random, lang: str) -> str:
    """``text`` as people type in a chat: typos, ё → е, lower case, no final full stop or
    commas (each at random)."""
    if rng.random() < 0.5:
        text = " ".join(_typo(w, rng, lang) if rng.random() < 0.15 else w
                        for w in text.split(" "))
    if rng.random() < 0.5:
        text = text.replace("ё", "е")
    if rng.random() < 0.4:
        text = text.lower()
    if rng.random() < 0.4:
        text = text.rstrip(".")
    if rng.random() < 0.3:
        text = text.replace(",", "")
    return text


def generate(n_per_lang: int = 2400, *, seed: int = 20260301, noise: float = 0.18
             ) -> list[CorpusItem]:
    """``n_per_lang`` answers per language, half refusals, deterministic for ``seed``."""
    rng = random.Random(seed)
    items: list[CorpusItem] = []
    for lang in LANGS:
        domains = _load(f"domains_{lang}.yaml")
        names = sorted(domains)
        for n in range(n_per_lang):
            domain = domains[rng.choice(names)]
            slots = _slots(domain, rng, lang)
            refused = n % 2 == 0
            if refused:
                kind = _pick(REFUSAL_KINDS, rng)
                text, family = _refusal(lang, kind, slots, rng)
            else:
                kind = _pick(ANSWER_KINDS, rng)
                text, family = _answer(lang, kind, domain, slots, rng)
            if kind == "colloquial" or rng.random() < noise:
                text = noisy(text, rng, lang)
            items.append(CorpusItem(f"{lang}-{n:05d}", lang, text, refused, kind,
                                    f"{lang}:{'r' if refused else 'a'}:{family}"))
    return items
