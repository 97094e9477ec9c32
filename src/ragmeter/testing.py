"""Helpers for users' own test suites: gate a result inside pytest.

>>> from ragmeter.testing import assert_metrics
>>> assert_metrics(result, min={"hit_rate@5": 0.8}, max={"latency_p95": 2.0})  # doctest: +SKIP

A failure names the three worst samples of each failed metric with their question, answer and
reason (the samples come with results of :func:`ragmeter.evaluate_generation`, or pass
``samples=``). The pytest plugin :mod:`ragmeter.pytest_plugin` offers the same as a fixture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter.results.records import EvalResult
from ragmeter.runner.gate_report import failing_samples, gate_message
from ragmeter.runner.gating import Threshold, check_thresholds, gate_passed


def assert_metrics(
    result: EvalResult | Mapping[str, EvalResult],
    min: Mapping[str, float] | None = None,
    max: Mapping[str, float] | None = None,
    *,
    use_ci_bound: bool = False,
    samples: Iterable[Any] | None = None,
) -> None:
    """Raise ``AssertionError`` with the gate table when a threshold fails or a metric is missing.

    ``min``/``max`` map metric names (``hit_rate@5``, or ``target:metric``) to bounds; a metric
    in both gets one combined check. ``use_ci_bound`` gates on the 95% CI bound.
    ``samples``: the samples' text (question, answer) when the result does not hold it.
    """
    names: dict[str, dict[str, float]] = {}
    for key, bounds in (("min", min or {}), ("max", max or {})):
        for metric, value in bounds.items():
            names.setdefault(metric, {})[key] = value
    if not names:
        raise ValueError("assert_metrics needs min= and/or max=")
    thresholds = []
    for metric, b in names.items():
        target, m = (None, metric)
        if ":" in metric:
            t, _, m = metric.partition(":")
            target = t or None
        thresholds.append(Threshold(m, b.get("min"), b.get("max"), target))
    rows = check_thresholds(result, thresholds, use_ci_bound=use_ci_bound)
    if not gate_passed(rows):
        by_id = {str(getattr(s, "id", None) or s.get("id")): s for s in samples or []}
        raise AssertionError(gate_message(rows, failing_samples(result, rows, by_id)))
