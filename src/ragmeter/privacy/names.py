"""Person names: Russian through an offline NER model (``natasha``: its news NER tagger and
embeddings ship inside the wheel; extra ``privacy``) and the pymorphy2 dictionary, names in
Latin letters through the patterns of :mod:`ragmeter.privacy.names_en`.

Russian: the tagger finds inflected full names (``Ивановой Марии Петровны``); initials next to
a found surname (``Петров И. П.``, ``И. П. Петров``) are added to its span. The dictionary
adds runs of adjacent capitalised name parts (``Козлову Ивану Олеговичу``) — a run with a
first name or patronymic may hold one capitalised common noun, the oblique case of a surname
that is also a word (``Ивану Кузнецу``, ``Петру Морозу``); a single capitalised first name or
patronymic (``Пётр Сергеевич``, ``Саша,``); and names written in lower case in a chat
(``передай саше``, ``иван петров``) when the word reads mostly as a name part and stands
next to another name part or after a word that introduces a person.
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


@lru_cache(maxsize=20000)
def name_share(word: str) -> tuple[float, str | None]:
    """How much of the dictionary's probability mass reads ``word`` as a name part, and the
    part of its likeliest such reading (``Name``, ``Surn``, ``Patr``)."""
    from pymorphy2.analyzer import MorphAnalyzer

    share, best, best_score = 0.0, None, -1.0
    for p in MorphAnalyzer.parse(_morph(), word):
        tag = str(p.tag)
        part = next((g for g in ("Name", "Surn", "Patr") if g in tag), None)
        if part is not None:
            share += p.score
            if p.score > best_score:
                best, best_score = part, p.score
    return share, best


@lru_cache(maxsize=20000)
def _common_noun(word: str) -> bool:
    """A capitalised word the dictionary reads as an ordinary noun (not a place, not an
    organisation): the oblique case of a surname that is also a word (``Кузнецу``)."""
    from pymorphy2.analyzer import MorphAnalyzer

    morph = _morph()
    parses = MorphAnalyzer.parse(morph, word)
    if not parses or not MorphAnalyzer.word_is_known(morph, word.lower()):
        return False                # an unknown word is a brand more often than a surname
    tag = str(parses[0].tag)
    return parses[0].tag.POS == "NOUN" and not any(g in tag for g in ("Geox", "Orgn", "Abbr"))


_RU_WORD = re.compile(r"[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?|[А-ЯЁ]\.")
_SENTENCE_END = re.compile(r"(?:^|[.!?…:\n«\"(]\s*)$")


def _capitalised_beside(text: str, m: re.Match[str]) -> bool:
    """Another capitalised word right before or after (a name inside «Скай Лайн»)."""
    before = bool(re.search(r"[A-ZА-ЯЁ][\w-]*[\s\"«]*$", text[max(0, m.start() - 30):m.start()])
                  and not _SENTENCE_END.search(text[:m.start()]))
    return before or bool(re.match(r"[\s\"»]*[A-ZА-ЯЁ]", text[m.end():]))


def _name_runs(text: str) -> list[Finding]:
    """Runs of adjacent capitalised words that the dictionary reads as name parts (at least
    two, or a surname with initials): ``Козлову Ивану Олеговичу``, ``Петров И. П.``. A run with
    a first name or patronymic may hold one capitalised common noun (``Ивану Кузнецу``); a
    first name or patronymic alone counts where it does not start a sentence, or is followed
    by a comma (``Саша, …``)."""
    out: list[Finding] = []
    run: list[re.Match[str]] = []
    parts: list[str] = []

    def close() -> None:
        if not {"Name", "Patr"} & set(parts):      # a common noun only beside a name
            while parts and parts[-1] == "cap":
                parts.pop()
                run.pop()
            while parts and parts[0] == "cap":
                parts.pop(0)
                run.pop(0)
        if run and "cap" in parts and re.search(r"[«\"]\s*$", text[:run[0].start()]):
            run.clear()                 # «Смарт Лайн»: a name in quotes is a brand
            parts.clear()
            return
        full = [p for p in parts if p != "init"]
        named = {"Name", "Patr"} & set(full)
        single = len(run) == 1 and full in (["Name"], ["Patr"]) and not _capitalised_beside(
            text, run[0]) and (not _SENTENCE_END.search(text[:run[0].start()])
                               or text[run[0].end():run[0].end() + 1] == ",")
        if (len(full) >= 2 and (named or "cap" not in full)) or single or (
                full and "Surn" in full and len(parts) > 1):
            out.append(Finding(run[0].start(), run[-1].end(), "person",
                               text[run[0].start():run[-1].end()]))
        run.clear()
        parts.clear()

    for m in _RU_WORD.finditer(text):
        word = m.group(0)
        share, likely = name_share(word) if not word.endswith(".") else (0.0, None)
        part = "init" if word.endswith(".") else (name_part(word) or (
            likely if share >= 0.4 else None))
        if part is None and "cap" not in parts and _common_noun(word) \
                and not _SENTENCE_END.search(text[:m.start()]) \
                and not (run and text[run[-1].end():m.start()].strip()):
            part = "cap"
        if part is None or (run and text[run[-1].end():m.start()].strip()):
            close()
        if part is not None:
            run.append(m)
            parts.append(part)
    if run:
        close()
    return out


#: lower-case words after which a lower-case name is expected ("передай саше", "у димы")
_PERSON_CUE_WORDS = """
передай передайте скажи скажите позвони позвоните напиши напишите спроси спросите попроси
попросите напомни напомните набери наберите зовут звать это я мне у с к для от про о об
привет здравствуй здравствуйте спасибо пусть сказал сказала звонил звонила писал писала
ответил ответила уточни уточните менеджер менеджеру куратор куратору преподаватель
преподавателю студент студентка студенту сосед соседка врач врачу
"""
_PERSON_CUE = frozenset(_PERSON_CUE_WORDS.split())
_LOWER_WORD = re.compile(r"(?<![\w-])[а-яё]{3,}(?![\w-])")


_LOWER_INITIALS = re.compile(r"\s+[а-яё]\.\s?(?:[а-яё]\.)?")


def _lowercase_names(text: str) -> list[Finding]:
    """Names written in lower case: a word that reads mostly as a name part (half of the
    dictionary's mass; a patronymic always) next to another such word, or after a word that
    introduces a person."""
    words = list(_LOWER_WORD.finditer(text))
    shares = [name_share(m.group(0)) for m in words]
    out: list[Finding] = []
    for i, (m, (share, part)) in enumerate(zip(words, shares, strict=True)):
        prev = words[i - 1].group(0) if i else ""
        cue = prev in _PERSON_CUE and not text[words[i - 1].end():m.start()].strip(" ,")
        initials = _LOWER_INITIALS.match(text, m.end())
        if part is None or (share < (0.2 if initials else 0.3 if cue else 0.5)
                            and part != "Patr"):
            continue
        if initials:                            # "смирнова и. и."
            end = initials.end()
            out.append(Finding(m.start(), end, "person", text[m.start():end]))
            continue
        near = [j for j in (i - 1, i + 1) if 0 <= j < len(words)
                and not text[min(m.end(), words[j].end()):max(m.start(),
                                                             words[j].start())].strip()
                and shares[j][1] is not None and shares[j][0] >= 0.3]
        if near or cue:
            out.append(Finding(m.start(), m.end(), "person", m.group(0)))
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
    others = [(sp.start, sp.stop) for sp in doc.spans if sp.type != "PER"]
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
    extra = [f for f in (*_name_runs(text), *_lowercase_names(text))
             if not any(a <= f.start and f.end <= b for a, b in others)]
    return _merge(text, [*out, *extra])   # a run inside an organisation or place: not a name


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


def find_names(text: str, *, russian: bool = True) -> list[Finding]:
    """Person names of ``text``: Russian (when ``russian``) and names in Latin letters."""
    from ragmeter.privacy.names_en import english_names

    return [*(russian_names(text) if russian else []), *english_names(text)]
