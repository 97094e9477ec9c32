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

A task is the name of a judged metric (or the production gate): an item is asked through that
metric's own judge calls and its reply read by the metric's own readers and score function
(:mod:`ragmeter.metrics.judged`), the binary variants for demo judges as the metrics
themselves do, so any judged metric declared there — built in or the user's — can be graded
on a benchmark file (``--items``) with no edit here. The item's question, context, answer and
reference are the sample's ``user_input``, only retrieved context, ``response`` and
``reference``; a text the metric would split into claims is one claim (one item, one
verdict). One item per call, zero-shot: no benchmark item ever appears in a prompt as an
example. ``data/judge_bench_pairs.jsonl`` holds English translations of a seeded subset of the
Russian items (each English item's ``pair`` names its original), for the paired language probe
(:mod:`ragmeter.judge_trust.language`); they are not benchmark items. The result is a
:class:`~ragmeter.judge_trust.card.JudgeCard` per judge;
:func:`compare_bench` ranks several with paired tests on per-item correctness.
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
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, DataError, RagmeterError, RecordProblem
from ragmeter.judge_trust.card import JudgeCard, card_from_values
from ragmeter.judge_trust.labels import LabelSet, labels_from_records
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.prompts import PromptTemplate, register_prompt
from ragmeter.metrics.inputs import missing_field
from ragmeter.metrics.judged import (
    Asking,
    JudgedMetric,
    LabelScale,
    SampleJudgement,
    judged_row,
    questions_of,
    score_sample,
)
from ragmeter.metrics.judged import label_scale_of as row_label_scale
from ragmeter.metrics.judged.plan import ask
from ragmeter.metrics.registry import Metric, list_specs, parse_metric
from ragmeter.stats import flip_stats, verdict_flip_rate

GATE_TASK = "production_gate"
#: the tasks of the bundled benchmark file (any judged metric can be a task of another file)
TASKS = ("faithfulness", "factual_correctness", "answer_relevance", "context_relevance",
         GATE_TASK, "judged_refusal", "history_faithfulness", "citation_support")
LANGS = ("ru", "en", "all")
BENCH_FILE = "judge_bench.jsonl"
#: item fields of the sample fields a judged metric reads
_ITEM_FIELDS = {"user_input": "question", "retrieved_contexts": "context",
                "response": "answer", "reference": "reference"}


def task_scale(task: str) -> LabelScale | None:
    """The label scale of a task: the judged metric row's (yes/no for the gate); ``None`` for
    a name that is no task."""
    return "binary" if task == GATE_TASK else row_label_scale(task)


#: tasks of the bundled file graded 0/1/2: those whose judged metric row declares an ordinal
#: label scale
GRADED = tuple(t for t in TASKS if task_scale(t) == "ordinal")


def bench_tasks() -> tuple[str, ...]:
    """Every task a benchmark file may hold: each registered judged metric (built in or
    declared by the user) whose value comes from the judge alone, and the gate; the bundled
    file's tasks first. (``answer_correctness`` also needs an embedder: not a task.)"""
    judged = [s.name for s in list_specs("judged")
              if isinstance(s.compute, JudgedMetric) and s.compute.prepare is None]
    return (*TASKS, *(n for n in judged if n not in TASKS))


def _task_metric(task: str) -> tuple[JudgedMetric, Metric]:
    """The judged metric row of ``task`` and the configured metric the benchmark grades (a
    task with parameters, ``faithfulness(method=direct)``, grades exactly that metric)."""
    metric = parse_metric(task)
    row = judged_row(metric)
    return row, metric if "(" in task else parse_metric(row.bench_metric or row.name)


def _variant_of(task: str, known: Sequence[str]) -> str | None:
    """The known task whose metric ``task`` configures (``faithfulness(method=direct)`` →
    ``faithfulness``); ``None`` when it is none."""
    base = task.split("(")[0].strip()
    if "(" not in task or base not in known or base == GATE_TASK:
        return None
    try:
        return base if parse_metric(task).name == base else None
    except RagmeterError:
        return None


def _item_fields(task: str) -> tuple[tuple[str, ...], list[str]]:
    """The item fields ``task`` needs, and the sample fields it reads that items lack."""
    if task == GATE_TASK:
        return ("question", "context", "answer"), []
    fields = _task_metric(task)[0].fields
    return (tuple(_ITEM_FIELDS[f] for f in fields if f in _ITEM_FIELDS),
            [f for f in fields if f not in _ITEM_FIELDS])


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
    #: earlier turns of a conversation item (``{"role", "content"}``), oldest first
    history: list[dict[str, str]] | None = None
    #: the task's label scale: binary (yes/no), ordinal (0/1/2) or continuous (0–1); by
    #: default the one the task's judged metric row declares
    scale: str = ""
    #: the id of the item this one translates (the language probe's pairs), if any
    pair: str | None = None

    def __post_init__(self) -> None:
        if not self.scale:
            object.__setattr__(self, "scale", task_scale(self.task) or "binary")

    @property
    def label_value(self) -> float:
        """The label on 0–1 (yes → 1, grade / 2, a continuous label as it is)."""
        if isinstance(self.label, str):
            return 1.0 if self.label == "yes" else 0.0
        return float(self.label) if self.scale == "continuous" else float(self.label) / 2.0

    @property
    def graded(self) -> bool:
        return self.scale == "ordinal"

    def correct(self, value: float) -> float:
        """1.0 when the judge's ``value`` (0–1) gives this item's label, else 0.0."""
        if self.graded:
            return float(round(value * 2) == round(self.label_value * 2))
        return float((value >= 0.5) == (self.label_value >= 0.5))

    def sample(self) -> Sample:
        """The item as the sample a judged metric reads."""
        return Sample(id=self.id, user_input=self.question, response=self.answer,
                      reference=self.reference, history=self.history,
                      retrieved_contexts=None if self.context is None else [self.context])


def bench_path(name: str = BENCH_FILE) -> Path:
    return Path(str(resources.files("ragmeter.judge_trust") / "data" / name))


def load_bench(path: str | Path | None = None, *, lang: str = "all",
               tasks: Sequence[str] | None = None, limit: int = 0) -> list[BenchItem]:
    """Benchmark items (the bundled file by default), filtered by language and task.

    A task is a judged metric's name (or ``production_gate``). ``limit`` keeps the first
    ``limit`` items *per task* (the file is shuffled, so a limit still covers every kind).
    """
    if lang not in LANGS:
        raise ConfigError("lang", f"unknown language {lang!r}", list(LANGS))
    known = bench_tasks()
    for t in tasks or ():
        if t not in known and _variant_of(t, known) is None:
            raise ConfigError("task", f"unknown benchmark task {t!r}", list(known))
    p = Path(path) if path is not None else bench_path()
    problems: list[RecordProblem] = []
    items: list[BenchItem] = []
    seen: set[str] = set()
    index = -1  # record index: the id of a record without one (line numbers are for errors)
    for n, line in read_lines(p):  # the one reading path: BOM, encodings, line endings
        index += 1
        got = _read_item(line, RecordProblem(str(p), n, None, ""), f"#{index}", known)
        if isinstance(got, BenchItem) and got.id in seen:
            got = RecordProblem(str(p), n, "id", f"duplicate id {got.id!r}")
        if isinstance(got, RecordProblem):
            problems.append(got)
            continue
        seen.add(got.id)
        items.append(got)
    if problems:
        raise DataError(problems)
    out = [i for i in items if (lang == "all" or i.lang == lang)
           and (not tasks or i.task in tasks)]
    # a variant task grades the items of its metric with that configuration (ids tagged)
    out += [replace(i, task=t, id=f"{i.id}@{t}") for t in tasks or () if t not in known
            for i in items if (lang == "all" or i.lang == lang)
            and i.task == _variant_of(t, known)]
    if limit > 0:
        per: Counter[str] = Counter()
        kept = []
        for i in out:
            if per[i.task] < limit:
                kept.append(i)
                per[i.task] += 1
        out = kept
    return out


_LABEL_RULE = {"binary": ("must be \"yes\" or \"no\"", lambda v: v in ("yes", "no")),
               "ordinal": ("must be 0, 1 or 2",
                           lambda v: not isinstance(v, bool) and v in (0, 1, 2)),
               "continuous": ("must be a number in 0–1",
                              lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                              and 0 <= v <= 1)}


def _read_item(line: str, at: RecordProblem, default_id: str,
               known: Sequence[str]) -> BenchItem | RecordProblem:
    """One benchmark line as an item, or the problem with it (``at``: its file and line)."""
    try:
        rec = json.loads(line)
    except ValueError as exc:
        return replace(at, message=f"invalid JSON: {exc}")
    if not isinstance(rec, dict):
        return replace(at, message="expected an object")
    task = rec.get("task")
    if not isinstance(task, str) or (task not in known and _variant_of(task, known) is None):
        return replace(at, field="task", message=f"unknown task {task!r} "
                       f"(allowed: {', '.join(known)})")
    scale = task_scale(task) or "binary"
    rule, ok = _LABEL_RULE[scale]
    label = rec.get("label")
    if not ok(label):
        return replace(at, field="label", message=rule)
    needs, lacking = _item_fields(task)
    if lacking:
        return replace(at, field="task", message=f"the judged metric {task!r} reads "
                       f"{', '.join(lacking)}, which benchmark items do not carry")
    missing = [k for k in needs if not isinstance(rec.get(k), str) or not rec[k].strip()]
    if missing:
        return replace(at, field=missing[0], message=f"is required for {task}")
    history = rec.get("history")
    if history is not None and not (isinstance(history, list) and all(
            isinstance(t, dict) and t.get("role") in ("user", "assistant")
            and isinstance(t.get("content"), str) for t in history)):
        return replace(at, field="history", message="must be a list of {role: user|assistant, "
                       "content: text} objects")
    return BenchItem(str(rec.get("id") or default_id), str(rec.get("lang") or "ru"), task,
                     str(rec.get("kind") or ""), label,  # type: ignore[arg-type]
                     rec.get("question"), rec.get("context"),
                     rec.get("answer"), rec.get("reference"), history, scale,
                     str(rec["pair"]) if rec.get("pair") else None)


def bench_labels(items: Sequence[BenchItem]) -> LabelSet:
    """The items' labels as a :class:`LabelSet` (metric = task)."""
    recs = [(k + 1, {"sample_id": i.id, "metric": i.task, "label": i.label,
                     "scale": i.scale})
            for k, i in enumerate(items)]
    return labels_from_records(recs, "judge-benchmark")


#: reply budget per benchmark call: a verdict plus a one-sentence reason fits easily; a weak
#: model that rambles on is cut off and its reply is unscored ``truncated``
MAX_TOKENS = 200


def item_requests(item: BenchItem, *, binary: bool,
                  max_tokens: int | None = MAX_TOKENS) -> list[JudgeRequest]:
    """The first judge requests ragmeter's metric sends for this item (zero-shot); one for
    every task whose calls do not wait on each other."""
    return [replace(q, then=None) for q in _Round([item], binary, max_tokens, "").requests]


def item_request(item: BenchItem, *, binary: bool,
                 max_tokens: int | None = MAX_TOKENS) -> JudgeRequest:
    """The judge request ragmeter's metric would send for this item (zero-shot)."""
    reqs = item_requests(item, binary=binary, max_tokens=max_tokens)
    if not reqs:
        raise ConfigError("task", f"benchmark item {item.id!r}: the judged metric "
                          f"{item.task!r} asks the judge nothing about it")
    return reqs[0]


class _Round:
    """One pass over the items, each asked through its own metric's calls (the gate through
    its prompt): the requests in item order, then each item's value or why it has none."""

    def __init__(self, items: Sequence[BenchItem], binary: bool, max_tokens: int | None,
                 tag: str) -> None:
        self.items = items
        self.versions: set[str] = set()
        task_of = {it.id: it.task for it in items}

        def send(req: JudgeRequest) -> JudgeRequest:
            self.versions.add(req.prompt_version)
            return replace(req, metric=task_of.get(req.sample_id, req.metric),
                           max_tokens=max_tokens, prompt_version=req.prompt_version + tag)

        self.asking = Asking(binary=binary, claims="whole", send=send)
        #: a jury's members alone: name -> task -> item id -> value
        self.member_values: dict[str, dict[str, dict[str, float | None]]] = {}
        self.judged: dict[str, tuple[JudgedMetric, Metric, Sample, SampleJudgement]] = {}
        for it in items:
            if it.task != GATE_TASK:
                row, metric = _task_metric(it.task)
                s = it.sample()
                needs = questions_of(row, metric) if missing_field(s, row.fields) is None else ()
                j = self.asking.add(s, needs, _lang(it))
                self.judged[it.id] = (row, metric, s, j)
        first: dict[str, list[JudgeRequest]] = defaultdict(list)
        for q in self.asking.requests():
            first[q.sample_id].append(q)
        self.requests: list[JudgeRequest] = []
        self.gate_at: dict[str, int] = {}
        for it in items:
            if it.task == GATE_TASK:
                self.gate_at[it.id] = len(self.requests)
                self.requests.append(send(GATE_PROMPT.request(
                    _lang(it), metric=GATE_TASK, sample_id=it.id, question=it.question,
                    context=it.context, answer=it.answer)))
            else:
                self.requests += first[it.id]

    def values(self, replies: Sequence[JudgeReply]
               ) -> list[tuple[float | None, str | None]]:
        """Each item's verdict on 0–1, or ``(None, reason)``; ``replies``: this round's
        replies in request order (the gate's are read from them)."""
        self.asking.finish()
        out: list[tuple[float | None, str | None]] = []
        for it in self.items:
            if it.task == GATE_TASK:
                out.append(_gate_value(replies[self.gate_at[it.id]]))
                continue
            row, metric, s, j = self.judged[it.id]
            sc = score_sample(row, metric, s, j, keep_prompts=False)
            out.append((sc.value, None) if sc.value is not None
                       else (None, sc.reason or "unscored"))
            for name, mj in j.members.items():
                self.member_values.setdefault(name, {}).setdefault(it.task, {})[it.id] = \
                    score_sample(row, metric, s, mj, keep_prompts=False).value
        return out


def _lang(item: BenchItem) -> str:
    return item.lang if item.lang in ("ru", "en") else "en"


def _gate_value(reply: JudgeReply) -> tuple[float | None, str | None]:
    """The gate's verdict on 0–1 (yes → 1), or ``(None, reason)`` when unscored."""
    if not reply.ok:
        return None, reply.reason or "backend_error"
    v = reply.data.get("verdict") if isinstance(reply.data, dict) else None
    if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
        return (1.0 if v.strip().lower() == "yes" else 0.0), None
    return None, "schema_error"


def _ask_items(judge: Any, items: Sequence[BenchItem], repeats: int, binary: bool,
               max_tokens: int | None
               ) -> tuple[np.ndarray, list[dict[str, str]], list[str],
                          dict[str, dict[str, dict[str, float | None]]]]:
    """Values (repeats × items, NaN = unscored), unscored reasons per repeat, prompt versions,
    a jury's members' values of repeat 1; every repeat's requests in one batch."""
    rounds = [_Round(items, binary, max_tokens, "" if repeats == 1 else f"#r{r + 1}")
              for r in range(repeats)]
    replies = ask(judge, [q for rnd in rounds for q in rnd.requests])
    V = np.full((repeats, len(items)), np.nan)
    reasons: list[dict[str, str]] = [{} for _ in range(repeats)]
    start = 0
    for r, rnd in enumerate(rounds):
        got = rnd.values(replies[start:start + len(rnd.requests)])
        start += len(rnd.requests)
        for k, (it, (v, why)) in enumerate(zip(items, got, strict=True)):
            if v is None:
                reasons[r][it.id] = why or "unscored"
            else:
                V[r, k] = v
    return (V, reasons, sorted(set().union(*(rnd.versions for rnd in rounds))),
            rounds[0].member_values)


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
            out.append(np.nan if math.isnan(v) else it.correct(float(v)))
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
    V, reasons, versions, members = _ask_items(judge, items, repeats, use_binary, max_tokens)
    labels = bench_labels(items)
    jv: dict[str, dict[str, float | None]] = defaultdict(dict)
    why_first: dict[str, dict[str, str]] = defaultdict(dict)
    for k, it in enumerate(items):
        v = V[0, k]
        jv[it.task][it.id] = None if math.isnan(v) else float(v)
        if it.id in reasons[0]:
            why_first[it.task][it.id] = reasons[0][it.id]
    model = str(getattr(judge, "model", "") or getattr(judge, "name", "judge"))
    card = card_from_values(jv, labels, judge=str(getattr(judge, "name", "judge")),
                            model=model, prompt_versions=versions, reasons=why_first,
                            dataset=f"judge-bench:{_file_hash(items)}",
                            demo=bool(getattr(judge, "demo", False)), seed=seed, n_boot=n_boot,
                            members=members)
    card.meta["prompt_variant"] = "binary" if use_binary else "graded"
    card.meta["repeats"] = repeats
    card.meta["by_kind"] = _by_kind(items, V[0])
    card.meta["languages"] = dict(Counter(i.lang for i in items))
    if repeats >= 2:
        for task, mc in card.metrics.items():
            cols = [k for k, it in enumerate(items) if it.task == task]
            sub = V[:, cols]
            cats = np.where(np.isnan(sub), np.nan, np.round(sub * 2) if task_scale(task) == "ordinal"
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
        acc[it.task][key].append(it.correct(float(v[k])))
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
    tasks = [t for t in bench_tasks() if any(t in r.card.metrics for r in runs)]
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


__all__ = ["BENCH_FILE", "GATE_PROMPT", "GATE_TASK", "GRADED", "LANGS", "TASKS", "BenchItem",
           "BenchRun", "bench_labels", "bench_path", "bench_tasks", "compare_bench",
           "item_request", "item_requests", "load_bench", "run_bench", "task_scale"]
