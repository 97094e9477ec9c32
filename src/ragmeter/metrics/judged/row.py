"""A judged metric is one row: :class:`JudgedMetric`, and how a row is computed.

A row is the whole metric: its doc with the formula, parameters, required sample fields, the
judge *questions* it needs (names of :data:`ragmeter.metrics.judged.calls.QUESTIONS`, possibly
depending on its parameters), a score function from the typed per-sample judgement
(:class:`~ragmeter.metrics.judged.state.SampleJudgement`) to a value, and the scale of its
human labels. A row is its own metric spec's ``compute``: all judged metrics of a run share one
plan (:mod:`.plan`); :func:`score_sample` turns a sample's judgement into its value, for the
metrics and for the judge benchmark alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter.data.sample import Sample
from ragmeter.errors import MetricSpecError
from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.judged import calls as C
from ragmeter.metrics.judged.plan import calls_of, questions_of, run_plan
from ragmeter.metrics.judged.state import JudgedContext, JudgePlan, SampleJudgement
from ragmeter.metrics.registry import Metric, MetricSpec, Param, get_spec
from ragmeter.results.records import MetricResult, SampleScore

#: the shapes a human label of a judged metric can take
LabelScale = Literal["binary", "ordinal", "continuous"]
LABEL_SCALES: tuple[LabelScale, ...] = ("binary", "ordinal", "continuous")


@dataclass(frozen=True)
class Score:
    """One sample's value (or why it has none) and the details that explain it."""

    value: float | None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """Inputs a row takes from outside the judge: one score per sample plus signature fields."""

    per_sample: Sequence[SampleScore]
    signature: Mapping[str, Any]


ScoreFn = Callable[[Metric, SampleJudgement, "SampleScore | None"], Score]
#: the questions of a row that depend on its parameters
NeedsFn = Callable[[Metric], frozenset[str]]


@dataclass(frozen=True)
class JudgedMetric:
    """One judged metric, declared in one place.

    ``needs``: the questions it reads (a set, or a function of the configured metric);
    ``score(metric, judgement, extra)``: its value for one sample whose calls succeeded
    (``extra``: this sample's score from ``prepare``, when the row has one);
    ``prepare(metric, ctx)``: optional per-run inputs from outside the judge;
    ``label_scale``: what a human label looks like — ``binary`` (yes/no), ``ordinal`` (a grade
    0/1/2) or ``continuous`` (a number in 0–1); judge cards and the judge benchmark compare on
    it; ``bench_metric``: the metric string the judge benchmark grades for items of this
    metric (default: the row with its default parameters); ``default``: a built-in row (in
    :data:`~ragmeter.metrics.judged.rows.ROWS`) that joins the default judged set
    (:data:`~ragmeter.metrics.judged.rows.JUDGED_DEFAULT`, scored when no metrics are named):
    only by this declaration, never by being in the table.
    """

    name: str
    doc: str
    fields: tuple[str, ...]
    needs: frozenset[str] | NeedsFn
    score: ScoreFn
    params: tuple[Param, ...] = ()
    higher_is_better: bool = True
    value_range: tuple[float, float] = (0.0, 1.0)
    prepare: Callable[[Metric, JudgedContext], Prepared] | None = None
    label_scale: LabelScale = "continuous"
    bench_metric: str | None = None
    default: bool = False

    def __post_init__(self) -> None:
        if self.label_scale not in LABEL_SCALES:
            raise MetricSpecError(f"judged metric {self.name!r}: unknown label_scale "
                                  f"{self.label_scale!r} (allowed: {', '.join(LABEL_SCALES)})")

    def needs_of(self, metric: Metric) -> frozenset[str]:
        return self.needs if isinstance(self.needs, frozenset) else self.needs(metric)

    def spec(self) -> MetricSpec:
        return MetricSpec(name=self.name, family="judged", doc=self.doc, params=self.params,
                          higher_is_better=self.higher_is_better, required_fields=self.fields,
                          value_range=self.value_range, compute=self)

    def __call__(self, metric: Metric, ctx: JudgedContext) -> MetricResult:
        return compute_judged(self, metric, ctx)


def judged_row(metric: Metric) -> JudgedMetric:
    """The row of a judged metric (its spec's ``compute``)."""
    row = metric.spec.compute
    if not isinstance(row, JudgedMetric):
        raise MetricSpecError(f"'{metric}' is not a judged generation metric")
    return row


def label_scale_of(name: str) -> LabelScale | None:
    """The label scale declared by the judged metric row ``name`` (a bare name or a metric
    string such as ``answer_correctness(preset=equal)``); ``None`` when no row has that name."""
    base = name.split("(")[0].split("@")[0].strip()
    try:
        row = get_spec(base).compute
    except MetricSpecError:
        return None
    return row.label_scale if isinstance(row, JudgedMetric) else None


# ----------------------------------------------------------------------------------- scoring

def _claims_details(j: SampleJudgement) -> dict[str, Any]:
    d: dict[str, Any] = {"claims_source": j.claims_source}
    if j.answer_claims is not None:
        d["answer_claims"] = j.answer_claims
    if j.reference_claims is not None:
        d["reference_claims"] = j.reference_claims
    d["verdicts"] = dict(j.verdicts)
    if j.verdict_labels:
        d["verdict_labels"] = dict(j.verdict_labels)
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
    if j.jury:
        details["jury"] = j.jury
    fail = next((j.failed[c] for c in calls if c in j.failed), None)
    if fail is not None:
        details["detail"] = fail[1]
        return SampleScore(sample.id, None, fail[0], details)
    if "claims" in calls:
        details.update(_claims_details(j))
    score = row.score(metric, j, extra)
    details.update(score.details)
    why = [j.call_reasons[c] for c in calls if c in j.call_reasons]
    if why and "reason" not in details:  # a graded call's own words, kept with its value
        details["reason"] = "; ".join(why)
    return SampleScore(sample.id, score.value, score.reason, details)


def compute_judged(row: JudgedMetric, metric: Metric, ctx: JudgedContext) -> MetricResult:
    """``compute`` of every judged row: runs (once per context) the shared plan, then scores."""
    from ragmeter.judges.batchfiles.rounds import PENDING, writing

    if writing():   # a batch-file round is written: the plan is the work, nothing is scored
        plan = _shared_plan(ctx, metric)
        return MetricResult.unscored(
            str(metric), [s.id for s in ctx.samples], PENDING, ctx.signature(str(metric)),
            seed=ctx.seed, counts={"judge_calls": plan.n_requests})
    prepared = row.prepare(metric, ctx) if row.prepare is not None else None
    plan = _shared_plan(ctx, metric)
    extras: Sequence[SampleScore | None] = (
        prepared.per_sample if prepared is not None else [None] * len(ctx.samples))
    scores = [score_sample(row, metric, s, j, ctx.keep_prompts, extras[i])
              for i, (s, j) in enumerate(zip(ctx.samples, plan.judgements, strict=True))]
    questions = questions_of(row, metric)
    calls = calls_of(questions)
    versions = sorted(v for c in calls for v in plan.prompt_versions.get(c, ()))
    graded = any(C.QUESTIONS[q].graded for q in questions)
    jcfg = getattr(ctx.judge, "config", None)
    sig = ctx.signature(
        str(metric), judge=plan.judge_name, judge_model=plan.judge_model,
        judge_version=_served_version(plan),
        judge_temp=getattr(jcfg, "temperature", None), judge_top_p=getattr(jcfg, "top_p", None),
        judge_seed=getattr(jcfg, "seed", None),
        prompt=",".join(versions) or "-", lang=plan.language,
        demo=True if plan.binary else None, mock=True if plan.mock else None,
        scale="binary" if plan.binary and graded else None,
        claims=(plan.judgements[0].claims_source
                if plan.judgements and "claims" in calls else None),
        **_jury_fields(ctx.judge),
        **(prepared.signature if prepared is not None else {}),
        **(pii.signature() if (pii := getattr(ctx.judge, "privacy_meta", None)) else {}),
        **_shots(ctx.judge, str(metric)))
    return MetricResult.from_scores(str(metric), scores, sig, seed=ctx.seed,
                                    counts={"judge_calls": plan.n_requests,
                                            **(pii.redaction_counts() if pii else {})})


def _shots(judge: Any, metric: str) -> dict[str, str]:
    """``shots:<n>@<hash>`` when the judge's prompt for ``metric`` carried graded examples."""
    shots = getattr(judge, "shots_meta", None)
    if shots is None or shots.metric != metric.split("(")[0]:
        return {}
    return dict(shots.signature())


def _served_version(plan: JudgePlan) -> str | None:
    """The model version the server named on its replies (``gpt-x-2025-01-31`` for
    ``gpt-x``), when it differs from the configured model; ``None`` otherwise."""
    served = [m for m in plan.served_models if m != plan.judge_model]
    return ",".join(served) or None


def _jury_fields(judge: Any) -> dict[str, Any]:
    """A jury's signature fields (members, vote); nothing for a single judge."""
    sign = getattr(judge, "jury_signature", None)
    return dict(sign()) if callable(sign) else {}


def _shared_plan(ctx: JudgedContext, metric: Metric) -> JudgePlan:
    state = ctx.judged
    if state.plan is not None and metric in state.planned:
        return state.plan
    if state.plan is None:
        planned = list(state.announced)
        if metric not in planned:
            planned.append(metric)
    else:
        planned = [metric]  # a metric not announced in advance: plan only what it needs
    plan = run_plan(ctx, [(judged_row(m), m) for m in planned])
    if state.plan is None:
        state.plan, state.planned = plan, tuple(planned)
    state.plans.append(plan)
    return plan
