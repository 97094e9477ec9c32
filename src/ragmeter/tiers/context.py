"""What a tier gets besides its samples: :class:`TierContext` (config, seed, judges,
retrievers, the answer generator, live counters) and :class:`TierNotRunnable`.

A tier that cannot run here (no judge configured, no retriever, no labelled data) raises
:class:`TierNotRunnable` with the reason; the runner records the tier as *not run* and goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter.errors import RagmeterError

if TYPE_CHECKING:
    from ragmeter.data.sample import Sample
    from ragmeter.generation.client import GeneratorClient


class TierSettings(Protocol):
    """What a tier reads of its own entry in the benchmark config (the runner's
    ``TierConfig`` is one): the tier floor declares what it needs, the runner provides it."""

    @property
    def name(self) -> str: ...

    @property
    def judge(self) -> str | None: ...

    @property
    def judges(self) -> tuple[str, ...]: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...

    @property
    def retrievers(self) -> tuple[str, ...]: ...

    @property
    def options(self) -> Any: ...


class BenchSettings(Protocol):
    """What a tier reads of the benchmark config (the runner's ``BenchConfig`` is one): seed,
    cutoffs, the config's folder, corpus, embeddings, retrievers, the answer generator and
    the judges (``targets`` and ``target_mode`` are read when present)."""

    @property
    def seed(self) -> int: ...

    @property
    def k(self) -> tuple[int, ...]: ...

    @property
    def base_dir(self) -> Path: ...

    @property
    def corpus(self) -> Any: ...

    @property
    def embeddings(self) -> Sequence[Any]: ...

    @property
    def retrievers(self) -> Sequence[Any]: ...

    @property
    def generator(self) -> Any: ...

    @property
    def judges(self) -> Sequence[Any]: ...

    def judge_config(self, name: str | None) -> Any: ...


class TierNotRunnable(RagmeterError):
    """Raised by a tier when it cannot run here; the message is the reason."""


@dataclass
class TierStats:
    """Live counters shown in the progress display and stored with the tier."""

    llm_calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_replies(self, replies: Sequence[Any]) -> None:
        with self._lock:
            for r in replies:
                if getattr(r, "cached", False):
                    self.cached_calls += 1
                else:
                    self.llm_calls += 1
                self.tokens_in += int(getattr(r, "tokens_in", 0) or 0)
                self.tokens_out += int(getattr(r, "tokens_out", 0) or 0)
                self.cost += float(getattr(r, "cost", 0.0) or 0.0)
                if getattr(r, "reason", None) is not None:
                    self.errors += 1

    def merge(self, d: dict[str, Any]) -> None:
        with self._lock:
            for key in ("llm_calls", "cached_calls", "tokens_in", "tokens_out", "errors"):
                setattr(self, key, getattr(self, key) + int(d.get(key, 0)))
            self.cost += float(d.get("cost", 0.0))

    def to_dict(self) -> dict[str, Any]:
        return {"llm_calls": self.llm_calls, "cached_calls": self.cached_calls,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "cost": round(self.cost, 6), "errors": self.errors}


class CountingJudge:
    """Wraps a judge and counts calls, tokens, cost and unscored replies into a TierStats."""

    def __init__(self, inner: Any, stats: TierStats):
        self.inner = inner
        self.stats = stats

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def ask_many(self, requests: Sequence[Any]) -> list[Any]:
        replies = self.inner.ask_many(requests)
        self.stats.add_replies(replies)
        return list(replies)

    async def aask_many(self, requests: Sequence[Any]) -> list[Any]:
        replies = await self.inner.aask_many(requests)
        self.stats.add_replies(replies)
        return list(replies)


@dataclass
class TierContext:
    """Config, seed, judges, retrievers, counters and explorer notes of one tier's run."""

    config: BenchSettings
    tier: TierSettings
    dataset_hash: str
    all_samples: list[Sample]
    stats: TierStats = field(default_factory=TierStats)
    cache: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def annotate(self, sample_id: str, key: str, value: Any) -> None:
        """Attach data to a sample for the report's explorer (e.g. what a retriever found);
        saved with the batch, so it survives ``--resume``."""
        self.annotations.setdefault(sample_id, {})[key] = value

    def take_annotations(self) -> dict[str, dict[str, Any]]:
        out, self.annotations = self.annotations, {}
        return out

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def k(self) -> tuple[int, ...]:
        return self.config.k

    @property
    def options(self) -> Any:
        """The tier's validated options (its ``Options`` instance; a plug-in without one gets
        the config's mapping)."""
        return self.tier.options

    def option(self, key: str, default: Any = None) -> Any:
        """One option by name (for plug-ins; built-in tiers read their typed options)."""
        opts = self.tier.options
        value = opts.get(key) if isinstance(opts, dict) else getattr(opts, key, None)
        return default if value is None else value

    def path(self, value: str | None) -> Path | None:
        """A path option resolved against the config's folder."""
        if value is None:
            return None
        p = Path(str(value)).expanduser()
        return p if p.is_absolute() else self.config.base_dir / p

    # ------------------------------------------------------------------ judges
    def judge(self, name: str | None = None) -> Any:
        """The tier's judge (``tier.judge``, else the first configured), wrapped for counting."""
        name = name or self.tier.judge
        cfg = self.config.judge_config(name)
        if cfg is None:
            raise TierNotRunnable(f"tier '{self.tier.name}' needs a judge but none is configured "
                                  "(add one under 'judges')")
        key = f"judge:{cfg.name}"
        if key not in self.cache:
            from ragmeter.judges import make_judge

            self.cache[key] = CountingJudge(make_judge(cfg), self.stats)
        return self.cache[key]

    def optional_judge(self) -> Any | None:
        """The judge the tier names; else the first configured one when the tier's metrics
        need a judge (or it lists none); else None (only the metrics needing none run)."""
        if self.tier.judge is not None:
            return self.judge()
        if not self.config.judges:
            return None
        if self.tier.metrics:
            from ragmeter.metrics.registry import parse_metric

            if not any(parse_metric(m).spec.family == "judged" for m in self.tier.metrics):
                return None
        return self.judge()

    def uncached_judges(self) -> list[Any]:
        """The tier's judges (``tier.judges``, else all configured) with the persistent cache
        off, for measurements of fresh repeated calls."""
        from ragmeter.judges import make_judge

        names = self.tier.judges or tuple(j.name for j in self.config.judges)
        if not names:
            raise TierNotRunnable(f"tier '{self.tier.name}' needs judges but none is configured")
        out = []
        for name in names:
            cfg = self.config.judge_config(name)
            if cfg is None:
                raise TierNotRunnable(f"tier '{self.tier.name}': no judge named {name!r}")
            out.append(CountingJudge(make_judge(cfg.with_(no_cache=True)), self.stats))
        return out

    def generator(self) -> GeneratorClient | None:
        """A client for the configured answer ``generator`` (None when there is none)."""
        cfg = self.config.generator
        if cfg is None:
            return None
        if not cfg.base_url:
            raise TierNotRunnable("the generator must be an OpenAI-compatible endpoint "
                                  "(generator.base_url)")
        from ragmeter.generation.client import GeneratorClient, GeneratorConfig
        from ragmeter.judges import make_judge

        # the generator runs on the judge engine, counted: its calls, tokens and cost show in
        # the tier's stats like judge calls
        counted = CountingJudge(make_judge(cfg), self.stats)
        return GeneratorClient(GeneratorConfig(
            base_url=cfg.base_url, model=cfg.model or "model", api_key_env=cfg.api_key_env,
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed,
            timeout_s=cfg.timeout_s, max_concurrency=cfg.max_concurrency, retry=cfg.retry,
            language=cfg.language), judge=counted)

    # ------------------------------------------------------------------ corpus, retrieval
    def embedder_name(self, name: str | None = None) -> str | None:
        """The model of the embedding named ``name`` (default: the first configured)."""
        for e in self.config.embeddings:
            if name is None or e.name == name:
                return e.model
        return None

    def embedder(self, name: str | None = None) -> Any | None:
        """The embedding named ``name`` (default: the first configured) built with its
        ``options`` — an OpenAI-compatible endpoint's URL, dimensions and key variable —
        once per tier; None without one."""
        cfg = next((e for e in self.config.embeddings if name is None or e.name == name), None)
        if cfg is None:
            return None
        key = f"embedder:{cfg.name}"
        if key not in self.cache:
            from ragmeter.retrieval.embedders import get_embedder

            self.cache[key] = get_embedder(cfg.model, **dict(cfg.options))
        return self.cache[key]

    def embedders(self, default: str | None = None) -> ConfiguredEmbedders:
        """The answer metrics' embedder factory (``semantic_similarity``): a configured
        embedding — by its name or its model — is built with its options in every tier;
        ``default`` (an embedding's name) is the model of a bare ``semantic_similarity``."""
        return ConfiguredEmbedders(self, self.embedder_name(default))

    def chunks(self) -> list[Any]:
        if "chunks" not in self.cache:
            corpus = self.config.corpus
            if corpus is None:
                raise TierNotRunnable("no corpus configured (needed to build retrievers)")
            from ragmeter.retrieval.chunking import chunk_documents
            from ragmeter.retrieval.corpus import load_corpus

            docs = load_corpus(corpus.path)
            self.cache["chunks"] = list(chunk_documents(
                docs, chunk_size_chars=corpus.chunk_size_chars,
                overlap_chars=corpus.overlap_chars))
        return self.cache["chunks"]

    def retrievers(self) -> dict[str, Any]:
        """Indexed retrievers named by the tier (default: all configured), built once."""
        wanted = self.tier.retrievers or tuple(r.name for r in self.config.retrievers)
        out = {}
        for name in wanted:
            key = f"retriever:{name}"
            if key not in self.cache:
                rc = next(r for r in self.config.retrievers if r.name == name)
                from ragmeter.retrieval.chunking import ChunkingParams
                from ragmeter.retrieval.retrievers import make_retriever

                emb = rc.embedding or (self.config.embeddings[0].name
                                       if self.config.embeddings else None)
                emb_model = self.embedder(emb) if rc.type != "bm25" and emb else None
                corpus = self.config.corpus
                chunking = None
                if corpus is not None:
                    chunking = ChunkingParams(chunk_size_chars=corpus.chunk_size_chars,
                                              overlap_chars=corpus.overlap_chars)
                retriever = make_retriever(rc.type, embedder=emb_model, chunking=chunking,
                                           **dict(rc.options))
                retriever.index(self.chunks())
                self.cache[key] = retriever
            out[name] = self.cache[key]
        return out


class ConfiguredEmbedders:
    """``name -> Embedder`` over a run's configured embeddings (see
    :meth:`TierContext.embedders`); ``default_model`` names a bare metric's model."""

    def __init__(self, ctx: TierContext, default_model: str | None):
        self.ctx = ctx
        self.default_model = default_model

    def __call__(self, name: str) -> Any:
        for e in self.ctx.config.embeddings:
            if name in (e.name, e.model):
                return self.ctx.embedder(e.name)
        from ragmeter.retrieval.embedders import get_embedder

        return get_embedder(name)


__all__ = ["BenchSettings", "ConfiguredEmbedders", "CountingJudge", "TierContext",
           "TierNotRunnable", "TierSettings", "TierStats"]
