"""The metric-name grammar as results use it: ``ndcg@10(gain=linear)`` -> the canonical key
of that metric in a result.

The grammar is the metric registry's (:mod:`ragmeter.metrics.registry`, which reads results
and registers it here); the registry below loads that module by name on first lookup, so a
result is found by any spelling of its metric's name without results importing metrics.
Cheap to import.
"""

from __future__ import annotations

from collections.abc import Callable

from ragmeter.registry import Registry

#: ``canonical``: a metric name as written -> its canonical string
METRIC_NAMES: Registry[Callable[[str], str]] = Registry(
    "metric-name grammar", modules=("ragmeter.metrics.registry",))


__all__ = ["METRIC_NAMES"]
