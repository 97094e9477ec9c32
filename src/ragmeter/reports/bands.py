"""Threshold bands (excellent / good / needs attention) and reading scales.

Threshold bands grade a headline number:

| metric                      | excellent | good      | needs attention |
|-----------------------------|-----------|-----------|-----------------|
| HitRate@1, MRR, NDCG@10     | > 0.8     | 0.5–0.8   | < 0.5           |
| Faithfulness | > 0.9 | 0.7–0.9 | < 0.7 |
| E2E Score                   | > 0.8     | 0.6–0.8   | < 0.6           |
| Accuracy (judge pipeline)   | > 0.95    | 0.85–0.95 | < 0.85          |
| Consistency                 | > 0.95    | 0.85–0.95 | < 0.85          |

A value exactly on the upper boundary (0.8 for HitRate@1) is *good*, on the lower boundary
(0.5) is *good* too: the doc writes "> 0.8" for excellent and "< 0.5" for needs attention.
Metrics without a row get no band (``None``): we never invent thresholds.

Reading scales say how to read one metric's value; the charts shade them behind the data.
Only the ranges the methodology states are listed: a range it leaves unnamed (BLEU 40–50,
Faithfulness 0.5–0.8) stays unshaded.

| metric | reading scale |
|---|---|
| Silhouette | > 0.7 strong cluster structure; 0.5–0.7 reasonable structure; 0.25–0.5 weak structure; < 0.25 no cluster structure |
| Faithfulness | > 0.8 high quality, minimal hallucinations; < 0.5 serious faithfulness problems |
| Answer relevance | > 0.8 high quality of understanding the question |
| ROUGE-L F | > 0.5 good quality |
| ROUGE-1 F | > 0.4 acceptable for short texts |
| BLEU (0–100) | > 50 very good; 20–40 acceptable; < 20 needs substantial improvement |
| Semantic similarity | ≥ 0.9 semantically identical; 0.8–0.9 very high similarity; 0.5–0.8 moderate similarity; 0–0.5 low similarity |
| Cache hit rate | > 0.5 high caching potential; < 0.1 the cache brings no benefit |
| Context preservation | > 0.7 questions are related, context is kept; < 0.3 questions are unrelated |
| Context relevance | ≥ 0.9 excellent; 0.7–0.9 good; 0.5–0.7 average; 0–0.5 poor |

On a shared boundary the value belongs to the range the methodology closes there (a
silhouette of exactly 0.7 is *reasonable*, a context relevance of exactly 0.9 *excellent*).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ragmeter.metrics.registry import split_metric_key
from ragmeter.reports.i18n import t
from ragmeter.reports.svg import Shade

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


#: how a reading-scale level looks on a chart, best first
TONES = ("top", "good", "mid", "bad")


@dataclass(frozen=True)
class Level:
    """One range of a reading scale: ``low``–``high`` (``None`` = unbounded); ``open_low`` /
    ``open_high`` for a strict "> low" / "< high"."""

    name: str
    tone: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def contains(self, value: float) -> bool:
        above = (self.low is None or value > self.low
                 or (not self.open_low and value == self.low))
        below = (self.high is None or value < self.high
                 or (not self.open_high and value == self.high))
        return above and below

    def range_text(self) -> str:
        """The range as the methodology writes it: "> 0.7", "0.5–0.7", "< 0.25", "≥ 0.9"."""
        if self.high is None:
            return f"{'>' if self.open_low else '≥'} {self.low:g}"
        if self.low is None:
            return f"{'<' if self.open_high else '≤'} {self.high:g}"
        return f"{self.low:g}–{self.high:g}"

    def describe(self) -> str:
        return f"{self.range_text()} {self.name}"

    def title(self, lang: str = "en") -> str:
        return t(f"lvl:{self.name}", lang)


@dataclass(frozen=True)
class ReadingScale:
    """How to read one metric's value: named ranges, best first (a range the methodology
    leaves unnamed has no level). A key with a parameter setting of ``unless`` is not read by
    it (ROUGE's scale is for the F-measure: not for ``measure=p`` or ``measure=r``)."""

    label: str
    names: tuple[str, ...]
    levels: tuple[Level, ...]
    unless: tuple[str, ...] = ()

    def read(self, value: float) -> Level | None:
        """The first level (best first) that holds ``value``, or None in an unnamed range."""
        return next((lv for lv in self.levels if lv.contains(value)), None)

    def describe(self) -> str:
        return "; ".join(lv.describe() for lv in self.levels)

    def title(self, lang: str = "en") -> str:
        return t(f"scale:{self.label}", lang)


def _gt(low: float, name: str, tone: str) -> Level:
    return Level(name, tone, low=low, open_low=True)


def _lt(high: float, name: str, tone: str) -> Level:
    return Level(name, tone, high=high, open_high=True)


_NOT_F_MEASURE = ("measure=p", "measure=r")
SCALES: tuple[ReadingScale, ...] = (
    ReadingScale("Silhouette", ("silhouette",), (
        _gt(0.7, "strong cluster structure", "top"),
        Level("reasonable structure", "good", 0.5, 0.7),
        Level("weak structure", "mid", 0.25, 0.5),
        _lt(0.25, "no cluster structure", "bad"))),
    ReadingScale("Faithfulness", ("faithfulness",), (
        _gt(0.8, "high quality, minimal hallucinations", "top"),
        _lt(0.5, "serious faithfulness problems", "bad"))),
    ReadingScale("Answer relevance", ("answer_relevance",), (
        _gt(0.8, "high quality of understanding the question", "top"),)),
    ReadingScale("ROUGE-L F", ("rouge_l",), (_gt(0.5, "good quality", "good"),), _NOT_F_MEASURE),
    ReadingScale("ROUGE-1 F", ("rouge_1",), (_gt(0.4, "acceptable for short texts", "mid"),),
                 _NOT_F_MEASURE),
    ReadingScale("BLEU (0–100)", ("bleu",), (
        _gt(50, "very good", "top"),
        Level("acceptable", "mid", 20, 40),
        _lt(20, "needs substantial improvement", "bad"))),
    ReadingScale("Semantic similarity", ("semantic_similarity",), (
        Level("semantically identical", "top", low=0.9),
        Level("very high similarity", "good", 0.8, 0.9),
        Level("moderate similarity", "mid", 0.5, 0.8),
        Level("low similarity", "bad", 0.0, 0.5))),
    ReadingScale("Cache hit rate", ("cache_hit_rate",), (
        _gt(0.5, "high caching potential", "top"),
        _lt(0.1, "the cache brings no benefit", "bad"))),
    ReadingScale("Context preservation", ("context_preservation",), (
        _gt(0.7, "questions are related, context is kept", "top"),
        _lt(0.3, "questions are unrelated", "bad"))),
    ReadingScale("Context relevance", ("context_relevance",), (
        Level("excellent", "top", low=0.9),
        Level("good", "good", 0.7, 0.9),
        Level("average", "mid", 0.5, 0.7),
        Level("poor", "bad", 0.0, 0.5))),
)


def find_scale(metric: str) -> ReadingScale | None:
    """The reading scale of a metric key (``silhouette``, ``rouge_l(measure=f)``), if any."""
    name, _k, params = split_metric_key(metric)
    name = name.lower().replace("-", "_")
    settings = set(params.split(",")) if params else set()
    return next((s for s in SCALES if name in s.names and not settings & set(s.unless)),
                None)


def shades_for(metric: str, lang: str = "en") -> tuple[Shade, ...]:
    """The reading scale of ``metric`` as chart shading (empty when it has none)."""
    scale = find_scale(metric)
    if scale is None:
        return ()
    return tuple(Shade(lv.low, lv.high, lv.title(lang), lv.range_text(),
                       lv.tone) for lv in scale.levels)


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
