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

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragmeter.data.hashing import SHORT_LEN, canonical_json, gold_record, pairs_hash
from ragmeter.data.sample import Sample
from ragmeter.data.trec import Qrels, Run, RunNotGrouped, iter_run_blocks, load_run
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.metrics.registry import Metric, parse_metric, parse_metrics
from ragmeter.metrics.retrieval import NEGATIVE_METRICS, RANKING_METRICS
from ragmeter.results.records import IMPLICIT_COUNT, EvalResult, MetricResult, Signature
from ragmeter.text import detect_language
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.ragged import RelRows, RowsBuilder
from ragmeter.tiers.registry import Tier, TierOptions, register_tier
from ragmeter.tiers.relevance import (
    add_text_query,
    check_ties,
    positive_judgments,
    rank_docs,
    rank_hits,
    resolve_doc_of,
    rows_from_lists,
    rows_from_run,
)

DEFAULT_METRICS: tuple[str, ...] = (
    "hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "recall@5", "recall@10",
    "precision@5", "precision@10", "ndcg@5", "ndcg@10", "map",
)
MATCHES = ("id", "text")
@dataclass
class _Population:
    """Queries one level/match scores: ragged rows for the scored ones, reasons for the unscored."""

    ids: list[str]
    rows: RelRows
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


class _Collect:
    """One (level, match) population being collected sample by sample."""

    def __init__(self, text: bool) -> None:
        self.builder = RowsBuilder(text=text)
        self.ids: list[str] = []
        self.unscored: list[tuple[str, str]] = []
        self.no_relevant = 0
        self.missing_from_run = 0


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
        self.questions: list[str | None] = []  # the first ones, for the data's language
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
            digest.update(canonical_json(gold_record(s)).encode("utf-8") + b"\n")
            if s.is_negative:
                self.negatives.append(s)
                continue
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
        self.pops = {key: _Population(
            col.ids, col.builder.build(), col.unscored,
            {"missing_from_run": col.missing_from_run, "no_relevant": col.no_relevant,
             "negative": len(self.negatives), "not_in_qrels": self.not_in_qrels,
             "missing_gold": len(col.unscored)}) for key, col in collect.items()}

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

    def population(self, level: str, match: str) -> _Population:
        return self.pops[(level, match)]


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
            rows = rows_from_run(self.judged, self.run, self.ties)
        else:
            golds = (_grades(list(self.qrels[q]), self.qrels[q], self.doc_of) for q in self.qids)
            rankings = (rank_docs(self.run[q], self.ties) if q in self.run else None
                        for q in self.qids)
            rows = rows_from_lists(rankings, golds, self.doc_of, self.qids)
        missing = int(np.count_nonzero(rows.n_ret == 0))  # no run entry or an empty one
        counts = {"missing_from_run": missing, "no_relevant": self.no_relevant,
                  "not_in_qrels": self.not_in_qrels}
        return _Population(list(self.qids), rows, [], counts)


class _RunFileSource:
    """Qrels and a TREC run file read group by group: the run is never held in memory.

    Each query's lines (consecutive in the file) are matched against the qrels as they are read,
    with array operations over a block of lines; only relevant cells are kept. Raises
    :class:`RunNotGrouped` when the file is not grouped by query (the caller then loads it whole).
    """

    def __init__(self, qrels: Qrels, path: Path, ties: str, doc_of: Callable[[str], str],
                 keys: Sequence[tuple[str, str]]):
        for _, match in keys:
            if match == "text":
                raise ConfigError("match", "text matching needs samples with retrieved_contexts "
                                  "and reference_contexts, not qrels/run", list(MATCHES))
        judged = positive_judgments(qrels)
        self.qids = judged.qids
        index = {q.encode("utf-8"): i for i, q in enumerate(self.qids)}
        known = {q.encode("utf-8") for q in qrels}
        lookup = _JudgedKeys(judged)
        nq = len(self.qids)
        n_ret = np.zeros(nq, dtype=np.int64)
        cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        doc_rows: dict[int, tuple[int, list[int], list[int]]] = {}
        want_doc = ("doc", "id") in keys
        problems: list[RecordProblem] = []
        not_in_qrels = 0
        single = ties == "trec"
        for block in iter_run_blocks(path, problems=problems):
            lens = np.diff(block.starts)
            gid = np.repeat(np.arange(lens.size), lens)
            problems.extend(_repeats(block, gid, str(path)))
            qmap = np.fromiter((index.get(q, -1) for q in block.qids), dtype=np.int64,
                               count=len(block.qids))
            not_in_qrels += sum(1 for q, i in zip(block.qids, qmap.tolist(), strict=True)
                                if i < 0 and q not in known)
            seen = qmap >= 0
            n_ret[qmap[seen]] = lens[seen]
            scores = block.scores.astype(np.float32) if single else block.scores
            if want_doc:
                starts = block.starts.tolist()
                for g in np.flatnonzero(seen).tolist():
                    qi = int(qmap[g])
                    a, b = starts[g], starts[g + 1]
                    doc_rows[qi] = _doc_cells(block.docs[a:b].tolist(), scores[a:b],
                                              qrels[self.qids[qi]], ties, doc_of)
            grades = lookup.grades(block.line_qids, block.docs)
            hits = np.flatnonzero(grades > 0)
            if not hits.size:
                continue
            hq = gid[hits]
            docs, starts_a = block.docs, block.starts

            def tie(j: int, g: int, tied: np.ndarray, hits: np.ndarray = hits,
                    docs: np.ndarray = docs, starts_a: np.ndarray = starts_a) -> int:
                line = int(hits[j])
                if single:
                    return int(np.count_nonzero(docs[int(starts_a[g]) + tied] > docs[line]))
                return int(np.count_nonzero(tied < line - int(starts_a[g])))

            ranks = rank_hits(scores, lens, hq, scores[hits], tie)
            cells.append((qmap[hq], ranks, grades[hits]))
        if problems:
            raise DataError(problems)
        cat = (lambda i: np.concatenate([c[i] for c in cells]) if cells  # noqa: E731
               else np.zeros(0, dtype=np.int64))
        self.rows = {"chunk": RelRows(n_ret, cat(0), cat(1), cat(2), judged.q, judged.grades)}
        if want_doc:
            builder = RowsBuilder()
            for qi, q in enumerate(self.qids):
                builder.add_gold(_grades(list(qrels[q]), qrels[q], doc_of), q)
                n, positions, doc_grades = doc_rows.get(qi, (0, [], []))
                builder.add_cells(n, positions, doc_grades)
            self.rows["doc"] = builder.build()
        self.counts = {"no_relevant": judged.n_no_relevant, "not_in_qrels": not_in_qrels}

    def population(self, level: str, match: str) -> _Population:
        rows = self.rows[level]
        counts = {"missing_from_run": int(np.count_nonzero(rows.n_ret == 0)), **self.counts}
        return _Population(list(self.qids), rows, [], counts)


class _JudgedKeys:
    """Positive judgments as sorted fixed-width ``qid + docid`` byte keys, for array lookups."""

    def __init__(self, judged: Any) -> None:
        q = np.array([judged.qids[i].encode("utf-8") for i in judged.q.tolist()] or [b""])
        d = np.array([doc.encode("utf-8") for doc in judged.docs] or [b""])
        self.wq, self.wd = max(q.itemsize, 1), max(d.itemsize, 1)
        keys = self._keys(q, d)[:judged.q.size]
        order = np.argsort(keys, kind="stable")
        self.keys, self.values = keys[order], judged.grades[order]

    def _keys(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        qm = q.astype(f"S{self.wq}").view(np.uint8).reshape(-1, self.wq)
        dm = d.astype(f"S{self.wd}").view(np.uint8).reshape(-1, self.wd)
        return np.ascontiguousarray(np.hstack([qm, dm])).view(f"S{self.wq + self.wd}").ravel()

    def grades(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Grade of each (query, doc) line; 0 when not judged relevant."""
        out = np.zeros(q.size, dtype=np.int64)
        if not self.keys.size or not q.size:
            return out
        fits = (np.strings.str_len(q) <= self.wq) & (np.strings.str_len(d) <= self.wd)
        keys = self._keys(q, d)
        pos = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        match = fits & (self.keys[pos] == keys)
        out[match] = self.values[pos[match]]
        return out


_HASH_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                       0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                       0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


def _repeats(block: Any, gid: np.ndarray, source: str) -> list[RecordProblem]:
    """A problem for every doc id repeated within one query of ``block`` (hash, then exact)."""
    docs = block.docs
    n = docs.size
    if n < 2:
        return []
    width = -(-docs.itemsize // 8) * 8
    mat = docs.astype(f"S{width}").view(np.uint64).reshape(n, width // 8)
    mult = np.resize(_HASH_MULT, mat.shape[1])
    with np.errstate(over="ignore"):
        h = (mat * mult).sum(axis=1, dtype=np.uint64) ^ (gid.astype(np.uint64) * _HASH_MULT[0])
    order = np.argsort(h, kind="stable")
    same = np.flatnonzero(h[order][1:] == h[order][:-1])
    out = []
    for k in same.tolist():
        i, j = sorted((int(order[k]), int(order[k + 1])))
        if gid[i] == gid[j] and docs[i] == docs[j]:
            d = bytes(docs[i]).decode("utf-8", "replace")
            q = block.qids[int(gid[i])].decode("utf-8", "replace")
            out.append(RecordProblem(source, int(block.lines[j]), "docid",
                                     f"doc id '{d}' repeated for query '{q}' (first on line "
                                     f"{int(block.lines[i])})"))
    return out


def _doc_cells(group: list[bytes], scores: np.ndarray, gold: Mapping[str, int], ties: str,
               doc_of: Callable[[str], str]) -> tuple[int, list[int], list[int]]:
    """Doc-level cells of one query's group (ranked by the tie policy, chunks → documents)."""
    run = dict(zip((d.decode("utf-8", "replace") for d in group), scores.tolist(), strict=True))
    builder = RowsBuilder()
    builder.add_ranking(rank_docs(run, ties), _grades(list(gold), gold, doc_of), doc_of)
    rows = builder.build()
    return len(group), rows.pos.tolist(), rows.grade.tolist()


def _run_file_source(qrels: Qrels, path: Path, ties: str, doc_of: Callable[[str], str],
                     keys: Sequence[tuple[str, str]]) -> _RunFileSource | _QrelsSource:
    """Stream a TREC run file; a JSON run or one not grouped by query is loaded whole."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    except FileNotFoundError:
        raise DataError(RecordProblem(str(path), None, None, "file not found")) from None
    if not head.startswith(b"{"):
        try:
            return _RunFileSource(qrels, path, ties, doc_of, keys)
        except RunNotGrouped:
            pass
    return _QrelsSource(qrels, load_run(path), ties, doc_of)


def _metric_result(metric: Metric, ids: list[str], values: np.ndarray,
                   unscored: list[tuple[str, str]], sig: Signature, counts: dict[str, int],
                   seed: int) -> MetricResult:
    all_ids = ids + [sid for sid, _ in unscored]
    vals = np.concatenate([values, np.full(len(unscored), np.nan)])
    reasons = {len(ids) + i: reason for i, (_, reason) in enumerate(unscored)}
    return MetricResult(str(metric), all_ids, vals, sig, reasons=reasons, counts=dict(counts),
                        higher_is_better=metric.spec.higher_is_better, seed=seed)


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
) -> EvalResult:
    """Evaluate retrieval; one :class:`MetricResult` per metric, per-query values kept.

    Give ``samples`` (optionally with a ``run`` that replaces their ``retrieved_ids``) or
    ``qrels`` and ``run``. ``samples`` may be any iterable (e.g. a streaming loader); a ``run``
    given as a path to a TREC file grouped by query is streamed group by group (a file that is
    not grouped, or a JSON run, is loaded whole). Metrics are computed in chunks of queries,
    never on a matrix padded to the longest ranking. ``score_threshold`` adds ``negative_false_retrieval(threshold=t)``.
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
    keys = list(dict.fromkeys((str(m.get("level")), match) for m in parsed
                              if m.name not in NEGATIVE_METRICS))
    source: _SamplesSource | _QrelsSource | _RunFileSource
    if samples is not None:
        if qrels is not None:
            raise ConfigError("qrels", "give either samples or qrels, not both")
        if isinstance(run, (str, Path)):
            run = load_run(run)
        source = _SamplesSource(samples, run, ties, unit, keys)
        data = dataset_hash or source.data_hash
        ranking = "score" if run is not None else "list"
    elif qrels is not None and isinstance(run, (str, Path)):
        source = _run_file_source(qrels, Path(run), ties, unit, keys)
        data = dataset_hash or pairs_hash(qrels)
        ranking = "score"
    elif qrels is not None and isinstance(run, Mapping):
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
    if isinstance(source, _SamplesSource):  # the data's language, for reports from this result
        result.meta["lang"] = detect_language(source.questions)
    values: dict[Metric, np.ndarray] = {}
    pops: dict[tuple[str, str], _Population] = {}
    for key in keys:
        pop = pops[key] = source.population(*key)
        wanted = [m for m in parsed if m.name not in NEGATIVE_METRICS
                  and (str(m.get("level")), match) == key]
        for m in wanted:
            if m.spec.compute is None:  # pragma: no cover - every ranking spec has one
                raise ConfigError("metrics", f"'{m}' cannot be computed here")
            values[m] = np.zeros(pop.rows.n_queries, dtype=np.float64)
        cutoffs = [m.k for m in wanted]
        cap = None if not cutoffs or None in cutoffs else max(k for k in cutoffs if k is not None)
        for idx, arrays in pop.rows.chunks(cap):
            for m in wanted:
                assert m.spec.compute is not None
                values[m][idx] = np.asarray(m.spec.compute(arrays, m), dtype=np.float64)
    for m in parsed:
        if m.name in NEGATIVE_METRICS:
            continue
        level = str(m.get("level"))
        pop = pops[(level, match)]
        gain = m.get("gain") if m.name == "ndcg" else None
        sig = Signature.make(metric=str(m), k=m.k if m.k is not None else "full", level=level,
                             gain=gain, **policy, **extra)
        result.add(_metric_result(m, pop.ids, values[m], pop.unscored, sig, pop.counts, seed))
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

    from ragmeter.targets.tier_hooks import run_targets  # the user's own system, if any

    if got := run_targets(ctx, samples, "retrieve", evaluate, k=max(ctx.k)):
        return got
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
