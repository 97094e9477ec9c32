"""The shipped labelled refusal set and the detector's accuracy on it, with CIs.

``data/refusal_labels.jsonl``: Russian and English answers written for this project, each
labelled ``refused`` (gives the user no substantive information) or not, covering plain
refusals, "ask the dean's office"-style redirects, apologies followed by an answer, hedged
answers and partial refusals. Each item was put in the ``dev`` or ``test`` half by a hash of
its id *before* the first rules were written; the rules were written looking at ``dev`` only,
and the refusal classifier is calibrated on ``dev`` (its weights come from a generated
corpus), so the figures on ``test`` are the honest ones.

    python -m ragmeter.metrics.refusal_data          # prints the figures per language and half

A labelled answer set in the shared format (one JSON object a line: ``id``, ``lang``,
``question``, ``answer``, ``label`` = ``refusal`` | ``answer``, optional ``kind``) is read by
:func:`read_answer_set` and scored by :func:`score_answer_set`: per language separately
(never pooled), balanced accuracy with a percentile-bootstrap CI, the recall of each class and
the accuracy of each kind with Wilson intervals, and the share of answers ``rules+judge``
routes to the judge with the ceiling a perfect judge on them would reach.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.labelled_sets import Records, read_records
from ragmeter.metrics.refusal import RefusalVerdict, detect_refusals, is_refusal
from ragmeter.stats import Estimate, bootstrap_stat
from ragmeter.stats.proportion import Proportion, wilson_interval

LABELS = "refusal_labels.jsonl"


def load_labels(split: str | None = None) -> list[dict[str, Any]]:
    """The labelled items (``id``, ``lang``, ``text``, ``refused``, ``split``)."""
    text = resources.files("ragmeter.metrics").joinpath("data", LABELS).read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


@dataclass(frozen=True)
class RuleAccuracy:
    """Balanced accuracy of the detector on one language's items, with a bootstrap CI."""

    lang: str
    split: str
    n_refusals: int
    n_answers: int
    tpr: float
    tnr: float
    balanced_accuracy: float
    ci: tuple[float | None, float | None]

    def line(self) -> str:
        lo, hi = self.ci
        return (f"{self.lang} {self.split}: balanced accuracy {self.balanced_accuracy:.3f} "
                f"[{lo:.3f}, {hi:.3f}] (refusals caught {self.tpr:.3f} of {self.n_refusals}, "
                f"answers kept {self.tnr:.3f} of {self.n_answers})")


def rule_accuracy(lang: str, split: str = "test", *, seed: int = 42) -> RuleAccuracy:
    """The detector's balanced accuracy on ``lang``'s items of ``split`` (bootstrap CI by
    item)."""
    rows = [r for r in load_labels(split) if r["lang"] == lang]
    y = np.array([bool(r["refused"]) for r in rows])
    pred = np.array([is_refusal(r["text"]) for r in rows])

    def ba(idx: np.ndarray) -> float | None:
        yy, pp = y[idx], pred[idx]
        if yy.all() or not yy.any():
            return None
        return float(((pp & yy).sum() / yy.sum() + (~pp & ~yy).sum() / (~yy).sum()) / 2)

    est = bootstrap_stat(ba, len(rows), seed=seed)
    tpr = float((pred & y).sum() / y.sum())
    tnr = float((~pred & ~y).sum() / (~y).sum())
    return RuleAccuracy(lang, split, int(y.sum()), int((~y).sum()), tpr, tnr,
                        (tpr + tnr) / 2, (est.ci_low, est.ci_high))


# ------------------------------------------------------------- labelled answer sets (any author)
@dataclass(frozen=True)
class LabelledAnswer:
    """One answer of a labelled set: ``refused`` is the label."""

    id: str
    lang: str
    question: str
    answer: str
    refused: bool
    kind: str | None = None


def read_answer_set(path: str | Path) -> tuple[list[LabelledAnswer], Records]:
    """The answers of a labelled set file and its record check (problems name file, line and
    field; the good records are kept)."""
    recs = read_records(path, {"id": str, "lang": str, "answer": str, "label": str},
                        {"label": ("refusal", "answer")})
    items = [LabelledAnswer(str(r["id"]), r["lang"], str(r.get("question") or ""),
                            r["answer"], r["label"] == "refusal",
                            r.get("kind") if isinstance(r.get("kind"), str) else None)
             for _, r in recs.records]
    return items, recs


def _balanced(y: np.ndarray, pred: np.ndarray, seed: int) -> Estimate:
    def ba(idx: np.ndarray) -> float | None:
        yy, pp = y[idx], pred[idx]
        if yy.all() or not yy.any():
            return None
        return float(((pp & yy).sum() / yy.sum() + (~pp & ~yy).sum() / (~yy).sum()) / 2)

    return bootstrap_stat(ba, len(y), seed=seed)


@dataclass
class LanguageScore:
    """A detector's figures on one language of a labelled answer set."""

    lang: str
    n: int
    caught: Proportion              # refusals called refusals
    kept: Proportion                # answers called answers
    balanced_accuracy: Estimate
    routed: Proportion              # answers sent to the judge by ``rules+judge``
    ceiling: Estimate               # balanced accuracy with a perfect judge on the routed ones
    kinds: dict[str, Proportion] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        ba, ce = self.balanced_accuracy, self.ceiling
        out = [f"  {self.lang} (n={self.n}): balanced accuracy {_est(ba)}",
               f"    refusals caught {self.caught.text()}",
               f"    answers kept    {self.kept.text()}",
               f"    routed to the judge by rules+judge {self.routed.text()}; "
               f"ceiling with a perfect judge {_est(ce)}"]
        for kind, p in sorted(self.kinds.items()):
            out.append(f"    kind {kind:24s} accuracy {p.text()}")
        return out


def _est(e: Estimate) -> str:
    if e.value is None:
        return "—"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def score_answer_set(items: Sequence[LabelledAnswer],
                     decide: Callable[[list[str]], list[RefusalVerdict]] = detect_refusals, *,
                     seed: int = 42) -> list[LanguageScore]:
    """``decide``'s figures on ``items`` (it gives one verdict per answer), one
    :class:`LanguageScore` per language in order of first appearance. ``verdict.uncertain``
    marks an answer ``rules+judge`` sends to the judge; the ceiling gives those answers their
    true label."""
    verdicts = decide([it.answer for it in items])
    out: list[LanguageScore] = []
    for lang in dict.fromkeys(it.lang for it in items):
        idx = [i for i, it in enumerate(items) if it.lang == lang]
        y = np.array([items[i].refused for i in idx], dtype=bool)
        pred = np.array([verdicts[i].refused for i in idx], dtype=bool)
        routed = np.array([verdicts[i].uncertain for i in idx], dtype=bool)
        best = np.where(routed, y, pred)
        kinds: dict[str, list[bool]] = {}
        for i, ok in zip(idx, pred == y, strict=True):
            kinds.setdefault(items[i].kind or "(none)", []).append(bool(ok))
        out.append(LanguageScore(
            lang, len(idx), wilson_interval(int((pred & y).sum()), int(y.sum())),
            wilson_interval(int((~pred & ~y).sum()), int((~y).sum())), _balanced(y, pred, seed),
            wilson_interval(int(routed.sum()), len(idx)), _balanced(y, best, seed),
            {k: wilson_interval(sum(v), len(v)) for k, v in kinds.items()},
            [items[i].id for i, ok in zip(idx, pred == y, strict=True) if not ok]))
    return out


if __name__ == "__main__":  # pragma: no cover - a report for the docs
    for _split in ("test", "dev"):
        for _lang in ("ru", "en"):
            print(rule_accuracy(_lang, _split).line())
