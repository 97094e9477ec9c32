"""The tiers on the user's own system: what a tier does when the benchmark config declares
``target:`` / ``targets:``.

A tier calls :func:`run_targets` with its entry point (``retrieve`` for Tier 1 — ``answer``
when the target has no ``retrieve`` —, ``generate`` on the gold contexts for Tier 2,
``answer`` for Tier 3) and a ``score(samples, name, signature) -> EvalResult`` of its own;
each target gives one result named after it (a failed call: that sample's reason in every
metric) and one ``<name>:latency`` result with the calls' latency metrics. The tier context
is duck-typed (``config``, ``cache``, ``seed``, ``annotate``): this module sits below the
tiers and imports none of them.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult
from ragmeter.targets.fill import mark_unscored
from ragmeter.targets.latency import latency_result
from ragmeter.targets.session import TargetSession

Score = Callable[[list[Sample], str, dict[str, str]], EvalResult]

#: inside :func:`planned_target_calls` (``ragmeter run --estimate``) targets are not called:
#: the calls they would get are counted here, per target and entry
_PLANNED: ContextVar[Counter[str] | None] = ContextVar("ragmeter_target_plan", default=None)


@contextlib.contextmanager
def planned_target_calls() -> Iterator[Counter[str]]:
    """Count the target calls a run would make instead of making them."""
    counts: Counter[str] = Counter()
    token = _PLANNED.set(counts)
    try:
        yield counts
    finally:
        _PLANNED.reset(token)


def plan_lines(counts: Counter[str]) -> list[str]:
    """What ``--estimate`` prints for the targets."""
    return [f"target {key}: {n} calls (none sent; retries not counted)"
            for key, n in sorted(counts.items())]


def _stand_ins(samples: list[Sample], entry: str) -> list[Sample]:
    """Outputs that let the judge plan count the calls real answers would need."""
    if entry == "retrieve":
        return [replace(s, retrieved_ids=[]) for s in samples]
    return [replace(s, response="(the target's answer)",
                    retrieved_contexts=s.retrieved_contexts or s.reference_contexts
                    or ["(the target's context)"]) for s in samples]


def target_sessions(ctx: Any) -> dict[str, TargetSession]:
    """The config's targets as sessions, built once per tier context."""
    out: dict[str, TargetSession] = {}
    config = ctx.config
    for tc in getattr(config, "targets", None) or ():
        key = f"target:{tc.name}"
        if key not in ctx.cache:
            ctx.cache[key] = TargetSession(tc, mode=getattr(config, "target_mode", "live"),
                                           base_dir=config.base_dir)
        out[tc.name] = ctx.cache[key]
    return out


def has_targets(ctx: Any) -> bool:
    return bool(getattr(ctx.config, "targets", None))


def run_targets(ctx: Any, samples: list[Sample], entry: str, score: Score, *,
                k: int | None = None,
                contexts: Sequence[Sequence[str]] | None = None) -> list[EvalResult]:
    """Ask every configured target through ``entry`` and score each (see the module doc);
    targets without that entry are skipped (an empty list: none has it)."""
    out: list[EvalResult] = []
    for name, session in target_sessions(ctx).items():
        entries = session.target.entries()
        use = entry if entry in entries else ("answer" if entry == "retrieve" and
                                              "answer" in entries else None)
        if use is None:
            continue
        planned = _PLANNED.get()
        if planned is not None:
            planned[f"{name} ({use})"] += len(samples)
            out.append(score(_stand_ins(samples, use), name, session.signature_fields()))
            continue
        before = len(session.replies.get(use, []))
        filled = session.call(samples, use, k=k, contexts=contexts)
        for s in filled:
            call = dict(s.metadata.get("target_call", {}))
            call.pop("raw", None)
            ctx.annotate(s.id, f"target:{name}:{use}", {
                **call, "ids": list(s.retrieved_ids or [])[:10],
                "answer": (s.response or "")[:500]})
        res = score(filled, name, session.signature_fields())
        out.append(mark_unscored(res, filled))
        got = session.replies[use][before:]
        out.append(latency_result([sid for sid, _ in got], [r for _, r in got],
                                  session.target.signature, seed=ctx.seed,
                                  name=f"{name}:latency", entry=use))
    return out


__all__ = ["has_targets", "plan_lines", "planned_target_calls", "run_targets",
           "target_sessions"]
