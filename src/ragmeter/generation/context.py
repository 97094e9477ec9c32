"""The scoring context handed to every generation-family ``compute``.

Family contract (lexical, semantic, judged, context_ids): ``spec.compute(metric, ctx) ->
MetricResult``. The context carries the samples, the seed, the dataset hash, the judge and an
embedder factory, and per-run state so that metrics sharing work do it once: ``judged`` (typed
state of the judge-call planner: one plan for all judged metrics), ``embedders`` (one embedder
per model name) and ``cache`` (memo of the lexical and semantic families, keyed by those
modules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.generation.judgement import JudgedState
from ragmeter.results.records import SampleScore, Signature
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

    def signature(self, metric: str, **extra: Any) -> Signature:
        return Signature.make(metric=metric, data=self.data_hash, outputs=self.outputs_hash,
                              seed=self.seed, **extra)


def missing_field(sample: Sample, names: Sequence[str]) -> str | None:
    """Why a sample cannot be scored for lack of input, or ``None``.

    ``missing_field:<name>`` when a required field is absent (``None``) or an empty list;
    ``empty_input`` when it is present but blank (no judge call is made for it).
    """
    for name in names:
        value = getattr(sample, name)
        if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
            return f"missing_field:{name}"
    for name in names:
        value = getattr(sample, name)
        if isinstance(value, str) and not value.strip():
            return "empty_input"
        if isinstance(value, (list, tuple)) and all(not str(v).strip() for v in value):
            return "empty_input"
    return None


def unscored(sample: Sample, reason: str, details: dict[str, Any] | None = None) -> SampleScore:
    return SampleScore(sample.id, None, reason, details)
