"""Tokenisation for lexical retrieval: lowercase, ``ё``->``е``, word tokens, stopwords, stemming.

Stemming uses Snowball via PyStemmer. ``language="auto"`` stems Cyrillic tokens with the Russian
stemmer and Latin tokens with the English one (mixed Russian/English corpora are common);
``"ru"`` / ``"en"`` use one stemmer for every token; ``"none"`` disables stemming.
"""

from __future__ import annotations

import re
from typing import Any

from ragmeter.errors import ConfigError, require

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
