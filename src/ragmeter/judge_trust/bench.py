"""The bundled judge benchmark: grade any judge on labelled Russian (and English) items.

``data/judge_bench.jsonl`` holds items written for ragmeter from templates about a fictional
region (see ``scripts/build_judge_bench.py``), so every label is correct by construction:

==========================  =====================  ==========================================
task                        label                  judged with
==========================  =====================  ==========================================
``faithfulness``            yes / no               the faithfulness claim check (answer vs
                                                   context); kinds: numbers, dates, negation,
                                                   inference, partial, refusal
``factual_correctness``     yes / no               the claim check against the reference
``answer_relevance``        0 / 1 / 2              the answer-relevance grade
``context_relevance``       0 / 1 / 2              the context-relevance grade
``production_gate``         yes / no (show it?)    a show/don't-show yes/no prompt
==========================  =====================  ==========================================

Items are sent with ragmeter's own judge prompts for those metrics (the binary variants for
demo judges, as the metrics themselves do), one item per call, zero-shot: no benchmark item
ever appears in a prompt as an example. The result is a :class:`~ragmeter.judge_trust.card.
JudgeCard` per judge; :func:`compare_bench` ranks several with paired tests on per-item
correctness.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.reading import read_lines
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.judge_trust.card import JudgeCard, card_from_values
from ragmeter.judge_trust.labels import LabelSet, label_scale_of, labels_from_records
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.prompts import PromptTemplate, register_prompt
from ragmeter.stats import flip_stats, verdict_flip_rate

TASKS = ("faithfulness", "factual_correctness", "answer_relevance", "context_relevance",
         "production_gate")
#: tasks graded 0/1/2: those whose judged metric row declares an ordinal label scale
GRADED = tuple(t for t in TASKS if label_scale_of(t) == "ordinal")
LANGS = ("ru", "en", "all")
BENCH_FILE = "judge_bench.jsonl"
_NEEDS = {"faithfulness": ("context", "answer"), "factual_correctness": ("reference", "answer"),
          "answer_relevance": ("question", "answer"), "context_relevance": ("question", "context"),
          "production_gate": ("question", "context", "answer")}

GATE_PROMPT = register_prompt(PromptTemplate(
    name="bench.gate",
    version="1",
    system={
        "en": "You decide whether an assistant's answer may be shown to the user. Show it "
              "(yes) only when it answers the question and everything it states is supported "
              "by the context; otherwise no.",
        "ru": "Ты решаешь, можно ли показать пользователю ответ ассистента. Показывай (yes), "
              "только если ответ отвечает на вопрос и всё, что в нём сказано, подтверждается "
              "контекстом; иначе no.",
    },
    user={
        "en": "{question}\n\n{context}\n\n{answer}\n\nMay this answer be shown? Put yes or no "
              "in the field \"verdict\".",
        "ru": "{question}\n\n{context}\n\n{answer}\n\nМожно ли показать этот ответ? Ответь yes "
              "или no в поле \"verdict\".",
    },
    schema={"type": "object", "properties": {"verdict": {"type": "string",
                                                         "enum": ["yes", "no"]},
                                             "reason": {"type": "string"}},
            "required": ["verdict"]},
))


@dataclass(frozen=True)
class BenchItem:
    id: str
    lang: str
    task: str
    kind: str
    label: str | int
    question: str | None = None
    context: str | None = None
    answer: str | None = None
    reference: str | None = None

    @property
    def label_value(self) -> float:
        """The label on 0–1 (yes → 1, grade / 2)."""
        if isinstance(self.label, str):
            return 1.0 if self.label == "yes" else 0.0
        return float(self.label) / 2.0


def bench_path() -> Path:
    return Path(str(resources.files("ragmeter.judge_trust") / "data" / BENCH_FILE))


def load_bench(path: str | Path | None = None, *, lang: str = "all",
               tasks: Sequence[str] | None = None, limit: int = 0) -> list[BenchItem]:
    """Benchmark items (the bundled file by default), filtered by language and task.

    ``limit`` keeps the first ``limit`` items *per task* (the file is shuffled, so a limit
    still covers every kind).
    """
    if lang not in LANGS:
        raise ConfigError("lang", f"unknown language {lang!r}", list(LANGS))
    for t in tasks or ():
        if t not in TASKS:
            raise ConfigError("task", f"unknown benchmark task {t!r}", list(TASKS))
    p = Path(path) if path is not None else bench_path()
    problems: list[RecordProblem] = []
    items: list[BenchItem] = []
    seen: set[str] = set()
    index = -1  # record index: the id of a record without one (line numbers are for errors)
    for n, line in read_lines(p):  # the one reading path: BOM, encodings, line endings
        index += 1
        try:
            rec = json.loads(line)
        except ValueError as exc:
            problems.append(RecordProblem(str(p), n, None, f"invalid JSON: {exc}"))
            continue
        if not isinstance(rec, dict):
            problems.append(RecordProblem(str(p), n, None, "expected an object"))
            continue
        task = rec.get("task")
        if task not in TASKS:
            problems.append(RecordProblem(str(p), n, "task", f"unknown task {task!r} "
                                          f"(allowed: {', '.join(TASKS)})"))
            continue
        label = rec.get("label")
        ok = label in (0, 1, 2) if task in GRADED else label in ("yes", "no")
        if not ok or isinstance(label, bool):
            problems.append(RecordProblem(str(p), n, "label", "must be 0, 1 or 2" if task in
                                          GRADED else "must be \"yes\" or \"no\""))
            continue
        missing = [k for k in _NEEDS[task] if not isinstance(rec.get(k), str)
                   or not rec[k].strip()]
        if missing:
            problems.append(RecordProblem(str(p), n, missing[0], f"is required for {task}"))
            continue
        sid = str(rec.get("id") or f"#{index}")
        if sid in seen:
            problems.append(RecordProblem(str(p), n, "id", f"duplicate id {sid!r}"))
            continue
        seen.add(sid)
        items.append(BenchItem(sid, str(rec.get("lang") or "ru"), task,
                               str(rec.get("kind") or ""), label,  # type: ignore[arg-type]
                               rec.get("question"),
                               rec.get("context"), rec.get("answer"), rec.get("reference")))
    if problems:
        raise DataError(problems)
    out = [i for i in items if (lang == "all" or i.lang == lang)
           and (not tasks or i.task in tasks)]
    if limit > 0:
        per: Counter[str] = Counter()
        kept = []
        for i in out:
            if per[i.task] < limit:
                kept.append(i)
                per[i.task] += 1
        out = kept
    return out


def bench_labels(items: Sequence[BenchItem]) -> LabelSet:
    """The items' labels as a :class:`LabelSet` (metric = task)."""
    recs = [(k + 1, {"sample_id": i.id, "metric": i.task, "label": i.label,
                     "scale": label_scale_of(i.task) or "binary"})
            for k, i in enumerate(items)]
    return labels_from_records(recs, "judge-benchmark")


#: reply budget per benchmark call: a verdict plus a one-sentence reason fits easily; a weak
#: model that rambles on is cut off and its reply is unscored ``truncated``
MAX_TOKENS = 200


def item_request(item: BenchItem, *, binary: bool,
                 max_tokens: int | None = MAX_TOKENS) -> JudgeRequest:
    """The judge request ragmeter's metric would send for this item (zero-shot)."""
    from ragmeter.generation import prompts as P

    lang = item.lang if item.lang in ("ru", "en") else "en"
    if item.task == "faithfulness":
        req = P.verify_request(item.id, lang, binary=binary, checks=["answer_in_context"],
                               answer_claims=[item.answer or ""], reference_claims=[],
                               contexts=[item.context or ""], reference=None, answer=None)
    elif item.task == "factual_correctness":
        req = P.verify_request(item.id, lang, binary=binary, checks=["answer_in_reference"],
                               answer_claims=[item.answer or ""], reference_claims=[],
                               contexts=None, reference=item.reference, answer=None)
    elif item.task == "context_relevance":
        req = P.contexts_request(item.id, lang, binary=binary, question=item.question or "",
                                 contexts=[item.context or ""], reference=None, relevance=True,
                                 useful=False)
    elif item.task == "answer_relevance":
        req = P.answer_request(item.id, lang, binary=binary, question=item.question or "",
                               answer=item.answer or "", reference=None, relevance=True,
                               e2e=False)
    else:
        req = GATE_PROMPT.request(lang, metric="production_gate", sample_id=item.id,
                                  question=item.question, context=item.context,
                                  answer=item.answer)
    return replace(req, metric=item.task, max_tokens=max_tokens)


def _yes(v: Any) -> float | None:
    if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
        return 1.0 if v.strip().lower() == "yes" else 0.0
    return None


def reply_value(item: BenchItem, reply: JudgeReply) -> tuple[float | None, str | None]:
    """The judge's verdict on 0–1, or ``(None, reason)`` when unscored."""
    if not reply.ok:
        return None, reply.reason or "backend_error"
    d: Any = reply.data
    try:
        if item.task in ("faithfulness", "factual_correctness"):
            key = "in_context" if item.task == "faithfulness" else "in_reference"
            v = _yes(d["answer_claims"][0][key])
        elif item.task == "context_relevance":
            c = d["contexts"][0]
            v = _yes(c["relevant"]) if "relevant" in c else _grade(c.get("relevance"))
        elif item.task == "answer_relevance":
            v = (_yes(d["answers_question"]) if "answers_question" in d
                 else _grade(d.get("answer_relevance")))
        else:
            v = _yes(d["verdict"])
    except (KeyError, IndexError, TypeError):
        return None, "schema_error"
    return (v, None) if v is not None else (None, "schema_error")


def _grade(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v not in (0, 1, 2):
        return None
    return float(v) / 2.0


@dataclass
class BenchRun:
    """One judge's run over the benchmark: per-item values per repeat, and its card."""

    judge: str
    model: str
    items: list[BenchItem]
    values: np.ndarray                 # repeats × items, NaN = unscored
    reasons: list[dict[str, str]]      # per repeat: item id → unscored reason
    card: JudgeCard
    stats: dict[str, Any] = field(default_factory=dict)

    def correct(self, task: str) -> tuple[list[str], np.ndarray]:
        """Per-item correctness (1/0, NaN when unscored) of repeat 1 for ``task``."""
        ids, out = [], []
        for k, it in enumerate(self.items):
            if it.task != task:
                continue
            v = self.values[0, k]
            ids.append(it.id)
            if math.isnan(v):
                out.append(np.nan)
            elif it.task in GRADED:
                out.append(float(round(v * 2) == round(it.label_value * 2)))
            else:
                out.append(float((v >= 0.5) == (it.label_value >= 0.5)))
        return ids, np.asarray(out, dtype=np.float64)


def run_bench(judge: Any, items: Sequence[BenchItem], *, repeats: int = 1,
              binary: bool | None = None, seed: int = 42, n_boot: int = 1000,
              max_tokens: int | None = MAX_TOKENS) -> BenchRun:
    """Ask ``judge`` about every item (``repeats`` times, each repeat a fresh call) and
    build its card; with ``repeats ≥ 2`` the card carries flip rates."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ConfigError("repeats", f"must be an integer >= 1, got {repeats!r}")
    if not items:
        raise ConfigError("items", "no benchmark items selected")
    use_binary = bool(getattr(judge, "demo", False)) if binary is None else binary
    base = [item_request(it, binary=use_binary, max_tokens=max_tokens) for it in items]
    reqs = [b if repeats == 1 else replace(b, prompt_version=f"{b.prompt_version}#r{r + 1}")
            for r in range(repeats) for b in base]
    replies = judge.ask_many(reqs)
    n = len(items)
    V = np.full((repeats, n), np.nan)
    reasons: list[dict[str, str]] = [{} for _ in range(repeats)]
    for r in range(repeats):
        for k, it in enumerate(items):
            v, why = reply_value(it, replies[r * n + k])
            if v is None:
                reasons[r][it.id] = why or "unscored"
            else:
                V[r, k] = v
    labels = bench_labels(items)
    jv: dict[str, dict[str, float | None]] = defaultdict(dict)
    why_first: dict[str, dict[str, str]] = defaultdict(dict)
    for k, it in enumerate(items):
        v = V[0, k]
        jv[it.task][it.id] = None if math.isnan(v) else float(v)
        if it.id in reasons[0]:
            why_first[it.task][it.id] = reasons[0][it.id]
    model = str(getattr(judge, "model", "") or getattr(judge, "name", "judge"))
    versions = sorted({q.prompt_version for q in base})
    card = card_from_values(jv, labels, judge=str(getattr(judge, "name", "judge")),
                            model=model, prompt_versions=versions, reasons=why_first,
                            dataset=f"judge-bench:{_file_hash(items)}",
                            demo=bool(getattr(judge, "demo", False)), seed=seed, n_boot=n_boot)
    card.meta["prompt_variant"] = "binary" if use_binary else "graded"
    card.meta["repeats"] = repeats
    card.meta["by_kind"] = _by_kind(items, V[0])
    card.meta["languages"] = dict(Counter(i.lang for i in items))
    if repeats >= 2:
        for task, mc in card.metrics.items():
            cols = [k for k, it in enumerate(items) if it.task == task]
            sub = V[:, cols]
            cats = np.where(np.isnan(sub), np.nan, np.round(sub * 2) if task in GRADED
                            else (sub >= 0.5).astype(float))
            flip = verdict_flip_rate(cats)
            _, cross = flip_stats(sub, 0.5)
            ok = ~np.isnan(flip)
            mc.flaky = {"repeats": repeats, "n": int(ok.sum()),
                        "flip_rate": float(np.nanmean(flip)) if ok.any() else None,
                        "threshold": 0.5,
                        "threshold_cross": float(np.nanmean(cross)) if ok.any() else None,
                        "flaky_items": [items[cols[j]].id for j in np.flatnonzero(
                            np.nan_to_num(flip) > 0)][:50]}
    stats = getattr(judge, "last_stats", None) or getattr(judge, "stats", None)
    run = BenchRun(str(getattr(judge, "name", "judge")), model, list(items), V, reasons, card)
    if stats is not None:
        run.stats = {k: getattr(stats, k) for k in ("calls", "tokens_in", "tokens_out", "cost")
                     if hasattr(stats, k)}
    card.meta["usage"] = run.stats
    return run


def _file_hash(items: Sequence[BenchItem]) -> str:
    import hashlib

    h = hashlib.sha256()
    for it in items:
        h.update(f"{it.id}\t{it.label}\n".encode())
    return h.hexdigest()[:12]


def _by_kind(items: Sequence[BenchItem], v: np.ndarray) -> dict[str, dict[str, Any]]:
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    unscored: Counter[tuple[str, str]] = Counter()
    for k, it in enumerate(items):
        key = f"{it.lang}:{it.kind}"
        if math.isnan(v[k]):
            unscored[(it.task, key)] += 1
            continue
        if it.task in GRADED:
            ok = float(round(v[k] * 2) == round(it.label_value * 2))
        else:
            ok = float((v[k] >= 0.5) == (it.label_value >= 0.5))
        acc[it.task][key].append(ok)
    out: dict[str, dict[str, Any]] = {}
    for task in sorted({i.task for i in items}):
        kinds = sorted({f"{i.lang}:{i.kind}" for i in items if i.task == task})
        out[task] = {k: {"n": len(acc[task][k]), "unscored": unscored[(task, k)],
                         "accuracy": (sum(acc[task][k]) / len(acc[task][k])
                                      if acc[task][k] else None)} for k in kinds}
    return out


def compare_bench(runs: Sequence[BenchRun], *, seed: int = 42,
                  n_resamples: int = 10000) -> list[dict[str, Any]]:
    """Judges side by side per task: accuracy and κ with CIs, rank, and a paired
    randomisation test of per-item correctness against the best judge (items every judge
    scored)."""
    from ragmeter.stats import paired_test

    rows: list[dict[str, Any]] = []
    tasks = [t for t in TASKS if any(t in r.card.metrics for r in runs)]
    for task in tasks:
        corr = {}
        for r in runs:
            ids, c = r.correct(task)
            corr[r.judge] = dict(zip(ids, c, strict=True))
        entries = []
        for r in runs:
            mc = r.card.metrics.get(task)
            if mc is None:
                continue
            entries.append((r, mc))
        entries.sort(key=lambda e: -(e[1].stats["accuracy"].value or -1.0))
        best = entries[0][0] if entries else None
        for rank, (r, mc) in enumerate(entries, 1):
            acc, kap = mc.stats["accuracy"], mc.stats["kappa"]
            row: dict[str, Any] = {"task": task, "rank": rank, "judge": r.judge,
                                   "model": r.model, "n": mc.n, "unscored": mc.n_unscored,
                                   "accuracy": acc.value, "accuracy_ci": (acc.ci_low,
                                                                           acc.ci_high),
                                   "kappa": kap.value, "kappa_ci": (kap.ci_low, kap.ci_high),
                                   "bias_direction": mc.bias_direction,
                                   "vs_best_diff": None, "vs_best_p": None}
            if best is not None and r is not best:
                common = [s for s in corr[best.judge] if s in corr[r.judge]
                          and not math.isnan(corr[best.judge][s])
                          and not math.isnan(corr[r.judge][s])]
                if common:
                    pc = paired_test(np.asarray([corr[best.judge][s] for s in common]),
                                     np.asarray([corr[r.judge][s] for s in common]),
                                     metric=f"{task}:accuracy", seed=seed,
                                     n_resamples=n_resamples)
                    row["vs_best_diff"] = pc.diff
                    row["vs_best_p"] = pc.p_value
                    row["vs_best_n"] = pc.n
            rows.append(row)
    return rows


__all__ = ["BENCH_FILE", "GATE_PROMPT", "GRADED", "LANGS", "TASKS", "BenchItem", "BenchRun",
           "bench_labels", "bench_path", "compare_bench", "item_request", "load_bench",
           "reply_value", "run_bench"]
