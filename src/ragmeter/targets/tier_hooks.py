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

from ragmeter.cost.pricing import Price, UsageEstimate, estimate_usage
from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult
from ragmeter.targets.conformance import KnownIds, known_ids
from ragmeter.targets.fill import mark_unscored
from ragmeter.targets.latency import latency_result
from ragmeter.targets.session import TargetSession

Score = Callable[[list[Sample], str, dict[str, str]], EvalResult]

#: inside :func:`planned_target_calls` (``ragmeter run --estimate``) targets are not called:
#: the calls they would get are counted here, per target and entry
_PLANNED: ContextVar[TargetPlan | None] = ContextVar("ragmeter_target_plan", default=None)


class TargetPlan(Counter[str]):
    """The calls a run would make, per ``"<target> (<entry>)"``; per target, each planned
    call's question tokens and, when the very request was recorded before, its recorded
    usage, so the plan is priced (:meth:`estimates`)."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: dict[str, list[int]] = {}
        self.exact: dict[str, list[tuple[int | None, int | None] | None]] = {}
        self.sessions: dict[str, TargetSession] = {}

    def add(self, name: str, session: TargetSession, samples: Sequence[Sample], entry: str,
            *, k: int | None = None, contexts: Sequence[Sequence[str]] | None = None) -> None:
        from ragmeter.cost.tokens import count_tokens
        from ragmeter.targets.fill import build_requests

        self.sessions[name] = session
        self.questions.setdefault(name, []).extend(
            count_tokens(s.user_input or "") + sum(count_tokens(str(h.get("content", "")))
                                                   for h in (s.history or ()))
            for s in samples)
        exact = self.exact.setdefault(name, [])
        sig = session.target.signature
        for req in build_requests(samples, entry, k=k, contexts=contexts):
            got = session.store.get(req.key(sig)) if session.store is not None else None
            exact.append(None if got is None else (got.tokens_in, got.tokens_out))

    def estimates(self) -> list[UsageEstimate]:
        """Each target's planned calls priced from the usage of its recorded replies."""
        out = []
        for name, tokens in sorted(self.questions.items()):
            session = self.sessions[name]
            recorded = (session.store.usage(session.target.signature.identity())
                        if session.store is not None else [])
            out.append(estimate_usage(name, tokens, recorded, Price.set_on(session.config),
                                      exact=self.exact.get(name)))
        return out


@contextlib.contextmanager
def planned_target_calls() -> Iterator[TargetPlan]:
    """Count the target calls a run would make instead of making them."""
    counts = TargetPlan()
    token = _PLANNED.set(counts)
    try:
        yield counts
    finally:
        _PLANNED.reset(token)


def plan_lines(counts: Counter[str]) -> list[str]:
    """What ``--estimate`` prints for the targets: the calls, then their priced usage."""
    lines = [f"target {key}: {n} calls (none sent; retries not counted)"
             for key, n in sorted(counts.items())]
    if isinstance(counts, TargetPlan):
        lines += [e.line() for e in counts.estimates()]
    return lines


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


def _final(ctx: Any, samples: Sequence[Sample]) -> bool:
    """Whether this batch is the tier's last (its samples end where the tier's do)."""
    every = getattr(ctx, "all_samples", None)
    return not every or not samples or samples[-1].id == every[-1].id


#: batches of a target's calls sent ahead of the one being scored: two keep the target
#: busy through a slow save or scoring of one batch (a journal's fsync on a loaded disk)
AHEAD_BATCHES = 2


def _next(ctx: Any, samples: Sequence[Sample]) -> list[Sample]:
    """The samples of the runner's next :data:`AHEAD_BATCHES` batches, as far as the tier's
    samples tell: as many per batch as this batch has, after its last one (sent ahead: see
    ``TargetSession.call``)."""
    every = getattr(ctx, "all_samples", None)
    if not every or not samples:
        return []
    last = samples[-1].id
    pos = next((i for i, s in enumerate(every) if s.id == last), None)
    return [] if pos is None else list(every[pos + 1:pos + 1 + AHEAD_BATCHES * len(samples)])


def _known(ctx: Any, samples: Sequence[Sample], chunk_metrics: Sequence[str]) -> KnownIds:
    """The ids a returned id may meet: the tier's gold ids and the configured corpus'."""
    chunks: list[str] = []
    docs: list[str] = []
    if getattr(ctx.config, "corpus", None) is not None:
        for c in ctx.chunks():
            chunks.append(c.chunk_id)
            docs.append(c.doc_id)
    return known_ids(getattr(ctx, "all_samples", None) or samples, chunks, docs,
                     chunk_metrics=chunk_metrics)


def run_targets(ctx: Any, samples: list[Sample], entry: str, score: Score, *,
                k: int | None = None, contexts: Sequence[Sequence[str]] | None = None,
                scores_ids: bool = False,
                chunk_metrics: Sequence[str] = ()) -> list[EvalResult]:
    """Ask every configured target through ``entry`` and score each (see the module doc);
    targets without that entry are skipped (an empty list: none has it). ``scores_ids``:
    the returned ids are scored (Tier 1), so an id rule that maps none of them onto a known
    id fails the tier (:mod:`ragmeter.targets.conformance`), and so do document ids scored
    by ``chunk_metrics`` (the tier's metrics scored at chunk level)."""
    out: list[EvalResult] = []
    known = (_known(ctx, samples, chunk_metrics) if scores_ids and _PLANNED.get() is None
             else None)
    for name, session in target_sessions(ctx).items():
        entries = session.target.entries()
        use = entry if entry in entries else ("answer" if entry == "retrieve" and
                                              "answer" in entries else None)
        if use is None:
            continue
        planned = _PLANNED.get()
        if planned is not None:
            planned[f"{name} ({use})"] += len(samples)
            planned.add(name, session, samples, use, k=k,
                        contexts=contexts)
            out.append(score(_stand_ins(samples, use), name, session.signature_fields()))
            continue
        before = len(session.replies.get(use, []))
        final = _final(ctx, samples)
        try:
            filled = session.call(samples, use, k=k, contexts=contexts, final=final,
                                  known=known, ahead=() if final else _next(ctx, samples))
        finally:
            if final:    # the tier's last batch: its connections are not needed any more
                session.release()
        for asked, s in zip(samples, filled, strict=True):
            ctx.annotate(s.id, f"target:{name}:{use}", shown_call(asked, s))
        res = score(filled, name, session.signature_fields())
        out.append(mark_unscored(res, filled))
        got = session.replies[use][before:]
        out.append(latency_result([sid for sid, _ in got], [r for _, r in got],
                                  session.target.signature, seed=ctx.seed,
                                  name=f"{name}:latency", entry=use,
                                  price=Price.set_on(session.config)))
    return out


#: what a stored sample keeps of each target call, at most (the rest is in the recorded
#: replies): contexts, characters of the answer and of each context
SHOWN_CONTEXTS, ANSWER_CHARS, CONTEXT_CHARS = 20, 20_000, 4_000


def shown_call(asked: Sample, filled: Sample) -> dict[str, Any]:
    """What the stored sample keeps of one target call, for the pages that show it as scored
    (``target:<name>:<entry>``): the target's answer, its contexts (None when the reply
    returned none — ids alone are shown with "text not returned"), their ids, the call's
    latency and time to first token, and the error of a failed call."""
    call = dict(filled.metadata.get("target_call", {}))
    call.pop("raw", None)
    returned = (filled.retrieved_contexts
                if filled.retrieved_contexts is not asked.retrieved_contexts else None)
    return {**call, "ids": [str(x) for x in (filled.retrieved_ids or [])][:SHOWN_CONTEXTS],
            "answer": None if filled.response is None else filled.response[:ANSWER_CHARS],
            "contexts": None if returned is None else [
                str(c)[:CONTEXT_CHARS] for c in list(returned)[:SHOWN_CONTEXTS]],
            "error": filled.metadata.get("target_error")}


def replay_sessions(ctx: Any, sessions: Sequence[Any]
                    ) -> list[tuple[str, list[Any], EvalResult]]:
    """Multi-turn sessions through each target with an ``answer`` entry, turn by turn: turn
    ``t`` of every session is asked with the session's history so far (the questions and the
    target's own earlier answers) and the session id, then the next turn. Returns per target
    its name, the sessions with the target's answers (``answers``; a failed turn: None) and
    the calls' latency result. ``sessions``: objects with ``id``, ``questions``, ``answers``
    (the UX tier's sessions)."""
    out: list[tuple[str, list[Any], EvalResult]] = []
    for name, session in target_sessions(ctx).items() if sessions else ():
        if "answer" not in session.target.entries():
            continue
        answers: dict[str, list[str | None]] = {s.id: [None] * len(s.questions)
                                                for s in sessions}
        history: dict[str, list[dict[str, str]]] = {s.id: [] for s in sessions}
        before = len(session.replies.get("answer", []))
        for turn in range(max((len(s.questions) for s in sessions), default=0)):
            live = [s for s in sessions if len(s.questions) > turn]
            asked = [Sample(f"{s.id}#{turn + 1}", s.questions[turn],
                            history=list(history[s.id]) or None,
                            metadata={"session_id": s.id}) for s in live]
            for s, got in zip(live, session.call(asked, "answer", final=False), strict=True):
                answers[s.id][turn] = got.response
                history[s.id] += [{"role": "user", "content": s.questions[turn]},
                                  {"role": "assistant", "content": got.response or ""}]
        session.conformance.check(final=True)
        got_all = session.replies["answer"][before:]
        lat = latency_result([sid for sid, _ in got_all], [r for _, r in got_all],
                             session.target.signature, seed=ctx.seed,
                             name=f"{name}:latency", entry="answer",
                             price=Price.set_on(session.config))
        out.append((name, [replace(s, answers=answers[s.id]) for s in sessions], lat))
    return out


def _cosines(emb: Any, a: list[str], b: list[str]) -> Any:
    import numpy as np

    x = np.asarray(emb.embed(a, kind="symmetric"), dtype=np.float64)
    y = np.asarray(emb.embed(b, kind="symmetric"), dtype=np.float64)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
    return x @ y.T


def probe_cache(ctx: Any, cache: Sequence[Any], queries: Sequence[Any], emb: Any,
                threshold: float) -> list[EvalResult]:
    """The semantic-cache probes through each target: the cached questions are asked first,
    then the queries (repeats and paraphrases). For every query whose nearest cached question
    (embedding cosine above ``threshold``) is a repeat or paraphrase of it:
    ``cache_answer_consistency`` (cosine of the two answers the target gave),
    ``cache_latency_ratio`` (the query's latency / the cached question's; well below 1 where
    the system served it from a cache) and, when replies report ``metadata.cache_hit``,
    ``cache_reported_hit_rate``. A failed call is that query's reason."""
    import numpy as np

    from ragmeter.results.records import MetricResult, Signature

    out: list[EvalResult] = []
    near = _cosines(emb, [q.question for q in queries], [c.question for c in cache])
    for name, session in target_sessions(ctx).items():
        if "answer" not in session.target.entries():
            continue
        before = len(session.replies.get("answer", []))
        # each question in a session of its own (its id): a server-side conversation
        # memory cannot pass for a cache hit, and a service that needs a session id gets one
        warm = session.call([Sample(f"cache:{c.id}", c.question,
                                    metadata={"session_id": f"cache:{c.id}"})
                             for c in cache], "answer", final=False)
        probe = session.call([Sample(f"probe:{q.id}", q.question,
                                     metadata={"session_id": f"probe:{q.id}"})
                              for q in queries], "answer")
        pairs = [(i, int(near[i].argmax())) for i in range(len(queries))
                 if near[i].max() > threshold]
        ids = [queries[i].id for i, _ in pairs]
        sig = Signature.make(model=getattr(emb, "name", "?"), tau=threshold,
                             **session.signature_fields())
        cons, ratio, hits = (np.full(len(pairs), np.nan) for _ in range(3))
        reasons: dict[int, str] = {}
        both = [(probe[i], warm[j]) for i, j in pairs]
        ok = [k for k, (p, w) in enumerate(both) if p.response and w.response]
        for k, (p, w) in enumerate(both):
            if k not in ok:
                reasons[k] = str(p.metadata.get("target_error") or w.metadata.get(
                    "target_error") or "missing_field:response")
        if ok:
            sims = _cosines(emb, [both[k][0].response or "" for k in ok],
                            [both[k][1].response or "" for k in ok])
            for n, k in enumerate(ok):
                p, w = both[k]
                cons[k] = float(sims[n, n])
                lp, lw = (x.metadata["target_call"].get("latency_s") for x in (p, w))
                ratio[k] = lp / lw if lp and lw else np.nan
                flag = p.metadata.get("target_metadata", {}).get("cache_hit")
                hits[k] = float(flag) if isinstance(flag, bool) else np.nan
        res = EvalResult(f"ux_cache:{name}", meta={"tier": "ux", "pairs": len(pairs),
                                                   "queries": len(queries)})
        res.add(MetricResult("cache_answer_consistency", ids, cons,
                             sig.with_fields(metric="cache_answer_consistency"),
                             reasons=dict(reasons), seed=ctx.seed))
        r_reasons = {k: reasons.get(k, "target_no_timing") for k in range(len(pairs))
                     if np.isnan(ratio[k])}
        res.add(MetricResult("cache_latency_ratio", ids, ratio,
                             sig.with_fields(metric="cache_latency_ratio"), reasons=r_reasons,
                             higher_is_better=False, seed=ctx.seed))
        if ok and not np.all(np.isnan(hits[ok])):
            res.add(MetricResult("cache_reported_hit_rate", ids, hits,
                                 sig.with_fields(metric="cache_reported_hit_rate"),
                                 reasons={k: reasons.get(k, "target_no_cache_flag")
                                          for k in range(len(pairs)) if np.isnan(hits[k])},
                                 seed=ctx.seed))
        got = session.replies["answer"][before:]
        out += [res, latency_result([sid for sid, _ in got], [r for _, r in got],
                                    session.target.signature, seed=ctx.seed,
                                    name=f"{name}:cache_latency", entry="answer")]
    return out


class TargetRetriever:
    """A target as a retriever (``search(questions, k) -> hit lists``), for tiers that run a
    retriever object (real users' logged questions). A failed call is an empty hit list here
    and that sample's reason after :meth:`finish`."""

    def __init__(self, session: TargetSession):
        self.chunks: list[Any] = []      # no texts of its own: contexts come from the target
        self.session = session
        self.name = session.name
        self.entry = "retrieve" if "retrieve" in session.target.entries() else "answer"
        self.reasons: list[str | None] = []
        self.answers: list[str | None] = []
        self.latency: EvalResult | None = None

    def index(self, chunks: Any) -> None:
        return None

    def signature_fields(self) -> dict[str, str]:
        return self.session.signature_fields()

    def search(self, questions: Sequence[str], k: int) -> list[list[Any]]:
        from ragmeter.retrieval.base import Hit

        before = len(self.session.replies.get(self.entry, []))
        asked = [Sample(f"q{i + 1}", q) for i, q in enumerate(questions)]
        filled = self.session.call(asked, self.entry, k=k)
        got = self.session.replies[self.entry][before:]
        self.latency = latency_result([sid for sid, _ in got], [r for _, r in got],
                                      self.session.target.signature,
                                      name=f"{self.name}:latency", entry=self.entry,
                                      price=Price.set_on(self.session.config))
        self.reasons = [s.metadata.get("target_error") for s in filled]
        self.answers = [s.response for s in filled] if self.entry == "answer" else []
        out = []
        for s in filled:
            ids = list(s.retrieved_ids or [])
            scores = list(s.retrieved_scores or [float(len(ids) - i) for i in range(len(ids))])
            out.append([Hit(i, i.rsplit("#", 1)[0], sc) for i, sc in zip(ids, scores,
                                                                          strict=False)])
        return out

    def finish(self, result: EvalResult) -> list[EvalResult]:
        """The result with each failed call's reason on its sample (the samples were asked in
        the result's order), and the calls' latency result."""
        for res in result:
            if len(res.sample_ids) != len(self.reasons):
                continue
            for i, why in enumerate(self.reasons):
                if why:
                    res.reasons[i] = str(why)
                    res.values[i] = float("nan")
            res.__dict__.pop("aggregate", None)
        vs_logged = self.against_logged(result)
        return [result, *([vs_logged] if vs_logged is not None else []),
                *([self.latency] if self.latency is not None else [])]

    def against_logged(self, result: EvalResult) -> EvalResult | None:
        """The target's answers against the answers logged for the same questions
        (``<target>:vs_logged``: ROUGE-L on Unicode words, no stemming); None when
        the target was asked for rankings only or nothing was logged."""
        from ragmeter.generation.evaluate import evaluate_generation

        ids = next((r.sample_ids for r in result), [])
        if not self.answers or len(self.answers) != len(ids):
            return None
        pairs = []
        for sid, answer, why in zip(ids, self.answers, self.reasons, strict=True):
            logged = result.samples.get(sid)
            pairs.append(Sample(sid, getattr(logged, "user_input", None),
                                response=None if why else answer,
                                reference=getattr(logged, "response", None),
                                metadata={"target_error": why} if why else {}))
        if not any(p.reference for p in pairs):
            return None
        out = evaluate_generation(pairs, ["rouge_l"], name=f"{self.name}:vs_logged")
        for m in out:
            m.signature = m.signature.with_fields(vs="logged_answer",
                                                  **self.session.signature_fields())
        return mark_unscored(out, pairs)


def target_retrievers(ctx: Any) -> list[TargetRetriever]:
    """The configured targets as retrievers (empty without targets)."""
    return [TargetRetriever(s) for s in target_sessions(ctx).values()]


__all__ = [
    "TargetRetriever",
    "has_targets",
    "plan_lines",
    "planned_target_calls",
    "probe_cache",
    "replay_sessions",
    "run_targets",
    "target_retrievers",
    "target_sessions",
]
