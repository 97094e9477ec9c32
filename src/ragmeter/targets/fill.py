"""Samples <-> target calls: the request for each sample, and the sample filled from its reply.

* ``answer``: ``response``, ``retrieved_contexts``, ``retrieved_ids`` (context ids, or document
  ids / URLs mapped to gold ids by the config's id rule) and ``retrieved_scores``;
* ``retrieve``: ``retrieved_ids`` (and ``retrieved_scores`` / ``retrieved_contexts`` when
  returned);
* ``generate``: ``response`` from the contexts given (the gold context for Tier 2).

A sample whose call failed keeps no output; ``metadata["target_error"]`` holds the reason
(``target_unmapped: answer: path 'data.answer' is not in the reply``), which
:func:`mark_unscored` writes into every metric of that sample — an unscored reason, never 0.
Every sample gets ``metadata["target_call"]``: latency, time to first token, attempts,
tokens, version and the masked raw reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult
from ragmeter.targets.base import TargetReply, TargetRequest
from ragmeter.targets.config import TargetConfig


def history_of(sample: Sample) -> tuple[Mapping[str, str], ...]:
    """A sample's conversation so far: ``Sample.history`` (``{role, content}`` turns, oldest
    first), else ``metadata["history"]`` (``{"question", "answer"}`` pairs accepted too)."""
    raw = sample.history if sample.history else (
        sample.metadata.get("history") if sample.metadata else None)
    if not isinstance(raw, list):
        return ()
    out: list[Mapping[str, str]] = []
    for turn in raw:
        if not isinstance(turn, Mapping):
            continue
        if "role" in turn:
            out.append({"role": str(turn["role"]), "content": str(turn.get("content", ""))})
        else:
            if turn.get("question") is not None:
                out.append({"role": "user", "content": str(turn["question"])})
            if turn.get("answer") is not None:
                out.append({"role": "assistant", "content": str(turn["answer"])})
    return tuple(out)


def build_requests(samples: Sequence[Sample], entry: str, *, k: int | None = None,
                   contexts: Sequence[Sequence[str]] | None = None) -> list[TargetRequest]:
    """One request per sample (``contexts`` per sample for ``generate``)."""
    out = []
    for i, s in enumerate(samples):
        sid = s.metadata.get("session_id") if s.metadata else None
        out.append(TargetRequest(
            entry=entry, question=s.user_input or "", history=history_of(s),
            session_id=None if sid is None else str(sid), k=k,
            contexts=tuple(contexts[i]) if contexts is not None else (), sample_id=s.id))
    return out


def call_record(rep: TargetReply) -> dict[str, Any]:
    """What the sample keeps about its call (floats rounded to microseconds)."""
    d: dict[str, Any] = {"attempts": rep.attempts, "recorded": rep.recorded}
    for key in ("latency_s", "ttft_s"):
        v = getattr(rep, key)
        if v is not None:
            d[key] = round(float(v), 6)
    if rep.attempt_s is not None:   # every attempt's seconds, the final reply's last
        d["attempt_s"] = [round(float(x), 6) for x in rep.attempt_s]
    if rep.warmup:                  # kept out of the latency percentiles
        d["warmup"] = True
    for key in ("tokens_in", "tokens_out", "version", "raw", "reason", "detail"):
        v = getattr(rep, key)
        if v is not None:
            d[key] = v
    if rep.invalid_text:   # characters replaced by U+FFFD (lone surrogates, bad bytes)
        d["invalid_text"] = rep.invalid_text
    return d


def _ids(rep: TargetReply, cfg: TargetConfig) -> list[str] | None:
    src = cfg.ids_from
    values = rep.context_ids if src in ("auto", "context_ids") else rep.doc_ids
    if values is None and src == "auto":
        values = rep.doc_ids
    if values is None:
        return None
    return [cfg.ids.apply(v) for v in values]


def apply_replies(samples: Sequence[Sample], replies: Sequence[TargetReply], entry: str,
                  cfg: TargetConfig) -> list[Sample]:
    """The samples filled from their replies (see the module doc)."""
    out = []
    for s, rep in zip(samples, replies, strict=True):
        meta = {**s.metadata, "target_call": call_record(rep)}
        if not rep.ok:
            meta["target_error"] = f"{rep.reason}: {rep.detail}" if rep.detail else \
                str(rep.reason)
            # an empty ranking, not a missing one: the sample stays in the retrieval population
            # and mark_unscored gives it the call's reason
            if entry == "retrieve":
                out.append(replace(s, retrieved_ids=[], retrieved_scores=None, metadata=meta))
            elif entry == "answer":
                out.append(replace(s, response=None, retrieved_ids=[], retrieved_scores=None,
                                   retrieved_contexts=None, metadata=meta))
            else:
                out.append(replace(s, response=None, metadata=meta))
            continue
        meta.pop("target_error", None)
        if rep.metadata:
            meta["target_metadata"] = rep.metadata
        ids = _ids(rep, cfg)
        scores = rep.scores if rep.scores and ids and len(rep.scores) == len(ids) else None
        if entry == "generate":
            out.append(replace(s, response=rep.answer, metadata=meta))
        elif entry == "retrieve":
            out.append(replace(s, retrieved_ids=ids or [], retrieved_scores=scores,
                               retrieved_contexts=rep.contexts or s.retrieved_contexts,
                               metadata=meta))
        else:
            out.append(replace(s, response=rep.answer,
                               retrieved_contexts=rep.contexts if rep.contexts else None,
                               retrieved_ids=ids, retrieved_scores=scores, metadata=meta))
    return out


def target_reason(sample: Sample) -> str | None:
    """The unscored reason a failed call gives its sample (``target_unmapped: ...``)."""
    err = sample.metadata.get("target_error") if sample.metadata else None
    return str(err) if err else None


def mark_unscored(result: EvalResult, samples: Sequence[Sample]) -> EvalResult:
    """Every metric of a sample whose call failed: unscored with the call's reason (a value
    computed from a missing output — a 0 recall of an empty ranking — is not kept)."""
    reasons = {s.id: r for s in samples if (r := target_reason(s)) is not None}
    if not reasons:
        return result
    for res in result:
        changed = False
        for i, sid in enumerate(res.sample_ids):
            if sid in reasons:
                res.reasons[i] = reasons[sid]
                res.values[i] = np.nan
                changed = True
        if changed:
            res.__dict__.pop("aggregate", None)   # recomputed with the new reasons
    return result


__all__ = ["apply_replies", "build_requests", "call_record", "history_of", "mark_unscored",
           "target_reason"]
