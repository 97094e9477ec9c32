"""Judged generation metrics: one batched plan of at most 4 judge calls per sample.

The planner looks at every judged metric requested in a run and, per sample, at the fields
the sample has, and makes only the calls some metric needs:

1. ``gen.claims/v1`` — answer and reference split into atomic claims, both in one call
   (demo judges: razdel sentences, no call);
2. ``gen.verify/v1`` — after call 1: yes/no verdicts for answer claims vs context
   (faithfulness) and vs reference (factual precision), and for reference claims vs answer
   (factual recall) and vs context (context recall), all in one structured reply;
3. ``gen.contexts/v1`` — every context of the sample at once: relevance 0/1/2 and, when a
   reference exists, usefulness yes/no (context precision);
4. ``gen.answer/v1`` — answer relevance 0/1/2 and E2E usefulness 0/1/2.

Calls 1, 3 and 4 of all samples go out in one ``ask_many``; a sample's call 2 is chained to its
own call 1 (``JudgeRequest.then``) and starts as soon as that returns. The full set of
eight metrics therefore costs ≤ 4 calls per sample (RAGAS: 13), plus at most one repair call
per unparseable reply made by the judge engine.

Scores (claims A = answer claims, C = reference claims; verdicts v ∈ {0, 1}):

* faithfulness = |{a ∈ A : a supported by the contexts}| / |A|
* factual_correctness: P = |{a ∈ A : a supported by the reference}| / |A|,
  R = |{c ∈ C : c supported by the answer}| / |C|, F1 = 2PR / (P + R) (0 when P = R = 0)
* context_recall = |{c ∈ C : c supported by the contexts}| / |C|
* context_precision = Σ_k (precision@k · v_k) / Σ_k v_k with v_k = context k useful for the
  reference (ranked order), precision@k = Σ_{i≤k} v_i / k; 0 when no context is useful
* context_relevance = (1/N) Σ_i s_i / 2 with s_i ∈ {0, 1, 2} (NVIDIA style, seed 004);
  per-context scores kept in details. Demo judge: s_i ∈ {0, 2} from a yes/no "relevant" verdict
  (signature ``scale:binary``)
* answer_relevance = s / 2, s ∈ {0, 1, 2} (seed 000 §5.5.2: 1 / 0.5 / 0); demo: yes/no
* e2e_score = s / 2, s ∈ {0, 1, 2} (seed 000 §6.4.1); demo: yes/no "same key information as
  the reference"
* answer_correctness = w · factual_F1 + (1 − w) · semantic_similarity (seed 001); presets
  default 0.75, equal 0.5, factual_focused 0.9, semantic_focused 0.1, custom ``w``

A reply that fails (unparseable, schema mismatch, timeout, ...) leaves unscored exactly the
metrics that needed that call, with the judge's reason; the other calls' metrics are scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MetricSpecError
from ragmeter.generation import prompts as P
from ragmeter.generation.context import GenerationContext, missing_field
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.engine import ask_chained
from ragmeter.metrics.registry import Metric, parse_metric
from ragmeter.results.records import MetricResult, SampleScore

PRESETS = {"default": 0.75, "equal": 0.5, "factual_focused": 0.9, "semantic_focused": 0.1}

#: metric name -> (required sample fields, needs)
_NEEDS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "faithfulness": (("response", "retrieved_contexts"),
                     frozenset({"answer_claims", "answer_in_context"})),
    "context_recall": (("reference", "retrieved_contexts"),
                       frozenset({"reference_claims", "reference_in_context"})),
    "context_relevance": (("user_input", "retrieved_contexts"), frozenset({"ctx_relevance"})),
    "context_precision": (("user_input", "retrieved_contexts", "reference"),
                          frozenset({"ctx_useful"})),
    "answer_relevance": (("user_input", "response"), frozenset({"answer_relevance"})),
    "e2e_score": (("user_input", "response", "reference"), frozenset({"e2e"})),
}
_FACTUAL = {
    "precision": frozenset({"answer_claims", "answer_in_reference"}),
    "recall": frozenset({"reference_claims", "reference_in_answer"}),
    "f1": frozenset({"answer_claims", "answer_in_reference", "reference_claims",
                     "reference_in_answer"}),
}
JUDGED_METRICS = (*_NEEDS, "factual_correctness", "answer_correctness")
_CHECKS = ("answer_in_context", "answer_in_reference", "reference_in_answer",
           "reference_in_context")


def needs_of(metric: Metric) -> tuple[tuple[str, ...], frozenset[str]]:
    """Required sample fields and planner needs of one judged metric."""
    if metric.name in _NEEDS:
        return _NEEDS[metric.name]
    if metric.name == "factual_correctness":
        return ("response", "reference"), _FACTUAL[str(metric.get("mode"))]
    if metric.name == "answer_correctness":
        return ("response", "reference"), _FACTUAL["f1"]
    raise MetricSpecError(f"'{metric}' is not a judged generation metric")


@dataclass
class CallRecord:
    """One judge call of one sample: its prompt version, outcome and (optionally) texts."""

    version: str
    ok: bool
    reason: str | None = None
    detail: str | None = None
    raw: str | None = None
    messages: list[dict[str, str]] | None = None

    def to_dict(self, keep_prompts: bool) -> dict[str, Any]:
        d: dict[str, Any] = {"prompt": self.version, "ok": self.ok}
        if self.reason:
            d["reason"] = self.reason
        if self.detail:
            d["detail"] = self.detail
        if keep_prompts:
            d["raw"] = self.raw
            d["messages"] = self.messages
        return d


@dataclass
class SampleJudgement:
    """Everything the judge said about one sample, parsed; failures per call."""

    sample_id: str
    needs: set[str] = field(default_factory=set)
    answer_claims: list[str] | None = None
    reference_claims: list[str] | None = None
    claims_source: str = "judge"
    verdicts: dict[str, list[int]] = field(default_factory=dict)
    verdict_reasons: dict[str, list[str | None]] = field(default_factory=dict)
    ctx_relevance: list[int] | None = None
    ctx_useful: list[int] | None = None
    answer_relevance: int | None = None
    e2e: int | None = None
    failed: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)  # replies read by position, not id


@dataclass
class JudgePlanResult:
    """Per-sample judgements plus call accounting for the whole run."""

    judgements: list[SampleJudgement]
    n_requests: int
    by_prompt: dict[str, int]
    binary: bool
    language: str
    judge_name: str
    judge_model: str
    prompt_versions: set[str]

    @property
    def calls_per_sample(self) -> float:
        return self.n_requests / max(1, len(self.judgements))


def _yes(v: Any) -> int:
    return 1 if str(v).strip().lower() in ("yes", "да", "true", "1") else 0


def _lang(ctx: GenerationContext, sample: Sample, binary: bool) -> str:
    if binary:
        return "en"
    if ctx.language in ("ru", "en"):
        return ctx.language
    from ragmeter.judges.prompts import detect_language

    return detect_language([sample.user_input, sample.response, sample.reference])


def _record(rep: JudgeReply, req: JudgeRequest) -> CallRecord:
    msgs = rep.extra.get("messages") if rep.extra else None
    return CallRecord(req.prompt_version, rep.ok, rep.reason, rep.detail, rep.raw,
                      msgs if msgs is not None else [dict(m) for m in req.messages])


def _items_by_id(items: Any, n: int, j: SampleJudgement | None = None,
                 what: str = "") -> list[dict[str, Any]] | None:
    """The ``n`` reply items ordered by their 1-based ``id``.

    ``None`` (→ unscored ``schema_error``) when the reply does not have exactly ``n`` objects.
    When it does but the ids are not a permutation of 1..n (or 0..n−1) — a reply that still
    satisfies the declared schema, e.g. from a grammar-constrained backend — the items are taken
    in reply order (the prompt lists them in order) and the fallback is recorded in
    ``j.positional`` so that it is visible in the per-sample details.
    """
    if not isinstance(items, list) or len(items) != n:
        return None
    if not all(isinstance(it, dict) for it in items):
        return None
    by_id: dict[int, dict[str, Any]] = {}
    for it in items:
        try:
            by_id[int(it.get("id"))] = it
        except (TypeError, ValueError):
            by_id = {}
            break
    if sorted(by_id) == list(range(1, n + 1)):
        return [by_id[i] for i in range(1, n + 1)]
    if sorted(by_id) == list(range(n)):  # tolerate 0-based ids
        return [by_id[i] for i in range(n)]
    if j is not None:
        j.positional.append(what)
    return list(items)


def run_plan(ctx: GenerationContext, metrics: Sequence[Metric]) -> JudgePlanResult:
    """Make the judge calls needed by ``metrics`` for every sample of ``ctx``."""
    judge = ctx.judge
    if judge is None:
        raise ConfigError("judge", "judged metrics need a judge: pass judge=make_judge("
                          "JudgeConfig(...)) or --judge-url/--judge-model on the command line")
    binary = bool(getattr(judge, "demo", False))
    judgements: list[SampleJudgement] = []
    by_prompt: dict[str, int] = {}
    n_requests = 0
    versions: set[str] = set()
    langs: set[str] = set()
    first: list[tuple[SampleJudgement, JudgeRequest]] = []
    for s in ctx.samples:
        j = SampleJudgement(s.id)
        for m in metrics:
            fields, needs = needs_of(m)
            if missing_field(s, fields) is None:
                j.needs |= needs
        judgements.append(j)
        lang = _lang(ctx, s, binary)
        langs.add(lang)
        need_a = "answer_claims" in j.needs
        need_r = "reference_claims" in j.needs
        if need_a or need_r:
            if binary:
                from ragmeter.generation.text import split_sentences

                j.claims_source = "sentences"
                if need_a:
                    j.answer_claims = split_sentences(s.response or "")
                if need_r:
                    j.reference_claims = split_sentences(s.reference or "")
            else:
                first.append((j, P.claims_request(
                    s.id, lang, s.user_input, s.response if need_a else None,
                    s.reference if need_r else None)))
        rel, useful = "ctx_relevance" in j.needs, "ctx_useful" in j.needs
        if rel or useful:
            first.append((j, P.contexts_request(
                s.id, lang, binary=binary, question=s.user_input or "",
                contexts=list(s.retrieved_contexts or []), reference=s.reference,
                relevance=rel, useful=useful)))
        ar, e2e = "answer_relevance" in j.needs, "e2e" in j.needs
        if ar or e2e:
            first.append((j, P.answer_request(
                s.id, lang, binary=binary, question=s.user_input or "",
                answer=s.response or "", reference=s.reference, relevance=ar, e2e=e2e)))

    def verify_of(s: Sample, j: SampleJudgement) -> JudgeRequest | None:
        checks = [c for c in _CHECKS if c in j.needs]
        if not checks or "claims" in j.failed:
            return None
        a_claims = j.answer_claims or []
        r_claims = j.reference_claims or []
        checks = [c for c in checks if (a_claims if c.startswith("answer") else r_claims)]
        if not checks:
            return None
        return P.verify_request(
            s.id, _lang(ctx, s, binary), binary=binary, checks=checks, answer_claims=a_claims,
            reference_claims=r_claims, contexts=s.retrieved_contexts, reference=s.reference,
            answer=s.response)

    def take(j: SampleJudgement, req: JudgeRequest, rep: JudgeReply) -> None:
        if not rep.ok:
            j.failed[req.metric] = (rep.reason or "backend_error", rep.detail)
            return
        _absorb(j, req, rep.data)

    # Per-sample chains: a sample's verify call is sent as soon as its own claims call
    # returned (``then``), never after the slowest first call of all samples.
    second: list[tuple[SampleJudgement, JudgeRequest]] = []
    by_id = {s.id: s for s in ctx.samples}
    chained: set[int] = set()

    def after_claims(j: SampleJudgement, req: JudgeRequest) -> Any:
        def then(rep: JudgeReply) -> list[JudgeRequest]:
            take(j, req, rep)
            v = verify_of(by_id[j.sample_id], j)
            if v is None:
                return []
            second.append((j, v))
            return [v]
        return then

    for n, (j, req) in enumerate(first):
        if req.metric == "claims":
            first[n] = (j, replace(req, then=after_claims(j, req)))
            chained.add(n)
    claimed = {first[n][0].sample_id for n in chained}
    for s, j in zip(ctx.samples, judgements, strict=True):
        if s.id not in claimed:       # claims need no call (demo judge) or none needed
            v = verify_of(s, j)
            if v is not None:
                first.append((j, v))
    replies = ask_chained(judge, [r for _, r in first]) if first else []
    firsts, follow = replies[:len(first)], replies[len(first):]
    for n, ((j, req), rep) in enumerate(zip(first, firsts, strict=True)):
        j.calls.append(_record(rep, req))
        if n not in chained:          # claims replies were taken when they arrived
            take(j, req, rep)
    for (j, req), rep in zip(second, follow, strict=True):
        j.calls.append(_record(rep, req))
        take(j, req, rep)
    for _, r in [*first, *second]:
        by_prompt[r.prompt_version] = by_prompt.get(r.prompt_version, 0) + 1
        versions.add(r.prompt_version)
    n_requests = len(first) + len(second)
    has_verify = bool(second) or any(r.metric == "verify" for _, r in first)
    versions |= {P.VERIFY_BINARY if binary else P.VERIFY} if has_verify else set()
    return JudgePlanResult(judgements, n_requests, by_prompt, binary,
                           ",".join(sorted(langs)) or "-", getattr(judge, "name", "judge"),
                           getattr(judge, "model", ""), versions)


def _absorb(j: SampleJudgement, req: JudgeRequest, data: Any) -> None:
    """Store a parsed reply; a reply whose ids/lengths do not match becomes ``schema_error``."""
    kind = req.metric
    if not isinstance(data, dict):
        j.failed[kind] = ("schema_error", "reply is not a JSON object")
        return
    if kind == "claims":
        for key in ("answer_claims", "reference_claims"):
            if key in req.schema["properties"]:
                claims = [str(c).strip() for c in data.get(key) or [] if str(c).strip()]
                if not claims:
                    j.failed[kind] = ("schema_error", f"no {key} in the reply")
                    return
                setattr(j, key, claims)
    elif kind == "verify":
        for side, keys in (("answer", ("in_context", "in_reference")),
                           ("reference", ("in_answer", "in_context"))):
            prop = f"{side}_claims"
            if prop not in req.schema["properties"]:
                continue
            n = len(getattr(j, prop) or [])
            items = _items_by_id(data.get(prop), n, j, prop)
            if items is None:
                j.failed[kind] = ("schema_error", f"{prop}: expected {n} items")
                return
            for key in keys:
                if key in req.schema["properties"][prop]["items"]["properties"]:
                    j.verdicts[f"{side}_{key}"] = [_yes(it.get(key)) for it in items]
            j.verdict_reasons[side] = [it.get("reason") for it in items]
    elif kind == "contexts":
        n = req.schema["properties"]["contexts"]["minItems"]
        items = _items_by_id(data.get("contexts"), n, j, "contexts")
        if items is None:
            j.failed[kind] = ("schema_error", f"contexts: expected {n} items")
            return
        props = req.schema["properties"]["contexts"]["items"]["properties"]
        if "relevance" in props:
            grades = [it.get("relevance") for it in items]
            if not all(isinstance(g, int) and 0 <= g <= 2 for g in grades):
                j.failed[kind] = ("schema_error", "relevance must be 0, 1 or 2")
                return
            j.ctx_relevance = [int(g) for g in grades]  # type: ignore[arg-type]
        if "relevant" in props:
            j.ctx_relevance = [2 * _yes(it.get("relevant")) for it in items]
        if "useful" in props:
            j.ctx_useful = [_yes(it.get("useful")) for it in items]
    elif kind == "answer":
        for key, attr, binary in (("answer_relevance", "answer_relevance", False),
                                  ("answers_question", "answer_relevance", True),
                                  ("e2e", "e2e", False), ("matches_reference", "e2e", True)):
            if key not in data:
                continue
            if binary:
                setattr(j, attr, 2 * _yes(data[key]))
            else:
                g = data[key]
                if not (isinstance(g, int) and not isinstance(g, bool) and 0 <= g <= 2):
                    j.failed[kind] = ("schema_error", f"{key} must be 0, 1 or 2")
                    return
                setattr(j, attr, g)


# ----------------------------------------------------------------------------------- scoring

def _frac(v: Sequence[int]) -> float:
    return sum(v) / len(v)


def average_precision(useful: Sequence[int]) -> float:
    """Σ_k precision@k · v_k / Σ_k v_k over ranked binary usefulness (0 if none useful)."""
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def factual_scores(j: SampleJudgement) -> dict[str, float | None]:
    """Precision, recall and F1 of the answer's claims against the reference's."""
    p_v = j.verdicts.get("answer_in_reference")
    r_v = j.verdicts.get("reference_in_answer")
    p = _frac(p_v) if p_v else None
    r = _frac(r_v) if r_v else None
    f1: float | None = None
    if p is not None and r is not None:
        f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    return {"precision": p, "recall": r, "f1": f1}


def _failure(j: SampleJudgement, calls: Sequence[str]) -> tuple[str, str | None] | None:
    for c in calls:
        if c in j.failed:
            return j.failed[c]
    return None


_CALLS_OF = {
    "faithfulness": ("claims", "verify"), "context_recall": ("claims", "verify"),
    "factual_correctness": ("claims", "verify"), "answer_correctness": ("claims", "verify"),
    "context_relevance": ("contexts",), "context_precision": ("contexts",),
    "answer_relevance": ("answer",), "e2e_score": ("answer",),
}


def score_sample(metric: Metric, sample: Sample, j: SampleJudgement, keep_prompts: bool,
                 semantic: float | None = None, semantic_reason: str | None = None
                 ) -> SampleScore:
    """One sample's value of a judged metric from its judgement (or why it has none)."""
    fields, _ = needs_of(metric)
    reason = missing_field(sample, fields)
    if reason is not None:
        return SampleScore(sample.id, None, reason)
    name = metric.name
    calls = _CALLS_OF[name]
    details: dict[str, Any] = {"calls": [c.to_dict(keep_prompts) for c in j.calls
                                         if c.version.split("/")[0].split("-")[0]
                                         in {f"gen.{x}" for x in calls}]}
    if j.positional:
        details["read_by_position"] = list(j.positional)
    fail = _failure(j, calls)
    if fail is not None:
        details["detail"] = fail[1]
        return SampleScore(sample.id, None, fail[0], details)
    value: float | None = None
    if name in ("faithfulness", "context_recall", "factual_correctness", "answer_correctness"):
        details["claims_source"] = j.claims_source
        if j.answer_claims is not None:
            details["answer_claims"] = j.answer_claims
        if j.reference_claims is not None:
            details["reference_claims"] = j.reference_claims
        details["verdicts"] = dict(j.verdicts)
        if j.verdict_reasons:
            details["verdict_reasons"] = dict(j.verdict_reasons)
    if name == "faithfulness":
        v = j.verdicts.get("answer_in_context")
        if not v:
            return SampleScore(sample.id, None, "empty_input", details)
        value = _frac(v)
    elif name == "context_recall":
        v = j.verdicts.get("reference_in_context")
        if not v:
            return SampleScore(sample.id, None, "empty_input", details)
        value = _frac(v)
    elif name in ("factual_correctness", "answer_correctness"):
        fs = factual_scores(j)
        details["factual"] = fs
        mode = str(metric.get("mode")) if name == "factual_correctness" else "f1"
        fv = fs[mode]
        if fv is None:
            return SampleScore(sample.id, None, "empty_input", details)
        if name == "factual_correctness":
            value = fv
        else:
            w = answer_correctness_weight(metric)
            if semantic is None:
                return SampleScore(sample.id, None, semantic_reason or "backend_error", details)
            details.update({"semantic": semantic, "w_factual": w})
            value = w * fv + (1.0 - w) * semantic
    elif name == "context_relevance":
        assert j.ctx_relevance is not None
        details["context_scores"] = j.ctx_relevance
        value = sum(g / 2 for g in j.ctx_relevance) / len(j.ctx_relevance)
    elif name == "context_precision":
        assert j.ctx_useful is not None
        details["context_useful"] = j.ctx_useful
        value = average_precision(j.ctx_useful)
    elif name == "answer_relevance":
        assert j.answer_relevance is not None
        details["grade"] = j.answer_relevance
        value = j.answer_relevance / 2
    elif name == "e2e_score":
        assert j.e2e is not None
        details["grade"] = j.e2e
        value = j.e2e / 2
    return SampleScore(sample.id, value, None, details)


def answer_correctness_weight(metric: Metric) -> float:
    """The factual weight w of ``answer_correctness`` from its preset (or custom ``w``)."""
    preset = str(metric.get("preset"))
    w = float(metric.get("w"))
    if preset == "custom":
        if not 0.0 <= w <= 1.0:
            raise MetricSpecError(f"'{metric}': w must be in [0, 1], got {w}")
        return w
    if w != 0.75:
        raise MetricSpecError(f"'{metric}': w is only used with preset=custom "
                              f"(e.g. answer_correctness(preset=custom,w={w}))")
    return PRESETS[preset]


def compute_judged(metric: Metric, ctx: GenerationContext) -> MetricResult:
    """``compute`` of every judged spec: runs (once per context) the shared plan, then scores."""
    plan = _shared_plan(ctx, metric)
    binary = plan.binary
    semantic_vals: list[float | None] = [None] * len(ctx.samples)
    semantic_reasons: list[str | None] = [None] * len(ctx.samples)
    extra_sig: dict[str, Any] = {}
    if metric.name == "answer_correctness":
        from ragmeter.metrics.semantic import semantic_scores

        sem_metric = parse_metric(f"semantic_similarity(model={metric.get('model')})")
        sem, sem_sig = semantic_scores(sem_metric, ctx)
        for i, sc in enumerate(sem):
            semantic_vals[i] = sc.value
            semantic_reasons[i] = sc.reason
        extra_sig.update({"w_factual": answer_correctness_weight(metric),
                          "semantic": sem_sig})
    scores = [score_sample(metric, s, j, ctx.keep_prompts, semantic_vals[i],
                           semantic_reasons[i])
              for i, (s, j) in enumerate(zip(ctx.samples, plan.judgements, strict=True))]
    versions = sorted(v for v in plan.prompt_versions
                      if v.split("/")[0].split("-")[0].removeprefix("gen.")
                      in _CALLS_OF[metric.name])
    scale = "binary" if binary and metric.name in (
        "context_relevance", "answer_relevance", "e2e_score") else None
    jcfg = getattr(ctx.judge, "config", None)
    sig = ctx.signature(
        str(metric), judge=plan.judge_name, judge_model=plan.judge_model,
        judge_temp=getattr(jcfg, "temperature", None), judge_seed=getattr(jcfg, "seed", None),
        prompt=",".join(versions) or "-", lang=plan.language,
        demo=True if binary else None, scale=scale,
        claims=(plan.judgements[0].claims_source if plan.judgements and metric.name in (
            "faithfulness", "context_recall", "factual_correctness", "answer_correctness")
            else None),
        **extra_sig)
    return MetricResult.from_scores(str(metric), scores, sig, seed=ctx.seed,
                                    counts={"judge_calls": plan.n_requests})


def _shared_plan(ctx: GenerationContext, metric: Metric) -> JudgePlanResult:
    key = "judge_plan"
    plan: JudgePlanResult | None = ctx.cache.get(key)
    if plan is not None and metric in ctx.cache.get("judge_plan_metrics", ()):
        return plan
    planned = list(ctx.cache.get("judged_metrics", ()))
    if metric not in planned:
        planned.append(metric)
    if plan is not None:
        # a metric not announced in advance: plan only what it needs
        planned = [metric]
    result = run_plan(ctx, planned)
    if plan is None:
        ctx.cache[key] = result
        ctx.cache["judge_plan_metrics"] = tuple(planned)
    ctx.cache.setdefault("judge_plans", []).append(result)
    return result
