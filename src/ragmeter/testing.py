"""Helpers for users' own test suites: gate a result inside pytest.

>>> from ragmeter.testing import assert_metrics
>>> assert_metrics(result, min={"hit_rate@5": 0.8}, max={"latency_p95": 2.0})  # doctest: +SKIP

A failure names the three worst samples of each failed metric with their question, answer and
reason (the samples come with results of :func:`ragmeter.evaluate_generation`, or pass
``samples=``).

This module is also a pytest plugin: enable it in a ``conftest.py``
(``pytest_plugins = ["ragmeter.testing"]``) or with ``pytest -p ragmeter.testing``, then::

    def test_answers_are_faithful(rag_gate):
        result = ragmeter.evaluate_generation(samples, ["faithfulness"], judge=my_judge)
        rag_gate(result, min={"faithfulness": 0.8})

A failed gate fails the test with the gate table and the worst samples; every gate checked is
listed in the terminal summary ("ragmeter quality gates").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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


# --------------------------------------------------------------------------- pytest plugin
try:
    import pytest
except ImportError:  # pragma: no cover - the helpers above work without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    _CHECKED = pytest.StashKey[list[str]]()

    @pytest.fixture
    def rag_gate(request: Any) -> Callable[..., None]:
        """``rag_gate(result, min={...}, max={...}, use_ci_bound=False, samples=None)``: the
        :func:`assert_metrics` check, recorded for the terminal summary."""
        checked = request.config.stash.setdefault(_CHECKED, [])

        def gate(result: EvalResult | Mapping[str, EvalResult],
                 min: Mapping[str, float] | None = None,
                 max: Mapping[str, float] | None = None, *, use_ci_bound: bool = False,
                 samples: Iterable[Any] | None = None) -> None:
            names = ", ".join([*(min or {}), *(max or {})])
            try:
                assert_metrics(result, min=min, max=max, use_ci_bound=use_ci_bound,
                               samples=samples)
            except AssertionError:
                checked.append(f"FAILED {request.node.nodeid}: {names}")
                raise
            checked.append(f"passed {request.node.nodeid}: {names}")
        return gate

    def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
        checked = config.stash.get(_CHECKED, [])
        if checked:
            terminalreporter.section("ragmeter quality gates")
            for line in checked:
                terminalreporter.write_line(line)
