"""Judge pipeline (the production judge): how good is the production "show this answer?" judge.

Labelled items ``{id?, question, answer, context, ground_truth_show, rationale?}`` (jsonl /
json / csv through :func:`ragmeter.data.loaders.read_records`). Two modes:

* **predictions** — the file already has ``predicted_show`` (bool, or yes/no/да/нет) and
  optionally ``predicted_score`` (a probability/score, higher = show): nothing is called.
* **judge** — the production judge is called with the user's own prompt template (text with
  ``{question}``, ``{answer}``, ``{context}`` placeholders; an optional
  ``---system---``/``---user---`` split), exactly as production renders it (plain
  substitution, no fencing, no JSON instruction). The reply is parsed leniently by default
  (``Yes``, ``Yes.``, ``**Yes**``, ``Yes, because …``, ``No: reason`` — see
  :func:`parse_production_reply`); with ``strict`` only ``Yes``/``No``/``Да``/``Нет`` alone (one
  trailing ``.``/``!`` allowed) or followed by ``: reason``. Anything else is unscored
  ``parse_error`` with the raw reply kept.
  Items without a question, answer or context are not sent (unscored
  ``missing_field:<name>``).

Metrics (positive class = show; formulas in :mod:`ragmeter.metrics.classification`):
``cls_accuracy``, ``cls_precision``, ``cls_recall`` as per-item records (so the usual
bootstrap CI applies), ``cls_f1`` and the confusion matrix in ``meta`` (F1 CI by resampling
items), latency p50/p95 (judge mode), and with scores a threshold sweep, the best-F1
threshold and ROC AUC. Unscored items are excluded from every rate and counted by reason.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.llm_judge import TEXT_SCHEMA
from ragmeter.metrics.classification import Confusion, best_f1_threshold, threshold_sweep
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.stats import bootstrap_stat, f1_vec, roc_auc
from ragmeter.text import detect_language
from ragmeter.tiers.context import TierContext, TierNotRunnable
from ragmeter.tiers.registry import Tier, TierOptions, register_tier

YES = frozenset({"yes", "да", "y", "true"})
NO = frozenset({"no", "нет", "n", "false"})
_STRICT_YES = frozenset({"yes", "да"})
_STRICT_NO = frozenset({"no", "нет"})
_STRIP = " \t\r\n\"'«»`*"


@dataclass
class PipelineItem:
    """One labelled decision."""

    id: str
    question: str | None
    answer: str | None
    context: str | None
    ground_truth_show: bool
    rationale: str | None = None
    predicted_show: bool | None = None
    predicted_score: float | None = None
    line: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def parse_yes_no(text: str | None) -> bool | None:
    """Strict Yes/No (Да/Нет) parser of a production judge reply; ``None`` if anything else."""
    if text is None:
        return None
    s = re.sub(r"<think>.*?</think>", "", str(text), flags=re.DOTALL | re.IGNORECASE)
    s = s.strip(_STRIP)
    if s[-1:] in (".", "!"):
        s = s[:-1].strip(_STRIP)
    low = s.lower()
    if low in _STRICT_YES:
        return True
    if low in _STRICT_NO:
        return False
    return None


# ----------------------------------------------------------------- reply parsing [contact]
@dataclass(frozen=True)
class ProductionReply:
    """A production judge's reply: the decision (``None`` = unparseable), its stated reason
    (``No: <reason>``) and the raw text, kept as sent."""

    decision: bool | None
    reason: str | None
    raw: str | None


_LENIENT = re.compile(r"^(yes|no|да|нет)(?![\w])\s*[.!,;:\-–—)]*\s*(.*)$",
                      re.IGNORECASE | re.DOTALL)
_STRICT = re.compile(r"^(yes|no|да|нет)(?:[.!]|\s*:\s*(\S.*))?$", re.IGNORECASE | re.DOTALL)
_DECORATION = " \t\r\n\"'«»`*_#>"


def parse_production_reply(text: str | None, *, strict: bool = False) -> ProductionReply:
    """Parse the reply format of a production "show this answer?" prompt: ``Yes`` or
    ``No: [brief reason]`` (Russian ``Да`` / ``Нет: причина`` too).

    Lenient (default) accepts what real judges send: any case, surrounding quotes or markdown
    emphasis, a ``<think>`` block, trailing punctuation (``Yes.``), and a reason after ``:``,
    ``-``, ``—``, ``.`` or a new line. ``strict`` accepts only ``Yes``/``No``/``Да``/``Нет`` alone
    (one trailing ``.`` or ``!`` allowed: ``Yes.``) or followed by ``: reason``. Anything else has ``decision=None`` (unscored ``parse_error``).
    """
    if text is None:
        return ProductionReply(None, None, None)
    s = re.sub(r"<think>.*?</think>", "", str(text), flags=re.DOTALL | re.IGNORECASE)
    m = _STRICT.match(s.strip()) if strict else _LENIENT.match(s.strip(_DECORATION))
    if not m:
        return ProductionReply(None, None, text)
    word = m.group(1).lower()
    reason = (m.group(2) or "").strip(_DECORATION + ".:") or None
    return ProductionReply(word in ("yes", "да"), reason, text)


def missing_item_field(item: PipelineItem) -> str | None:
    """The first required field an item lacks, or None. An *empty* context (``""`` or ``[]``) is
    not missing: it is the empty-knowledge-base case the production prompt defines, and the
    item is judged with an empty context."""
    for fld in ("question", "answer"):
        if getattr(item, fld) is None:
            return fld
    return "context" if item.context is None else None


def _context(value: Any) -> str | None:
    """Context of an item: None when absent; ``""`` for an empty knowledge-base result."""
    if value is None:
        return None
    if isinstance(value, list):
        parts = [str(v) for v in value if v is not None and str(v).strip()]
        return "\n\n".join(parts)
    if isinstance(value, str):
        return value if value.strip() else ""
    return None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in YES or low == "1":
            return True
        if low in NO or low == "0":
            return False
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, list):
        value = "\n\n".join(str(v) for v in value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def load_pipeline_items(path: str | Path, *, need_predictions: bool = False) -> list[PipelineItem]:
    """Read labelled items; every bad field of every line is reported at once."""
    from ragmeter.data.reading import read_table

    table = read_table(path)
    records, problems = table.records, list(table.problems)
    src = str(path)
    items: list[PipelineItem] = []
    seen: set[str] = set()
    for idx, (line, rec) in enumerate(records):
        if not isinstance(rec, Mapping):
            problems.append(RecordProblem(src, line, None, "a record must be a JSON object"))
            continue
        gt = _bool(rec.get("ground_truth_show"))
        if gt is None:
            problems.append(RecordProblem(src, line, "ground_truth_show",
                                          f"must be true/false (or yes/no), got "
                                          f"{rec.get('ground_truth_show')!r}"))
        pred = None
        if rec.get("predicted_show") is not None:
            pred = _bool(rec["predicted_show"])
            if pred is None:
                problems.append(RecordProblem(src, line, "predicted_show",
                                              f"must be true/false, got {rec['predicted_show']!r}"))
        elif need_predictions:
            problems.append(RecordProblem(src, line, "predicted_show",
                                          "missing (needed without a judge)"))
        score = rec.get("predicted_score")
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(
                    float(score)):
                problems.append(RecordProblem(src, line, "predicted_score",
                                              f"must be a finite number, got {score!r}"))
                score = None
            else:
                score = float(score)
        raw_id = rec.get("id", f"#{idx}")  # record index in every container
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
            problems.append(RecordProblem(src, line, "id", f"must be a non-empty string or an "
                                                           f"integer, got {raw_id!r:.40}"))
            continue
        sid = str(raw_id)
        if sid in seen:
            problems.append(RecordProblem(src, line, "id", f"duplicate id '{sid}'"))
        seen.add(sid)
        if gt is None:
            continue
        items.append(PipelineItem(
            id=sid, question=_text(rec.get("question")), answer=_text(rec.get("answer")),
            context=_context(rec.get("context", rec.get("contexts"))), ground_truth_show=gt,
            rationale=_text(rec.get("rationale")), predicted_show=pred, predicted_score=score,
            line=line))
    if problems:
        raise DataError(problems)
    if not items:
        raise DataError(RecordProblem(src, None, None, "no items"))
    return items


def render_template(template: str, item: PipelineItem) -> tuple[dict[str, str], ...]:
    """Messages of the production prompt for ``item`` (plain placeholder substitution)."""
    def sub(t: str) -> str:
        return (t.replace("{question}", item.question or "")
                .replace("{answer}", item.answer or "")
                .replace("{context}", item.context or ""))

    if "---user---" in template:
        head, _, user = template.partition("---user---")
        system = head.replace("---system---", "").strip()
        msgs = []
        if system:
            msgs.append({"role": "system", "content": sub(system)})
        msgs.append({"role": "user", "content": sub(user.strip())})
        return tuple(msgs)
    return ({"role": "user", "content": sub(template)},)


def check_template(template: str) -> None:
    missing = [p for p in ("{question}", "{answer}", "{context}") if p not in template]
    if missing:
        raise ConfigError("prompt_template", f"must contain the placeholders {', '.join(missing)}")


@dataclass
class _Call:
    raw: str | None
    reason: str | None
    detail: str | None
    latency_s: float


def production_requests(items: Sequence[PipelineItem], template: str) -> list[JudgeRequest]:
    """Text-mode engine requests of the production prompt, one per item."""
    return [JudgeRequest(messages=render_template(template, it), schema=TEXT_SCHEMA,
                         prompt_version=f"production-judge/{_short_hash(template)}",
                         metric="judge_pipeline", sample_id=it.id) for it in items]


def call_production_judge(judge: Any, items: Sequence[PipelineItem], template: str
                          ) -> list[_Call]:
    """Ask the production judge about every item, in text mode, through the judge engine
    (adaptive concurrency, Retry-After, retries within a budget, cache, accounting). Any
    :class:`~ragmeter.judges.base.Judge` works; a reply's raw text is what gets parsed."""
    check_template(template)
    replies = judge.ask_many(production_requests(items, template))
    return [_call_of(rep) for rep in replies]


def _call_of(rep: Any) -> _Call:
    """The raw reply text, or the transport reason there is none (parsing is separate)."""
    raw = rep.raw if rep.raw is not None else (rep.data if isinstance(rep.data, str) else None)
    transport = rep.reason not in (None, "parse_error", "schema_error")
    if rep.reason == "truncated":  # keep the cut text for the report
        return _Call(raw, rep.reason, rep.detail, rep.latency_s)
    return _Call(None if transport else raw, rep.reason if transport else None, rep.detail,
                 rep.latency_s)


def evaluate_judge_pipeline(
    items: Sequence[PipelineItem],
    *,
    judge: Any = None,
    prompt_template: str | None = None,
    seed: int = 42,
    n_boot: int = 1000,
    dataset: str | None = None,
    strict: bool = False,
) -> EvalResult:
    """Evaluate the production judge (``judge`` + ``prompt_template``) or stored predictions."""
    from ragmeter.data.hashing import dataset_hash

    items = list(items)
    if not items:
        raise DataError(RecordProblem("<items>", None, None, "no items"))
    dh = dataset or dataset_hash(
        {"id": it.id, "q": it.question, "a": it.answer, "c": it.context,
         "gt": it.ground_truth_show} for it in items)
    n = len(items)
    mode = "judge" if judge is not None else "predictions"
    if judge is not None:
        if not prompt_template:
            raise ConfigError("prompt_template", "is required when a judge is called")
        got = _ask_judge(items, judge, prompt_template, strict)
    else:
        bad = [RecordProblem("<items>", it.line, "predicted_show", "missing (no judge given)")
               for it in items if it.predicted_show is None]
        if bad:
            raise DataError(bad, hint="give predicted_show for every item, or call a judge")
        got = _Predictions(np.array([bool(it.predicted_show) for it in items], dtype=bool),
                           {}, [None] * n, {}, [], [])
    pred, reasons, raws, reply_reasons, lat, send = (
        got.pred, got.reasons, got.raws, got.reply_reasons, got.latencies, got.sent)
    gold = np.array([it.ground_truth_show for it in items], dtype=bool)
    ids = [it.id for it in items]
    ok = np.ones(n, dtype=bool)
    ok[list(reasons)] = False
    model = getattr(judge, "model", None) if judge is not None else None
    sig = dict(mode=mode, model=model, data=dh, seed=seed, positive="show",
               parse="strict" if strict else "lenient",
               prompt=_short_hash(prompt_template) if prompt_template else None)
    res = EvalResult(name=f"judge_pipeline:{model or 'predictions'}",
                     meta={"tier": "judge_pipeline", "mode": mode, "n_items": n,
                           "n_scored": int(ok.sum()),
                           "unscored_by_reason": dict(Counter(reasons.values())),
                           "lang": detect_language(it.question for it in items)})

    _add_classification(res, ids, gold, pred, ok, reasons, sig, seed, n_boot)
    if lat:
        la = np.asarray(lat)
        res.add(MetricResult("judge_latency", [ids[i] for i in send], la, Signature.make(metric="judge_latency",
                                                                       unit="s", **sig),
                             higher_is_better=False, seed=seed, n_boot=n_boot))
        res.meta["latency_ms"] = {"mean": float(la.mean() * 1000),
                                  "p50": float(np.percentile(la, 50) * 1000),
                                  "p95": float(np.percentile(la, 95) * 1000)}
    if judge is None:
        _score_sweep(res, items, gold, seed, n_boot)
    res.meta["per_item"] = [
        {"id": it.id, "gold": bool(gold[i]), "pred": (bool(pred[i]) if ok[i] else None),
         "reason": reasons.get(i), "raw": raws[i], "rationale": it.rationale,
         "reply_reason": reply_reasons.get(i)}
        for i, it in enumerate(items)]
    return res


def _add_classification(res: EvalResult, ids: list[str], gold: np.ndarray, pred: np.ndarray,
                        ok: np.ndarray, reasons: Mapping[int, str], sig: dict[str, Any],
                        seed: int, n_boot: int) -> None:
    """Accuracy, precision and recall per item, the confusion matrix and F1 with its CI."""
    acc = np.where(ok, (pred == gold).astype(float), np.nan)
    res.add(MetricResult("cls_accuracy", ids, acc, Signature.make(metric="cls_accuracy", **sig),
                         reasons=dict(reasons), seed=seed, n_boot=n_boot))
    pp = np.flatnonzero(ok & pred)
    res.add(MetricResult("cls_precision", [ids[i] for i in pp], gold[pp].astype(float),
                         Signature.make(metric="cls_precision", **sig),
                         counts={"excluded_pred_no": int((ok & ~pred).sum()),
                                 "unscored": len(reasons)}, seed=seed, n_boot=n_boot))
    gp = np.flatnonzero(ok & gold)
    res.add(MetricResult("cls_recall", [ids[i] for i in gp], pred[gp].astype(float),
                         Signature.make(metric="cls_recall", **sig),
                         counts={"excluded_gold_no": int((ok & ~gold).sum()),
                                 "unscored": len(reasons)}, seed=seed, n_boot=n_boot))
    conf = Confusion.of(gold[ok], pred[ok])
    res.meta["confusion"] = conf.as_dict()
    g_ok, p_ok = gold[ok], pred[ok]
    f1_ci = bootstrap_stat(lambda idx: f1_vec(g_ok[idx], p_ok[idx]), int(g_ok.size), seed=seed,
                           n_boot=n_boot, batched=True, min_defined=0.0)
    res.meta["f1"] = {"value": conf.f1, "ci_low": f1_ci.ci_low, "ci_high": f1_ci.ci_high,
                      "n_boot": n_boot,
                      "seed": seed}


@dataclass
class _Predictions:
    """The production judge's decisions: per item index a decision, or the reason for none."""

    pred: np.ndarray
    reasons: dict[int, str]
    raws: list[str | None]
    reply_reasons: dict[int, str | None]
    latencies: list[float]
    sent: list[int]


def _ask_judge(items: Sequence[PipelineItem], judge: Any, prompt_template: str,
               strict: bool) -> _Predictions:
    """Ask the judge about every item that has its fields; read each reply."""
    n = len(items)
    got = _Predictions(np.zeros(n, dtype=bool), {}, [None] * n, {}, [], [])
    for i, it in enumerate(items):
        missing = missing_item_field(it)
        if missing is not None:
            got.reasons[i] = f"missing_field:{missing}"
    got.sent = [i for i in range(n) if i not in got.reasons]
    calls = call_production_judge(judge, [items[i] for i in got.sent], prompt_template)
    for i, c in zip(got.sent, calls, strict=True):
        got.raws[i] = c.raw
        got.latencies.append(c.latency_s)
        if c.reason is not None:
            got.reasons[i] = c.reason
            continue
        reply = parse_production_reply(c.raw, strict=strict)
        got.reply_reasons[i] = reply.reason
        if reply.decision is None:
            got.reasons[i] = "parse_error"
        else:
            got.pred[i] = reply.decision
    return got


def _score_sweep(res: EvalResult, items: Sequence[PipelineItem], gold: np.ndarray, seed: int,
                 n_boot: int) -> None:
    """Stored scores of the predictions: the threshold sweep, the best-F1 threshold and the
    ROC AUC with its bootstrap CI."""
    scores = [it.predicted_score for it in items]
    if any(s is not None for s in scores):
        have = np.array([s is not None for s in scores])
        sc = np.array([s if s is not None else np.nan for s in scores])
        g, s = gold[have], sc[have]
        sweep = threshold_sweep(g, s)
        auc = roc_auc(g, s)
        auc_ci = bootstrap_stat(lambda idx: roc_auc(g[idx], s[idx]), int(g.size), seed=seed,
                                n_boot=n_boot, min_defined=0.0)
        alo, ahi = auc_ci.ci_low, auc_ci.ci_high
        res.meta["threshold_sweep"] = sweep
        res.meta["best_f1_threshold"] = best_f1_threshold(sweep)
        res.meta["roc_auc"] = {"value": auc, "ci_low": alo, "ci_high": ahi,
                               "n": int(have.sum()), "missing_scores": int((~have).sum())}


def _short_hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------- the tier
@dataclass(frozen=True)
class JudgePipelineOptions(TierOptions):
    """``items``: the labelled items file (required); ``prompt_template`` or
    ``prompt_template_file``: the production judge's prompt, used when the tier names a
    judge (without one the items' stored predictions are scored); ``strict``: accept only the
    exact reply forms (``Yes``, ``Yes.``, ``No: reason``), anything else is unscored."""

    items: str | None = None
    prompt_template: str | None = None
    prompt_template_file: str | None = None
    strict: bool = False


def run_judge_pipeline(ctx: TierContext, samples: list[Any],
                       options: JudgePipelineOptions) -> list[EvalResult]:
    """Accuracy / precision / recall / F1 of the production yes/no judge on labelled items."""
    items_path = ctx.path(options.items)
    if items_path is None:
        raise TierNotRunnable("judge_pipeline needs options.items (labelled items file)")
    template = options.prompt_template
    tfile = ctx.path(options.prompt_template_file)
    if tfile is not None:
        from ragmeter.data.reading import read_text

        template = read_text(tfile)  # the one reading path: BOM, encodings, a missing file
    use_judge = ctx.tier.judge is not None
    items = load_pipeline_items(items_path, need_predictions=not use_judge)
    return [evaluate_judge_pipeline(items, judge=ctx.judge() if use_judge else None,
                                    prompt_template=template, seed=ctx.seed,
                                    strict=options.strict)]


register_tier(Tier(
    name="judge_pipeline", title="Production judge", title_ru="Продуктовый судья",
    doc="accuracy, precision, recall and F1 of the production yes/no judge",
    run=run_judge_pipeline, judge="optional", options=JudgePipelineOptions))


__all__ = [
    "PipelineItem",
    "ProductionReply",
    "call_production_judge",
    "check_template",
    "evaluate_judge_pipeline",
    "load_pipeline_items",
    "missing_item_field",
    "parse_production_reply",
    "parse_yes_no",
    "render_template",
]
