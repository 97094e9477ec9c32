"""Classification statistics: F1 of many resamples at once, ROC AUC, TPR/TNR.

AUC is the probability that a random positive gets a higher score than a random negative,
ties counting ½ — the Mann–Whitney U statistic divided by ``n_pos·n_neg`` (equal to
scikit-learn's ``roc_auc_score``).
"""

from __future__ import annotations

import numpy as np

from ragmeter.stats.agreement import rankdata


def f1_vec(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """F1 of each row of boolean matrices ``(B, n)`` (NaN where 2TP+FP+FN = 0)."""
    g = np.asarray(gold, dtype=bool)
    p = np.asarray(pred, dtype=bool)
    tp = (g & p).sum(axis=-1)
    d = 2 * tp + (~g & p).sum(axis=-1) + (g & ~p).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, 2 * tp / np.maximum(d, 1), np.nan)



def roc_auc(gold: np.ndarray, score: np.ndarray) -> float | None:
    """Mann–Whitney AUC of ``score`` for the boolean ``gold`` (average ranks for ties);
    ``None`` without both classes."""
    g = np.asarray(gold, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    n_pos = int(g.sum())
    n_neg = int(g.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    r = rankdata(s)
    return float((r[g].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def rates(pred: np.ndarray, truth: np.ndarray) -> tuple[float | None, float | None]:
    """(TPR, TNR) of boolean predictions against boolean truth; ``None`` for an empty class."""
    pred = np.asarray(pred, dtype=bool)
    truth = np.asarray(truth, dtype=bool)
    npos = int(truth.sum())
    nneg = int(truth.size - npos)
    tpr = float((pred & truth).sum() / npos) if npos else None
    tnr = float((~pred & ~truth).sum() / nneg) if nneg else None
    return tpr, tnr

