"""Tier 0 — embedding quality: cluster structure of labelled texts under one or more embedders.

For texts with cluster labels (a topic, or the parent ``doc_id`` of each chunk) every embedder
gives one :class:`~ragmeter.results.records.EvalResult` with three metrics
(formulas in :mod:`ragmeter.metrics.embedding`):

* ``silhouette`` — per text ``s(i)`` (cosine distance; equals scikit-learn's
  ``silhouette_score(metric="cosine")``),
* ``intra_cluster_sim`` — per cluster mean pairwise cosine (singletons excluded, counted),
* ``inter_cluster_dist`` — per cluster mean euclidean distance from its centroid to the
  others (mean over clusters = mean over centroid pairs).

``total_pairs`` (= number of labelled texts), ``intra_pairs``, ``n_clusters`` and
``singleton_clusters`` go into every metric's ``counts`` and into ``EvalResult.meta``.
Several embedders are compared side by side with :func:`tier0_table`; their chart is
:func:`ragmeter.reports.charts.tier0_chart`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data import jsontext
from ragmeter.data.reading import has_lone_surrogate, read_lines
from ragmeter.errors import DataError, RecordProblem
from ragmeter.metrics.embedding import ClusterStats, cluster_stats, validate_labels
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.retrieval.base import Embedder, EmbedKind
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier

TIER0_METRICS = ("silhouette", "intra_cluster_sim", "inter_cluster_dist")


@dataclass(frozen=True)
class LabelledTexts:
    """Texts with one cluster label each (``ids`` default to ``t1..tn``)."""

    texts: list[str]
    labels: list[str]
    ids: list[str]
    source: str = "<memory>"

    def data_hash(self) -> str:
        h = hashlib.sha256()
        for i, t, lab in zip(self.ids, self.texts, self.labels, strict=True):
            h.update(json.dumps([i, t, lab], ensure_ascii=False).encode())
        return h.hexdigest()[:12]


def load_labelled_texts(
    path: str | Path, *, text_field: str = "text", label_field: str | None = None
) -> LabelledTexts:
    """Read a jsonl file of ``{"text": ..., "label": ...}`` (or ``doc_id`` as the label).

    ``label_field`` defaults to ``label`` when present in the first record, else ``doc_id``
    (chunks labelled by their document); a dotted path (``metadata.section``) reads a nested
    field. Every bad line is reported (file, line, field).
    """
    p = Path(path)
    texts: list[str] = []
    labels: list[str] = []
    ids: list[str] = []
    problems: list[RecordProblem] = []
    field = label_field
    # one reading path: BOM, encodings and line endings as for every other input
    for lineno, line in read_lines(p):
        try:
            rec = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(RecordProblem(str(p), lineno, None, f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(rec, dict):
            problems.append(RecordProblem(str(p), lineno, None, "expected a JSON object"))
            continue
        if field is None:
            field = "label" if "label" in rec else "doc_id"
        text = rec.get(text_field)
        lab = _dig(rec, field)
        if not isinstance(text, str) or not text.strip():
            problems.append(RecordProblem(str(p), lineno, text_field, "missing or empty text"))
        elif has_lone_surrogate(text) or has_lone_surrogate(lab):
            problems.append(RecordProblem(str(p), lineno, None, "holds a lone surrogate (e.g. "
                                          "\\udc80): not valid Unicode text"))
            continue
        if lab is None or (isinstance(lab, str) and not lab.strip()):
            problems.append(RecordProblem(str(p), lineno, field,
                                          "missing cluster label (never scored as 0)"))
        if isinstance(text, str) and text.strip() and lab is not None and str(lab).strip():
            texts.append(text)
            labels.append(str(lab))
            ids.append(str(rec.get("id", rec.get("chunk_id", f"t{lineno}"))))
    if problems:
        raise DataError(problems)
    if not texts:
        raise DataError(RecordProblem(str(p), None, None, "no labelled texts"))
    validate_labels(labels, len(labels), source=str(p))
    return LabelledTexts(texts, labels, ids, str(p))


def _dig(rec: Mapping[str, Any], path: str) -> Any:
    cur: Any = rec
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def chunks_as_labelled(corpus: str | Path, *, chunk_size_chars: int = 800,
                       overlap_chars: int = 120) -> LabelledTexts:
    """Chunk a corpus; each chunk is labelled with its parent ``doc_id`` (documents with a
    single chunk form singleton clusters: silhouette 0, excluded from intra similarity)."""
    from ragmeter.retrieval.chunking import chunk_documents
    from ragmeter.retrieval.corpus import load_corpus

    chunks = chunk_documents(load_corpus(corpus), chunk_size_chars=chunk_size_chars,
                             overlap_chars=overlap_chars)
    return LabelledTexts([c.text for c in chunks], [c.doc_id for c in chunks],
                         [c.chunk_id for c in chunks], str(corpus))


def evaluate_vectors(
    X: np.ndarray,
    labels: Sequence[str],
    *,
    ids: Sequence[str] | None = None,
    model: str = "unknown",
    data_hash: str | None = None,
    kind: str | None = None,
    seed: int = 42,
) -> EvalResult:
    """Tier 0 metrics of precomputed embeddings ``X`` (one :class:`EvalResult`); ``seed`` is
    the bootstrap seed of the CIs."""
    st = cluster_stats(X, labels)
    n = len(labels)
    ids = list(ids) if ids is not None else [f"t{i + 1}" for i in range(n)]
    counts = {"total_pairs": st.total_pairs, "intra_pairs": st.intra_pairs,
              "n_clusters": st.n_clusters,
              "singleton_clusters": int((st.sizes == 1).sum())}
    base = dict(model=model, data=data_hash, kind=kind, n=n, clusters=st.n_clusters, seed=seed)
    res = EvalResult(name=model, meta={"tier": "tier0", "model": model, **counts,
                                       "dim": int(np.asarray(X).shape[1])})
    res.add(MetricResult("silhouette", ids, st.silhouette,
                         Signature.make(metric="silhouette", dist="cosine", **base),
                         counts=dict(counts), seed=seed))
    reasons = {i: "singleton_cluster" for i in np.flatnonzero(st.sizes < 2).tolist()}
    res.add(MetricResult("intra_cluster_sim", list(st.clusters), st.intra.copy(),
                         Signature.make(metric="intra_cluster_sim", sim="cosine", **base),
                         reasons=reasons, counts=dict(counts), seed=seed))
    res.add(MetricResult("inter_cluster_dist", list(st.clusters), st.inter,
                         Signature.make(metric="inter_cluster_dist", dist="euclidean",
                                        centroid="mean_l2norm", **base),
                         counts=dict(counts), higher_is_better=True, seed=seed))
    res.meta["cluster_sizes"] = dict(zip(st.clusters, st.sizes.tolist(), strict=True))
    return res


def _resolve_embedder(e: Embedder | str) -> Embedder:
    if isinstance(e, str):
        from ragmeter.retrieval.embedders import get_embedder

        emb: Embedder = get_embedder(e)
        return emb
    return e


def evaluate_embedding_quality(
    data: LabelledTexts,
    embedders: Sequence[Embedder | str] | Embedder | str,
    *,
    kind: EmbedKind = "symmetric",
    seed: int = 42,
) -> list[EvalResult]:
    """Embed ``data.texts`` with every embedder and compute Tier 0 metrics for each."""
    if isinstance(embedders, (str, Embedder)):
        embedders = [embedders]
    validate_labels(data.labels, len(data.texts), source=data.source)
    dh = data.data_hash()
    out = []
    for e in embedders:
        emb = _resolve_embedder(e)
        X = np.asarray(emb.embed(data.texts, kind=kind))
        out.append(evaluate_vectors(X, data.labels, ids=data.ids, model=emb.name, data_hash=dh,
                                    kind=kind, seed=seed))
    return out


def tier0_table(results: Sequence[EvalResult]) -> list[dict[str, Any]]:
    """One row per model: total_pairs, n_clusters and the three means (intra-/inter-cluster similarity, silhouette)."""
    rows = []
    for r in results:
        rows.append({
            "model": r.name,
            "total_pairs": r.meta.get("total_pairs"),
            "n_clusters": r.meta.get("n_clusters"),
            "avg_intra_cluster_sim": r["intra_cluster_sim"].mean,
            "avg_inter_cluster_dist": r["inter_cluster_dist"].mean,
            "silhouette_score": r["silhouette"].mean,
            "silhouette_ci": (r["silhouette"].aggregate.ci_low, r["silhouette"].aggregate.ci_high),
        })
    return rows


def stats_of(result: EvalResult) -> Mapping[str, Any]:
    """Seed-style summary dict of one Tier 0 result."""
    return {k: v for k, v in tier0_table([result])[0].items() if k != "silhouette_ci"}


# --------------------------------------------------------------------------- the tier
@dataclass(frozen=True)
class Tier0Options(TierOptions):
    """``labelled_texts``: a jsonl of labelled texts (default: the corpus chunks, labelled by
    their document); ``label_field``: the field holding the label (dotted for a nested one,
    e.g. ``metadata.section``)."""

    labelled_texts: str | None = None
    label_field: str | None = None


def run_tier0(ctx: TierContext, samples: list[Any], options: Tier0Options) -> list[EvalResult]:
    """Cluster quality of the labelled texts under every configured embedding model."""
    path = ctx.path(options.labelled_texts)
    if path is not None:
        data = load_labelled_texts(path, label_field=options.label_field)
    else:
        chunks = ctx.chunks()
        data = LabelledTexts([c.text for c in chunks], [c.doc_id for c in chunks],
                             [c.chunk_id for c in chunks], "corpus")
    models = [m for e in ctx.config.embeddings   # built with their options (URL, key)
              if (m := ctx.embedder(e.name)) is not None]
    if not models:
        raise TierNotRunnable("tier0 needs at least one entry under 'embeddings'")
    return evaluate_embedding_quality(data, models)


register_tier(Tier(
    name="tier0", title="Embeddings (tier 0)", title_ru="Эмбеддинги (уровень 0)",
    doc="do texts with one label cluster together under each embedding model",
    run=run_tier0, options=Tier0Options))


__all__ = ["TIER0_METRICS", "ClusterStats", "LabelledTexts", "chunks_as_labelled", "evaluate_embedding_quality",
           "evaluate_vectors", "load_labelled_texts", "stats_of", "tier0_table"]
