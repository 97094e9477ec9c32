"""Helpers for users' own test suites: gate a result inside pytest.

>>> from ragmeter.testing import assert_metrics
>>> assert_metrics(result, min={"hit_rate@5": 0.8}, max={"latency_p95": 2.0})  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping

from ragmeter.results.records import EvalResult
from ragmeter.runner.gating import Threshold, check_thresholds, format_rows, gate_passed


def assert_metrics(
    result: EvalResult | Mapping[str, EvalResult],
    min: Mapping[str, float] | None = None,
    max: Mapping[str, float] | None = None,
    *,
    use_ci_bound: bool = False,
) -> None:
    """Raise ``AssertionError`` with the gate table when a threshold fails or a metric is missing.

    ``min``/``max`` map metric names (``hit_rate@5``, or ``target:metric``) to bounds; a metric
    in both gets one combined check. ``use_ci_bound`` gates on the 95% CI bound.
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
        failed = sum(not r.passed for r in rows)
        raise AssertionError(f"{failed} of {len(rows)} metric check(s) failed:\n"
                             + format_rows(rows))
