"""A blind labelling session: people label a run's judged samples, one at a time, into the
labels file that ``ragmeter judge card`` reads.

The session shows a sample's question, contexts, answer (and reference, for metrics that
read one) and never the judge's verdict. Which samples, and in which order, comes from a
seeded :class:`~ragmeter.stats.selection.Selection` (uniform, stratified or active; see
:func:`choose`), written into the labels file once as a ``selection`` line, so the
bias-corrected estimate weights every label by its inclusion probability. Every labeller
(``rater``) walks the same order; every answer is one line appended, flushed and fsynced
through :class:`~ragmeter.journal.Journal` before it is acknowledged, so a ``kill -9`` loses
no saved label and the next session resumes where each labeller stopped. Going back and
changing an answer appends the new one marked ``revised``; a skipped item is recorded and
offered again after the rest.

Grades: a yes/no metric takes ``1`` (yes) or ``0`` (no); a graded metric ``0``/``1``/``2``
(a metric scored on 0–1 is labelled in the same three grades, written ``scale: ordinal``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DataError, RecordProblem, UsageError
from ragmeter.journal import Journal
from ragmeter.judge_trust.labels import LabelSet, labels_from_records
from ragmeter.stats.selection import MODES, Selection, pilot_sigmas, select

#: a labeller's id: letters, digits and ``._@+-``, at most 64 characters
RATER = re.compile(r"^[\w.@+-]{1,64}$")
#: the grades each label scale takes
GRADES = {"binary": (0, 1), "ordinal": (0, 1, 2)}
#: the labels a stratified or active selection asks for when neither ``n`` nor a target
#: width says
DEFAULT_N = 100
#: what an item can show, in page order
FIELDS = ("question", "contexts", "answer", "reference")
_NEEDS = {"user_input": "question", "retrieved_contexts": "contexts", "response": "answer",
          "reference": "reference"}


def check_rater(rater: str) -> str:
    """A labeller id, checked (a :class:`UsageError` naming ``--rater`` otherwise)."""
    if not isinstance(rater, str) or not RATER.match(rater):
        raise UsageError("--rater", f"a labeller id is 1-64 letters, digits or ._@+- "
                                    f"(no spaces), got {str(rater)[:80]!r}")
    return rater


def label_scale(metric: str) -> str:
    """The scale labels of ``metric`` are written on: ``binary`` for a yes/no metric,
    ``ordinal`` (0/1/2) for the rest."""
    from ragmeter.metrics.judged import label_scale_of

    return "binary" if label_scale_of(metric) == "binary" else "ordinal"


def shown_fields(metric: str) -> tuple[str, ...]:
    """What a labeller sees of a sample for ``metric``: the question, and what the metric
    reads (contexts, answer, reference); everything for a metric without a declaration."""
    from ragmeter.errors import MetricSpecError
    from ragmeter.metrics.registry import get_spec

    base = metric.split("(")[0].split("@")[0].strip()
    try:
        needs = {_NEEDS[f] for f in get_spec(base).required_fields if f in _NEEDS}
    except MetricSpecError:
        return FIELDS
    return tuple(f for f in FIELDS if f == "question" or f in needs)


@dataclass(frozen=True)
class LabelItem:
    """One sample as a labeller sees it: no judge value, no judge reason."""

    sample_id: str
    question: str | None = None
    answer: str | None = None
    contexts: tuple[str, ...] = ()
    reference: str | None = None

    def to_dict(self, fields: Sequence[str] = FIELDS) -> dict[str, Any]:
        out: dict[str, Any] = {"sample_id": self.sample_id}
        for name in fields:
            value = getattr(self, name)
            out[name] = list(value) if name == "contexts" else value
        return out


@dataclass(frozen=True)
class Task:
    """What is labelled: one judged metric of one run (of one system, when the run has
    several)."""

    run_id: str
    metric: str
    scale: str
    system: str = ""
    fields: tuple[str, ...] = FIELDS

    @property
    def grades(self) -> tuple[int, ...]:
        return GRADES[self.scale]


def choose(mode: str, values: Mapping[str, float], *, n: int | None, seed: int,
           strata: Mapping[str, str] | None = None,
           uncertainty: Mapping[str, float] | None = None,
           pilot: Mapping[str, float] | None = None) -> Selection:
    """The items to label among the judged samples ``values`` (id → judge value).

    ``uniform``: every item in a seeded random order (any first part is a simple random
    sample, so labellers may stop at any point; ``n`` is only the goal shown). ``stratified``:
    ``n`` labels spread over ``strata`` by Neyman allocation, the spreads from the labels
    already made (``pilot``, id → label on 0–1: kept, first). ``active``: about ``n`` items
    drawn with probability rising with the judge's ``uncertainty``."""
    ids = list(values)
    if mode not in MODES:
        raise UsageError("--select", f"unknown selection {mode!r}", list(MODES))
    if not ids:
        raise DataError(RecordProblem("run", None, "metric", "no scored sample to label"))
    N = len(ids)
    keep = [i for i in (pilot or {}) if i in values]
    size = N if mode == "uniform" else min(N, max(n or DEFAULT_N, len(keep), 1))
    try:
        if mode == "uniform":
            return select(ids, "uniform", N, seed, keep=keep)
        if mode == "stratified":
            if strata is None:
                raise UsageError("--by", "a stratified selection needs the slices to "
                                         "stratify by (--by FIELD)")
            sig = pilot_sigmas(strata, {k: (pilot or {})[k] for k in keep}, values) \
                if keep else None
            return select(ids, "stratified", size, seed, strata=strata, pilot=sig or None,
                          keep=keep)
        if uncertainty is None:
            raise UsageError("--select", "an active selection needs the judge's uncertainty")
        return select(ids, "active", size, seed, uncertainty=uncertainty)
    except ValueError as exc:
        raise UsageError("--select", str(exc)) from None


@dataclass
class _State:
    labels: dict[str, dict[str, int]] = field(default_factory=dict)   # rater -> id -> grade
    skipped: dict[str, set[str]] = field(default_factory=dict)        # rater -> ids


class LabelSession:
    """One labelling session over a labels file (see the module doc). Thread-safe: the
    labelling page answers several labellers at once."""

    def __init__(self, journal: Journal, task: Task, items: Mapping[str, LabelItem],
                 selection: Selection, *, judge_values: Mapping[str, float] | None = None,
                 target_width: float | None = None, notes: Sequence[str] = (),
                 default_rater: str = "labeller"):
        self.journal = journal
        #: the labeller a page opened without ``?rater=`` labels as
        self.default_rater = check_rater(default_rater)
        self.task = task
        self.items = dict(items)
        self.selection = selection
        self.order = [i for i in selection.chosen if i in self.items]
        self.position = {sid: i for i, sid in enumerate(self.order)}
        self.judge_values = dict(judge_values or {})
        self.target_width = target_width
        self.notes = list(notes)
        self._lock = threading.Lock()
        self._state = _State()
        for rec in journal.records:
            self._apply(rec)

    @property
    def path(self) -> Path:
        return self.journal.path

    # -- reading the file -------------------------------------------------------------------
    def _mine(self, rec: Mapping[str, Any]) -> bool:
        return (rec.get("metric") == self.task.metric
                and str(rec.get("system") or "") == self.task.system)

    def _apply(self, rec: Mapping[str, Any]) -> None:
        if not self._mine(rec):
            return
        rater = str(rec.get("rater") or "")
        sid = str(rec.get("sample_id"))
        if rec.get("kind") == "skip":
            self._state.skipped.setdefault(rater, set()).add(sid)
        elif "kind" not in rec and "label" in rec:
            from ragmeter.judge_trust.labels import parse_label

            got = parse_label(rec["label"])
            if not isinstance(got, str):
                self._state.labels.setdefault(rater, {})[sid] = round(got[0])

    # -- what a labeller sees ---------------------------------------------------------------
    def _open(self, rater: str, i: int) -> bool:
        sid = self.order[i]
        return (sid not in self._state.labels.get(rater, {})
                and sid not in self._state.skipped.get(rater, set()))

    def _next(self, rater: str, after: int) -> int:
        """The next index after ``after`` neither labelled nor skipped by ``rater``; then
        (wrapping) a skipped one not labelled since; else the end."""
        n = len(self.order)
        for i in range(after + 1, n):
            if self._open(rater, i):
                return i
        for i in range(0, n):
            if self._open(rater, i):
                return i
        mine = self._state.labels.get(rater, {})
        for i in [*range(after + 1, n), *range(0, after + 1)]:
            if self.order[i] not in mine:
                return i
        return n

    def resume_index(self, rater: str) -> int:
        """Where ``rater`` goes on: the first item not yet answered (skipped ones last)."""
        with self._lock:
            return self._next(check_rater(rater), -1)

    def view(self, rater: str, index: int | None = None) -> dict[str, Any]:
        """Item ``index`` (default: where ``rater`` goes on) as the page shows it, with the
        labeller's own label of it and the progress; ``finished`` past the last item."""
        check_rater(rater)
        with self._lock:
            i = self._next(rater, -1) if index is None else index
            return self._view(rater, i)

    def _view(self, rater: str, i: int) -> dict[str, Any]:
        n = len(self.order)
        if not 0 <= i <= n:
            raise UsageError("index", f"must be between 0 and {n}, got {i}")
        mine = self._state.labels.get(rater, {})
        out: dict[str, Any] = {"index": i, "total": n, "rater": rater,
                               "labelled": sum(1 for s in self.order if s in mine),
                               "skipped": sum(1 for s in self._state.skipped.get(rater, ())
                                              if s not in mine)}
        if i == n:
            out["finished"] = True
            return out
        sid = self.order[i]
        out["item"] = self.items[sid].to_dict(self.task.fields)
        out["label"] = mine.get(sid)
        out["was_skipped"] = sid in self._state.skipped.get(rater, set())
        return out

    # -- answers ----------------------------------------------------------------------------
    def _check(self, rater: str, index: int, sample_id: str) -> None:
        check_rater(rater)
        if not 0 <= index < len(self.order) or self.order[index] != sample_id:
            raise UsageError("sample_id", f"item {index} is not {str(sample_id)[:80]!r} (the "
                                          "page is out of date: reload it)")

    def _record(self, sample_id: str, rater: str, **extra: Any) -> dict[str, Any]:
        rec: dict[str, Any] = {"sample_id": sample_id, "metric": self.task.metric, **extra,
                               "rater": rater}
        if self.task.system:
            rec["system"] = self.task.system
        return rec

    def label(self, rater: str, index: int, sample_id: str, grade: int) -> dict[str, Any]:
        """Save ``rater``'s ``grade`` of item ``index`` (durably, before returning) and give
        the next item to show."""
        self._check(rater, index, sample_id)
        if isinstance(grade, bool) or not isinstance(grade, (int, float)) \
                or grade not in self.task.grades:
            raise UsageError("label", f"{self.task.metric} takes "
                                      f"{'/'.join(map(str, self.task.grades))}, got {grade!r}")
        grade = int(grade)
        with self._lock:
            mine = self._state.labels.setdefault(rater, {})
            before = mine.get(sample_id)
            if before != grade:
                extra: dict[str, Any] = {"label": grade, "scale": self.task.scale}
                if before is not None:
                    extra["revised"] = True
                self.journal.append(self._record(sample_id, rater, **extra))
                mine[sample_id] = grade
            return {**self._view(rater, self._next(rater, index)), "saved": sample_id}

    def skip(self, rater: str, index: int, sample_id: str) -> dict[str, Any]:
        """Pass over item ``index`` (recorded; offered again after the rest)."""
        self._check(rater, index, sample_id)
        with self._lock:
            skipped = self._state.skipped.setdefault(rater, set())
            if sample_id not in skipped and sample_id not in self._state.labels.get(rater, {}):
                self.journal.append(self._record(sample_id, rater, kind="skip"))
                skipped.add(sample_id)
            return self._view(rater, self._next(rater, index))

    # -- summaries --------------------------------------------------------------------------
    def label_set(self) -> LabelSet | None:
        """Everything the file holds now, read as ``judge card`` reads it (``None`` before
        the first label)."""
        with self._lock:
            recs = list(self.journal.records)
        if not any("kind" not in r for r in recs):
            return None
        return labels_from_records(((i + 1, r) for i, r in enumerate(recs)), str(self.path))

    def summary(self) -> dict[str, Any]:
        """Labels per labeller, their agreement and, with a target width, how many more labels
        reach it."""
        from ragmeter.judge_trust.raters import rater_agreement

        with self._lock:
            per = {r: sum(1 for s in v if s in self.position)
                   for r, v in self._state.labels.items()}
        out: dict[str, Any] = {"metric": self.task.metric, "run_id": self.task.run_id,
                               "selection": self.selection.signature,
                               "chosen": len(self.order), "labels": per,
                               "labels_file": str(self.path)}
        labs = self.label_set()
        if labs is not None and self.task.metric in labs.scales:
            agree = rater_agreement(labs, self.task.metric, self.task.system or None)
            if agree is not None:
                out["agreement"] = agree.to_dict()
                out["agreement_line"] = agree.line()
            plan = self.plan(labs)
            if plan is not None:
                out["plan"] = plan
        return out

    def plan(self, labs: LabelSet | None = None) -> dict[str, Any] | None:
        """How many more labels bring the corrected estimate's 95% CI to the target width
        (``None`` without a target width)."""
        if self.target_width is None:
            return None
        labs = labs if labs is not None else self.label_set()
        return plan_labels(labs, self.task, self.judge_values, self.selection,
                           self.target_width)

    def close(self) -> None:
        self.journal.close()


def plan_labels(labs: LabelSet | None, task: Task, judge_values: Mapping[str, float],
                selection: Selection | None, width: float) -> dict[str, Any]:
    """How many labels reach a 95% CI of full ``width`` on the corrected estimate: from the
    labels so far (the planner of :mod:`ragmeter.stats.ppi_estimators`), or, before two
    usable labels, the worst case of labels alone (a yes/no rate of ½: ``(1.96·½ / (W/2))²``)."""
    import math

    from ragmeter.judge_trust.ppi import metric_ppi

    have = labs.values(task.metric, task.system or None) if labs is not None and \
        task.metric in labs.scales else {}
    usable = [s for s in have if s in judge_values]
    if labs is not None and len(usable) >= 2:
        try:
            got = metric_ppi(task.metric, judge_values, labs, system=task.system or None,
                             target_width=width, selection=selection,
                             estimator="ppi++")
        except ValueError:
            got = None
        if got is not None and got.plan is not None:
            p = got.plan
            return {"width": width, "labels": len(usable), "more": p.n_more,
                    "needed": p.n_needed, "now": got.estimate.ci_high - got.estimate.ci_low,
                    "how": p.reason}
    worst = min(len(judge_values), math.ceil((1.96 * 0.5 / (width / 2)) ** 2))
    return {"width": width, "labels": len(usable), "more": max(0, worst - len(usable)),
            "needed": worst, "now": None,
            "how": "worst case before two labels: labels alone at a rate of 1/2"}


def open_session(path: str | Path, task: Task, items: Mapping[str, LabelItem],
                 judge_values: Mapping[str, float], *, mode: str | None,
                 make: Callable[[str, Mapping[str, float]], Selection],
                 target_width: float | None = None,
                 default_rater: str = "labeller") -> LabelSession:
    """Open (or resume) the session of ``task`` in the labels file ``path``.

    A file that already holds a selection for this metric resumes it: ``mode`` ``None`` or
    the same mode keep it; another uniform or stratified selection keeps the labels made so
    far (a pilot: they stay chosen, first) and is appended; an active selection cannot be
    changed once labelled (start another file). ``make(mode, pilot)`` draws a new selection
    (``pilot``: id → label on 0–1 of the items labelled so far)."""
    p = Path(path)
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        raise UsageError("--labels", f"the labels file a session writes is JSON Lines "
                                     f"(.jsonl), got {p.name!r}")
    journal = Journal(p)
    try:
        recs = journal.records
        labs = (labels_from_records(((i + 1, r) for i, r in enumerate(recs)), str(p))
                if recs else None)
        own = [r for r in recs if r.get("kind") == "selection" and r.get("metric") == task.metric
               and str(r.get("system") or "") == task.system]
        last = own[-1] if own else None
        labelled = labs.values(task.metric, task.system or None, with_examples=True) \
            if labs is not None and task.metric in labs.scales else {}
        notes: list[str] = []
        if last is not None and str(last.get("run_id") or "") not in ("", task.run_id):
            raise ConfigError("--labels", f"{p.name} labels run {last['run_id']}, not "
                              f"{task.run_id}: label this run into another file")
        current = labs.selection(task.metric, task.system or None) if labs else None
        if current is None and labelled:
            raise ConfigError("--labels", f"{p.name} already holds {len(labelled)} labels of "
                              f"{task.metric} but no selection they were drawn by: label "
                              "into a new file (the corrected estimate needs to know how the "
                              "items were chosen)")
        if current is not None and (mode is None or mode == current.mode):
            sel = current
            notes.append(f"resumed: {sel.signature}")
        else:
            want = mode or "uniform"
            if labelled and (want == "active" or (current is not None
                                                  and current.mode == "active")):
                raise ConfigError("--select", f"{p.name} holds labels drawn by a "
                                  f"{current.mode if current else 'other'} selection; an "
                                  "active selection cannot share a file with other labels: "
                                  "label into a new file")
            sel = make(want, {k: v for k, v in labelled.items() if k in judge_values})
            journal.append({"kind": "selection", "metric": task.metric,
                            **({"system": task.system} if task.system else {}),
                            "run_id": task.run_id, "scale": task.scale,
                            "selection": sel.to_dict()})
            notes.append(f"new selection: {sel.signature}"
                         + (f" (keeps the {len(labelled)} items labelled so far)"
                            if labelled else ""))
        return LabelSession(journal, task, items, sel, judge_values=judge_values,
                            target_width=target_width, notes=notes,
                            default_rater=default_rater)
    except BaseException:
        journal.close()
        raise


@dataclass
class RunTask:
    """What a stored run gives a labelling session: the task, the judge's values and
    details of every scored sample (never shown to labellers) and the samples as shown."""

    task: Task
    values: dict[str, float]
    details: dict[str, dict[str, Any]]
    items: dict[str, LabelItem]
    signature: str


def _base(key: str) -> str:
    from ragmeter.metrics.registry import split_metric_key

    return split_metric_key(key)[0].replace("-", "_")


def run_task(run: Any, metric: str, system: str | None = None) -> RunTask:
    """The judged metric ``metric`` of a stored run (matched exactly, else by its base name,
    as ``judge card`` matches labels) for labelling; ``system`` picks one result when several
    have it (a :class:`UsageError` listing them otherwise)."""
    from ragmeter.judge_trust.runs import TIER
    from ragmeter.results.frames import sample_text, target_of

    found = []
    for rec in run.tiers.values():
        if rec.tier == TIER:
            continue
        for res in rec.results:
            for key, mr in res.results.items():
                if key == metric or _base(key) == metric:
                    found.append((res.name, key, mr))
    if system is not None:
        names = sorted({f[0] for f in found})
        found = [f for f in found if f[0] == system]
        if not found:
            raise UsageError("--system", f"no result named {system!r} has {metric}", names)
    if not found:
        raise UsageError("--metric", f"run {run.id} has no judged metric {metric!r}",
                         sorted({k for r in run.results().values() for k in r.results}))
    if len({f[0] for f in found}) > 1:
        raise UsageError("--system", f"{metric} was judged for several systems of run "
                                     f"{run.id}: name the one to label",
                         sorted({f[0] for f in found}))
    name, key, mr = found[0]
    if not mr.signature.get("judge") and not mr.signature.get("judge_model"):
        raise UsageError("--metric", f"{key} is not scored by a judge: nothing to label")
    values: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    for s in mr.records():
        if s.value is not None and s.value == s.value:
            values[s.sample_id] = float(s.value)
            details[s.sample_id] = dict(s.details or {})
    items: dict[str, LabelItem] = {}
    target = target_of(name)
    for sid in values:
        text = sample_text(run.samples.get(sid) or {"id": sid}, target)
        items[sid] = LabelItem(sid, text.get("question"), text.get("answer"),
                               tuple(str(c) for c in text.get("contexts") or ()),
                               text.get("reference"))
    task = Task(run.id, metric, label_scale(metric), system or "", shown_fields(metric))
    return RunTask(task, values, details, items, str(mr.signature))


__all__ = ["DEFAULT_N", "FIELDS", "GRADES", "LabelItem", "LabelSession", "RunTask", "Task",
           "check_rater", "choose", "label_scale", "open_session", "plan_labels", "run_task",
           "shown_fields"]
