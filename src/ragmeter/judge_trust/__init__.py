"""Trusting the judge: human-label agreement cards, bias-corrected estimates, a judge benchmark.

* :mod:`~ragmeter.judge_trust.labels` — the human labels file format and its loader;
* :mod:`~ragmeter.judge_trust.card` — signed judge cards (accuracy, κ, Spearman, MAE, TPR/TNR,
  bias direction, AUC, each with a bootstrap CI) and their comparison;
* :mod:`~ragmeter.judge_trust.ppi` — prediction-powered (bias-corrected) metric estimates,
  paired comparisons and the label planner;
* :mod:`~ragmeter.judge_trust.bench` — the bundled Russian judge benchmark and its runner;
* :mod:`~ragmeter.judge_trust.runs` — cards and estimates stored with a run;
* the pure statistics behind all of it live in :mod:`ragmeter.stats` (agreement, PPI).
"""

from __future__ import annotations

from ragmeter.judge_trust.card import JudgeCard, MetricCard, card_from_values, compare_cards
from ragmeter.judge_trust.labels import LabelSet, load_labels
from ragmeter.judge_trust.ppi import MetricPPI, paired_metric_ppi, ppi_estimates

__all__ = ["JudgeCard", "LabelSet", "MetricCard", "MetricPPI", "card_from_values",
           "compare_cards", "load_labels", "paired_metric_ppi", "ppi_estimates"]
