"""One language detector: the judge prompts, the judge engine's request language and the
report language all come from ``ragmeter.text.detect_language``, so they cannot disagree."""

from __future__ import annotations

import re
import time

import pytest

from ragmeter.judges.prompts import resolve_language
from ragmeter.reports.html import run_lang
from ragmeter.results.store import StoredRun
from ragmeter.text import DETECT_MAX_CHARS, detect_language, letter_counts

CASES = [
    ("Какая столица России?", "ru"),
    ("What is the capital of France?", "en"),
    ("Что такое RAG и BM25?", "ru"),
    # 40 % Cyrillic letters: Russian for the judge; the report's old detector (Cyrillic must
    # outnumber Latin) said English here
    ("Москва is here, abcdef", "ru"),
    ("The answer mentions Москва once among many English words here", "en"),
    ("12345 — !?", "en"),
    ("Ёжик и ѓ ӿ", "ru"),  # letters across the whole Cyrillic block U+0400..U+04FF
]


@pytest.mark.parametrize(("text", "lang"), CASES)
def test_former_callers_agree(text: str, lang: str) -> None:
    run = StoredRun(id="r", created_at="", name="n", samples={"q1": {"user_input": text}})
    assert detect_language(text) == lang
    assert resolve_language("auto", [text]) == lang
    assert run_lang(run) == lang


@pytest.mark.parametrize("text", [c[0] for c in CASES] + ["", "a\ud800б", "ÀÉ ßçé"])
def test_letter_counts_match_a_plain_count(text: str) -> None:
    cyr = len(re.findall(r"[\u0400-\u04ff]", text))
    lat = len(re.findall(r"[A-Za-z]", text))
    assert letter_counts(text) == (cyr, lat)


def test_reads_a_bounded_prefix() -> None:
    russian = "Привет мир " * (DETECT_MAX_CHARS // 10)
    assert detect_language([russian, "English " * 100_000]) == "ru"  # second text not read
    assert detect_language(["English words", russian]) == "ru"
    huge = "x" * 5_000_000
    start = time.perf_counter()
    for _ in range(100):
        detect_language(huge)
    assert time.perf_counter() - start < 0.5  # a prefix, not five million characters each


def test_empty_inputs_are_english() -> None:
    assert detect_language([None, ""]) == "en"
    assert detect_language([]) == "en"
