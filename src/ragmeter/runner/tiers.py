"""Tier plug-ins: a tier name maps to an adapter that calls that tier's Python API.

An adapter is ``fn(ctx: TierContext, samples: list[Sample]) -> EvalResult | list[EvalResult]``.
A *per-sample* adapter is called batch by batch and must return results aligned with the
samples it was given (the runner records every finished batch and merges them, which makes
runs resumable); a *whole-dataset* adapter (cluster metrics, judge agreement) is called once.

An adapter that cannot run raises :class:`TierNotRunnable` with the reason (no judge
configured, no retriever, no labelled data); a missing module or extra is turned into the same
thing by the runner. Either way the tier is recorded as *not run* and the run goes on.

User plug-ins: ``plugins: {my_tier: "pkg.module:function"}`` (or ``"file.py:function"``
relative to the config). The function is a per-sample adapter unless it has an attribute
``per_sample = False``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, RagmeterError
from ragmeter.results.records import EvalResult
from ragmeter.runner.config import BenchConfig, TierConfig

Adapter = Callable[["TierContext", list[Sample]], "EvalResult | list[EvalResult]"]


class TierNotRunnable(RagmeterError):
    """Raised by an adapter when its tier cannot run here; the message is the reason."""


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
    """What an adapter gets besides its samples: config, seed, judges, retrievers, counters."""

    config: BenchConfig
    tier: TierConfig
    dataset_hash: str
    all_samples: list[Sample]
    stats: TierStats = field(default_factory=TierStats)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def k(self) -> tuple[int, ...]:
        return self.config.k

    def option(self, key: str, default: Any = None) -> Any:
        return self.tier.options.get(key, default)

    def judge(self, name: str | None = None) -> Any:
        """The tier's judge (``tier.judge``, else the first configured), wrapped for counting."""
        name = name or self.tier.judge
        cfg = self.config.judge_config(name)
        if cfg is None:
            raise TierNotRunnable(f"tier '{self.tier.name}' needs a judge but none is configured "
                                  "(add one under 'judges')")
        key = f"judge:{cfg.name}"
        if key not in self.cache:
            from ragmeter.judges import make_judge  # type: ignore[attr-defined]

            self.cache[key] = CountingJudge(make_judge(cfg), self.stats)
        return self.cache[key]

    def judges(self) -> list[Any]:
        names = self.tier.judges or tuple(j.name for j in self.config.judges)
        if not names:
            raise TierNotRunnable(f"tier '{self.tier.name}' needs judges but none is configured")
        return [self.judge(n) for n in names]

    def generator(self) -> Any | None:
        if self.config.generator is None:
            return None
        if "generator" not in self.cache:
            from ragmeter.judges import make_judge  # type: ignore[attr-defined]

            self.cache["generator"] = CountingJudge(make_judge(self.config.generator), self.stats)
        return self.cache["generator"]

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
        return self.cache["chunks"]  # type: ignore[no-any-return]

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
                emb_model = next((e.model for e in self.config.embeddings if e.name == emb),
                                 None)
                corpus = self.config.corpus
                chunking = None
                if corpus is not None:
                    chunking = _call(ChunkingParams, chunk_size_chars=corpus.chunk_size_chars,
                                     overlap_chars=corpus.overlap_chars)
                opts = dict(rc.options)
                retriever = _call(make_retriever, rc.type, embedder=emb_model,
                                  chunking=chunking, **opts)
                retriever.index(self.chunks())
                self.cache[key] = retriever
            out[name] = self.cache[key]
        return out


@dataclass(frozen=True)
class TierAdapter:
    name: str
    run: Adapter
    per_sample: bool = True
    doc: str = ""


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with only the keyword arguments it accepts (tier APIs differ in options)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params})


def _as_list(res: Any) -> list[EvalResult]:
    if isinstance(res, EvalResult):
        return [res]
    if isinstance(res, dict):
        return [r for r in res.values() if isinstance(r, EvalResult)]
    return [r for r in res if isinstance(r, EvalResult)]


# --------------------------------------------------------------------------- built-ins
def _default_retrieval_metrics(ks: Sequence[int]) -> list[str]:
    out = []
    for k in ks:
        out += [f"hit_rate@{k}", f"hit_rate@{k}(level=doc)", f"recall@{k}", f"ndcg@{k}"]
    return [*out, "mrr"]


def run_retrieval(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    from ragmeter.tiers.retrieval_eval import evaluate_retrieval  # type: ignore[import-not-found]

    metrics = list(ctx.tier.metrics) or _default_retrieval_metrics(ctx.k)
    common = dict(metrics=metrics, ties=ctx.option("ties", "first"), seed=ctx.seed,
                  dataset_hash=ctx.dataset_hash)
    if ctx.config.retrievers:
        from ragmeter.retrieval.run import retrieve_samples

        depth = max(ctx.k)
        out = []
        for name, retriever in ctx.retrievers().items():
            filled = retrieve_samples(retriever, samples, depth)
            sig = getattr(retriever, "signature_fields", None)
            extra = dict(sig()) if callable(sig) else {}
            out.append(_call(evaluate_retrieval, filled, name=name, extra_signature=extra,
                             **common))
        return out
    if not any(s.retrieved_ids for s in samples):
        raise TierNotRunnable("no retrievers configured and the dataset has no retrieved_ids")
    return _as_list(_call(evaluate_retrieval, samples, name="retrieval", **common))


def _generation(which: str) -> Adapter:
    def run(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
        judge = ctx.judge()
        gen = importlib.import_module("ragmeter.generation.tiers")
        fn = getattr(gen, "run_tier2" if which == "generation" else "run_tier3")
        kwargs: dict[str, Any] = dict(judge=judge, seed=ctx.seed, dataset_hash=ctx.dataset_hash,
                                      generator=ctx.generator(), **dict(ctx.tier.options))
        if ctx.tier.metrics:
            kwargs["metrics"] = list(ctx.tier.metrics)
        return _as_list(_call(fn, samples, **kwargs))

    run.__name__ = f"run_{which}"
    return run


def _module_tier(module: str, candidates: Sequence[str], *, needs_judge: bool) -> Adapter:
    """Adapter for tiers whose module exposes one entry point taking samples (and a judge)."""

    def run(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
        mod = importlib.import_module(f"ragmeter.tiers.{module}")
        fn = next((getattr(mod, c) for c in candidates if callable(getattr(mod, c, None))), None)
        if fn is None:
            raise TierNotRunnable(f"ragmeter.tiers.{module} has no entry point "
                                  f"({' / '.join(candidates)})")
        kwargs: dict[str, Any] = dict(seed=ctx.seed, dataset_hash=ctx.dataset_hash,
                                      **dict(ctx.tier.options))
        if needs_judge:
            kwargs["judge"] = ctx.judge()
            if ctx.tier.judges:
                kwargs["judges"] = ctx.judges()
        if ctx.tier.metrics:
            kwargs["metrics"] = list(ctx.tier.metrics)
        return _as_list(_call(fn, samples, **kwargs))

    run.__name__ = f"run_{module}"
    return run


def run_tier0(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    from ragmeter.tiers import tier0

    source = ctx.option("labelled_texts")
    if source:
        path = Path(source)
        data = tier0.load_labelled_texts(path if path.is_absolute() else ctx.config.base_dir / path)
    else:
        chunks = ctx.chunks()
        data = tier0.LabelledTexts([c.text for c in chunks], [c.doc_id for c in chunks],
                                   [c.chunk_id for c in chunks], "corpus")
    models = [e.model for e in ctx.config.embeddings]
    if not models:
        raise TierNotRunnable("tier0 needs at least one entry under 'embeddings'")
    return tier0.evaluate_embedding_quality(data, models)


BUILTIN: dict[str, TierAdapter] = {
    "tier0": TierAdapter("tier0", run_tier0, per_sample=False,
                         doc="embedding cluster quality of the corpus chunks"),
    "retrieval": TierAdapter("retrieval", run_retrieval, doc="retrieval metrics per retriever"),
    "generation": TierAdapter("generation", _generation("generation"),
                              doc="Tier 2: generation quality with an LLM judge"),
    "e2e": TierAdapter("e2e", _generation("e2e"), doc="Tier 3: end-to-end answer quality"),
    "judge_quality": TierAdapter("judge_quality", _module_tier(
        "judge_quality", ("evaluate_judge_quality", "run_judge_quality", "run"),
        needs_judge=True), per_sample=False, doc="judge consistency and agreement"),
    "judge_pipeline": TierAdapter("judge_pipeline", _module_tier(
        "judge_pipeline", ("evaluate_judge_pipeline", "run_judge_pipeline", "run"),
        needs_judge=False), per_sample=False, doc="production judge accuracy / P / R / F1"),
    "ux": TierAdapter("ux", _module_tier("ux", ("evaluate_ux", "run_ux", "run"),
                                         needs_judge=False), per_sample=False,
                      doc="cache hit rate, context preservation, multi-turn consistency"),
    "real_users": TierAdapter("real_users", _module_tier(
        "real_users", ("evaluate_real_users", "run_real_users", "run"), needs_judge=False),
        per_sample=False, doc="metrics from real user logs"),
}


def load_plugin(name: str, target: str, base_dir: Path) -> TierAdapter:
    """Import ``module:function`` or ``path/file.py:function`` as a tier adapter."""
    mod_name, _, fn_name = target.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            path = path if path.is_absolute() else base_dir / path
            spec = importlib.util.spec_from_file_location(f"ragmeter_plugin_{name}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise ConfigError(f"plugins.{name}", f"cannot load plugin file {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ConfigError(f"plugins.{name}", f"cannot import {mod_name!r}: {exc}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ConfigError(f"plugins.{name}", f"{mod_name!r} has no function {fn_name!r}")
    return TierAdapter(name, fn, per_sample=bool(getattr(fn, "per_sample", True)),
                       doc=(fn.__doc__ or "").strip().split("\n")[0])


def resolve_adapters(config: BenchConfig) -> dict[str, TierAdapter]:
    """Adapters for every tier of the config (built-ins and plug-ins)."""
    out: dict[str, TierAdapter] = {}
    for t in config.tiers:
        if t.name in BUILTIN:
            out[t.name] = BUILTIN[t.name]
        else:
            out[t.name] = load_plugin(t.name, config.plugins[t.name], config.base_dir)
    return out
