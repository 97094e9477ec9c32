"""The judge-call planner of the judged metrics: few calls per sample, driven by the metric rows.

Each judged metric is one row (:class:`~ragmeter.metrics.judged.JudgedMetric`) naming the
questions it needs (:data:`~ragmeter.generation.prompts.QUESTIONS`). The planner looks at every
judged metric requested in a run and, per sample, at the fields the sample has, and asks only
the questions some metric needs, grouped into the calls that ask them
(:data:`~ragmeter.generation.prompts.CALLS`):

1. ``gen.claims/v1`` — answer and reference split into atomic claims, both in one call
   (demo judges: razdel sentences, no call);
2. ``gen.verify/v1`` — after call 1: yes/no verdicts for answer claims vs context and vs
   reference, and for reference claims vs answer and vs context, all in one structured reply;
3. ``gen.contexts/v1`` — every context of the sample at once: relevance 0/1/2 and, when a
   reference exists, usefulness yes/no;
4. ``gen.answer/v1`` — answer relevance 0/1/2 and end-to-end usefulness 0/1/2.

Calls that depend on no other call (1, 3, 4) of all samples go out together; a call that needs an
earlier call's answers (2) is chained to that sample's own earlier call and sent as soon as it
returns (``JudgeRequest.then``), so one slow reply never holds back the other samples. The full set of eight built-in metrics
therefore costs ≤ 4 calls per sample (RAGAS: 13), plus at most one repair call per unparseable
reply made by the judge engine.

A reply that fails (unparseable, schema mismatch, timeout, ...) leaves unscored exactly the
metrics that needed that call, with the judge's reason; the other calls' metrics are scored.
The metrics' formulas live in their rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MetricSpecError
from ragmeter.generation import prompts as P
from ragmeter.generation.context import GenerationContext, missing_field
from ragmeter.generation.judgement import CallRecord, JudgePlan, SampleJudgement
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.metrics.registry import Metric
from ragmeter.results.records import MetricResult, SampleScore

if TYPE_CHECKING:
    from ragmeter.metrics.judged import JudgedMetric


def questions_of(row: JudgedMetric, metric: Metric) -> frozenset[str]:
    """The questions ``metric`` needs, with the questions they are asked about."""
    out: set[str] = set()
    todo = list(row.needs_of(metric))
    while todo:
        name = todo.pop()
        if name in out:
            continue
        q = P.QUESTIONS.get(name)
        if q is None:
            raise MetricSpecError(f"judged metric '{row.name}' needs an unknown question "
                                  f"'{name}' (known: {', '.join(sorted(P.QUESTIONS))})")
        out.add(name)
        todo.extend(q.requires)
    return frozenset(out)


def calls_of(questions: frozenset[str]) -> tuple[str, ...]:
    """The call kinds that ask ``questions``, in call order."""
    kinds = {P.QUESTIONS[q].call for q in questions}
    return tuple(c.kind for c in P.CALLS if c.kind in kinds)


def _lang(ctx: GenerationContext, sample: Sample, binary: bool) -> str:
    if binary:
        return "en"
    if ctx.language in ("ru", "en"):
        return ctx.language
    from ragmeter.judges.prompts import detect_language

    return detect_language([sample.user_input, sample.response, sample.reference])


def _record(kind: str, rep: JudgeReply, req: JudgeRequest) -> CallRecord:
    msgs = rep.extra.get("messages") if rep.extra else None
    return CallRecord(kind, req.prompt_version, rep.ok, rep.reason, rep.detail, rep.raw,
                      msgs if msgs is not None else [dict(m) for m in req.messages])


def run_plan(ctx: GenerationContext, metrics: Sequence[Metric]) -> JudgePlan:
    """Make the judge calls needed by ``metrics`` for every sample of ``ctx``."""
    from ragmeter.judges.engine import ask_chained
    from ragmeter.metrics.judged import judged_row

    judge = ctx.judge
    if judge is None:
        raise ConfigError("judge", "judged metrics need a judge: pass judge=make_judge("
                          "JudgeConfig(...)) or --judge-url/--judge-model on the command line")
    binary = bool(getattr(judge, "demo", False))
    rows = [(judged_row(m), m) for m in metrics]
    asked = [(row.fields, questions_of(row, m)) for row, m in rows]
    judgements: list[SampleJudgement] = []
    langs: list[str] = []
    for s in ctx.samples:
        j = SampleJudgement(s.id)
        for fields, questions in asked:
            if missing_field(s, fields) is None:
                j.needs |= questions
        judgements.append(j)
        langs.append(_lang(ctx, s, binary))
    by_prompt: dict[str, int] = {}
    versions: dict[str, set[str]] = {}
    by_kind = {c.kind: c for c in P.CALLS}

    def depth(c: P.Call) -> int:
        return 1 + max((depth(by_kind[a]) for a in c.after), default=-1)

    # independent calls first, then the calls that need them (the order of the stored details)
    order = {c.kind: (depth(c), i) for i, c in enumerate(P.CALLS)}
    sent: list[JudgeRequest] = []

    def ready(s: Sample, j: SampleJudgement, lang: str, settled: set[str],
              issued: set[str]) -> list[JudgeRequest]:
        """This sample's calls whose earlier calls are all settled, as requests; calls with
        nothing to ask (or answered without a call, e.g. a demo judge's sentence claims)
        settle at once."""
        out: list[JudgeRequest] = []
        progress = True
        while progress:
            progress = False
            for call in P.CALLS:
                if call.kind in settled or call.kind in issued \
                        or not all(a in settled for a in call.after):
                    continue
                questions = frozenset(q for q in j.needs if P.QUESTIONS[q].call == call.kind)
                req = None
                if questions and not any(a in j.failed for a in call.after):
                    req = call.build(P.Ask(s, lang, binary, questions, j))
                if req is None:
                    settled.add(call.kind)
                    progress = True
                    continue
                issued.add(call.kind)
                out.append(replace(req, then=on_reply(s, j, lang, call, req, settled, issued)))
        sent.extend(out)
        return out

    def on_reply(s: Sample, j: SampleJudgement, lang: str, call: P.Call, req: JudgeRequest,
                 settled: set[str], issued: set[str]) -> Any:
        def then(rep: JudgeReply) -> list[JudgeRequest]:
            by_prompt[req.prompt_version] = by_prompt.get(req.prompt_version, 0) + 1
            versions.setdefault(call.kind, set()).add(req.prompt_version)
            j.calls.append(_record(call.kind, rep, req))
            if not rep.ok:
                j.failed[call.kind] = (rep.reason or "backend_error", rep.detail)
            elif not isinstance(rep.data, dict):
                j.failed[call.kind] = ("schema_error", "reply is not a JSON object")
            elif (problem := call.read(j, req, rep.data)) is not None:
                j.failed[call.kind] = ("schema_error", problem)
            settled.add(call.kind)
            return ready(s, j, lang, settled, issued)
        return then

    first: list[JudgeRequest] = []
    for s, j, lang in zip(ctx.samples, judgements, langs, strict=True):
        first += ready(s, j, lang, set(), set())
    if first:
        # per-sample chains: a call that needs an earlier one (verify after claims) is sent as
        # soon as that sample's own earlier call returned, never after the slowest call of all
        ask_chained(judge, first)
    for j in judgements:  # the same order whatever the replies' timing
        j.calls.sort(key=lambda c: order[c.kind])
    n_requests = len(sent)
    return JudgePlan(judgements, n_requests, by_prompt, binary,
                     ",".join(sorted(set(langs))) or "-", getattr(judge, "name", "judge"),
                     getattr(judge, "model", ""), versions)


# ----------------------------------------------------------------------------------- scoring

def _failure(j: SampleJudgement, calls: Sequence[str]) -> tuple[str, str | None] | None:
    for c in calls:
        if c in j.failed:
            return j.failed[c]
    return None


def _claims_details(j: SampleJudgement) -> dict[str, Any]:
    d: dict[str, Any] = {"claims_source": j.claims_source}
    if j.answer_claims is not None:
        d["answer_claims"] = j.answer_claims
    if j.reference_claims is not None:
        d["reference_claims"] = j.reference_claims
    d["verdicts"] = dict(j.verdicts)
    if j.verdict_reasons:
        d["verdict_reasons"] = dict(j.verdict_reasons)
    return d


def score_sample(row: JudgedMetric, metric: Metric, sample: Sample, j: SampleJudgement,
                 keep_prompts: bool, extra: SampleScore | None = None) -> SampleScore:
    """One sample's value of a judged metric from its judgement (or why it has none)."""
    reason = missing_field(sample, row.fields)
    if reason is not None:
        return SampleScore(sample.id, None, reason)
    calls = calls_of(questions_of(row, metric))
    details: dict[str, Any] = {"calls": [c.to_dict(keep_prompts) for c in j.calls
                                         if c.kind in calls]}
    if j.positional:
        details["read_by_position"] = list(j.positional)
    fail = _failure(j, calls)
    if fail is not None:
        details["detail"] = fail[1]
        return SampleScore(sample.id, None, fail[0], details)
    if "claims" in calls:
        details.update(_claims_details(j))
    score = row.score(metric, j, extra)
    details.update(score.details)
    return SampleScore(sample.id, score.value, score.reason, details)


def compute_judged(row: JudgedMetric, metric: Metric, ctx: GenerationContext) -> MetricResult:
    """``compute`` of every judged row: runs (once per context) the shared plan, then scores."""
    prepared = row.prepare(metric, ctx) if row.prepare is not None else None
    plan = _shared_plan(ctx, metric)
    extras: Sequence[SampleScore | None] = (
        prepared.per_sample if prepared is not None else [None] * len(ctx.samples))
    scores = [score_sample(row, metric, s, j, ctx.keep_prompts, extras[i])
              for i, (s, j) in enumerate(zip(ctx.samples, plan.judgements, strict=True))]
    questions = questions_of(row, metric)
    calls = calls_of(questions)
    versions = sorted(v for c in calls for v in plan.prompt_versions.get(c, ()))
    graded = any(P.QUESTIONS[q].graded for q in questions)
    jcfg = getattr(ctx.judge, "config", None)
    sig = ctx.signature(
        str(metric), judge=plan.judge_name, judge_model=plan.judge_model,
        judge_temp=getattr(jcfg, "temperature", None), judge_seed=getattr(jcfg, "seed", None),
        prompt=",".join(versions) or "-", lang=plan.language,
        demo=True if plan.binary else None,
        scale="binary" if plan.binary and graded else None,
        claims=(plan.judgements[0].claims_source
                if plan.judgements and "claims" in calls else None),
        **(prepared.signature if prepared is not None else {}),
        **(pii.signature() if (pii := getattr(ctx.judge, "privacy_meta", None)) else {}))
    return MetricResult.from_scores(str(metric), scores, sig, seed=ctx.seed,
                                    counts={"judge_calls": plan.n_requests,
                                            **(pii.redaction_counts() if pii else {})})


def _shared_plan(ctx: GenerationContext, metric: Metric) -> JudgePlan:
    state = ctx.judged
    if state.plan is not None and metric in state.planned:
        return state.plan
    if state.plan is None:
        planned = list(state.announced)
        if metric not in planned:
            planned.append(metric)
    else:
        planned = [metric]  # a metric not announced in advance: plan only what it needs
    plan = run_plan(ctx, planned)
    if state.plan is None:
        state.plan, state.planned = plan, tuple(planned)
    state.plans.append(plan)
    return plan
