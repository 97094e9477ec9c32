"""ragmeter: measure RAG systems — retrieval, generation, judge reliability, user experience.

Start here::

    import ragmeter

    samples = ragmeter.load_samples("answers.jsonl").samples
    retrieval = ragmeter.evaluate_retrieval(samples, metrics=["hit_rate@1,5", "mrr"])
    judge = ragmeter.make_judge(ragmeter.JudgeConfig(
        name="main", backend="openai", base_url="http://127.0.0.1:8000/v1", model="qwen2.5-7b"))
    generation = ragmeter.evaluate_generation(samples, ["faithfulness", "rouge_l"], judge=judge)
    run = ragmeter.run_benchmark(ragmeter.load_config("bench.yaml"))
    live = ragmeter.evaluate("evalset.jsonl", target=my_rag_fn, metrics=["recall@5", "rouge_l"])
    testset = ragmeter.generate_testset("kb/", generator=judge, n=50)

The verbs (``evaluate`` — call your own RAG system and score it —, ``evaluate_retrieval``, ``evaluate_generation``, ``run_benchmark``, ``make_judge``,
``load_samples``, ``load_config``, ``generate_testset``) and the nouns are imported on first use, so
``import ragmeter`` stays light (it does not load numpy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragmeter._version import __version__
from ragmeter.errors import (
    ConfigError,
    DataError,
    MetricSpecError,
    MissingExtraError,
    RagmeterError,
)
from ragmeter.secrets import install_log_masking

if TYPE_CHECKING:
    from ragmeter.data.loaders import LoadResult, load_samples
    from ragmeter.data.sample import Sample
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.judges import Judge, JudgeConfig, JudgeRequest, make_judge
    from ragmeter.metrics.registry import Metric, list_specs, parse_metric, parse_metrics
    from ragmeter.results.records import (
        EvalResult,
        MetricResult,
        SampleScore,
        Signature,
        compare_metric,
        compare_results,
    )
    from ragmeter.retrieval.evaluate import evaluate_retrieval
    from ragmeter.runner.config import BenchConfig, load_config
    from ragmeter.runner.engine import run_benchmark
    from ragmeter.synth.pipeline import generate_testset
    from ragmeter.targets.evaluate import evaluate

install_log_masking()

# public name -> module that defines it (imported on first attribute access)
_LAZY: dict[str, str] = {
    "Sample": "ragmeter.data.sample",
    "Metric": "ragmeter.metrics.registry",
    "list_specs": "ragmeter.metrics.registry",
    "parse_metric": "ragmeter.metrics.registry",
    "parse_metrics": "ragmeter.metrics.registry",
    "EvalResult": "ragmeter.results.records",
    "MetricResult": "ragmeter.results.records",
    "SampleScore": "ragmeter.results.records",
    "Signature": "ragmeter.results.records",
    "compare_metric": "ragmeter.results.records",
    "compare_results": "ragmeter.results.records",
    "evaluate_retrieval": "ragmeter.retrieval.evaluate",
    "evaluate_generation": "ragmeter.generation.evaluate",
    "run_benchmark": "ragmeter.runner.engine",
    "load_config": "ragmeter.runner.config",
    "BenchConfig": "ragmeter.runner.config",
    "make_judge": "ragmeter.judges",
    "Judge": "ragmeter.judges",
    "JudgeConfig": "ragmeter.judges",
    "JudgeRequest": "ragmeter.judges",
    "load_samples": "ragmeter.data.loaders",
    "LoadResult": "ragmeter.data.loaders",
    "generate_testset": "ragmeter.synth.pipeline",
    "evaluate": "ragmeter.targets.evaluate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BenchConfig",
    "ConfigError",
    "DataError",
    "EvalResult",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "LoadResult",
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
    "evaluate",
    "evaluate_generation",
    "evaluate_retrieval",
    "generate_testset",
    "list_specs",
    "load_config",
    "load_samples",
    "make_judge",
    "parse_metric",
    "parse_metrics",
    "run_benchmark",
]
