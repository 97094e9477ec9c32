"""Tier 1: retrieval evaluation end to end → :class:`EvalResult` with per-query values.

Two input modes:

* **samples** — rankings from ``Sample.retrieved_ids`` in list order (or from ``run`` when one is
  given, ranked by the tie policy); gold from ``gold_chunk_ids`` (``level=chunk``) or
  ``gold_doc_ids`` (``level=doc``; derived from the gold chunks' parents when absent), grades from
  ``gold_grades`` (default 1). ``match="text"`` compares ``retrieved_contexts`` with
  ``reference_contexts`` (see :mod:`ragmeter.tiers.relevance`).
* **qrels/run** — ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}``.

Policies (visible in ``counts`` and in every signature):

* ``missing_from_run``: a gold query the system returned nothing for (no run entry, or
  ``retrieved_ids`` absent) scores 0 on every metric and is counted.
* ``no_relevant``: a query whose gold list is empty (no grade > 0) is excluded and counted.
* ``not_in_qrels``: run queries without gold are ignored and counted.
* ``negative``: negative questions are excluded from ranking metrics and reported on their own
  (``negative_top_score``; ``negative_false_retrieval(threshold=t)`` when ``score_threshold``).
* ``missing_gold``: a sample without the gold field a metric needs is unscored with reason
  ``missing_field:<name>`` (kept, counted in ``n_unscored``; never 0). At chunk level, empty
  ``gold_chunk_ids`` next to non-empty ``gold_doc_ids`` means "chunk gold unknown" (evalset format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ragmeter.data.hashing import gold_hash, pairs_hash
from ragmeter.data.sample import Sample
from ragmeter.data.trec import Qrels, Run
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.metrics.registry import Metric, parse_metric, parse_metrics
from ragmeter.metrics.retrieval import NEGATIVE_METRICS, RANKING_METRICS, RankArrays
from ragmeter.results.records import IMPLICIT_COUNT, EvalResult, MetricResult, Signature
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier
from ragmeter.tiers.relevance import (
    arrays_from_lists,
    arrays_from_run,
    arrays_from_texts,
    check_ties,
    positive_judgments,
    rank_docs,
    resolve_doc_of,
)

DEFAULT_METRICS: tuple[str, ...] = (
    "hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "recall@5", "recall@10",
    "precision@5", "precision@10", "ndcg@5", "ndcg@10", "map",
)
MATCHES = ("id", "text")
@dataclass
class _Population:
    """Queries one level/match scores: arrays for the scored ones, reasons for the unscored."""

    ids: list[str]
    arrays: RankArrays
    unscored: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _grades(ids: Sequence[str] | None, grades: Mapping[str, int] | None,
            unit: Callable[[str], str] | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in ids or ():
        g = (grades or {}).get(x, 1)
        u = unit(x) if unit is not None else x
        out[u] = max(out.get(u, 0), g)
    return out


def _gold_hash_samples(samples: Sequence[Sample]) -> str:
    return gold_hash(samples)


class _SamplesSource:
    """Builds populations from samples (optionally with a separate run)."""

    def __init__(self, samples: Sequence[Sample], run: Run | None, ties: str,
                 doc_of: Callable[[str], str]):
        self.samples = [s for s in samples if not s.is_negative]
        self.negatives = [s for s in samples if s.is_negative]
        self.run = run
        self.ties = ties
        self.doc_of = doc_of
        known = {s.id for s in samples}
        self.not_in_qrels = 0 if run is None else sum(1 for q in run if q not in known)

    def ranking(self, s: Sample) -> list[str] | None:
        if self.run is not None:
            docs = self.run.get(s.id)
            return rank_docs(docs, self.ties) if docs is not None else None
        return s.retrieved_ids

    def top_score(self, s: Sample) -> tuple[float | None, str | None]:
        """Top-1 score of a (negative) sample, or the reason there is none."""
        if self.run is not None:
            docs = self.run.get(s.id)
            if docs is None:
                return None, "missing_field:retrieved_scores"
            return (max(docs.values()), None) if docs else (None, "empty_input")
        if s.retrieved_scores is None:
            return None, "missing_field:retrieved_scores"
        return (s.retrieved_scores[0], None) if s.retrieved_scores else (None, "empty_input")

    def population(self, level: str, match: str) -> _Population:
        scored: list[Sample] = []
        unscored: list[tuple[str, str]] = []
        golds: list[Any] = []
        no_relevant = 0
        for s in self.samples:
            if match == "text":
                gold: Any = s.reference_contexts
                missing = "missing_field:reference_contexts"
                empty = gold is not None and not any(t.strip() for t in gold)
            elif level == "chunk":
                unknown = s.gold_chunk_ids is None or (not s.gold_chunk_ids and bool(s.gold_doc_ids))
                gold = None if unknown else _grades(s.gold_chunk_ids, s.gold_grades)
                missing = "missing_field:gold_chunk_ids"
                empty = gold is not None and not any(g > 0 for g in gold.values())
            else:
                if s.gold_doc_ids is not None:
                    gold = _grades(s.gold_doc_ids, s.gold_grades)
                elif s.gold_chunk_ids is not None:
                    gold = _grades(s.gold_chunk_ids, s.gold_grades, self.doc_of)
                else:
                    gold = None
                missing = "missing_field:gold_doc_ids"
                empty = gold is not None and not any(g > 0 for g in gold.values())
            if gold is None:
                unscored.append((s.id, missing))
                continue
            if empty:
                no_relevant += 1
                continue
            scored.append(s)
            golds.append(gold)
        missing_from_run = 0
        if match == "text":
            texts = []
            for s in scored:
                if s.retrieved_contexts is None:
                    missing_from_run += 1
                texts.append(s.retrieved_contexts)
            arrays = arrays_from_texts(texts, golds)
        else:
            rankings = []
            for s in scored:
                r = self.ranking(s)
                if r is None:
                    missing_from_run += 1
                rankings.append(r)
            arrays = arrays_from_lists(rankings, golds, self.doc_of if level == "doc" else None)
        counts = {"missing_from_run": missing_from_run, "no_relevant": no_relevant,
                  "negative": len(self.negatives), "not_in_qrels": self.not_in_qrels,
                  "missing_gold": len(unscored)}
        return _Population([s.id for s in scored], arrays, unscored, counts)


class _QrelsSource:
    """Builds populations from qrels and a run."""

    def __init__(self, qrels: Qrels, run: Run, ties: str, doc_of: Callable[[str], str]):
        self.qrels, self.run, self.ties, self.doc_of = qrels, run, ties, doc_of
        self.judged = positive_judgments(qrels)
        self.qids = self.judged.qids
        self.no_relevant = self.judged.n_no_relevant
        self.not_in_qrels = len(run.keys() - qrels.keys())

    def population(self, level: str, match: str) -> _Population:
        if match == "text":
            raise ConfigError("match", "text matching needs samples with retrieved_contexts and "
                                       "reference_contexts, not qrels/run", list(MATCHES))
        if level == "chunk":
            arrays = arrays_from_run(self.judged, self.run, self.ties)
        else:
            golds = [_grades(list(self.qrels[q]), self.qrels[q], self.doc_of) for q in self.qids]
            rankings = [rank_docs(self.run[q], self.ties) if q in self.run else None
                        for q in self.qids]
            arrays = arrays_from_lists(rankings, golds, self.doc_of)
        missing = int(np.count_nonzero(arrays.n_ret == 0))  # no run entry or an empty one
        counts = {"missing_from_run": missing, "no_relevant": self.no_relevant,
                  "not_in_qrels": self.not_in_qrels}
        return _Population(list(self.qids), arrays, [], counts)


def _check_unique_ids(samples: Sequence[Sample]) -> None:
    seen: dict[str, int] = {}
    problems = []
    for i, s in enumerate(samples):
        if s.id in seen:
            problems.append(RecordProblem("<samples>", None, "id",
                                          f"duplicate sample id '{s.id}' (items {seen[s.id]} "
                                          f"and {i})"))
        else:
            seen[s.id] = i
    if problems:
        raise DataError(problems)


def _metric_result(metric: Metric, ids: list[str], values: np.ndarray,
                   unscored: list[tuple[str, str]], sig: Signature, counts: dict[str, int],
                   seed: int) -> MetricResult:
    all_ids = ids + [sid for sid, _ in unscored]
    vals = np.concatenate([values, np.full(len(unscored), np.nan)])
    reasons = {len(ids) + i: reason for i, (_, reason) in enumerate(unscored)}
    return MetricResult(str(metric), all_ids, vals, sig, reasons=reasons, counts=dict(counts),
                        higher_is_better=metric.spec.higher_is_better, seed=seed)


def evaluate_retrieval(
    samples: Sequence[Sample] | None = None,
    *,
    qrels: Qrels | None = None,
    run: Run | None = None,
    metrics: Sequence[str | Metric] = DEFAULT_METRICS,
    ties: str = "stable",
    match: str = "id",
    seed: int = 42,
    name: str = "run",
    doc_of: Callable[[str], str] | Mapping[str, str] | None = None,
    score_threshold: float | None = None,
    dataset_hash: str | None = None,
    extra_signature: Mapping[str, Any] | None = None,
) -> EvalResult:
    """Evaluate retrieval; one :class:`MetricResult` per metric, per-query values kept.

    Give ``samples`` (optionally with a ``run`` that replaces their ``retrieved_ids``) or
    ``qrels`` and ``run``. ``score_threshold`` adds ``negative_false_retrieval(threshold=t)``.
    """
    check_ties(ties)
    if match not in MATCHES:
        raise ConfigError("match", f"unknown match mode '{match}'", list(MATCHES))
    parsed = parse_metrics(metrics)
    for m in parsed:
        if m.spec.family != "retrieval":
            raise ConfigError("metrics", f"'{m}' is not a retrieval metric")
        if match == "text" and m.name in RANKING_METRICS and m.get("level") == "doc":
            raise ConfigError("match", f"'{m}': level=doc needs id matching")
    unit = resolve_doc_of(doc_of)
    source: _SamplesSource | _QrelsSource
    if samples is not None:
        if qrels is not None:
            raise ConfigError("qrels", "give either samples or qrels, not both")
        _check_unique_ids(samples)
        if samples and run is None and all(
                s.retrieved_ids is None and (match != "text" or s.retrieved_contexts is None)
                for s in samples):
            # no ranking at all (the field is absent everywhere; an empty list is a ranking that
            # found nothing) would score every query 0: a table of zeros, not a measurement
            field = "retrieved_contexts" if match == "text" else "retrieved_ids"
            raise DataError(
                RecordProblem("<samples>", None, field,
                              f"no sample has {field}: there is no ranking to evaluate"),
                hint="pass run=load_run(...) or add retrieved_ids to the records; a query "
                     "missing from a ranking that has others scores 0 and is counted")
        source = _SamplesSource(samples, run, ties, unit)
        data = dataset_hash or _gold_hash_samples(samples)
        ranking = "score" if run is not None else "list"
    elif qrels is not None and run is not None:
        source = _QrelsSource(qrels, run, ties, unit)
        data = dataset_hash or pairs_hash(qrels)
        ranking = "score"
    else:
        raise ConfigError("samples", "give samples, or both qrels and run")
    extra = dict(extra_signature or {})
    policy = {"ties": ties if ranking == "score" else "list-order", "match": match,
              "rel": "grade>0", "missing": "zero", "data": data, "seed": seed}
    result = EvalResult(name, meta={
        "tier": "retrieval", "mode": "samples" if samples is not None else "qrels",
        "ties": ties, "ranking": ranking, "match": match, "data": data, "seed": seed,
        "policies": {"missing_from_run": "scored 0, counted", "no_relevant": "excluded, counted",
                     "not_in_qrels": "ignored, counted", "negative": "reported separately"},
    })
    if samples:  # the data's language, for reports built from this result alone
        from ragmeter.text import detect_language

        result.meta["lang"] = detect_language(s.user_input for s in samples)
    cache: dict[tuple[str, str], _Population] = {}
    for m in parsed:
        if m.name in NEGATIVE_METRICS:
            continue
        level = str(m.get("level"))
        key = (level, match)
        if key not in cache:
            cache[key] = source.population(level, match)
        pop = cache[key]
        compute = m.spec.compute
        if compute is None:  # pragma: no cover - every ranking spec has one
            raise ConfigError("metrics", f"'{m}' cannot be computed here")
        values = np.asarray(compute(pop.arrays, m), dtype=np.float64)
        gain = m.get("gain") if m.name == "ndcg" else None
        sig = Signature.make(metric=str(m), k=m.k if m.k is not None else "full", level=level,
                             gain=gain, **policy, **extra)
        result.add(_metric_result(m, pop.ids, values, pop.unscored, sig, pop.counts, seed))
        result.meta.setdefault("counts", {}).update(pop.counts)
    if isinstance(source, _SamplesSource):
        _add_negatives(result, source, parsed, score_threshold, policy, extra, seed)
    return result


def _add_negatives(result: EvalResult, source: _SamplesSource, parsed: list[Metric],
                   threshold: float | None, policy: dict[str, Any], extra: dict[str, Any],
                   seed: int) -> None:
    """Per-negative top-1 scores → ``negative_top_score`` and ``negative_false_retrieval``."""
    negs = source.negatives
    wanted = [m for m in parsed if m.name in NEGATIVE_METRICS]
    implicit = negs and not wanted  # added because the data has negatives, not asked for
    if negs and not wanted:
        wanted = [parse_metric("negative_top_score")]
        if threshold is not None:
            wanted.append(parse_metric(f"negative_false_retrieval(threshold={threshold!r})"))
    if not negs:
        return
    tops = [source.top_score(s) for s in negs]
    if all(t is None and r != "empty_input" for t, r in tops):
        result.meta["negatives"] = {"n": len(negs), "note": "no retriever scores: not assessed"}
        return
    ids = [s.id for s in negs]
    counts = {"negative": len(negs), **({IMPLICIT_COUNT: 1} if implicit else {})}
    for m in wanted:
        vals = np.full(len(negs), np.nan)
        reasons: dict[int, str] = {}
        for i, (top, reason) in enumerate(tops):
            if m.name == "negative_false_retrieval":
                if reason == "empty_input":
                    vals[i] = 0.0  # nothing retrieved: no false retrieval
                elif top is None:
                    reasons[i] = reason or "missing_field:retrieved_scores"
                else:
                    vals[i] = float(top >= float(m.get("threshold")))
            elif top is None:
                reasons[i] = reason or "missing_field:retrieved_scores"
            else:
                vals[i] = top
        th = m.get("threshold") if m.name == "negative_false_retrieval" else None
        sig = Signature.make(metric=str(m), threshold=th, **policy, **extra)
        result.add(MetricResult(str(m), list(ids), vals, sig, reasons=reasons, counts=counts,
                                higher_is_better=m.spec.higher_is_better, seed=seed))


# --------------------------------------------------------------------------- the tier
@dataclass(frozen=True)
class RetrievalOptions(TierOptions):
    """``ties``: order of equal scores (stable, trec); ``match``: how a retrieved item meets the
    gold (id, text); ``score_threshold``: also report
    ``negative_false_retrieval(threshold=t)``; ``doc_of``: chunk id -> document id, for
    ``level=doc`` metrics when the ids do not say it."""

    ties: Literal["stable", "trec"] = "stable"
    match: Literal["id", "text"] = "id"
    score_threshold: float | None = None
    doc_of: dict[str, str] | None = None


def default_tier_metrics(ks: Sequence[int]) -> list[str]:
    """The retrieval tier's metrics when the config lists none."""
    out = []
    for k in ks:
        out += [f"hit_rate@{k}", f"hit_rate@{k}(level=doc)", f"recall@{k}", f"ndcg@{k}"]
    return [*out, "mrr"]


def run_retrieval(ctx: TierContext, samples: list[Sample],
                  options: RetrievalOptions) -> list[EvalResult]:
    """Retrieve with each of the tier's retrievers and evaluate (one result per retriever);
    without retrievers, evaluate the ``retrieved_ids`` already in the dataset."""
    metrics = list(ctx.tier.metrics) or default_tier_metrics(ctx.k)

    def evaluate(data: list[Sample], name: str,
                 extra: Mapping[str, Any] | None = None) -> EvalResult:
        return evaluate_retrieval(data, metrics=metrics, ties=options.ties, match=options.match,
                                  seed=ctx.seed, name=name, doc_of=options.doc_of,
                                  score_threshold=options.score_threshold,
                                  dataset_hash=ctx.dataset_hash, extra_signature=extra)

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
            out.append(evaluate(filled, name, dict(sig()) if callable(sig) else {}))
        return out
    if not any(s.retrieved_ids for s in samples):
        raise TierNotRunnable("no retrievers configured and the dataset has no retrieved_ids")
    return [evaluate(samples, "retrieval")]


register_tier(Tier(
    name="retrieval", title="Retrieval", title_ru="Поиск",
    doc="retrieval metrics (hit rate, MRR, NDCG, recall, ...) per retriever",
    run=run_retrieval, per_sample=True, options=RetrievalOptions))
