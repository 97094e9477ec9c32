"""Metric specs (what is measured). Families register their specs from their own modules."""

from ragmeter.metrics.registry import (
    Metric,
    MetricSpec,
    Param,
    get_spec,
    list_specs,
    make_metric,
    parse_metric,
    parse_metrics,
    register,
)

__all__ = [
    "Metric",
    "MetricSpec",
    "Param",
    "get_spec",
    "list_specs",
    "make_metric",
    "parse_metric",
    "parse_metrics",
    "register",
]
