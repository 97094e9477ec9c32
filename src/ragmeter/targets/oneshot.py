"""The ``--target`` option of the one-shot commands (``ragmeter score generation``,
``ragmeter score retrieval``): fill the samples from the target, then put the target's latency
metrics, signature and per-sample reasons into the command's result.

Under ``--estimate`` nothing is sent: the samples get stand-in outputs (so the judge plan
counts the judge calls the real answers would need) and :func:`planned_calls` says how many
target calls the run would make.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ragmeter.data.sample import Sample
from ragmeter.errors import UsageError
from ragmeter.results.records import EvalResult
from ragmeter.targets.conformance import known_ids
from ragmeter.targets.fill import mark_unscored
from ragmeter.targets.session import TargetSession

STAND_IN_ANSWER = "(the target's answer)"
STAND_IN_CONTEXT = "(the target's context)"


@dataclass
class Filled:
    """The samples as the target filled them, and the session that did it (None under
    ``--estimate``)."""

    samples: list[Sample]
    session: TargetSession | None
    entry: str
    calls: int


def pick_entry(session_entries: Sequence[str], wanted: str | None, default: str) -> str:
    if wanted is None:
        return default if default in session_entries else session_entries[0]
    if wanted not in session_entries:
        raise UsageError("--target-entry", f"the target has no '{wanted}' entry point",
                         list(session_entries))
    return wanted


def fill_from_target(samples: Sequence[Sample], spec: str | Path, *, entry: str | None,
                     default_entry: str, k: int | None = None, replay: bool = False,
                     estimate: bool = False, scores_ids: bool = False,
                     chunk_metrics: Sequence[str] = ()) -> Filled:
    """Ask the target about every sample (or, under ``estimate``, only count the calls).
    ``scores_ids``: the returned ids are scored, so an id rule that maps none of them onto a
    gold id fails the command (:mod:`ragmeter.targets.conformance`), and so do document ids
    scored by ``chunk_metrics`` (the command's metrics scored at chunk level)."""
    session = TargetSession(str(spec), mode="replay" if replay else "live")
    chosen = pick_entry(session.target.entries(), entry, default_entry)
    items = list(samples)
    if chosen == "generate":
        missing = [s.id for s in items if not s.reference_contexts]
        if missing:
            raise UsageError("--target-entry", "'generate' answers from the gold context: "
                             f"samples {missing[:3]} have no reference_contexts")
    if estimate:
        return Filled(_stand_ins(items, chosen), None, chosen, len(items))
    contexts = [list(s.reference_contexts or []) for s in items] if chosen == "generate" \
        else None
    filled = session.call(items, chosen, k=k, contexts=contexts,
                          known=known_ids(items, chunk_metrics=chunk_metrics)
                          if scores_ids else None)
    return Filled(filled, session, chosen, len(items))


def _stand_ins(samples: list[Sample], entry: str) -> list[Sample]:
    if entry == "retrieve":
        return samples
    return [replace(s, response=STAND_IN_ANSWER,
                    retrieved_contexts=s.retrieved_contexts or s.reference_contexts
                    or [STAND_IN_CONTEXT]) for s in samples]


def finish(result: EvalResult, filled: Filled, *, seed: int = 42) -> EvalResult:
    """Per-sample call reasons, the target's signature on every metric, its latency metrics
    and its call counts in ``meta``."""
    session = filled.session
    if session is None:
        return result
    mark_unscored(result, filled.samples)
    sig = session.signature_fields()
    for r in result:
        r.signature = r.signature.with_fields(**sig)
    lat = session.latency(filled.entry, seed=seed)
    if lat is not None:
        for r in lat:
            result.add(r)
        if "warmup" in lat.meta:    # kept out of the percentiles, reported apart
            result.meta["latency_warmup"] = lat.meta["warmup"]
    result.meta["target"] = sig
    result.meta["target_calls"] = session.call_counts()
    session.close()
    return result


def planned_calls(filled: Filled | None) -> str | None:
    """The line ``--estimate`` prints for the target (None without one)."""
    if filled is None:
        return None
    return (f"target calls: {filled.calls} ({filled.entry}; none sent, no judge call made for "
            "them; retries not counted)")


__all__ = ["Filled", "fill_from_target", "finish", "planned_calls"]
