"""Per-sample result records, aggregates, signatures and paired comparisons.

The names below are imported on first use, so a light module of this package (the
metric-name grammar hook, :mod:`ragmeter.results.names`) loads no numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {"Aggregate": "ragmeter.results.records", "EvalResult": "ragmeter.results.records",
          "MetricResult": "ragmeter.results.records", "SampleScore": "ragmeter.results.records",
          "Signature": "ragmeter.results.records", "compare_metric": "ragmeter.results.records",
          "compare_results": "ragmeter.results.records", "PairedComparison": "ragmeter.stats",
          "bootstrap_ci": "ragmeter.stats", "paired_test": "ragmeter.stats"}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragmeter.results' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
