"""Scoring the legal-reference parser on a labelled sentence set in the shared format.

A line is ``{"id", "text", "refs": [{"span", "act", "article", "part", "point", "subpoint",
...}]}``; distractor sentences have ``refs: []``. Each sentence becomes a set of
``(act, article, part, point, subpoint)`` tuples — the labels as written, the parser's
references after :data:`ACT_ALIASES` — and the sets are compared exactly, after normalising
``ё``/``е``, quotes and whitespace (no fuzzy matching). Reported: micro precision, recall
(Wilson intervals) and F1 (percentile bootstrap over sentences), sentences exactly right, and
references found in distractor sentences.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.labelled_sets import Records, read_records
from ragmeter.metrics.legal_refs import LegalRef, parse_legal_refs
from ragmeter.stats import Estimate, bootstrap_stat
from ragmeter.stats.proportion import Proportion, wilson_interval

#: the parser's act names -> the act ids of the shared format (codes keep their names; a law
#: by number "N-ФЗ" — with or without its date — is "ФЗ-N"; the consumer-protection law of
#: the RSFSR, numbered "2300-1", is "ЗРФ-2300-1")
ACT_ALIASES: dict[str, str] = {
    **{f"{c} РФ": f"{c} РФ" for c in ("ТК", "ГК", "УК", "КоАП", "НК", "ЖК", "СК", "АПК",
                                      "ГПК", "УПК", "БК", "ЗК", "КАС", "ГрК")},
    "Конституция РФ": "Конституция РФ",
    "2300-1": "ЗРФ-2300-1",
}
_LAW_NUMBER = re.compile(r"^(\d+)-ФЗ(?: от \S+)?$")
_QUOTES = re.compile(r"[\"'«»“”„]")

Tuple = tuple[str, str | None, str | None, str | None, str | None]


def act_id(act: str) -> str:
    """The shared-format id of one of the parser's act names (:data:`ACT_ALIASES`, then the
    "N-ФЗ" → "ФЗ-N" rule; anything else is kept as it is and will match nothing)."""
    if act in ACT_ALIASES:
        return ACT_ALIASES[act]
    m = _LAW_NUMBER.match(act)
    return f"ФЗ-{m.group(1)}" if m else act


def _norm(v: Any) -> str | None:
    if v is None:
        return None
    s = _QUOTES.sub("", str(v)).replace("ё", "е").replace("Ё", "Е")
    s = re.sub(r"\s+", " ", s).strip()
    return s or None


def _level(v: Any) -> str | None:
    s = _norm(v)
    return s.lower() if s is not None else None


def label_tuple(ref: dict[str, Any]) -> Tuple:
    """A labelled reference as a normalised tuple."""
    return (_norm(ref.get("act")) or "", _level(ref.get("article")), _level(ref.get("part")),
            _level(ref.get("point")), _level(ref.get("subpoint")))


def parsed_tuple(ref: LegalRef) -> Tuple:
    """A parsed reference as a normalised tuple in the shared format's act ids."""
    return (_norm(act_id(ref.act)) or "", _level(ref.article), _level(ref.part),
            _level(ref.point), _level(ref.subpoint))


@dataclass(frozen=True)
class LabelledSentence:
    """One sentence of the set with its labelled tuples (empty for a distractor)."""

    id: str
    text: str
    refs: frozenset[Tuple]


def read_sentence_set(path: str | Path) -> tuple[list[LabelledSentence], Records]:
    """The sentences of a labelled legal-reference file and its record check."""
    recs = read_records(path, {"id": str, "text": str, "refs": list})
    items = [LabelledSentence(str(r["id"]), r["text"],
                              frozenset(label_tuple(x) for x in r["refs"] if isinstance(x, dict)))
             for _, r in recs.records]
    return items, recs


@dataclass
class LegalScore:
    """The parser's figures on a labelled sentence set."""

    n: int
    precision: Proportion
    recall: Proportion
    f1: Estimate
    exact: Proportion
    distractors: int
    distractor_refs: int
    distractor_sentences_with_refs: int
    wrong: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        f = self.f1
        f1 = "—" if f.value is None else (f"{f.value:.3f}" + (
            f" [{f.ci_low:.3f}, {f.ci_high:.3f}]" if f.ci_low is not None
            and f.ci_high is not None else ""))
        return [f"  sentences exactly right {self.exact.text()}",
                f"  tuple precision {self.precision.text()}",
                f"  tuple recall    {self.recall.text()}",
                f"  tuple F1        {f1}",
                f"  distractors: {self.distractors}, references found in them: "
                f"{self.distractor_refs} (in {self.distractor_sentences_with_refs} sentences)"]


def score_sentence_set(items: Sequence[LabelledSentence],
                       parse: Callable[[str], list[LegalRef]] = parse_legal_refs, *,
                       seed: int = 42) -> LegalScore:
    """``parse``'s micro precision/recall/F1 over tuples, exact sentences and distractors."""
    got = [frozenset(parsed_tuple(r) for r in parse(it.text)) for it in items]
    tp = np.array([len(g & it.refs) for g, it in zip(got, items, strict=True)])
    n_pred = np.array([len(g) for g in got])
    n_gold = np.array([len(it.refs) for it in items])

    def f1(idx: np.ndarray) -> float | None:
        t, p, g = tp[idx].sum(), n_pred[idx].sum(), n_gold[idx].sum()
        return None if p + g == 0 else float(2 * t / (p + g))

    exact = [g == it.refs for g, it in zip(got, items, strict=True)]
    distract = [g for g, it in zip(got, items, strict=True) if not it.refs]
    wrong = [f"{it.id}: missing {sorted(it.refs - g, key=str)} extra {sorted(g - it.refs, key=str)}"
             for g, it, ok in zip(got, items, exact, strict=True) if not ok]
    return LegalScore(len(items), wilson_interval(int(tp.sum()), int(n_pred.sum())),
                      wilson_interval(int(tp.sum()), int(n_gold.sum())),
                      bootstrap_stat(f1, len(items), seed=seed),
                      wilson_interval(sum(exact), len(items)), len(distract),
                      sum(len(g) for g in distract), sum(bool(g) for g in distract), wrong)
