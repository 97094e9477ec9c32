"""Person names: Russian through an offline NER model (``natasha``: its news NER tagger and
embeddings ship inside the wheel; extra ``privacy``), English through a heuristic.

The Russian tagger finds inflected full names (``Ивановой Марии Петровны``); initials next to
a found surname (``Петров И. П.``, ``И. П. Петров``) are added to its span. The English
heuristic is deliberately small and honest about its limits: a title (``Mr.``, ``Dr.``…)
followed by a capitalised word, a common first name (a short list) followed by a capitalised
word, or an initial followed by a capitalised word that is not a common English word. It misses
names without a title whose first name is not on the list, and names written in lower case.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ragmeter.errors import require
from ragmeter.privacy.detect import Finding

_CYRILLIC = re.compile(r"[А-Яа-яЁё]")
_INITIALS_AFTER = re.compile(r"^\s+[А-ЯЁ]\.\s?(?:[А-ЯЁ]\.)?")
_INITIALS_BEFORE = re.compile(r"(?:[А-ЯЁ]\.\s?){1,2}\s*$")



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


EN_FIRST_NAMES = _words("""
James John Robert Michael William David Richard Joseph Thomas Charles Christopher Daniel
Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Timothy Ronald
Edward Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon
Benjamin Samuel Frank Gregory Alexander Patrick Jack Dennis Jerry Tyler Aaron Henry Peter Adam
Nathan Oliver Harry Leo Noah Liam Lucas Ethan Mary Patricia Jennifer Linda Elizabeth Barbara
Susan Jessica Sarah Karen Lisa Nancy Betty Margaret Sandra Ashley Kimberly Emily Donna Michelle
Carol Amanda Dorothy Melissa Deborah Stephanie Rebecca Sharon Laura Cynthia Kathleen Amy Angela
Shirley Anna Brenda Pamela Emma Nicole Helen Samantha Katherine Christine Debra Rachel Carolyn
Janet Catherine Maria Heather Diane Olivia Julie Joyce Victoria Kelly Christina Lauren Joan
Evelyn Judith Megan Andrea Cheryl Hannah Jacqueline Martha Gloria Teresa Ann Sara Madison
Frances Kathryn Janice Jean Abigail Alice Julia Judy Sophia Grace Denise Amber Doris Marilyn
Danielle Beverly Isabella Theresa Diana Natalie Brittany Charlotte Marie Kayla Alexis Lori
Chloe Lily Ella Mia Ava Ivan Dmitry Sergey Alexey Maxim Olga Natalia Elena Irina Anastasia
""")
EN_TITLES = r"(?:Mr|Mrs|Ms|Miss|Dr|Prof|Professor|Sir|Dame)\.?"
#: capitalised words that follow an initial or a first name without being a surname
EN_NOT_SURNAMES = _words("""
The A An And Or But If In On At To From For With By Of Is Are Was Were Be I We You He She They
It This That These Those Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
February March April May June July August September October November December Room Building
Floor University Street Avenue Road Office Dean Department Group Course
""")
_CAP = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_EN_PATTERNS = (
    re.compile(rf"\b{EN_TITLES}\s+(?:{_CAP}\s+)?{_CAP}"),
    re.compile(rf"\b(?P<first>{_CAP})\s+(?P<last>{_CAP})"),
    re.compile(rf"(?<![\w.])[A-Z]\.\s?(?P<last>{_CAP})"),
)


@lru_cache(maxsize=1)
def _tagger() -> tuple[Any, Any]:
    natasha: Any = require("natasha", "privacy", "Russian name detection")
    emb = natasha.NewsEmbedding()
    return natasha.Segmenter(), natasha.NewsNERTagger(emb)


@lru_cache(maxsize=1)
def _morph() -> Any:
    natasha: Any = require("natasha", "privacy", "Russian name detection")
    return natasha.MorphVocab()


@lru_cache(maxsize=20000)
def name_part(word: str) -> str | None:
    """``Name``, ``Surn`` or ``Patr`` when the most likely reading of ``word`` is a part of a
    Russian person name (OpenCorpora grammemes), else None."""
    from pymorphy2.analyzer import MorphAnalyzer

    parses = MorphAnalyzer.parse(_morph(), word)
    if not parses:
        return None
    tag = str(parses[0].tag)
    return next((g for g in ("Name", "Surn", "Patr") if g in tag), None)


_NOT_NAME_POS = frozenset({"VERB", "INFN", "ADVB", "PRCL", "CONJ", "PREP", "INTJ", "NPRO",
                           "PRED", "GRND"})


@lru_cache(maxsize=20000)
def _pos(word: str) -> str | None:
    from pymorphy2.analyzer import MorphAnalyzer

    parses = MorphAnalyzer.parse(_morph(), word)
    return str(parses[0].tag.POS) if parses else None


@lru_cache(maxsize=20000)
def lemma(word: str) -> str:
    """The dictionary form of a Russian word, lower-cased (``Ивановой`` → ``иванова``)."""
    from pymorphy2.analyzer import MorphAnalyzer

    if not _CYRILLIC.search(word):
        return word.lower()
    parses = MorphAnalyzer.parse(_morph(), word)
    return str(parses[0].normal_form) if parses else word.lower()


_RU_WORD = re.compile(r"[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?|[А-ЯЁ]\.")


def _name_runs(text: str) -> list[Finding]:
    """Runs of adjacent capitalised words that the dictionary reads as name parts (at least
    two, or a surname with initials): ``Козлову Ивану Олеговичу``, ``Петров И. П.``."""
    out: list[Finding] = []
    run: list[re.Match[str]] = []
    parts: list[str] = []

    def close() -> None:
        full = [p for p in parts if p != "init"]
        if len(full) >= 2 or (full and "Surn" in full and len(parts) > 1):
            out.append(Finding(run[0].start(), run[-1].end(), "person",
                               text[run[0].start():run[-1].end()]))
        run.clear()
        parts.clear()

    for m in _RU_WORD.finditer(text):
        word = m.group(0)
        part = "init" if word.endswith(".") else name_part(word)
        if part is None or (run and text[run[-1].end():m.start()].strip()):
            close()
        if part is not None:
            run.append(m)
            parts.append(part)
    if run:
        close()
    return out


def natasha_available() -> bool:
    """Whether the Russian NER extra is installed."""
    import importlib.util

    return importlib.util.find_spec("natasha") is not None


def russian_names(text: str) -> list[Finding]:
    """Russian person names (needs the ``privacy`` extra)."""
    if not _CYRILLIC.search(text):
        return []
    from natasha import Doc

    segmenter, tagger = _tagger()
    doc = Doc(text)
    doc.segment(segmenter)
    doc.tag_ner(tagger)
    out = []
    for span in doc.spans:
        if span.type != "PER":
            continue
        start, end = span.start, span.stop
        after = _INITIALS_AFTER.match(text[end:])
        if after:
            end += after.end()
        before = _INITIALS_BEFORE.search(text[max(0, start - 8):start])
        if before:
            start -= len(text[max(0, start - 8):start]) - before.start()
        start = _trim_start(text, start, end)
        words = [w.group(0) for w in _RU_WORD.finditer(text, start, end)]
        if len(words) == 1 and name_part(words[0]) is None and _pos(words[0]) in _NOT_NAME_POS:
            continue  # one word the dictionary reads as a verb etc. ("Разбей")
        out.append(Finding(start, end, "person", text[start:end]))
    return _merge(text, [*out, *_name_runs(text)])


def _trim_start(text: str, start: int, end: int) -> int:
    """Drop a leading word the tagger took in that the dictionary reads as no name part
    (``Скажите Семёнову Кириллу`` → ``Семёнову Кириллу``)."""
    words = list(_RU_WORD.finditer(text, start, end))
    if len(words) > 1 and not words[0].group(0).endswith(".") \
            and _pos(words[0].group(0)) in _NOT_NAME_POS \
            and any(name_part(w.group(0)) for w in words[1:]):
        return words[1].start()
    return start


def _merge(text: str, found: list[Finding]) -> list[Finding]:
    """Overlapping or space-adjacent person spans as one."""
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: f.start):
        if out and f.start <= out[-1].end + 1 and not text[out[-1].end:f.start].strip():
            last = out.pop()
            end = max(last.end, f.end)
            f = Finding(last.start, end, "person", text[last.start:end])
        out.append(f)
    return out


def english_names(text: str) -> list[Finding]:
    """English person names by the heuristic above."""
    out = []
    for i, pattern in enumerate(_EN_PATTERNS):
        for m in pattern.finditer(text):
            if i == 1 and (m.group("first") not in EN_FIRST_NAMES
                           or m.group("last") in EN_NOT_SURNAMES):
                continue
            if i == 2 and m.group("last") in EN_NOT_SURNAMES:
                continue
            out.append(Finding(m.start(), m.end(), "person", m.group(0)))
    return out


def find_names(text: str, *, russian: bool = True) -> list[Finding]:
    """Person names of ``text``: Russian NER (when ``russian``) and the English heuristic."""
    return [*(russian_names(text) if russian else []), *english_names(text)]
