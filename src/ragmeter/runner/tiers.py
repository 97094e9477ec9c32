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
            from ragmeter.judges import make_judge

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
            from ragmeter.judges import make_judge

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
    from ragmeter.tiers.retrieval_eval import evaluate_retrieval

    metrics = list(ctx.tier.metrics) or _default_retrieval_metrics(ctx.k)
    common: dict[str, Any] = dict(metrics=metrics, seed=ctx.seed,
                                  dataset_hash=ctx.dataset_hash, **dict(ctx.tier.options))
    if ctx.config.retrievers:
        from ragmeter.retrieval.run import retrieve_samples

        depth = max(ctx.k)
        out = []
        for name, retriever in ctx.retrievers().items():
            filled = retrieve_samples(retriever, samples, depth)
            for s in filled:
                ctx.annotate(s.id, f"retrieved:{name}", {
                    "ids": list(s.retrieved_ids or [])[:depth],
                    "contexts": list(s.retrieved_contexts or [])[:5]})
            sig = getattr(retriever, "signature_fields", None)
            extra = dict(sig()) if callable(sig) else {}
            out.append(_call(evaluate_retrieval, filled, name=name, extra_signature=extra,
                             **common))
        return out
    if not any(s.retrieved_ids for s in samples):
        raise TierNotRunnable("no retrievers configured and the dataset has no retrieved_ids")
    return _as_list(_call(evaluate_retrieval, samples, name="retrieval", **common))


def _generator_client(ctx: TierContext) -> Any:
    """A fresh GeneratorClient for the configured ``generator`` (None when not configured)."""
    cfg = ctx.config.generator
    if cfg is None:
        return None
    if not cfg.base_url:
        raise TierNotRunnable("the generator must be an OpenAI-compatible endpoint "
                              "(generator.base_url)")
    from ragmeter.generation.client import GeneratorClient, GeneratorConfig

    gen_cfg = _call(GeneratorConfig, base_url=cfg.base_url, model=cfg.model or "model",
                    api_key_env=cfg.api_key_env, temperature=cfg.temperature,
                    max_tokens=cfg.max_tokens, seed=cfg.seed, timeout_s=cfg.timeout_s,
                    max_concurrency=cfg.max_concurrency, retry=cfg.retry,
                    language=cfg.language)
    # the counted generator judge: its calls show in the tier's stats like judge calls
    return GeneratorClient(gen_cfg, judge=ctx.generator())


def _embedder_name(ctx: TierContext) -> str | None:
    name = ctx.option("embedding")
    for e in ctx.config.embeddings:
        if name is None or e.name == name:
            return e.model
    return None


def _optional_judge(ctx: TierContext) -> Any | None:
    """The tier's judge: the one it names; else the first configured one when the tier's
    metrics need a judge (or it lists none); else None (only the metrics needing none run)."""
    if ctx.tier.judge is not None:
        return ctx.judge()
    if not ctx.config.judges:
        return None
    if ctx.tier.metrics:
        from ragmeter.metrics.registry import parse_metric

        if not any(parse_metric(m).spec.family == "judged" for m in ctx.tier.metrics):
            return None
    return ctx.judge()


def _with_contexts(samples: list[Sample], contexts: list[list[str] | None]) -> list[Sample]:
    import dataclasses

    return [s if s.retrieved_contexts or c is None else dataclasses.replace(s, retrieved_contexts=c)
            for s, c in zip(samples, contexts, strict=True)]


def _gold_contexts(ctx: TierContext, samples: list[Sample]) -> list[Sample]:
    """Tier 2 semantics for answers already in the dataset: a sample without
    ``retrieved_contexts`` is scored against its gold context (``reference_contexts``, else the
    texts of its ``gold_chunk_ids`` in the configured corpus)."""
    if all(s.retrieved_contexts for s in samples):
        return samples
    cmap = {c.chunk_id: c.text for c in ctx.chunks()} if ctx.config.corpus is not None else {}
    out: list[list[str] | None] = []
    for s in samples:
        if s.reference_contexts:
            out.append(list(s.reference_contexts))
        elif s.gold_chunk_ids and all(c in cmap for c in s.gold_chunk_ids):
            out.append([cmap[c] for c in s.gold_chunk_ids])
        else:
            out.append(None)
    return _with_contexts(samples, out)


def _retrieved_contexts(ctx: TierContext, samples: list[Sample]) -> list[Sample]:
    """Tier 3 semantics for answers already in the dataset: a sample without
    ``retrieved_contexts`` gets the top-k (``options.k``, default 5) of the tier's first
    retriever."""
    if all(s.retrieved_contexts for s in samples) or not ctx.config.retrievers:
        return samples
    from ragmeter.retrieval.run import retrieve_samples

    name, retriever = next(iter(ctx.retrievers().items()))
    k = int(ctx.option("k", min(5, max(ctx.k))))
    filled = retrieve_samples(retriever, samples, k)
    for s in filled:
        ctx.annotate(s.id, f"e2e_contexts:{name}", {"ids": list(s.retrieved_ids or [])})
    return _with_contexts(samples, [list(s.retrieved_contexts or []) or None for s in filled])


def run_generation(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    """Tier 2. With a ``generator``: answer from the gold context, then score; without one:
    score the answers already in the dataset (``response``) against their gold context.
    Without a judge only the metrics that need none are computed."""
    judge = _optional_judge(ctx)
    metrics = list(ctx.tier.metrics) or None
    client = _generator_client(ctx)
    if client is not None:
        from ragmeter.generation.tiers import run_tier2

        chunks = ctx.chunks() if ctx.config.corpus is not None else None
        return _as_list(_call(run_tier2, samples, client, chunks=chunks, metrics=metrics,
                              judge=judge, embedder=_embedder_name(ctx), seed=ctx.seed,
                              **dict(ctx.tier.options)))
    if not any(s.response for s in samples):
        raise TierNotRunnable("no generator configured and the dataset has no answers "
                              "('response'); add a 'generator' endpoint")
    from ragmeter.generation.evaluate import evaluate_generation

    return _as_list(_call(evaluate_generation, _gold_contexts(ctx, samples), metrics,
                          judge=judge, embedder=_embedder_name(ctx), seed=ctx.seed,
                          name="generation", **dict(ctx.tier.options)))


def run_e2e(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    """Tier 3: retrieve with each configured retriever, generate, score (one result per
    retriever); without a generator, score the bot's own answers in the dataset (samples
    without contexts get the first retriever's top-k)."""
    judge = _optional_judge(ctx)
    metrics = list(ctx.tier.metrics) or None
    if ctx.config.generator is not None:
        if not ctx.config.retrievers:
            raise TierNotRunnable("e2e with a generator needs at least one retriever")
        from ragmeter.generation.tiers import run_tier3

        k = int(ctx.option("k", min(5, max(ctx.k))))
        out = []
        for name, retriever in ctx.retrievers().items():
            res = _call(run_tier3, samples, _generator_client(ctx), retriever, ctx.chunks(),
                        k=k, metrics=metrics, judge=judge, embedder=_embedder_name(ctx),
                        seed=ctx.seed, **{k_: v for k_, v in ctx.tier.options.items()
                                          if k_ != "k"})
            res.name = name
            out.append(res)
        return out
    if not any(s.response for s in samples):
        raise TierNotRunnable("no generator configured and the dataset has no answers")
    from ragmeter.generation.evaluate import evaluate_generation

    return _as_list(_call(evaluate_generation, _retrieved_contexts(ctx, samples), metrics,
                          judge=judge, embedder=_embedder_name(ctx), seed=ctx.seed, name="e2e",
                          **{k_: v for k_, v in ctx.tier.options.items() if k_ != "k"}))


def _uncached_judges(ctx: TierContext) -> list[Any]:
    """The tier's judges built with the persistent cache off: judge quality must measure fresh
    repeated calls, never replies remembered from an earlier run."""
    from ragmeter.judges import make_judge

    names = ctx.tier.judges or tuple(j.name for j in ctx.config.judges)
    if not names:
        raise TierNotRunnable(f"tier '{ctx.tier.name}' needs judges but none is configured")
    out = []
    for name in names:
        cfg = ctx.config.judge_config(name)
        if cfg is None:
            raise TierNotRunnable(f"tier '{ctx.tier.name}': no judge named {name!r}")
        out.append(CountingJudge(make_judge(cfg.with_(no_cache=True)), ctx.stats))
    return out


def run_judge_quality(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    from ragmeter.tiers.judge_quality import evaluate_judge_quality

    return _as_list(_call(evaluate_judge_quality, _gold_contexts(ctx, samples),
                          _uncached_judges(ctx), seed=ctx.seed,
                          dataset=ctx.dataset_hash, **dict(ctx.tier.options)))


def _opt_path(ctx: TierContext, key: str) -> Path | None:
    value = ctx.option(key)
    if value is None:
        return None
    p = Path(str(value)).expanduser()
    return p if p.is_absolute() else ctx.config.base_dir / p


def run_judge_pipeline(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    """Production judge: ``options.items`` (labelled items), ``options.prompt_template`` or
    ``options.prompt_template_file``; with ``judge`` set the judge is called, else the items'
    stored predictions are scored."""
    from ragmeter.tiers import judge_pipeline as jp

    items_path = _opt_path(ctx, "items")
    if items_path is None:
        raise TierNotRunnable("judge_pipeline needs options.items (labelled items file)")
    template = ctx.option("prompt_template")
    tfile = _opt_path(ctx, "prompt_template_file")
    if tfile is not None:
        template = tfile.read_text(encoding="utf-8")
    use_judge = ctx.tier.judge is not None
    items = jp.load_pipeline_items(items_path, need_predictions=not use_judge)
    return _as_list(jp.evaluate_judge_pipeline(
        items, judge=ctx.judge() if use_judge else None, prompt_template=template,
        seed=ctx.seed))


def run_ux(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    """UX: ``options.cache`` + ``options.queries`` and/or ``options.sessions`` files."""
    from ragmeter.tiers import ux

    cache, queries, sessions = (_opt_path(ctx, k) for k in ("cache", "queries", "sessions"))
    if cache is None and sessions is None:
        raise TierNotRunnable("ux needs options.cache + options.queries and/or "
                              "options.sessions")
    emb = _embedder_name(ctx)
    if emb is None:
        raise TierNotRunnable("ux needs an embedding model (add one under 'embeddings')")
    # multi-turn consistency asks the judge the tier names; without one, the judge-free
    # fallback (multi_turn_answer_similarity) is reported under its own name
    judge = ctx.judge() if ctx.tier.judge and sessions else None
    return _as_list(_call(
        ux.evaluate_ux, emb, cache=ux.load_questions(cache) if cache else None,
        queries=ux.load_questions(queries) if queries else None,
        sessions=ux.load_sessions(sessions) if sessions else None, judge=judge,
        seed=ctx.seed, **{k: v for k, v in ctx.tier.options.items()
                          if k not in ("cache", "queries", "sessions", "embedding")}))


def run_real_users(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    """Real users: logged questions from a database whose URL is in the environment variable
    ``options.db_url_env`` (never in the config), mapped to the corpus by URL."""
    import os

    from ragmeter.tiers.real_users import evaluate_real_users

    if ctx.config.corpus is None:
        raise TierNotRunnable("real_users needs a corpus (documents with a 'url')")
    env = ctx.option("db_url_env", "RAGMETER_LOGS_DB_URL")
    url = os.environ.get(str(env))
    if not url:
        raise TierNotRunnable(f"real_users needs the log database URL in ${env}")
    query = None
    if ctx.option("query"):
        from ragmeter.data.sql import LogQuery

        query = _call(LogQuery, **dict(ctx.option("query")))
    retriever = ctx.option("retriever", "bm25")
    return _as_list(_call(evaluate_real_users, ctx.config.corpus.path, db_url=url, query=query,
                          retriever=retriever, k=int(ctx.option("k", max(ctx.k))),
                          embedder=_embedder_name(ctx), seed=ctx.seed))


def run_tier0(ctx: TierContext, samples: list[Sample]) -> list[EvalResult]:
    from ragmeter.tiers import tier0

    source = ctx.option("labelled_texts")
    if source:
        path = Path(source)
        data = tier0.load_labelled_texts(path if path.is_absolute() else ctx.config.base_dir / path,
                                         label_field=ctx.option("label_field"))
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
    "generation": TierAdapter("generation", run_generation,
                              doc="Tier 2: generation quality with an LLM judge"),
    "e2e": TierAdapter("e2e", run_e2e, doc="Tier 3: end-to-end answer quality"),
    "judge_quality": TierAdapter("judge_quality", run_judge_quality, per_sample=False,
                                 doc="judge consistency and agreement"),
    "judge_pipeline": TierAdapter("judge_pipeline", run_judge_pipeline, per_sample=False,
                                  doc="production judge accuracy / P / R / F1"),
    "ux": TierAdapter("ux", run_ux, per_sample=False,
                      doc="cache hit rate, context preservation, multi-turn consistency"),
    "real_users": TierAdapter("real_users", run_real_users, per_sample=False,
                              doc="retrieval metrics on real users' logged questions"),
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
