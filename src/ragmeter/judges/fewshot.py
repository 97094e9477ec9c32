"""Graded examples in the judge's prompt: a wrapper judge applied by
:func:`ragmeter.judges.make_judge` when the judge config names an examples file
(``examples: shots.jsonl``).

An examples file is what ``ragmeter judge examples`` writes from a labels file: items people
graded for one judged metric (question, contexts, answer, reference, the human grade). Every
request of that metric — claim extraction aside, which grades nothing — gets them at the end
of its first (system) message, each fenced like any untrusted text, so the judge sees how
people grade before it grades. The file's hash goes into the signature of each judged metric
(``shots:<hash>``): ``judge card`` then requires the labels file to record those items as
examples and leaves them out of agreement and of the bias-corrected estimate (a judge shown
an item's grade is no longer an independent prediction of it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.prompts import fence, fence_many, resolve_language
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper

_HEAD = {
    "en": ("Examples graded by people for {metric} (other items than the one you judge; "
           "grade the item below the same way):"),
    "ru": ("Примеры, оценённые людьми по метрике {metric} (это другие примеры, не тот, что "
           "вы оцениваете; оцените его так же):"),
}
_GRADE = {"en": "Human grade: {label}", "ru": "Оценка человека: {label}"}
#: the request kinds that grade nothing (claim extraction)
_NOT_GRADED = frozenset({"claims"})


@dataclass(frozen=True)
class Example:
    """One item a person graded, shown to the judge."""

    sample_id: str
    question: str
    contexts: tuple[str, ...]
    answer: str
    reference: str
    label: float

    def to_dict(self) -> dict[str, Any]:
        return {"sample_id": self.sample_id, "question": self.question,
                "contexts": list(self.contexts), "answer": self.answer,
                "reference": self.reference, "label": self.label}


@dataclass(frozen=True)
class Shots:
    """The examples of one metric and the hash of what the judge is shown."""

    metric: str
    examples: tuple[Example, ...]

    @property
    def digest(self) -> str:
        text = json.dumps([self.metric, [e.to_dict() for e in self.examples]],
                          ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def signature(self) -> dict[str, str]:
        return {"shots": f"{len(self.examples)}@{self.digest}"}

    def block(self, lang: str) -> str:
        parts = [_HEAD[lang].format(metric=self.metric)]
        for k, e in enumerate(self.examples, 1):
            body = [fence(e.question, "question")]
            if e.contexts:
                body.append(fence_many(e.contexts, item_tag="context"))
            body.append(fence(e.answer, "answer"))
            if e.reference:
                body.append(fence(e.reference, "reference"))
            label = int(e.label) if float(e.label).is_integer() else e.label
            body.append(_GRADE[lang].format(label=label))
            parts.append(f"<example_{k}>\n" + "\n".join(body) + f"\n</example_{k}>")
        return "\n\n".join(parts)


def write_shots(path: str | Path, shots: Shots) -> None:
    """The examples file: a header line (``kind: shots``) and one line per example."""
    lines = [json.dumps({"kind": "shots", "metric": shots.metric, "shots": shots.digest},
                        ensure_ascii=False)]
    lines += [json.dumps(e.to_dict(), ensure_ascii=False) for e in shots.examples]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_shots(path: str | Path) -> Shots:
    """Read an examples file written by :func:`write_shots` (problems with file and line)."""
    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(RecordProblem(src, None, None, f"cannot read it: {exc}")) from None
    metric = None
    examples: list[Example] = []
    problems: list[RecordProblem] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            problems.append(RecordProblem(src, no, None, f"not JSON: {exc}"))
            continue
        if not isinstance(rec, dict):
            problems.append(RecordProblem(src, no, None, "not a JSON object"))
        elif rec.get("kind") == "shots":
            metric = str(rec.get("metric") or "") or None
        else:
            try:
                examples.append(Example(
                    str(rec["sample_id"]), str(rec.get("question") or ""),
                    tuple(str(c) for c in rec.get("contexts") or ()),
                    str(rec.get("answer") or ""), str(rec.get("reference") or ""),
                    float(rec["label"])))
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(RecordProblem(src, no, "label" if "label" in str(exc) else
                                              "sample_id", f"not an example ({exc})"))
    if metric is None:
        problems.append(RecordProblem(src, 1, "kind", "the first line names the metric: "
                                      '{"kind": "shots", "metric": ...}'))
    if not examples and not problems:
        problems.append(RecordProblem(src, None, None, "no examples in the file"))
    if problems:
        raise DataError(problems, hint="write it with `ragmeter judge examples`")
    assert metric is not None
    return Shots(metric, tuple(examples))


class ShotsJudge:
    """Wraps a judge; requests of the examples' metric carry them in their first message."""

    def __init__(self, inner: Any, shots: Shots) -> None:
        self.inner = inner
        self.shots_meta = shots
        self.chains = bool(getattr(inner, "chains", False))
        self._blocks: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _applies(self, req: JudgeRequest) -> bool:
        metrics = {m.strip().split("(")[0] for m in req.metric.split(",")}
        return self.shots_meta.metric in metrics and req.kind not in _NOT_GRADED

    def _with(self, req: JudgeRequest) -> JudgeRequest:
        then = req.then
        if then is not None:
            def follow(reply: JudgeReply, _then: Any = then) -> Sequence[JudgeRequest]:
                return [self._with(r) for r in _then(reply)]
            then = follow
        if not self._applies(req) or not req.messages:
            return replace(req, then=then)
        lang = resolve_language("auto", [str(m.get("content") or "") for m in req.messages])
        if lang not in self._blocks:
            self._blocks[lang] = self.shots_meta.block(lang)
        block = self._blocks[lang]
        messages = list(req.messages)
        first = dict(messages[0])
        first["content"] = f"{first.get('content') or ''}\n\n{block}"
        messages[0] = first
        return replace(req, messages=tuple(messages), then=then)

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return list(self.inner.ask_many([self._with(r) for r in requests]))

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return list(await self.inner.aask_many([self._with(r) for r in requests]))


def with_shots(judge: Any, config: Any = None) -> Any:
    """``judge`` wrapped when its config names an examples file (``examples``)."""
    path = getattr(config, "examples", None)
    if not path or isinstance(judge, ShotsJudge):
        return judge
    return ShotsJudge(judge, load_shots(path))


# make_judge applies it to every judge built from a config: outside pseudonymisation (order
# 10), so the examples' texts are pseudonymised too, and inside the budget (order 20)
WRAPPERS.register("shots", JudgeWrapper(order=15, wrap=with_shots))


__all__ = ["Example", "Shots", "ShotsJudge", "load_shots", "with_shots", "write_shots"]
