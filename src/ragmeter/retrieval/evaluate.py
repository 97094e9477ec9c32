"""``evaluate_retrieval``: rankings against gold → :class:`EvalResult` with per-query values
(the retrieval tier, ``ragmeter score retrieval`` and ``ragmeter.evaluate`` all score with it).

Two input modes:

* **samples** — rankings from ``Sample.retrieved_ids`` in list order (or from ``run`` when one is
  given, ranked by the tie policy); gold from ``gold_chunk_ids`` (``level=chunk``) or
  ``gold_doc_ids`` (``level=doc``; derived from the gold chunks' parents when absent), grades from
  ``gold_grades`` (default 1). ``match="text"`` compares ``retrieved_contexts`` with
  ``reference_contexts`` (see :mod:`ragmeter.retrieval.relevance`).
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

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.hashing import SHORT_LEN, canonical_json, gold_record, pairs_hash
from ragmeter.data.sample import Sample
from ragmeter.data.trec import Qrels, Run, load_run
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.metrics.registry import Metric, parse_metric, parse_metrics
from ragmeter.metrics.retrieval import NEGATIVE_METRICS, RANKING_METRICS
from ragmeter.results.records import IMPLICIT_COUNT, EvalResult, MetricResult, Signature
from ragmeter.retrieval.ragged import RowsBuilder
from ragmeter.retrieval.relevance import add_text_query, check_ties, rank_docs, resolve_doc_of
from ragmeter.retrieval.sources import (
    MATCHES,
    Population,
    QrelsSource,
    grade_map,
    run_file_source,
)
from ragmeter.text import detect_language

DEFAULT_METRICS: tuple[str, ...] = (
    "hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "recall@5", "recall@10",
    "precision@5", "precision@10", "ndcg@5", "ndcg@10", "map",
)


class _Collect:
    """One (level, match) population being collected sample by sample."""

    def __init__(self, text: bool) -> None:
        self.builder = RowsBuilder(text=text)
        self.ids: list[str] = []
        self.unscored: list[tuple[str, str]] = []
        self.no_relevant = 0
        self.missing_from_run = 0


#: retrieved ids kept per question for a failed gate's message
SHOWN_IDS = 5


class _SamplesSource:
    """Builds populations from samples (optionally with a separate run) in one pass.

    ``samples`` may be any iterable (a streaming loader): each sample is turned into the ragged
    rows of every (level, match) population asked for and then dropped; only negative questions
    are kept whole (their top scores are reported separately).
    """

    def __init__(self, samples: Iterable[Sample], run: Run | None, ties: str,
                 doc_of: Callable[[str], str], keys: Sequence[tuple[str, str]]):
        self.run = run
        self.ties = ties
        self.doc_of = doc_of
        self.negatives: list[Sample] = []
        collect = {key: _Collect(key[1] == "text") for key in keys}
        seen: dict[str, int] = {}
        problems: list[RecordProblem] = []
        digest = hashlib.sha256()
        n_ranked = 0
        self.n_chunk_gold = self.n_doc_gold = 0  # questions with such gold: for level=auto
        self.doc_gold_unmapped = 0  # gold chunks whose document is not among the gold docs
        self.unmapped_example: tuple[str, list[str]] | None = None
        check_docs = any(level == "doc" for level, _ in keys)
        self.questions: list[str | None] = []  # the first ones, for the data's language
        #: each question with its first retrieved ids and its gold: what a failed gate shows
        self.shown: dict[str, dict[str, Any]] = {}
        for i, s in enumerate(samples):
            # an empty list is a ranking (nothing found); a missing field is none
            if s.retrieved_ids is not None or s.retrieved_contexts is not None \
                    or (run is not None and s.id in run):
                n_ranked += 1
            if s.id in seen:
                problems.append(RecordProblem("<samples>", None, "id",
                                              f"duplicate sample id '{s.id}' (items {seen[s.id]} "
                                              f"and {i})"))
                continue
            seen[s.id] = i
            if i < 200:
                self.questions.append(s.user_input)
            self.shown[s.id] = {"user_input": s.user_input,
                                "retrieved_ids": None if run is not None
                                else (s.retrieved_ids or [])[:SHOWN_IDS],
                                "gold_doc_ids": s.gold_doc_ids,
                                "gold_chunk_ids": s.gold_chunk_ids}
            digest.update(canonical_json(gold_record(s)).encode("utf-8") + b"\n")
            if s.is_negative:
                self.negatives.append(s)
                continue
            self.n_doc_gold += bool(s.gold_doc_ids)
            if s.gold_chunk_ids:
                self.n_chunk_gold += 1
                if check_docs and s.gold_doc_ids:
                    self._check_doc_gold(s.gold_chunk_ids, s.gold_doc_ids)
            ranking: list[str] | None = None
            ranked = False
            for (level, match), col in collect.items():
                if match != "text" and not ranked:
                    ranking, ranked = self.ranking(s), True
                self._add(col, s, level, match, ranking)
        if problems:
            raise DataError(problems)
        if seen and not n_ranked and run is None:
            # nothing was retrieved for any question: scoring would print a table of zeros
            raise DataError(RecordProblem(
                "<samples>", None, "retrieved_ids",
                f"no ranking: none of the {len(seen)} records has retrieved_ids or "
                "retrieved_contexts"), hint="give a run (--run FILE, or run=...) or add the "
                "retrieved_ids of your retriever to the records")
        self.data_hash = digest.hexdigest()[:SHORT_LEN]
        self.not_in_qrels = 0 if run is None else sum(1 for q in run if q not in seen)
        self.pops = {key: Population(
            col.ids, col.builder.build(), col.unscored,
            {"missing_from_run": col.missing_from_run, "no_relevant": col.no_relevant,
             "negative": len(self.negatives), "not_in_qrels": self.not_in_qrels,
             "missing_gold": len(col.unscored)}) for key, col in collect.items()}

    def _check_doc_gold(self, chunks: list[str], docs: list[str]) -> None:
        wanted = set(docs)
        for c in chunks:
            if self.doc_of(c) not in wanted:
                self.doc_gold_unmapped += 1
                if self.unmapped_example is None:
                    self.unmapped_example = (c, list(docs))
                return

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

    def _add(self, col: _Collect, s: Sample, level: str, match: str,
             ranking: list[str] | None) -> None:
        gold: Any
        if match == "text":
            gold = s.reference_contexts
            missing = "missing_field:reference_contexts"
            empty = gold is not None and not any(t.strip() for t in gold)
        elif level == "chunk":
            unknown = s.gold_chunk_ids is None or (not s.gold_chunk_ids and bool(s.gold_doc_ids))
            gold = None if unknown else grade_map(s.gold_chunk_ids, s.gold_grades)
            missing = "missing_field:gold_chunk_ids"
            empty = gold is not None and not any(g > 0 for g in gold.values())
        else:
            if s.gold_doc_ids is not None:
                gold = grade_map(s.gold_doc_ids, s.gold_grades)
            elif s.gold_chunk_ids is not None:
                gold = grade_map(s.gold_chunk_ids, s.gold_grades, self.doc_of)
            else:
                gold = None
            missing = "missing_field:gold_doc_ids"
            empty = gold is not None and not any(g > 0 for g in gold.values())
        if gold is None:
            col.unscored.append((s.id, missing))
            return
        if empty:
            col.no_relevant += 1
            return
        col.ids.append(s.id)
        if match == "text":
            if s.retrieved_contexts is None:
                col.missing_from_run += 1
            add_text_query(col.builder, s.retrieved_contexts, gold)
        else:
            if ranking is None:
                col.missing_from_run += 1
            col.builder.add_ranking(ranking, gold, self.doc_of if level == "doc" else None,
                                    qid=s.id)

    def population(self, level: str, match: str) -> Population:
        return self.pops[(level, match)]


def _metric_result(metric: Metric, ids: list[str], values: np.ndarray,
                   unscored: list[tuple[str, str]], sig: Signature, counts: dict[str, int],
                   seed: int) -> MetricResult:
    all_ids = ids + [sid for sid, _ in unscored]
    vals = np.concatenate([values, np.full(len(unscored), np.nan)])
    reasons = {len(ids) + i: reason for i, (_, reason) in enumerate(unscored)}
    return MetricResult(str(metric), all_ids, vals, sig, reasons=reasons, counts=dict(counts),
                        higher_is_better=metric.spec.higher_is_better, seed=seed)


def _asked_levels(m: Metric, match: str, samples_mode: bool) -> list[str]:
    """Levels whose population a ranking metric may read (``auto``: both, until the data says)."""
    level = str(m.get("level"))
    if level != "auto":
        return [level]
    return ["chunk", "doc"] if samples_mode and match == "id" else ["chunk"]


def _auto_level(source: Any, match: str) -> tuple[str, str]:
    """What ``level=auto`` means for this data, and why."""
    if not isinstance(source, _SamplesSource) or match == "text":
        return "chunk", "ids as the gold gives them"
    if source.n_chunk_gold or not source.n_doc_gold:
        return "chunk", f"{source.n_chunk_gold} question(s) have gold_chunk_ids"
    return "doc", ("no question has gold_chunk_ids: scored at document level (a retrieved chunk "
                   "counts as a hit when its document is in gold_doc_ids)")


def _make_source(samples: Iterable[Sample] | None, qrels: Qrels | None,
                 run: Run | str | Path | None, ties: str, unit: Callable[[str], str],
                 keys: list[tuple[str, str]], dataset_hash: str | None) -> tuple[Any, str, str]:
    """``(source, data hash, ranking)`` for the inputs given."""
    if samples is not None:
        if qrels is not None:
            raise ConfigError("qrels", "give either samples or qrels, not both")
        if isinstance(run, (str, Path)):
            run = load_run(run)
        source = _SamplesSource(samples, run, ties, unit, keys)
        return source, dataset_hash or source.data_hash, "score" if run is not None else "list"
    if qrels is not None and isinstance(run, (str, Path)):
        return (run_file_source(qrels, Path(run), ties, unit, keys),
                dataset_hash or pairs_hash(qrels), "score")
    if qrels is not None and isinstance(run, Mapping):
        return QrelsSource(qrels, run, ties, unit), dataset_hash or pairs_hash(qrels), "score"
    raise ConfigError("samples", "give samples, or both qrels and run")


def _compute(source: Any, keys: list[tuple[str, str]], ranking: list[Metric],
             level_of: Mapping[Metric, str], match: str,
             ) -> tuple[dict[Metric, np.ndarray], dict[tuple[str, str], Population]]:
    """Values of every ranking metric, population by population, chunk by chunk."""
    values: dict[Metric, np.ndarray] = {}
    pops: dict[tuple[str, str], Population] = {}
    for key in keys:
        wanted = [m for m in ranking if (level_of[m], match) == key]
        if not wanted:
            continue
        pop = pops[key] = source.population(*key)
        for m in wanted:
            if m.spec.compute is None:  # pragma: no cover - every ranking spec has one
                raise ConfigError("metrics", f"'{m}' cannot be computed here")
            values[m] = np.zeros(pop.rows.n_queries, dtype=np.float64)
        # the arrays reach the largest cutoff (all ranks when a metric has none); metrics that
        # read only the first relevant rank get it with the arrays, whatever their cutoff
        cutoffs = [m.k for m in wanted if not m.spec.first_only]
        cap = None if None in cutoffs else max((k for k in cutoffs if k is not None), default=1)
        for idx, arrays in pop.rows.chunks(cap):
            for m in wanted:
                assert m.spec.compute is not None
                values[m][idx] = np.asarray(m.spec.compute(arrays, m), dtype=np.float64)
    return values, pops


def evaluate_retrieval(
    samples: Iterable[Sample] | None = None,
    *,
    qrels: Qrels | None = None,
    run: Run | str | Path | None = None,
    metrics: Sequence[str | Metric] = DEFAULT_METRICS,
    ties: str = "stable",
    match: str = "id",
    seed: int = 42,
    name: str = "run",
    doc_of: Callable[[str], str] | Mapping[str, str] | None = None,
    score_threshold: float | None = None,
    dataset_hash: str | None = None,
    extra_signature: Mapping[str, Any] | None = None,
    doc_id_pattern: str | None = None,
) -> EvalResult:
    """Evaluate retrieval; one :class:`MetricResult` per metric, per-query values kept.

    Give ``samples`` (optionally with a ``run`` that replaces their ``retrieved_ids``) or
    ``qrels`` and ``run``. ``samples`` may be any iterable (e.g. a streaming loader); a ``run``
    given as a path to a TREC file grouped by query is streamed group by group (a file that is
    not grouped, or a JSON run, is loaded whole). Metrics are computed in chunks of queries,
    never on a matrix padded to the longest ranking. ``score_threshold`` adds
    ``negative_false_retrieval(threshold=t)``. A metric without ``level`` (``level=auto``) is
    scored at chunk level when the data has chunk gold, else at document level; the signature
    says which (``level:doc(auto)``). ``doc_id_pattern``: a regular expression whose group
    ``doc`` (or first group) is a chunk id's document (default rules: ``doc#n``,
    ``doc_chunk_n``).
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
    unit = resolve_doc_of(doc_of, doc_id_pattern)
    ranking_metrics = [m for m in parsed if m.name not in NEGATIVE_METRICS]
    keys = list(dict.fromkeys((lv, match) for m in ranking_metrics
                              for lv in _asked_levels(m, match, samples is not None)))
    source, data, ranking = _make_source(samples, qrels, run, ties, unit, keys, dataset_hash)
    auto, why = _auto_level(source, match)
    level_of = {m: auto if m.get("level") == "auto" else str(m.get("level"))
                for m in ranking_metrics}
    extra = dict(extra_signature or {})
    policy = {"ties": ties if ranking == "score" else "list-order", "match": match,
              "rel": "grade>0", "missing": "zero", "data": data, "seed": seed}
    result = EvalResult(name, meta={
        "tier": "retrieval", "mode": "samples" if samples is not None else "qrels",
        "ties": ties, "ranking": ranking, "match": match, "data": data, "seed": seed,
        "policies": {"missing_from_run": "scored 0, counted", "no_relevant": "excluded, counted",
                     "not_in_qrels": "ignored, counted", "negative": "reported separately"},
    })
    if any(m.get("level") == "auto" for m in ranking_metrics):
        result.meta["level_auto"] = {"level": auto, "why": why}
    if isinstance(source, _SamplesSource):  # the data's language, for reports from this result
        result.meta["lang"] = detect_language(source.questions)
        if source.doc_gold_unmapped:
            result.meta.setdefault("warnings", []).append(doc_unmapped_warning(
                source.doc_gold_unmapped, source.unmapped_example))
    values, pops = _compute(source, keys, ranking_metrics, level_of, match)
    for m in ranking_metrics:
        level = level_of[m]
        pop = pops[(level, match)]
        gain = m.get("gain") if m.name == "ndcg" else None
        shown = f"{level}(auto)" if m.get("level") == "auto" else level
        sig = Signature.make(metric=str(m), k=m.k if m.k is not None else "full", level=shown,
                             gain=gain, **policy, **extra)
        result.add(_metric_result(m, pop.ids, values[m], pop.unscored, sig, pop.counts, seed))
        result.meta.setdefault("counts", {}).update(pop.counts)
    if isinstance(source, _SamplesSource):
        _add_negatives(result, source, parsed, score_threshold, policy, extra, seed)
        result.samples.update(source.shown)  # questions for the worst samples of a gate
    return result


def doc_unmapped_warning(n: int, example: tuple[str, list[str]] | None) -> str:
    """The warning for gold chunks whose derived document is not among the gold documents."""
    ex = ""
    if example is not None:
        ex = f" (e.g. chunk '{example[0]}' vs gold_doc_ids {example[1][:3]})"
    return (f"document gold cannot be mapped for {n} question(s): the document derived from a "
            f"gold chunk id is not in gold_doc_ids{ex}; level=doc values may be too low — "
            "give --doc-id-pattern REGEX (group 'doc' = the document id) or --doc-map FILE")


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


__all__ = ["DEFAULT_METRICS", "doc_unmapped_warning", "evaluate_retrieval"]
