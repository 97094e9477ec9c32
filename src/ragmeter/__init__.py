"""ragmeter: measure RAG systems — retrieval, generation, judge reliability, user experience."""

from ragmeter._version import __version__
from ragmeter.data.sample import Sample
from ragmeter.errors import (
    ConfigError,
    DataError,
    MetricSpecError,
    MissingExtraError,
    RagmeterError,
)
from ragmeter.metrics.registry import Metric, list_specs, parse_metric
from ragmeter.results.records import (
    EvalResult,
    MetricResult,
    SampleScore,
    Signature,
    compare_metric,
    compare_results,
)

__all__ = [
    "ConfigError",
    "DataError",
    "EvalResult",
    "Metric",
    "MetricResult",
    "MetricSpecError",
    "MissingExtraError",
    "RagmeterError",
    "Sample",
    "SampleScore",
    "Signature",
    "__version__",
    "compare_metric",
    "compare_results",
    "list_specs",
    "parse_metric",
]
