"""Threshold bands: excellent / good / needs attention.

| metric                      | excellent | good      | needs attention |
|-----------------------------|-----------|-----------|-----------------|
| HitRate@1, MRR, NDCG@10     | > 0.8     | 0.5–0.8   | < 0.5           |
| Faithfulness                | > 0.9     | 0.7–0.9   | < 0.7           |
| E2E Score                   | > 0.8     | 0.6–0.8   | < 0.6           |
| Accuracy (judge pipeline)   | > 0.95    | 0.85–0.95 | < 0.85          |
| Consistency                 | > 0.95    | 0.85–0.95 | < 0.85          |

A value exactly on the upper boundary (0.8 for HitRate@1) is *good*, on the lower boundary
(0.5) is *good* too: the doc writes "> 0.8" for excellent and "< 0.5" for needs attention.
Metrics without a row get no band (``None``): we never invent thresholds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ragmeter.metrics.registry import split_metric_key
from ragmeter.reports.i18n import t

EXCELLENT = "excellent"
GOOD = "good"
NEEDS_ATTENTION = "needs attention"
BAND_NAMES = (EXCELLENT, GOOD, NEEDS_ATTENTION)


@dataclass(frozen=True)
class Band:
    """One row of the threshold-band table: metric names it covers, and the two boundaries."""

    label: str
    names: tuple[str, ...]
    excellent_above: float
    attention_below: float
    k: int | None = None  # required cutoff (HitRate@1, NDCG@10); None = any cutoff or none

    def classify(self, value: float) -> str:
        if value > self.excellent_above:
            return EXCELLENT
        if value < self.attention_below:
            return NEEDS_ATTENTION
        return GOOD

    def title(self, lang: str = "en") -> str:
        """The row's label in ``lang`` (report text goes through :mod:`ragmeter.reports.i18n`)."""
        return t(f"band:{self.label}", lang)

    def describe(self) -> str:
        return (f"> {self.excellent_above:g} excellent, {self.attention_below:g}–"
                f"{self.excellent_above:g} good, < {self.attention_below:g} needs attention")


BANDS: tuple[Band, ...] = (
    Band("HitRate@1", ("hit_rate", "hit"), 0.8, 0.5, k=1),
    Band("MRR", ("mrr",), 0.8, 0.5),
    Band("NDCG@10", ("ndcg",), 0.8, 0.5, k=10),
    Band("Faithfulness", ("faithfulness",), 0.9, 0.7),
    Band("E2E Score", ("e2e_score", "e2e"), 0.8, 0.6),
    Band("Accuracy (judge pipeline)", ("judge_pipeline_accuracy", "pipeline_accuracy"),
         0.95, 0.85),
    Band("Consistency", ("consistency", "judge_consistency", "consistency_score",
                         "multi_turn_consistency"), 0.95, 0.85),
)



def find_band(metric: str, tier: str | None = None) -> Band | None:
    """The threshold-band row for a metric key such as ``hit_rate@1`` or ``ndcg@10(gain=exp)``.

    ``accuracy`` (and ``cls_accuracy``, the name the production-judge tier emits) only gets the
    judge-pipeline band when it comes from the ``judge_pipeline`` tier (a plain accuracy
    elsewhere has no row in the table).
    """
    name, k, _ = split_metric_key(metric)
    name = name.lower().replace("-", "_")
    if name in ("accuracy", "cls_accuracy") and tier == "judge_pipeline":
        name = "judge_pipeline_accuracy"
    for band in BANDS:
        if name in band.names and (band.k is None or band.k == k):
            return band
    return None


def classify(metric: str, value: float | None, tier: str | None = None) -> str | None:
    """Band name for a value, or ``None`` when the metric has no row or there is no value."""
    if value is None or value != value:  # NaN
        return None
    band = find_band(metric, tier)
    return band.classify(value) if band else None


def from_demo_judge(demo_judges: Iterable[str], signature: Mapping[str, str]) -> bool:
    """Whether a result was produced by a demonstration judge: such numbers get no quality
    band (they show how ragmeter works, they do not measure the system)."""
    names = set(demo_judges)
    return (signature.get("demo") == "yes" or signature.get("judge_demo") == "yes"
            or signature.get("mock") == "yes"
            or (signature.get("judge") is not None and signature.get("judge") in names))
