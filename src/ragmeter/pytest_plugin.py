"""pytest plugin: quality gates as fixtures, failures that name the worst samples.

Enable it in a ``conftest.py`` (``pytest_plugins = ["ragmeter.pytest_plugin"]``) or with
``pytest -p ragmeter.pytest_plugin``. Then::

    def test_answers_are_faithful(rag_gate):
        result = ragmeter.evaluate_generation(samples, ["faithfulness"], judge=my_judge)
        rag_gate(result, min={"faithfulness": 0.8})

A failed gate fails the test with the gate table and, per failed metric, the three worst
samples with question, answer and reason; every gate checked is listed in the terminal summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from ragmeter.results.records import EvalResult
from ragmeter.testing import assert_metrics

_CHECKED = pytest.StashKey[list[str]]()


@pytest.fixture
def rag_gate(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``rag_gate(result, min={...}, max={...}, use_ci_bound=False, samples=None)``: the
    :func:`ragmeter.testing.assert_metrics` check, recorded for the summary."""
    checked = request.config.stash.setdefault(_CHECKED, [])

    def gate(result: EvalResult | Mapping[str, EvalResult],
             min: Mapping[str, float] | None = None, max: Mapping[str, float] | None = None,
             *, use_ci_bound: bool = False, samples: Iterable[Any] | None = None) -> None:
        names = ", ".join([*(min or {}), *(max or {})])
        try:
            assert_metrics(result, min=min, max=max, use_ci_bound=use_ci_bound, samples=samples)
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
