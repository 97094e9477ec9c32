"""Text on the ground floor: word tokenisers, Snowball stemmers, stopwords, sentence splitting and
language detection — one home for every metric, retriever and judge prompt that reads words.

Generation metrics (ROUGE, BLEU, token F1) use :func:`make_tokenizer`:

* ``unicode`` (default): ``re.findall(r"\\w+", text.casefold())`` — every Unicode letter/digit run
  is a token, so Cyrillic, Latin and mixed text tokenise the same way (``\\w`` also keeps ``_``).
* ``rouge_score``: the ``rouge-score`` package's default tokeniser reproduced (lowercase, every
  run of characters outside ``[a-z0-9]`` is a separator). It drops every Cyrillic letter, which is
  why ``rouge-score`` returns 0 on Russian text; it exists only for identity checks on English.

Stemming (``stem``): ``none``, ``ru`` / ``en`` (Snowball via PyStemmer), or ``auto`` (Russian
  Snowball for tokens containing Cyrillic letters, English for the rest).

Lexical retrieval (BM25) uses :class:`Analyzer`: lowercase, ``ё``->``е``, word tokens without
``_``, our own short stopword lists (``STOPWORDS_RU``/``STOPWORDS_EN``; ``bm25s`` ships different
lists — 151 Russian and 33 English words — so they are not reused: that would change every BM25
score), then stemming. ``language="auto"`` stems Cyrillic tokens with the Russian stemmer and
Latin tokens with the English one (mixed Russian/English corpora are common).

:func:`detect_language` picks the prompt language of judge requests and generated answers:
``"ru"`` when Cyrillic letters are at least 30 % of the Cyrillic+Latin letters, read over a
bounded prefix (:data:`DETECT_MAX_CHARS`); reports use it for their language too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from ragmeter.errors import ConfigError, require

#: characters read per detection, all texts together: a text's language shows in its beginning,
#: and the judge engine detects the language of every request
DETECT_MAX_CHARS = 10_000
_LATIN = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_CYRILLIC_LEADS = bytes(range(0xD0, 0xD4))  # UTF-8 lead bytes of U+0400..U+04FF, and only those
_NOT_A_LETTER = bytes(b for b in range(256) if b not in _LATIN + _CYRILLIC_LEADS)


def letter_counts(text: str) -> tuple[int, int]:
    """(Cyrillic letters U+0400..U+04FF, Latin letters A-Z a-z) in ``text``.

    Counted on the UTF-8 bytes: every Cyrillic letter has one lead byte in 0xD0..0xD3 and no
    other character has, so deleting every other byte leaves one byte per counted letter."""
    kept = text.encode("utf-8", "surrogatepass").translate(None, _NOT_A_LETTER)
    latin = len(kept.translate(None, _CYRILLIC_LEADS))
    return len(kept) - latin, latin


def detect_language(texts: Iterable[str | None] | str, threshold: float = 0.3, *,
                    max_chars: int = DETECT_MAX_CHARS) -> str:
    """``"ru"`` when Cyrillic letters are at least ``threshold`` of the Cyrillic and Latin
    letters, else ``"en"`` (also for text without letters).

    The one language detector of ragmeter (judge prompts, generated answers, report language):
    it reads the first ``max_chars`` characters of ``texts`` taken together, so its cost is
    bounded whatever the length of the input."""
    if isinstance(texts, str):
        texts = (texts,)
    cyr = lat = 0
    budget = max_chars
    for text in texts:
        if not text:
            continue
        c, la = letter_counts(text[:budget])
        cyr, lat = cyr + c, lat + la
        budget -= len(text)
        if budget <= 0:
            break
    if cyr + lat == 0:
        return "en"
    return "ru" if cyr / (cyr + lat) >= threshold else "en"


# --------------------------------------------------------------------------- generation metrics
TOKENIZERS = ("unicode", "rouge_score")
STEMMERS = ("none", "ru", "en", "auto")

_WORD = re.compile(r"\w+", re.UNICODE)
_CYR_ANY = re.compile(r"[\u0400-\u04ff]")
_NON_ALNUM_ASCII = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=4)
def _snowball(language: str) -> Any:
    stemmer_mod: Any = require("Stemmer", "retrieval", "Snowball stemming (PyStemmer)")
    return stemmer_mod.Stemmer(language)


def _stem_tokens(tokens: list[str], stem: str) -> list[str]:
    if stem == "none" or not tokens:
        return tokens
    if stem == "ru":
        return list(_snowball("russian").stemWords(tokens))
    if stem == "en":
        return list(_snowball("english").stemWords(tokens))
    ru, en = _snowball("russian"), _snowball("english")
    return [ru.stemWord(t) if _CYR_ANY.search(t) else en.stemWord(t) for t in tokens]


def make_tokenizer(tokenizer: str = "unicode", stem: str = "none") -> Callable[[str], list[str]]:
    """A function ``text -> tokens`` for the given tokeniser and stemming mode."""
    if tokenizer not in TOKENIZERS:
        raise ConfigError("tokenizer", f"unknown tokenizer {tokenizer!r}", list(TOKENIZERS))
    if stem not in STEMMERS:
        raise ConfigError("stem", f"unknown stemming mode {stem!r}", list(STEMMERS))
    if tokenizer == "rouge_score" and stem != "none":
        raise ConfigError("stem", "the rouge_score compatibility tokenizer is for identity checks "
                          "and supports only stem=none", ["none"])

    if tokenizer == "rouge_score":
        def tok_compat(text: str) -> list[str]:
            return [t for t in _NON_ALNUM_ASCII.split(text.lower()) if t]
        return tok_compat

    def tok_unicode(text: str) -> list[str]:
        return _stem_tokens(_WORD.findall(text.casefold()), stem)
    return tok_unicode


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by razdel (rule-based, good on Russian and fine on English)."""
    import razdel  # a core dependency, imported lazily

    return [s.text.strip() for s in razdel.sentenize(text) if s.text.strip()]


# --------------------------------------------------------------------------- lexical retrieval
LANGUAGES = ("auto", "ru", "en", "none")
TOKENIZER_VERSION = "words-lower-yo-v1"

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CYR = re.compile(r"[а-я]")
_LAT = re.compile(r"[a-z]")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Our own short lists of function words; content words (even frequent ones) are kept.
STOPWORDS_RU = _words("""
а без более бы был была были было быть в вам вас весь во вот все всего всех вы где да даже для
до его ее если есть еще же за здесь и из или им их к как ко когда кто ли либо между меня мне
много может мы на над нам нас не него нее нет ни них но ну о об однако он она они оно от очень
по под при про с со так также такой там те тем то того тоже той только том ты у уже чем что
чтобы эта эти это этого этой этом этот я
""")
STOPWORDS_EN = _words("""
a an and are as at be been but by can could did do does for from had has have he her his how i
if in into is it its me my no nor not of on or our she so such than that the their them then
there these they this those to too us was we were what when where which while who whom why will
with would you your
""")
STOPWORDS = STOPWORDS_RU | STOPWORDS_EN


class Analyzer:
    """Text -> list of index terms (see module docstring)."""

    def __init__(self, language: str = "auto", stopwords: bool = True):
        if language not in LANGUAGES:
            raise ConfigError("language", f"unknown stemmer language {language!r}",
                              list(LANGUAGES))
        self.language = language
        self.stopwords = stopwords
        self._ru: Any = None
        self._en: Any = None
        if language != "none":
            stemmer: Any = require("Stemmer", "retrieval", "BM25 stemming (PyStemmer)")
            if language in ("auto", "ru"):
                self._ru = stemmer.Stemmer("russian")
            if language in ("auto", "en"):
                self._en = stemmer.Stemmer("english")
        self._memo: dict[str, str] = {}

    def _stem(self, token: str) -> str:
        got = self._memo.get(token)
        if got is not None:
            return got
        if self.language == "ru":
            out = self._ru.stemWord(token)
        elif self.language == "en":
            out = self._en.stemWord(token)
        elif self.language == "auto" and _CYR.search(token):
            out = self._ru.stemWord(token)
        elif self.language == "auto" and _LAT.search(token):
            out = self._en.stemWord(token)
        else:
            out = token
        if len(self._memo) < 500_000:
            self._memo[token] = out
        return str(out)

    def tokens(self, text: str) -> list[str]:
        """Lowercased word tokens (``ё`` folded to ``е``), stopwords removed, stemmed."""
        words = _TOKEN.findall(text.lower().replace("ё", "е"))
        if self.stopwords:
            words = [w for w in words if w not in STOPWORDS]
        if self.language == "none":
            return words
        return [self._stem(w) for w in words]

    def signature_fields(self) -> dict[str, Any]:
        return {"stemmer": self.language, "stopwords": "ru+en-v1" if self.stopwords else "none",
                "tokenizer": TOKENIZER_VERSION}
