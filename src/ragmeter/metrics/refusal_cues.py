"""Clause-level cues of a refusal, in Russian and English, that do not depend on word order.

An answer is cut into clauses (sentences, then ``:`` ``;`` ``—`` and contrastive
conjunctions). Each word of a clause is put in zero or more *cue classes* by its stem —
negation, information ("сведения", "details"), sources ("база", "documents"), knowing and
telling verbs ("знать", "подсказать", "answer"), ability ("могу", "able"), the first person,
need ("нужно", "required"), idioms of not knowing or being out of scope ("затрудняюсь",
"понятия", "beyond", "clue"), courtesy ("извините", "thank you for your understanding"),
sending elsewhere ("обратитесь", "contact") — with one typo allowed in stems of five letters
or more. A clause's *role* follows from which classes co-occur in it, never from their order:

* ``refusal`` — an idiom; or a negation with information or a knowing verb; or a negation
  with a source (no need word); or a negation with ability and nothing else said;
* ``redirect`` — a sending-elsewhere verb with little else said;
* ``courtesy`` — courtesy words and nothing else said (an apology, a greeting, "надеюсь на
  ваше понимание") — never content;
* ``question`` — a clause ending in ``?`` that is not courtesy (a clarifying question);
* ``content`` — two content words (words in no class and no stop list) or a number.

:func:`cues` gives the clause roles, the rules' verdict (refusal, redirect or question, and no
content) and the numeric features the refusal classifier reads beside the embedding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

_NORM = str.maketrans({"ё": "е", "Ё": "Е", "’": "'", "‘": "'", "«": '"', "»": '"', "“": '"',
                       "”": '"'})
_SPLIT = re.compile(
    r"(?<=[.!?…])\s+|[.!?…]+$|\s*[:;]\s+|\s[—–-]\s|"
    r",?\s+(?:но|однако|а|зато|хотя|but|however|though|although|yet)\s+",
    re.IGNORECASE)
_WORD = re.compile(r"[a-zа-я0-9]+(?:'[a-z]+)?")
_EN_NOT = re.compile(r"\b(can)'?t\b|\bcannot\b|\b(won)'t\b|\b(\w+)n't\b")

#: cue classes -> stems (a word of the class starts with one of them). Stems of five letters
#: or more also match with one typo.
_CLASSES: dict[str, tuple[str, ...]] = {
    "neg": ("не", "нет", "ни", "ничего", "ничем", "никак", "никаких", "никакой", "нету",
            "нельзя", "невозможно", "без", "not", "no", "never", "nothing", "none", "neither",
            "nor", "unable", "nope", "without"),
    "info": ("информац", "сведени", "данных", "данные", "ответ", "подробност", "представлени", "понятия", "понятие",
             "инфы", "инфа", "information", "info", "data", "details", "answer", "clue",
             "idea", "figures", "knowledge"),
    "source": ("базе", "база", "базы", "источник", "материал", "документ", "регламент",
               "справочн", "контекст", "record", "source", "document", "material", "database",
               "context", "docs", "files"),
    "know": ("знаю", "знаем", "знать", "знает", "знал", "известн", "ответит", "сказат",
             "скажу", "подсказ", "помочь", "помогу", "помощ", "сообщ", "прокоммент",
             "коммент", "найти", "найден", "нашел", "нашла", "нашлос", "нашли", "находит", "обнаруж",
             "располага", "владе", "сориентир", "разъясн", "проконсульт", "консультир",
             "описан", "указан", "сказан", "написан", "говорит", "упомина", "освещ",
             "раскры", "рассматрива", "know", "knew", "aware", "answer", "say", "tell", "help",
             "advis", "assist", "find", "found", "locat", "comment", "share", "provid",
             "confirm", "cover", "mention", "describ", "specif", "explain", "disclos",
             "recall", "offer"),
    "ability": ("могу", "можем", "смог", "сможем", "получится", "получилось", "удастся",
                "удалось", "силах", "состоянии", "возможност", "способ", "вправе",
                "уполномоч", "can", "could", "able", "allowed", "authori", "possible", "way"),
    "first": ("я", "мне", "меня", "мной", "мы", "нам", "нас", "мой", "моих", "моей", "моем",
              "моя", "мои", "моему", "нашей", "наших", "i", "i'm", "me", "my", "we", "us",
              "our", "myself"),
    "need": ("нужн", "нужен", "требу", "обязательн", "надо", "необходим", "need", "requir",
             "necessary", "have"),
    "idiom": ("затрудня", "бессил", "неведом", "пас", "компетенц", "специализац", "пределами",
              "рамки", "рамками", "рамок", "нечего", "хз", "beyond", "outside",
              "scope", "remit", "expertise", "dunno", "idk", "beats", "guess", "pass"),
    "courtesy": ("извин", "простите", "прощени", "сожален", "сожале", "жаль", "увы", "спасибо",
                 "благодар", "надеюсь", "понимани", "неудобств", "хорошего", "доброго",
                 "всего", "рады", "рад", "пожалуйста", "здравствуйте", "добрый", "привет",
                 "терпени", "ожидани", "задержк", "честно", "говоря", "боюсь", "хороший",
                 "понимаю", "обращени", "сорри", "сорян", "извиняйте", "sorry", "apolog",
                 "unfortunately", "regret", "sadly", "afraid", "thank", "thanks",
                 "understanding", "inconvenience", "hope", "nice", "hello", "hi", "dear",
                 "patience", "welcome", "glad", "happy", "honestly", "please", "concern",
                 "understand"),
    "redirect": ("обратит", "обращайт", "обратиться", "уточнит", "уточняйт", "спросит",
                 "позвонит", "напишит", "свяжит", "связаться", "сходит", "загляни",
                 "проконсультируйт", "рекоменду", "советую", "помогут", "подскажут",
                 "расскажут", "дадут", "contact", "ask", "call", "email", "reach", "touch",
                 "check", "speak", "talk", "consult", "visit", "suggest", "recommend", "refer",
                 "asking", "calling"),
    "hedge": ("уверен", "наверняка", "точно", "возможно", "вероятно", "кажется", "вроде",
              "скорее", "ошибаюсь", "sure", "certain", "probably", "maybe", "perhaps",
              "wrong", "guarantee"),
    "clarify": ("именно", "конкретно", "подробнее", "имеете", "виду", "переформулир", "поясн",
                "clarify", "rephrase", "mean", "exactly", "explain"),
}
_STOP_WORDS = """
в во на о об обо по с со к ко у за из от до для при про через над под и а но или что чтобы
как так это этот эта эти этого этой этом эту тот та те того той такой такие такая таких
такого такую же ли бы вот тут здесь там уже еще только тоже также даже вам вас ваш ваша ваше
вашего вашей ваши вашу вы он она они оно его ее их им ему ей есть быть был была было будет
этим этому то ну ведь вопрос вопросу вопросом вопросы вопроса сейчас пока лучше стоит
the a an to of in on at for with by from about as is are was were be been it this that
these those there here and or but so if then you your yours they them their he she his her
its do does did will would just any some also too very really any anything something one
question questions right now yet still чем else
"""
_STOP = frozenset(_STOP_WORDS.split())
#: idioms of two words whose parts alone say nothing ("в курсе", "без понятия", "beats me")
_IDIOMS = re.compile(r"\b(?:(?:не|not) в курсе|без понятия|не ко мне|не по моей части|beats me|"
                     r"no clue|not a clue|not my area|no way (?:for me )?to|"
                     r"(?:couldn't|could not) say|hard to say)\b")
_CLASS_OF: dict[str, str] = {s: c for c, stems in _CLASSES.items() for s in stems}
_BY_FIRST: dict[str, list[str]] = {}
for _s in _CLASS_OF:
    _BY_FIRST.setdefault(_s[0], []).append(_s)
_SHORT_EXACT = {s for s in _CLASS_OF if len(s) <= 3}


def _near(a: str, b: str) -> bool:
    """One insertion, deletion, substitution or transposition apart (or equal)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    i = 0
    while i < min(la, lb) and a[i] == b[i]:
        i += 1
    if la == lb:
        return a[i + 1:] == b[i + 1:] or (a[i + 1:i + 2] == b[i:i + 1]
                                          and a[i:i + 1] == b[i + 1:i + 2]
                                          and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if la > lb else a[i:] == b[i + 1:]


@lru_cache(maxsize=50_000)
def word_classes(word: str) -> frozenset[str]:
    """The cue classes of one normalised word."""
    out = set()
    for stem in _BY_FIRST.get(word[:1], ()):
        if stem in _SHORT_EXACT:
            if word == stem:
                out.add(_CLASS_OF[stem])
        elif word.startswith(stem):
            out.add(_CLASS_OF[stem])
    if not out and len(word) >= 5:
        for stem, cls in _CLASS_OF.items():
            if len(stem) >= 5 and any(_near(word[:n], stem) for n in
                                      (len(stem) - 1, len(stem), len(stem) + 1)):
                out.add(cls)
    return frozenset(out)


@dataclass(frozen=True)
class Clause:
    """One clause, its role and how many content words it holds."""

    text: str
    role: str           # refusal | redirect | courtesy | question | content | none
    content_words: int
    classes: frozenset[str]


def normalise(text: str) -> str:
    """Lower case, ё → е, one kind of quote, English negative contractions spelled out."""
    t = text.translate(_NORM).lower()
    return _EN_NOT.sub(lambda m: f"{m.group(1) or m.group(2) or m.group(3)} not", t)


def split_clauses(text: str) -> list[str]:
    """The clauses of ``text`` (normalised), empty ones dropped."""
    return [c.strip(" ,\"'()") for c in _SPLIT.split(normalise(text))
            if c and c.strip(" ,\"'()")]


def _role(words: list[str], classes: list[frozenset[str]], ends_q: bool) -> tuple[str, int]:
    present = frozenset().union(*classes) if classes else frozenset()
    content = sum(1 for w, c in zip(words, classes, strict=True)
                  if not c and w not in _STOP and (len(w) > 2 or w.isdigit()))
    digits = any(w.isdigit() for w in words)
    neg = "neg" in present
    own = "need" not in present or "first" in present
    if ("idiom" in present or _IDIOMS.search(" ".join(words))
            or (neg and (("info" in present and own) or "know" in present))
            or (neg and "source" in present and "need" not in present)
            or (neg and "ability" in present and content == 0)
):
        return "refusal", content
    if ends_q:      # "чем ещё могу помочь?" is courtesy; "о какой программе речь?" asks
        offer = ("courtesy" in present or "know" in present) and not (
            {"clarify", "redirect"} & present)
        return ("courtesy" if offer and content == 0 else "question"), content
    if "redirect" in present and content <= 6 and not digits:
        return "redirect", content
    if "courtesy" in present and content == 0 and not digits:
        return "courtesy", content
    if content >= 2 or digits:
        return "content", content
    return "none", content


def clauses(text: str) -> list[Clause]:
    """Every clause of ``text`` with its role."""
    out = []
    raw = normalise(text)
    for part in _SPLIT.split(raw):
        c = (part or "").strip(" ,\"'()")
        if not c:
            continue
        words = _WORD.findall(c)
        classes = [word_classes(w) for w in words]
        end = raw.find(c) + len(c)
        ends_q = c.endswith("?") or raw[end:end + 2].lstrip().startswith("?")
        role, content = _role(words, classes, ends_q)
        out.append(Clause(c, role, content, frozenset().union(*classes) if classes
                          else frozenset()))
    return out


@dataclass(frozen=True)
class Cues:
    """The cues of one answer: clause roles, the rules' verdict and the features."""

    clauses: tuple[Clause, ...]
    refused: bool
    kind: str | None            # statement | redirect | question | empty
    features: tuple[float, ...]

    def residue(self, text: str) -> str:
        """The answer without its courtesy clauses (the whole answer when nothing is left)."""
        kept = [c.text for c in self.clauses if c.role != "courtesy"]
        return ". ".join(kept) if kept else text


FEATURE_NAMES = ("refusal_clause", "refusal_share", "content_clauses", "redirect_clause",
                 "question_clause", "courtesy_clause", "digits", "length", "negation",
                 "first_person_negation", "idiom", "rules_refused", "content_words",
                 "yes_no_head")
_YES_NO = re.compile(r"^\s*(?:да|нет|yes|no|yep|nope|ага|угу|не)\b", re.IGNORECASE)


def cues(text: str | None) -> Cues:
    """The clause roles, verdict and features of an answer (``None`` / blank: empty)."""
    if text is None or not text.strip():
        return Cues((), True, "empty", (1.0, 1.0) + (0.0,) * 9 + (1.0, 0.0, 0.0))
    cs = tuple(clauses(text))
    roles = [c.role for c in cs]
    refusal, redirect, question = ("refusal" in roles, "redirect" in roles,
                                   "question" in roles)
    content = roles.count("content")
    refused = (refusal or redirect or question) and content == 0
    kind = None if not refused else ("statement" if refusal else "redirect" if redirect
                                     else "question")
    present = frozenset().union(*(c.classes for c in cs)) if cs else frozenset()
    n_words = len(_WORD.findall(normalise(text)))
    informative = [c for c in cs if c.role in ("content", "none")]
    feats = (
        float(refusal), roles.count("refusal") / max(1, len(cs)), min(content, 3) / 3,
        float(redirect), float(question), float("courtesy" in roles),
        float(any(ch.isdigit() for c in informative for ch in c.text)),
        math.log1p(n_words) / 4, float("neg" in present),
        float(any({"neg", "first"} <= c.classes for c in cs)),
        float(any("idiom" in c.classes for c in cs)), float(refused),
        math.log1p(sum(c.content_words for c in informative)) / 3,
        float(bool(_YES_NO.match(text))))
    return Cues(cs, refused, kind, feats)
