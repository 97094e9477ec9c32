"""Per-sample result records, aggregates, signatures and paired comparisons."""

from ragmeter.results.records import (
    Aggregate,
    EvalResult,
    MetricResult,
    SampleScore,
    Signature,
    compare_metric,
    compare_results,
)
from ragmeter.stats import PairedComparison, bootstrap_ci, paired_test

__all__ = [
    "Aggregate",
    "EvalResult",
    "MetricResult",
    "PairedComparison",
    "SampleScore",
    "Signature",
    "bootstrap_ci",
    "compare_metric",
    "compare_results",
    "paired_test",
]
