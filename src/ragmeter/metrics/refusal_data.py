"""The shipped labelled refusal set and the rules' accuracy on it, with CIs.

``data/refusal_labels.jsonl``: Russian and English answers written for this project, each
labelled ``refused`` (gives the user no substantive information) or not, covering plain
refusals, "ask the dean's office"-style redirects, apologies followed by an answer, hedged
answers and partial refusals. Each item was put in the ``dev`` or ``test`` half by a hash of
its id *before* the rules were written; the rules were written looking at ``dev`` only, so the
figures on ``test`` are the honest ones.

    python -m ragmeter.metrics.refusal_data          # prints the figures per language and half
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ragmeter.metrics.refusal import is_refusal
from ragmeter.stats import bootstrap_stat

LABELS = "refusal_labels.jsonl"


def load_labels(split: str | None = None) -> list[dict[str, Any]]:
    """The labelled items (``id``, ``lang``, ``text``, ``refused``, ``split``)."""
    text = resources.files("ragmeter.metrics").joinpath("data", LABELS).read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


@dataclass(frozen=True)
class RuleAccuracy:
    """Balanced accuracy of the rules on one language's items, with a bootstrap CI."""

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
    """The rules' balanced accuracy on ``lang``'s items of ``split`` (bootstrap CI by item)."""
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


if __name__ == "__main__":  # pragma: no cover - a report for the docs
    for _split in ("test", "dev"):
        for _lang in ("ru", "en"):
            print(rule_accuracy(_lang, _split).line())
