"""Bias-corrected (prediction-powered) estimates of judged metrics from a few human labels.

For a judged metric with judge values on all ``N`` scored samples and human labels on ``n``
of them, the prediction-powered estimate (Angelopoulos et al., 2023, "Prediction-powered
inference") is the judge mean over all samples plus the mean human − judge correction on the
labelled ones; its interval combines both variances (see :mod:`ragmeter.stats.ppi`).
It is valid when the labelled samples are a random subset of the evaluated ones — or drawn by
a selection with known inclusion probabilities (:func:`ragmeter.stats.selection.select`:
uniform, stratified by slice, or active by the judge's uncertainty), which the estimate then
weights by: label what the selection chose, not the ones that looked wrong. Besides the
classic estimator, PPI++ (the judge's weight tuned, never a larger variance than classic) and
stratified PPI (a weight per slice) are offered (:mod:`ragmeter.stats.ppi_estimators`); the
estimate names its estimator and effective sample size. With yes/no labels and yes/no judge values the
interval is built from exact pieces (``interval="exact"`` of :func:`ragmeter.stats.ppi_mean`),
which keeps its coverage for rare outcomes and few labels; otherwise it is the normal one.

Samples whose judge reply was unscored are outside ``N`` (they have no judge value); a label
on such a sample is not used and is counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.judge_trust.labels import LabelSet
from ragmeter.stats import (
    LabelPlan,
    PairedPPI,
    PPIEstimate,
    labels_needed,
    ppi_paired,
)
from ragmeter.stats.ppi_estimators import estimate, labels_for_half_width
from ragmeter.stats.selection import Selection

#: the range of a judged metric; an interval reaching outside it is cut to it (and says so)
UNIT = (0.0, 1.0)


@dataclass(frozen=True)
class MetricPPI:
    """The raw judge mean next to its prediction-powered estimate for one metric."""

    metric: str
    estimate: PPIEstimate
    labels_unused: int
    plan: LabelPlan | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, **self.estimate.to_dict(),
                "labels_unused": self.labels_unused,
                **({"plan": self.plan.to_dict()} if self.plan else {})}


def _scored(values: Mapping[str, float | None]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if v is not None and np.isfinite(v)}


def metric_ppi(metric: str, judge_values: Mapping[str, float | None], labels: LabelSet, *,
               system: str | None = None, level: float = 0.95,
               target_width: float | None = None, estimator: str = "classic",
               selection: Selection | None = None,
               strata: Mapping[str, str] | None = None) -> MetricPPI:
    """PPI estimate of ``metric`` (``judge_values``: sample id → judge value on 0–1).

    ``estimator``: ``classic``, ``ppi++`` or ``stratified`` (:mod:`ragmeter.stats.
    ppi_estimators`; ``strata``: sample id → slice, or a stratified ``selection``'s);
    ``selection``: the selection the labels were drawn by (default: a simple random sample
    of the judged samples). The estimate carries its estimator, effective sample size and
    signature; ``target_width`` adds how many labels reach that full CI width."""
    lab = labels.values(metric, system)
    jv = _scored(judge_values)
    est = estimate(lab, jv, selection, estimator, strata=strata, level=level,
                   discrete=labels.scales[metric] != "continuous", bounds=UNIT,
                   interval="auto")
    plan = None
    if target_width:
        plan = (labels_needed(est, target_width) if estimator == "classic"
                and selection is None else labels_for_half_width(est, target_width / 2))
    return MetricPPI(metric, est, est.n_unused, plan)


def ppi_estimates(judge_values: Mapping[str, Mapping[str, float | None]], labels: LabelSet, *,
                  system: str | None = None, level: float = 0.95,
                  target_width: float | None = None, estimator: str = "classic",
                  selection: Selection | None = None,
                  strata: Mapping[str, str] | None = None,
                  selections: Mapping[str, Selection | None] | None = None
                  ) -> dict[str, MetricPPI]:
    """:func:`metric_ppi` for every metric with judge values and at least 2 usable labels;
    ``selections``: per metric, the selection its labels were drawn by (a labels file of
    ``ragmeter label`` records them), in place of ``selection``."""
    out: dict[str, MetricPPI] = {}
    for metric in labels.metrics:
        if metric not in judge_values:
            continue
        jv = _scored(judge_values[metric])
        if sum(1 for s in labels.values(metric, system) if s in jv) < 2 or len(jv) < 2:
            continue
        out[metric] = metric_ppi(metric, judge_values[metric], labels, system=system,
                                 level=level, target_width=target_width,
                                 estimator=estimator,
                                 selection=(selections or {}).get(metric) or selection,
                                 strata=strata)
    return out


def ppi_by_slice(metric: str, judge_values: Mapping[str, float | None], labels: LabelSet,
                 keys: Mapping[str, tuple[str, ...]], *, system: str | None = None,
                 min_n: int = 10, min_labels: int = 2, level: float = 0.95
                 ) -> dict[tuple[str, ...], MetricPPI | None]:
    """:func:`metric_ppi` within each slice (``keys``: sample id → slice, see
    :mod:`ragmeter.results.slices`); ``None`` for a slice with fewer than ``min_n`` judge
    values or ``min_labels`` usable labels (withheld, as a slice's mean is)."""
    jv = _scored(judge_values)
    lab = labels.values(metric, system)
    out: dict[tuple[str, ...], MetricPPI | None] = {}
    for key in sorted(set(keys.values())):
        ids = [s for s in jv if keys.get(s) == key]
        n_lab = sum(1 for s in ids if s in lab)
        if len(ids) < min_n or n_lab < min_labels:
            out[key] = None
            continue
        out[key] = metric_ppi(metric, {s: jv[s] for s in ids}, labels, system=system,
                              level=level)
    return out


def paired_metric_ppi(metric: str, values_a: Mapping[str, float | None],
                      values_b: Mapping[str, float | None], labels: LabelSet, *, system_a: str,
                      system_b: str, level: float = 0.95) -> PairedPPI:
    """PPI estimate of ``mean(B) − mean(A)`` on the samples both systems scored, with human
    labels of both systems' answers on a subset (labels carry ``system``)."""
    a, b = _scored(values_a), _scored(values_b)
    ids = [s for s in a if s in b]
    la = labels.values(metric, system_a)
    lb = labels.values(metric, system_b)
    lab = np.asarray([s in la and s in lb for s in ids])
    if lab.sum() < 2:
        raise ValueError(f"{metric}: fewer than 2 samples carry labels of both {system_a!r} "
                         f"and {system_b!r}")
    ya = np.asarray([la.get(s, np.nan) for s in ids])
    yb = np.asarray([lb.get(s, np.nan) for s in ids])
    return ppi_paired(np.asarray([a[s] for s in ids]), np.asarray([b[s] for s in ids]), lab,
                      ya, yb, level=level, discrete=labels.scales[metric] != "continuous",
                      bounds=(-1.0, 1.0))


__all__ = ["MetricPPI", "metric_ppi", "paired_metric_ppi", "ppi_by_slice", "ppi_estimates"]
