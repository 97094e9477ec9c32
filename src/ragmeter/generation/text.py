"""Text utilities for the generation metrics: word tokenisation, stemming, sentence splitting.

Two word tokenisers:

* ``unicode`` (default): ``re.findall(r"\\w+", text.casefold())`` — every Unicode letter/digit run
  is a token, so Cyrillic, Latin and mixed text tokenise the same way (``\\w`` also keeps ``_``).
* ``rouge_score``: the ``rouge-score`` package's default tokeniser reproduced (lowercase, every
  run of characters outside ``[a-z0-9]`` is a separator). It drops every Cyrillic letter, which is
  why ``rouge-score`` returns 0 on Russian text; it exists only for identity checks on English.

Stemming (``stem``): ``none``, ``ru`` / ``en`` (Snowball via PyStemmer), or ``auto`` (Russian
Snowball for tokens containing Cyrillic letters, English for the rest).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ragmeter.errors import ConfigError, require

TOKENIZERS = ("unicode", "rouge_score")
STEMMERS = ("none", "ru", "en", "auto")

_WORD = re.compile(r"\w+", re.UNICODE)
_NON_ALNUM_ASCII = re.compile(r"[^a-z0-9]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


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
    return [ru.stemWord(t) if _CYRILLIC.search(t) else en.stemWord(t) for t in tokens]


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
