"""``ragmeter.evaluate(evalset, target=..., metrics=[...])``: call the user's system on every
question, then score what it returned.

The target is asked through its ``answer`` entry (or ``retrieve`` when it has only that);
the samples get ``response`` / ``retrieved_contexts`` / ``retrieved_ids`` and are scored with
:func:`~ragmeter.retrieval.evaluate.evaluate_retrieval` (retrieval metrics, samples with gold
ids) and :func:`~ragmeter.generation.evaluate.evaluate_generation` (answer metrics); the
target's latency metrics (:mod:`ragmeter.targets.latency`) join the same result. A sample whose
call failed is unscored in every metric with the call's reason. Every signature carries the
target's (kind, URL without credentials, version, config hash).

``evaluate_retrieval`` lives with the retrieval tier (a floor above this package); it is
imported inside :func:`evaluate`, the one front-door verb that needs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.metrics.registry import parse_metric
from ragmeter.results.records import EvalResult
from ragmeter.targets.conformance import chunk_level_metrics, doc_level, known_ids
from ragmeter.targets.fill import mark_unscored
from ragmeter.targets.session import TargetSession


def _samples(evalset: Any) -> list[Sample]:
    if isinstance(evalset, (str, Path)):
        from ragmeter.data.loaders import load_samples

        return list(load_samples(evalset).samples)
    items = list(evalset)
    if items and not isinstance(items[0], Sample):
        from ragmeter.data.loaders import from_records

        return list(from_records(items).samples)
    return items


def _split(metrics: Sequence[str] | None) -> tuple[list[str] | None, list[str] | None]:
    """(retrieval metrics, answer metrics); None = that side's defaults."""
    if metrics is None:
        return None, None
    ret: list[str] = []
    gen: list[str] = []
    for m in metrics:
        fam = parse_metric(m).spec.family
        (ret if fam == "retrieval" else gen).append(str(m))
    return ret, gen


def evaluate(evalset: Any, target: Any, metrics: Sequence[str] | None = None, *,
             judge: Any | None = None, k: int | None = None, mode: str = "live",
             store: str | Path | None = None, record: bool = True, seed: int = 42,
             name: str | None = None, latency: bool = True,
             base_dir: str | Path = ".") -> EvalResult:
    """Call ``target`` for every sample of ``evalset`` and score the replies.

    ``evalset``: a samples / evalset file, or loaded samples (or dicts). ``target``: any
    callable (``fn(question) -> answer or dict``), ``module:function``, a target config
    mapping or file, or a :class:`TargetSession`. ``metrics``: retrieval and answer metrics
    in one list (default: the retrieval defaults when the samples have gold ids — at document
    level when the target declares ``ids.from: doc_ids`` — plus the
    answer metrics that need no judge — and the judged ones with ``judge``). ``k``: how many
    contexts to ask for (sent as ``{k}``). ``mode``: live, replay or resume.
    """
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.retrieval.evaluate import DEFAULT_METRICS, evaluate_retrieval

    samples = _samples(evalset)
    if not samples:
        raise ConfigError("evalset", "has no samples")
    session = target if isinstance(target, TargetSession) else TargetSession(
        target, mode=mode, store=store, record=record, base_dir=base_dir)
    entry = "answer" if "answer" in session.target.entries() else "retrieve"
    ret_metrics, gen_metrics = _split(metrics)
    if ret_metrics is None and session.config.ids_from == "doc_ids":
        # the target ranks documents: the default retrieval metrics at document level
        ret_metrics = [doc_level(m) for m in DEFAULT_METRICS]
    scores_ids = any(s.gold_chunk_ids or s.gold_doc_ids for s in samples) and (
        ret_metrics is None or bool(ret_metrics))
    known = known_ids(samples, chunk_metrics=chunk_level_metrics(
        ret_metrics or DEFAULT_METRICS, samples)) if scores_ids else None
    filled = session.call(samples, entry, k=k, known=known)
    sig = session.signature_fields()
    out = EvalResult(name or session.name, meta={
        "n_samples": len(filled), "target": sig, "entry": entry,
        "target_calls": session.call_counts(),
        "samples": [s.to_dict() for s in filled]})
    gold = [s for s in filled if s.gold_chunk_ids or s.gold_doc_ids]
    if gold and (ret_metrics is None or ret_metrics):
        res = evaluate_retrieval(gold, metrics=ret_metrics or DEFAULT_METRICS, seed=seed,
                                 name=out.name)
        _merge(out, mark_unscored(res, gold), sig)
    if entry == "answer" and (gen_metrics is None or gen_metrics):
        res = evaluate_generation(filled, gen_metrics, judge=judge, seed=seed, name=out.name)
        _merge(out, mark_unscored(res, filled), sig)
        out.meta["generation"] = {k: v for k, v in res.meta.items() if k != "samples"}
    if latency:
        lat = session.latency(entry, seed=seed)
        if lat is not None:
            _merge(out, lat, {})
            if "warmup" in lat.meta:    # kept out of the percentiles, reported apart
                out.meta["latency_warmup"] = lat.meta["warmup"]
    return out


def _merge(out: EvalResult, part: EvalResult, sig: dict[str, str]) -> None:
    for r in part:
        if sig:
            r.signature = r.signature.with_fields(**sig)
        out.add(r)


__all__ = ["evaluate"]
