"""Run a retriever over evaluation samples and fill their retrieval fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ragmeter.data.sample import Sample
from ragmeter.errors import DataError, RecordProblem
from ragmeter.retrieval.base import Chunk, Hit, Retriever


def retrieve_samples(retriever: Retriever, samples: Sequence[Sample], k: int, *,
                     chunks: Sequence[Chunk] | None = None,
                     hits: list[list[Hit]] | None = None) -> list[Sample]:
    """Copies of ``samples`` with ``retrieved_ids`` / ``retrieved_contexts`` /
    ``retrieved_scores`` from the retriever's top-``k`` (the retriever must be indexed).

    Chunk texts come from ``chunks`` or from the retriever's ``chunks`` attribute. Pass
    precomputed ``hits`` (one list per sample) to reuse a search. Samples without a question are
    a :class:`DataError` naming their ids.
    """
    if k <= 0:
        raise DataError(RecordProblem("retrieve_samples", None, "k", f"must be > 0, got {k}"))
    missing = [RecordProblem(f"sample {s.id}", None, "user_input", "no question to retrieve for")
               for s in samples if not (s.user_input and s.user_input.strip())]
    if missing:
        raise DataError(missing)
    pool = chunks if chunks is not None else getattr(retriever, "chunks", None) or []
    text_of = {c.chunk_id: c.text for c in pool}
    if hits is None:
        hits = retriever.search([s.user_input or "" for s in samples], k)
    if len(hits) != len(samples):
        raise DataError(RecordProblem("retrieve_samples", None, "hits",
                                      f"{len(hits)} hit lists for {len(samples)} samples"))
    out = []
    for s, hs in zip(samples, hits, strict=True):
        top = hs[:k]
        out.append(dataclasses.replace(
            s,
            retrieved_ids=[h.chunk_id for h in top],
            retrieved_contexts=[text_of.get(h.chunk_id, "") for h in top],
            retrieved_scores=[float(h.score) for h in top],
            metadata=dict(s.metadata),
        ))
    return out
