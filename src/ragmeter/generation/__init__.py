"""Generation and answer metrics (Tiers 2–3): judged metrics, lexical/semantic scores, tiers.

Public API::

    evaluate_generation(samples, metrics, judge=..., embedder=..., seed=...) -> EvalResult
    run_tier2(samples, GeneratorClient(GeneratorConfig(...)), chunks=..., ...) -> EvalResult
    run_tier3(samples, client, retriever, chunks, k=5, ...) -> EvalResult

Imports are lazy so that ``import ragmeter.generation`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GeneratorClient", "GeneratorConfig", "evaluate_generation", "run_tier2",
           "run_tier3"]


def __getattr__(name: str) -> Any:
    if name == "evaluate_generation":
        from ragmeter.generation.evaluate import evaluate_generation

        return evaluate_generation
    if name in ("run_tier2", "run_tier3"):
        from ragmeter.generation import tiers

        return getattr(tiers, name)
    if name in ("GeneratorClient", "GeneratorConfig"):
        from ragmeter.generation import client

        return getattr(client, name)
    raise AttributeError(f"module 'ragmeter.generation' has no attribute {name!r}")
