"""Yes/no classification metrics of a production "show this answer?" judge (family
``classification``). The positive class is *show* (``Yes``/``Да``).

With ``TP`` (pred yes, gold yes), ``FP`` (pred yes, gold no), ``FN`` (pred no, gold yes),
``TN`` (pred no, gold no):

* ``cls_accuracy  = (TP + TN) / (TP + TN + FP + FN)`` — per item ``1[pred = gold]``;
* ``cls_precision = TP / (TP + FP)`` — per item over predicted-yes items, ``1[gold]``;
* ``cls_recall    = TP / (TP + FN)`` — per item over gold-yes items, ``1[pred]``;
* ``cls_f1        = 2TP / (2TP + FP + FN)`` (= harmonic mean of P and R; 0 when P = R = 0
  is reported as undefined instead, when there is no positive at all);
* ``cls_roc_auc   = P(score_pos > score_neg) + ½ P(score_pos = score_neg)`` — the
  Mann–Whitney statistic, equal to scikit-learn's ``roc_auc_score``.

F1 and AUC are not means of per-item values, so their bootstrap CIs resample items
(:func:`ragmeter.stats.bootstrap_stat`) instead of going through ``MetricResult``'s mean bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.metrics.registry import MetricSpec, Param, register


@dataclass(frozen=True)
class Confusion:
    """Confusion counts of a yes/no classifier (positive = show)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @classmethod
    def of(cls, gold: np.ndarray, pred: np.ndarray) -> Confusion:
        g = np.asarray(gold, dtype=bool)
        p = np.asarray(pred, dtype=bool)
        return cls(int((g & p).sum()), int((~g & p).sum()), int((g & ~p).sum()),
                   int((~g & ~p).sum()))

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def accuracy(self) -> float | None:
        return (self.tp + self.tn) / self.n if self.n else None

    @property
    def precision(self) -> float | None:
        d = self.tp + self.fp
        return self.tp / d if d else None

    @property
    def recall(self) -> float | None:
        d = self.tp + self.fn
        return self.tp / d if d else None

    @property
    def f1(self) -> float | None:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else None

    def as_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "n": self.n,
                "accuracy": self.accuracy, "precision": self.precision, "recall": self.recall,
                "f1": self.f1}


def threshold_sweep(gold: np.ndarray, score: np.ndarray) -> list[dict[str, Any]]:
    """Confusion and P/R/F1 for ``pred = score >= t`` at every distinct score ``t``.

    Rows are sorted by threshold (ascending); vectorised over thresholds.
    """
    g = np.asarray(gold, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    ts = np.unique(s)
    pred = s[None, :] >= ts[:, None]                       # (T, n)
    tp = (pred & g).sum(axis=1)
    fp = (pred & ~g).sum(axis=1)
    fn = (~pred & g).sum(axis=1)
    tn = (~pred & ~g).sum(axis=1)
    rows = []
    for i, t in enumerate(ts):
        c = Confusion(int(tp[i]), int(fp[i]), int(fn[i]), int(tn[i]))
        rows.append({"threshold": float(t), **c.as_dict()})
    return rows


def best_f1_threshold(sweep: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The sweep row with the highest F1 (ties: the higher threshold, i.e. fewer shows)."""
    best = None
    for row in sweep:
        if row["f1"] is None:
            continue
        if best is None or row["f1"] >= best["f1"]:
            best = row
    return best


for _name, _doc in (
    ("cls_accuracy", "(TP+TN)/(TP+TN+FP+FN); per item 1[pred = gold]"),
    ("cls_precision", "TP/(TP+FP); per predicted-yes item 1[gold = yes]"),
    ("cls_recall", "TP/(TP+FN); per gold-yes item 1[pred = yes]"),
    ("cls_f1", "2TP/(2TP+FP+FN); bootstrap CI by resampling items"),
    ("cls_roc_auc", "Mann-Whitney U/(n_pos n_neg) with average ranks for ties"),
):
    register(MetricSpec(name=_name, family="classification", doc=_doc,
                        required_fields=("ground_truth_show",)))


# Judge-quality metrics (tier ``judge_quality``); registered here, family "judge".
register(MetricSpec(
    name="judge_consistency", family="judge",
    params=(Param("delta", float, 0.5, doc="tolerance δ on the judge's own scale"),),
    doc="per item 1[max_r s_r - min_r s_r <= δ] over n >= 2 repeated judge calls",
))
register(MetricSpec(name="judge_error_rate", family="judge", higher_is_better=False,
                    doc="per call 1[reply unscored]; missing-field items are not sent"))
register(MetricSpec(name="judge_mean_score", family="judge", value_range=None,
                    doc="per item mean of its scored repeats (e.g. avg_faithfulness)"))
register(MetricSpec(name="judge_latency", family="judge", higher_is_better=False,
                    value_range=None, doc="per uncached call latency in seconds"))
