"""The scoring context handed to every generation-family ``compute``.

Family contract (lexical, semantic, judged, context_ids): ``spec.compute(metric, ctx) ->
MetricResult``. The context carries the samples, the seed, the dataset hash, the judge and an
embedder factory, and per-run state so that metrics sharing work do it once: ``judged`` (typed
state of the judge-call planner: one plan for all judged metrics), ``embedders`` (one embedder
per model name) and ``cache`` (memo of the lexical and semantic families, keyed by those
modules). It satisfies :class:`ragmeter.metrics.judged.state.JudgedContext`, what the judged
metrics read. ``missing_field`` (the one "is this input missing" rule) lives in
:mod:`ragmeter.metrics.inputs` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.judged.state import JudgedState
from ragmeter.results.records import Signature
from ragmeter.stats import DEFAULT_SEED


def _default_embedder_factory(name: str) -> Any:
    from ragmeter.retrieval.embedders import get_embedder

    return get_embedder(name)


@dataclass
class GenerationContext:
    """Inputs shared by the metrics of one :func:`evaluate_generation` run."""

    samples: Sequence[Sample]
    seed: int = DEFAULT_SEED
    judge: Any | None = None
    embedder_factory: Callable[[str], Any] = _default_embedder_factory
    language: str = "auto"
    keep_prompts: bool = False
    data_hash: str = ""
    outputs_hash: str = ""
    judged: JudgedState = field(default_factory=JudgedState)
    embedders: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from ragmeter.data.hashing import gold_hash, outputs_hash

        if not self.data_hash:  # gold fields only: a new system output keeps the dataset's identity
            self.data_hash = gold_hash(self.samples)
        if not self.outputs_hash:  # what the system produced, hashed apart from the gold data
            self.outputs_hash = outputs_hash(self.samples)

    def embedder(self, name: str) -> Any:
        if name not in self.embedders:
            self.embedders[name] = self.embedder_factory(name)
        return self.embedders[name]

    def embedder_at(self, name: str, **options: Any) -> Any:
        """An embedder built with backend options (an OpenAI-compatible endpoint's
        ``base_url`` and ``api_key_env``), one per name and options."""
        if not options:
            return self.embedder(name)
        key = name + "|" + "|".join(f"{k}={options[k]}" for k in sorted(options))
        if key not in self.embedders:
            from ragmeter.retrieval.embedders import get_embedder

            self.embedders[key] = get_embedder(name, **options)
        return self.embedders[key]

    def signature(self, metric: str, **extra: Any) -> Signature:
        return Signature.make(metric=metric, data=self.data_hash, outputs=self.outputs_hash,
                              seed=self.seed, **extra)


__all__ = ["GenerationContext", "missing_field"]
