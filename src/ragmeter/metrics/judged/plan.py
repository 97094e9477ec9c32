"""The judge-call planner of the judged metrics: few calls per sample, driven by the metric rows.

Each judged metric is one row (:class:`~ragmeter.metrics.judged.row.JudgedMetric`) naming the
questions it needs (:data:`~ragmeter.metrics.judged.calls.QUESTIONS`). The planner looks at
every judged metric requested in a run and, per sample, at the fields the sample has, and asks
only the questions some metric needs, grouped into the calls that ask them
(:data:`~ragmeter.metrics.judged.calls.CALLS`):

1. ``gen.claims/v1`` — answer and reference split into atomic claims, both in one call
   (demo judges: razdel sentences, no call);
2. ``gen.verify/v1`` — after call 1: yes/no verdicts for answer claims vs context and vs
   reference, and for reference claims vs answer and vs context, all in one structured reply;
3. ``gen.contexts/v1`` — every context of the sample at once: relevance 0/1/2 and, when a
   reference exists, usefulness yes/no;
4. ``gen.answer/v1`` — answer relevance 0/1/2 and end-to-end usefulness 0/1/2.

Calls that depend on no other call (1, 3, 4) of all samples go out together; a call that needs
an earlier call's answers (2) is chained to that sample's own earlier call and sent as soon as
it returns (``JudgeRequest.then``), so one slow reply never holds back the other samples. The
full set of eight built-in metrics therefore costs ≤ 4 calls per sample (RAGAS: 13), plus at
most one repair call per unparseable reply made by the judge engine.

A reply that fails (unparseable, schema mismatch, timeout, ...) leaves unscored exactly the
calls that needed it, with the judge's reason. :class:`Asking` is the mechanism (the judge
benchmark uses it too, on its items); :func:`run_plan` applies it to a run's samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter.bulk import fewer_collections
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MetricSpecError
from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.judged import calls as C
from ragmeter.metrics.judged.jury import is_jury_reply, read_jury
from ragmeter.metrics.judged.state import AskedCall, JudgedContext, JudgePlan, SampleJudgement
from ragmeter.text import detect_language

if TYPE_CHECKING:
    from ragmeter.judges.base import JudgeReply, JudgeRequest
    from ragmeter.metrics.judged.row import JudgedMetric
    from ragmeter.metrics.registry import Metric


def questions_of(row: JudgedMetric, metric: Metric) -> frozenset[str]:
    """The questions ``metric`` needs, with the questions they are asked about."""
    out: set[str] = set()
    todo = list(row.needs_of(metric))
    while todo:
        name = todo.pop()
        if name in out:
            continue
        q = C.QUESTIONS.get(name)
        if q is None:
            raise MetricSpecError(f"judged metric '{row.name}' needs an unknown question "
                                  f"'{name}' (known: {', '.join(sorted(C.QUESTIONS))})")
        out.add(name)
        todo.extend(q.requires)
    return frozenset(out)


def calls_of(questions: Iterable[str]) -> tuple[str, ...]:
    """The call kinds that ask ``questions``, in call order."""
    kinds = {C.QUESTIONS[q].call for q in questions}
    return tuple(c.kind for c in C.CALLS if c.kind in kinds)


class _Chain:
    """One sample on its way through its calls: which are settled, which are in flight."""

    def __init__(self, sample: Sample, judgement: SampleJudgement, lang: str,
                 asked_by: dict[str, Iterable[str]]) -> None:
        self.sample, self.judgement, self.lang = sample, judgement, lang
        self.asked_by = asked_by    # question -> the metrics that need it
        self.settled: set[str] = set()
        self.issued: set[str] = set()
        #: call kind -> the sample's questions that call asks (made at its first use)
        self.asks: dict[str, frozenset[str]] = {}
        #: the calls some of its questions need, in the plan's order
        self.calls: list[C.Call] = []


class Asking:
    """The judge calls of a set of samples, each sample asked only the questions it needs.

    :meth:`add` each sample with its questions; :meth:`requests` gives every sample's first
    calls, each chained (``JudgeRequest.then``) to the calls that need its answers. Send them
    with :func:`ragmeter.judges.llm_judge.ask_chained` (alone or in a larger batch): the replies
    are read into the judgements as they arrive; :meth:`finish` orders each sample's call
    records. ``binary``: the yes/no prompt variants (demo judges); ``claims``: where claims
    come from (default: sentences for binary prompts, else the judge); ``send``: applied to
    every request as it is sent (the judge benchmark sets its token limit and repeat tag).
    """

    def __init__(self, *, binary: bool, claims: C.ClaimsSource | None = None,
                 send: Callable[[JudgeRequest], JudgeRequest] | None = None,
                 answered: frozenset[str] = frozenset()) -> None:
        self.binary = binary
        #: call kinds answered elsewhere (a batch round's earlier plan): none of them is made
        self.answered = answered
        self.claims: C.ClaimsSource = claims or ("sentences" if binary else "judge")
        self.send = send
        self.calls = tuple(C.CALLS)
        self.judgements: list[SampleJudgement] = []
        self.n_requests = 0
        self.by_prompt: dict[str, int] = {}
        #: call kind -> prompt versions sent
        self.versions: dict[str, set[str]] = {}
        #: some reply came from ``ragmeter serve mock-judge`` (marked, random test replies)
        self.mock = False
        #: the model names on the replies that were read
        self.served: set[str] = set()
        self._chains: list[_Chain] = []
        #: a set of questions -> (the calls it needs, the kinds settled from the start)
        self._routes: dict[frozenset[str], tuple[list[C.Call], frozenset[str]]] = {}

    def add(self, sample: Sample, needs: Iterable[str], lang: str,
            asked_by: Mapping[str, Iterable[str]] | None = None) -> SampleJudgement:
        """Ask ``sample`` the questions ``needs`` in language ``lang``; its judgement.
        ``asked_by``: the metrics that need each question (each request names those of its
        questions in ``JudgeRequest.metric``)."""
        j = SampleJudgement(sample.id)
        j.needs |= set(needs)
        self.judgements.append(j)
        ch = _Chain(sample, j, lang, dict(asked_by or {}))
        # the calls none of its questions needs are settled from the start (nothing to ask);
        # samples mostly need the same questions: worked out once per set of them
        needs = frozenset(j.needs)
        route = self._routes.get(needs)
        if route is None:
            kinds = {C.QUESTIONS[q].call for q in needs}
            route = self._routes[needs] = (
                [c for c in self.calls if c.kind in kinds],
                frozenset(c.kind for c in self.calls if c.kind not in kinds) | self.answered)
        ch.calls = route[0]
        ch.settled.update(route[1])
        self._chains.append(ch)
        return j

    def requests(self) -> list[JudgeRequest]:
        """The first calls of every sample added (calls with nothing to ask settle at once)."""
        return [r for ch in self._chains for r in self._ready(ch)]

    def _ready(self, ch: _Chain) -> list[JudgeRequest]:
        """This sample's calls whose earlier calls are all settled, as requests."""
        out: list[JudgeRequest] = []
        j = ch.judgement
        progress = True
        while progress:
            progress = False
            for call in ch.calls:
                if call.kind in ch.settled or call.kind in ch.issued \
                        or not all(a in ch.settled for a in call.after):
                    continue
                questions = ch.asks.get(call.kind)
                if questions is None:
                    questions = ch.asks[call.kind] = frozenset(
                        q for q in j.needs if C.QUESTIONS[q].call == call.kind)
                req = None
                if questions and not any(a in j.failed for a in call.after):
                    req = call.build(C.Ask(ch.sample, ch.lang, self.binary, questions, j,
                                           self.claims))
                if req is None:  # nothing to ask, or answered without a call
                    ch.settled.add(call.kind)
                    progress = True
                    continue
                ch.issued.add(call.kind)
                metrics = sorted({m for q in questions for m in ch.asked_by.get(q, ())})
                req = req.but(metric=",".join(metrics) or req.metric,
                              kind=req.kind or call.kind)
                sent = self.send(req) if self.send is not None else req
                out.append(sent.but(then=self._then(ch, call, req)))
        self.n_requests += len(out)
        return out

    def _then(self, ch: _Chain, call: C.Call, req: JudgeRequest
              ) -> Callable[[JudgeReply], list[JudgeRequest]]:
        def then(rep: JudgeReply) -> list[JudgeRequest]:
            self._read(ch.judgement, call, req, rep)
            ch.settled.add(call.kind)
            return self._ready(ch)
        return then

    def _read(self, j: SampleJudgement, call: C.Call, req: JudgeRequest,
              rep: JudgeReply) -> None:
        self.by_prompt[req.prompt_version] = self.by_prompt.get(req.prompt_version, 0) + 1
        self.versions.setdefault(call.kind, set()).add(req.prompt_version)
        msgs = rep.extra.get("messages") if rep.extra else None
        self.mock = self.mock or bool(rep.extra and rep.extra.get("mock"))
        if rep.ok and rep.model:
            self.served.add(rep.model)
        prob = rep.extra.get("token_prob") if rep.extra else None
        j.calls.append(AskedCall(call.kind, req.prompt_version, rep.ok, rep.reason,
                                  rep.detail, rep.raw, msgs if msgs is not None
                                  else [dict(m) for m in req.messages],
                                  float(prob) if isinstance(prob, (int, float)) else None))
        if not rep.ok:
            j.failed[call.kind] = (rep.reason or "backend_error", rep.detail)
        elif is_jury_reply(rep):
            if (problem := read_jury(call, j, req, rep)) is not None:
                j.failed[call.kind] = ("schema_error", problem)
        elif not isinstance(rep.data, dict):
            j.failed[call.kind] = ("schema_error", "reply is not a JSON object")
        elif (problem := call.read(j, req, rep.data)) is not None:
            j.failed[call.kind] = ("schema_error", problem)

    def finish(self) -> list[SampleJudgement]:
        """The judgements, each sample's calls in one order whatever the replies' timing:
        independent calls first, then the calls that need them."""
        by_kind = {c.kind: c for c in self.calls}

        def depth(c: C.Call) -> int:
            return 1 + max((depth(by_kind[a]) for a in c.after), default=-1)

        order = {c.kind: (depth(c), i) for i, c in enumerate(self.calls)}
        for j in self.judgements:
            j.calls.sort(key=lambda c: order[c.kind])
        return self.judgements


def ask(judge: object, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
    """Send ``requests`` with their chains (one batch; a follow-up goes out as soon as its
    own earlier call returned, never after the slowest call of all)."""
    from ragmeter.judges.llm_judge import ask_chained

    return ask_chained(judge, requests) if requests else []


def _lang(ctx: JudgedContext, sample: Sample, binary: bool) -> str:
    if binary:
        return "en"
    if ctx.language in ("ru", "en"):
        return ctx.language
    return detect_language([sample.user_input, sample.response, sample.reference])


def run_plan(ctx: JudgedContext, metrics: Sequence[tuple[JudgedMetric, Metric]]) -> JudgePlan:
    """Make the judge calls needed by ``metrics`` (rows with their configured metric) for every
    sample of ``ctx``."""
    judge = ctx.judge
    if judge is None:
        raise ConfigError("judge", "judged metrics need a judge: pass judge=make_judge("
                          "JudgeConfig(...)) or --judge-url/--judge-model on the command line")
    with fewer_collections():   # every sample's requests and chained calls are made at once
        return _run_plan(ctx, judge, metrics)


#: one sample as the planner asks it: the sample, its questions, language, and the metrics
#: that need each question
_Entry = tuple[Sample, set[str], str, dict[str, list[str]]]


def _asking(entries: Sequence[_Entry], binary: bool,
            answered: frozenset[str] = frozenset()) -> Asking:
    asking = Asking(binary=binary, answered=answered)
    for s, needs, lang, asked_by in entries:
        asking.add(s, needs, lang, asked_by)
    return asking


def _run_plan(ctx: JudgedContext, judge: Any,
              metrics: Sequence[tuple[JudgedMetric, Metric]]) -> JudgePlan:
    from ragmeter.judges.batchfiles.rounds import current

    binary = bool(getattr(judge, "demo", False))
    # the metrics by the sample fields they need (one look at a sample's fields per set)
    by_fields: dict[tuple[str, ...], list[tuple[frozenset[str], str]]] = {}
    for row, m in metrics:
        by_fields.setdefault(tuple(row.fields), []).append((questions_of(row, m), str(m)))
    entries: list[_Entry] = []
    langs: list[str] = []
    for s in ctx.samples:
        needs: set[str] = set()
        asked_by: dict[str, list[str]] = {}
        for fields, asked in by_fields.items():
            if missing_field(s, fields) is None:
                for questions, name in asked:
                    needs |= questions
                    for q in questions:
                        asked_by.setdefault(q, []).append(name)
        langs.append(_lang(ctx, s, binary))
        entries.append((s, needs, langs[-1], asked_by))
    session = current()
    if session is not None and session.mode == "write":
        asking = _write_round(session, judge, entries, binary, [str(m) for _, m in metrics])
    else:
        asking = _asking(entries, binary)
        ask(judge, asking.requests())
    return JudgePlan(asking.finish(), asking.n_requests, asking.by_prompt, binary,
                     ",".join(sorted(set(langs))) or "-", getattr(judge, "name", "judge"),
                     getattr(judge, "model", ""), asking.versions,
                     asking.mock or getattr(getattr(judge, "backend", None), "kind", "") == "mock",
                     tuple(sorted(asking.served)))


def _write_round(session: Any, judge: Any, entries: Sequence[_Entry], binary: bool,
                 metrics: list[str]) -> Asking:
    """The plan asked while a batch round is written: calls that an earlier round of the same
    plan got all answered, and that no call still to ask needs, are not made again (their
    requests are neither rebuilt nor read from the cache). A request of such a call found
    unanswered means the plan is not the recorded one: it is then asked whole."""
    key = session.plan_key([binary, metrics, [[s, lang, sorted(needs)]
                                              for s, needs, lang, _ in entries]])
    answered = session.answered_kinds(key)
    kinds = {C.QUESTIONS[q].call for _, needs, _, _ in entries for q in needs}
    needed = {a for c in C.CALLS if c.kind in kinds and c.kind not in answered
              for a in c.after}
    skipped = frozenset(answered - needed)
    after = {c.kind: c.after for c in C.CALLS}
    with session.planning(key, answered, skipped, after) as plan:
        asking = _asking(entries, binary, skipped)
        ask(judge, asking.requests())
    if skipped and plan.surprises:
        with session.planning(key, frozenset(), frozenset(), after):
            asking = _asking(entries, binary)
            ask(judge, asking.requests())
    return asking
