"""Tier 0 cluster metrics of an embedding space (family ``embedding``), vectorised numpy.

Input: ``X`` (n × d) embeddings and ``labels`` (n cluster labels — a topic, or the parent
doc id of each chunk). Rows are L2-normalised first (``x̂ = x / ‖x‖``), so cosine = dot.

Definitions, with clusters ``C_1..C_K``:

* ``total_pairs`` — the number of labelled (text, label) pairs evaluated, i.e. ``n``.
  (The original Tier 0 table calls it "number of text pairs in the dataset"; in the original data
  each row was one (text, cluster) pair.) ``intra_pairs = Σ_i |C_i|(|C_i|−1)/2`` is the
  number of within-cluster text pairs that ``intra_cluster_sim`` averages; both are reported.
* ``intra_cluster_sim(C) = 2/(|C|(|C|−1)) · Σ_{p<q} cos(e_p, e_q)``, computed as
  ``(‖Σ_{p∈C} x̂_p‖² − |C|) / (|C|(|C|−1))``; the metric is the mean over clusters with
  ``|C| ≥ 2`` (a singleton has no pair: excluded and counted as ``singleton_clusters``).
* ``inter_cluster_dist = 2/(K(K−1)) · Σ_{i<j} ‖μ_i − μ_j‖₂`` with ``μ_i`` the mean of the
  normalised vectors of ``C_i``. Per cluster we record ``mean_{j≠i} ‖μ_i − μ_j‖``, whose mean
  over clusters equals the pairwise mean exactly (each cluster has ``K−1`` partners).
* ``silhouette`` (cosine distance ``d = 1 − cos``, clipped to [0, 2], as scikit-learn):
  ``a(i) = Σ_{j∈C(i), j≠i} d(i,j) / (|C(i)|−1)``, ``b(i) = min_{C≠C(i)} mean_{j∈C} d(i,j)``,
  ``s(i) = (b−a)/max(a,b)``; ``s(i) = 0`` for a point in a singleton cluster (scikit-learn's
  convention). Equal to ``sklearn.metrics.silhouette_score(X, labels, metric="cosine")``.

Requirements: every text labelled, ``2 ≤ K ≤ n − 1`` (scikit-learn's condition); otherwise a
:class:`~ragmeter.errors.DataError` — never a 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.errors import DataError, RecordProblem
from ragmeter.metrics.registry import MetricSpec, register

_CHUNK_CELLS = 4_000_000
_FULL_GRAM_CELLS = 16_000_000  # up to n = 4000 texts: one n×n matrix (128 MB)


@dataclass(frozen=True)
class ClusterStats:
    """Per-text and per-cluster statistics of one labelled embedding matrix."""

    clusters: list[str]            # distinct labels, sorted
    sizes: np.ndarray              # |C_i|
    intra: np.ndarray              # per-cluster mean pairwise cosine (NaN for singletons)
    inter: np.ndarray              # per-cluster mean distance to the other centroids
    silhouette: np.ndarray         # per-text s(i)
    total_pairs: int
    intra_pairs: int

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def avg_intra_cluster_sim(self) -> float:
        return float(np.nanmean(self.intra)) if np.any(~np.isnan(self.intra)) else float("nan")

    @property
    def avg_inter_cluster_dist(self) -> float:
        return float(self.inter.mean())

    @property
    def silhouette_score(self) -> float:
        return float(self.silhouette.mean())


def validate_labels(
    labels: Sequence[object], n: int, source: str = "labels"
) -> np.ndarray:
    """Check labels (one per text, non-empty, 2 ≤ K ≤ n−1); return integer codes.

    Raises :class:`DataError` listing every missing label (with its index/line), or the
    cluster-count problem.
    """
    if len(labels) != n:
        raise DataError(RecordProblem(source, None, "label",
                                      f"{len(labels)} labels for {n} embeddings"))
    problems = [
        RecordProblem(source, i + 1, "label", "missing label (every text needs a cluster label)")
        for i, lab in enumerate(labels)
        if lab is None or (isinstance(lab, str) and not lab.strip())
        or (isinstance(lab, float) and np.isnan(lab))
    ]
    if problems:
        raise DataError(problems, hint="give each text a 'label' (or a 'doc_id' for chunks)")
    names = [str(lab) for lab in labels]
    uniq = sorted(set(names))
    k = len(uniq)
    if k < 2 or k > n - 1:
        raise DataError(
            RecordProblem(source, None, "label",
                          f"{k} distinct cluster(s) for {n} texts; silhouette and inter-cluster "
                          f"distance need 2 <= n_clusters <= n_texts - 1"),
            hint="a single cluster (or one text per cluster) has no cluster structure to measure",
        )
    pos = {name: i for i, name in enumerate(uniq)}
    return np.fromiter((pos[s] for s in names), dtype=np.int64, count=n)


def _normalise(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise DataError(RecordProblem("embeddings", None, None,
                                      f"expected a non-empty (n, dim) matrix, got {X.shape}"))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(X)):
        bad = np.flatnonzero((norms[:, 0] == 0) | ~np.all(np.isfinite(X), axis=1))
        raise DataError([RecordProblem("embeddings", int(i) + 1, None,
                                       "zero or non-finite embedding vector") for i in bad])
    return X / norms


def cluster_stats(X: np.ndarray, labels: Sequence[object]) -> ClusterStats:
    """All Tier 0 statistics of ``X`` under ``labels`` (see module docstring for formulas)."""
    Xn = _normalise(X)
    n = Xn.shape[0]
    codes = validate_labels(labels, n)
    uniq = sorted({str(lab) for lab in labels})
    k = len(uniq)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    order = np.argsort(codes, kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    Xs = Xn[order]                                           # rows grouped by cluster
    starts = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)
    sums = np.add.reduceat(Xs, starts, axis=0)               # (k, d) Σ x̂ per cluster
    sq = np.einsum("ij,ij->i", sums, sums)
    with np.errstate(invalid="ignore", divide="ignore"):
        intra = np.where(sizes >= 2, (sq - sizes) / (sizes * (sizes - 1)), np.nan)

    centroids = sums / sizes[:, None]
    g = centroids @ centroids.T
    nrm = np.diag(g)
    d2 = np.maximum(nrm[:, None] + nrm[None, :] - 2 * g, 0.0)
    dist = np.sqrt(d2)
    np.fill_diagonal(dist, 0.0)
    inter = dist.sum(axis=1) / (k - 1)

    # silhouette: per-row sums of cosine distances to each cluster, O(n²) in row chunks —
    # columns sorted by cluster so that np.add.reduceat sums contiguous segments (no n×K matmul)
    dsum = np.empty((n, k))
    if n * n <= _FULL_GRAM_CELLS:  # one symmetric product (BLAS syrk: half the flops)
        D = 1.0 - Xs @ Xs.T
        np.clip(D, 0.0, 2.0, out=D)
        np.fill_diagonal(D, 0.0)
        dsum[order] = np.add.reduceat(D, starts, axis=1)
    else:
        rows = max(1, _CHUNK_CELLS // n)
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            D = 1.0 - Xn[start:stop] @ Xs.T
            np.clip(D, 0.0, 2.0, out=D)
            D[np.arange(stop - start), pos[start:stop]] = 0.0
            dsum[start:stop] = np.add.reduceat(D, starts, axis=1)
    own = sizes[codes]
    a = dsum[np.arange(n), codes] / np.maximum(own - 1, 1)
    means = dsum / sizes[None, :]
    means[np.arange(n), codes] = np.inf
    b = means.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = (b - a) / np.maximum(a, b)
    s = np.nan_to_num(s)
    s[own == 1] = 0.0
    intra_pairs = int((sizes * (sizes - 1) / 2).sum())
    return ClusterStats(uniq, sizes.astype(np.int64), intra, inter, s, n, intra_pairs)


register(MetricSpec(
    name="intra_cluster_sim", family="embedding",
    doc="mean over clusters (|C|>=2) of 2/(|C|(|C|-1)) Σ_{p<q} cos(e_p, e_q)",
    value_range=(-1.0, 1.0),
))
register(MetricSpec(
    name="inter_cluster_dist", family="embedding",
    doc="2/(K(K-1)) Σ_{i<j} ||μ_i - μ_j||_2 over centroids of L2-normalised vectors",
    value_range=(0.0, 2.0),
))
register(MetricSpec(
    name="silhouette", family="embedding",
    doc="mean_i (b(i)-a(i))/max(a(i),b(i)), cosine distance; 0 for singleton clusters (sklearn)",
    value_range=(-1.0, 1.0),
))
