"""Statistics on the ground floor: every interval, test and agreement coefficient of ragmeter.

One home, five modules, all re-exported here (``from ragmeter.stats import ...``):

* :mod:`~ragmeter.stats.resampling` — seeded percentile bootstrap of a mean
  (:func:`bootstrap_means`, :func:`bootstrap_ci`, :func:`bootstrap_mean`) and of any statistic
  of the items (:func:`bootstrap_stat` → :class:`Estimate`); paired significance tests between
  two systems on the same samples (:func:`paired_test`, :class:`PairedComparison`);
* :mod:`~ragmeter.stats.agreement` — Krippendorff's alpha at any level of measurement
  (:func:`krippendorff_alpha`, :func:`krippendorff_alpha_ci`), Cohen's κ plain or
  quadratic-weighted (:func:`cohen_kappa`), Spearman's ρ (:func:`spearman`), flip rates of
  repeated verdicts (:func:`flip_stats`, :func:`verdict_flip_rate`);
* :mod:`~ragmeter.stats.classification` — F1 of many resamples at once (:func:`f1_vec`),
  ROC AUC as the Mann–Whitney statistic (:func:`roc_auc`), TPR/TNR (:func:`rates`);
* :mod:`~ragmeter.stats.ppi` — prediction-powered estimates of a mean and of a paired
  difference from judge values plus a few human labels (:func:`ppi_mean`,
  :func:`ppi_mean_batch`, :func:`ppi_paired`) and the labels they need (:func:`labels_needed`);
* :mod:`~ragmeter.stats.proportion` — the Wilson interval of a proportion
  (:func:`wilson_interval` → :class:`Proportion`), which does not collapse at 0 or 1;
* :mod:`~ragmeter.stats.multiple` — adjusted p-values of a family of tests: Holm
  (:func:`holm`, family-wise error) and Benjamini–Hochberg (:func:`bh`, false-discovery rate).

Everything is deterministic for a given seed: the same values and seed give the same CI and
the same p-value, on any machine. Call accounting of the judge engine (latency, tokens, cost)
is not statistics in this sense and lives with the engine in ``ragmeter.judges.stats``.
"""

from __future__ import annotations

from ragmeter.stats.agreement import (
    Level,
    cohen_kappa,
    flip_stats,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    rankdata,
    spearman,
    verdict_flip_rate,
)
from ragmeter.stats.classification import f1_vec, rates, roc_auc
from ragmeter.stats.multiple import CORRECTIONS, adjust, bh, holm
from ragmeter.stats.ppi import (
    LabelPlan,
    PairedPPI,
    PPIEstimate,
    labels_needed,
    ppi_mean,
    ppi_mean_batch,
    ppi_paired,
)
from ragmeter.stats.proportion import Proportion, wilson_interval
from ragmeter.stats.resampling import (
    DEFAULT_N_BOOT,
    DEFAULT_N_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    PairedComparison,
    bootstrap_ci,
    bootstrap_mean,
    bootstrap_means,
    bootstrap_stat,
    paired_test,
)

__all__ = ["CORRECTIONS", "DEFAULT_N_BOOT", "DEFAULT_N_RESAMPLES", "DEFAULT_SEED", "Estimate",
           "LabelPlan", "Level", "PPIEstimate", "PairedComparison", "PairedPPI", "Proportion",
           "adjust", "bh",
           "bootstrap_ci", "bootstrap_mean", "bootstrap_means", "bootstrap_stat", "cohen_kappa",
           "f1_vec", "flip_stats", "holm", "krippendorff_alpha", "krippendorff_alpha_ci",
           "labels_needed", "paired_test", "ppi_mean", "ppi_mean_batch", "ppi_paired",
           "rankdata", "rates", "roc_auc", "spearman", "verdict_flip_rate", "wilson_interval"]
