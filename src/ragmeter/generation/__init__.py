"""Generation and answer metrics: judged metrics, lexical/semantic scores, the answer generator.

Public API::

    evaluate_generation(samples, metrics, judge=..., embedder=..., seed=...) -> EvalResult
    GeneratorClient(GeneratorConfig(...))   # writes answers; the tiers that use it (Tier 2
                                            # and Tier 3) live in ragmeter.tiers.generation

Imports are lazy so that ``import ragmeter.generation`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GeneratorClient", "GeneratorConfig", "evaluate_generation"]


def __getattr__(name: str) -> Any:
    if name == "evaluate_generation":
        from ragmeter.generation.evaluate import evaluate_generation

        return evaluate_generation
    if name in ("GeneratorClient", "GeneratorConfig"):
        from ragmeter.generation import client

        return getattr(client, name)
    raise AttributeError(f"module 'ragmeter.generation' has no attribute {name!r}")
