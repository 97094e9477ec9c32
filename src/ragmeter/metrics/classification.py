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
(:func:`bootstrap_stat`) instead of going through ``MetricResult``'s mean bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.metrics.registry import MetricSpec, Param, register
from ragmeter.results.stats import DEFAULT_N_BOOT, DEFAULT_SEED


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


def f1_vec(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """F1 of each row of boolean matrices ``(B, n)`` (NaN where 2TP+FP+FN = 0)."""
    g = np.asarray(gold, dtype=bool)
    p = np.asarray(pred, dtype=bool)
    tp = (g & p).sum(axis=-1)
    d = 2 * tp + (~g & p).sum(axis=-1) + (g & ~p).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, 2 * tp / np.maximum(d, 1), np.nan)


def roc_auc(gold: np.ndarray, score: np.ndarray) -> float | None:
    """Mann–Whitney AUC with average ranks for ties; ``None`` without both classes."""
    from scipy.stats import rankdata

    g = np.asarray(gold, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    n_pos = int(g.sum())
    n_neg = int(g.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    r = rankdata(s)
    return float((r[g].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


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


def bootstrap_stat(
    gold: np.ndarray,
    pred_or_score: np.ndarray,
    stat: str,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``f1`` or ``auc``, resampling items with replacement.

    Resamples where the statistic is undefined (no positive, one class) are dropped.
    """
    g = np.asarray(gold, dtype=bool)
    x = np.asarray(pred_or_score)
    n = g.size
    if n == 0:
        return (None, None)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    if stat == "f1":
        vals = f1_vec(g[idx], x.astype(bool)[idx])
    elif stat == "auc":
        vals = np.array([v if (v := roc_auc(g[i], x[i])) is not None else np.nan for i in idx])
    else:
        raise ValueError(f"unknown statistic {stat!r}")
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return (None, None)
    a = (1 - level) / 2
    lo, hi = np.quantile(vals, [a, 1 - a])
    return (float(lo), float(hi))


for _name, _doc in (
    ("cls_accuracy", "(TP+TN)/(TP+TN+FP+FN); per item 1[pred = gold]"),
    ("cls_precision", "TP/(TP+FP); per predicted-yes item 1[gold = yes]"),
    ("cls_recall", "TP/(TP+FN); per gold-yes item 1[pred = yes]"),
    ("cls_f1", "2TP/(2TP+FP+FN); bootstrap CI by resampling items"),
    ("cls_roc_auc", "Mann-Whitney U/(n_pos n_neg) with average ranks for ties"),
):
    register(MetricSpec(name=_name, family="classification", doc=_doc,
                        required_fields=("ground_truth_show",)))


# Judge-quality metrics (tier ``judge_quality``, seed 000 §8); registered here, family "judge".
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
