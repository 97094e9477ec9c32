"""Human labels for judged metrics: the file format and its loader.

A labels file holds one human verdict per line (JSONL) or row (CSV/TSV, header required):

==============  ==========================================================================
field           meaning
==============  ==========================================================================
``sample_id``   the sample's id in the evaluated dataset (alias ``id``)
``metric``      the judged metric it grades: ``faithfulness``, ``answer_relevance``, ...
``label``       ``yes``/``no`` (also ``да``/``нет``, ``true``/``false``) → 1/0; an integer
                grade ``0``/``1``/``2``; or a number in ``[0, 1]``
``scale``       optional: ``binary``, ``ordinal`` (0/1/2) or ``continuous`` (0–1). When absent
                the judged metric's own declaration decides (``label_scale`` of its row in
                :mod:`ragmeter.metrics.judged`: faithfulness yes/no, answer relevance 0/1/2,
                ...); only for a metric without a row is it inferred (yes/no or only 0/1 →
                binary, integers up to 2 → ordinal, anything else → continuous)
``system``      optional: which system's answer was labelled (for comparisons of two systems)
``rater``       optional: who labelled it; several raters of one item are averaged
``revised``     optional: ``true`` when this line replaces the same rater's earlier label of
                the item (the later one counts); a second label without it is an error
==============  ==========================================================================

Labels are put on the judged metric's 0–1 scale for comparison: binary 0/1, ordinal
0/½/1 (grade / 2), continuous as is. Every problem is reported with file, line and field.

A file written by ``ragmeter label`` also holds lines with a ``kind``: ``selection``
(which items were chosen for labelling and each one's inclusion probability, so the
bias-corrected estimate can weight the labels: :class:`~ragmeter.stats.selection.Selection`)
``skip`` (an item a labeller passed over) and ``examples`` (labelled items shown to the judge
as graded examples, ``ragmeter judge examples``: ``sample_ids`` and the ``shots`` hash of the
examples file). They are read into :attr:`LabelSet.meta`, :meth:`LabelSet.selection` and
:meth:`LabelSet.examples`; they are not labels. The labels of items used as examples are
kept (agreement between labellers, a labelling session) but left out of :meth:`LabelSet.values`
— what agreement with the judge and the bias-corrected estimate read.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem

SCALES: tuple[str, ...] = ("binary", "ordinal", "continuous")  # = metrics.judged.LABEL_SCALES
_YES = {"yes", "да", "true", "y", "д"}
_NO = {"no", "нет", "false", "n", "н"}
_ALIASES = {"id": "sample_id", "sample": "sample_id", "value": "label", "human": "label"}
_KNOWN = {"sample_id", "metric", "label", "scale", "system", "rater", "note", "revised"}
#: lines of a labelling session that are not labels (their ``kind``)
KINDS = ("selection", "skip", "examples")


@dataclass(frozen=True)
class Label:
    """One human verdict, as read (``raw``) and on the metric's 0–1 scale (``value``)."""

    sample_id: str
    metric: str
    raw: float
    system: str = ""
    rater: str = ""
    source: str = ""
    line: int | None = None
    revised: bool = False


@dataclass
class LabelSet:
    """Labels of one file, grouped by metric, with the scale of each metric and a hash."""

    labels: list[Label]
    scales: dict[str, str]
    source: str = ""
    sha256: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> list[str]:
        return sorted(self.scales)

    def values(self, metric: str, system: str | None = None, *,
               with_examples: bool = False) -> dict[str, float]:
        """``sample_id → label on 0–1`` for one metric (raters averaged). With ``system``,
        the labels of that system; a file whose labels of ``metric`` name no system at all
        grades whichever system is asked for. Items used as the judge's examples are left
        out unless ``with_examples``."""
        acc: dict[str, list[float]] = defaultdict(list)
        if system is not None and not any(lab.system for lab in self.labels
                                          if lab.metric == metric):
            system = None
        skip = set() if with_examples else self.examples(metric, system)
        for lab in self.labels:
            if lab.metric == metric and (system is None or lab.system == system) \
                    and lab.sample_id not in skip:
                acc[lab.sample_id].append(to_unit(lab.raw, self.scales[metric]))
        return {sid: float(sum(v) / len(v)) for sid, v in acc.items()}

    def examples(self, metric: str, system: str | None = None) -> set[str]:
        """The items of ``metric`` shown to the judge as graded examples (any system's when
        ``system`` is ``None``)."""
        out: set[str] = set()
        for (m, sys_), ids in self.meta.get("examples", {}).items():
            if m == metric and (system is None or sys_ in ("", system)):
                out |= ids
        return out

    def shots(self) -> dict[str, tuple[str, str]]:
        """The examples files recorded: their ``shots`` hash → (metric, system)."""
        return dict(self.meta.get("shots", {}))

    def systems(self) -> list[str]:
        return sorted({lab.system for lab in self.labels})

    def by_rater(self, metric: str, system: str | None = None) -> dict[str, dict[str, float]]:
        """``rater → sample_id → label on 0–1`` for one metric (``""``: no rater named)."""
        if system is not None and not any(lab.system for lab in self.labels
                                          if lab.metric == metric):
            system = None
        out: dict[str, dict[str, float]] = defaultdict(dict)
        for lab in self.labels:
            if lab.metric == metric and (system is None or lab.system == system):
                out[lab.rater][lab.sample_id] = to_unit(lab.raw, self.scales[metric])
        return dict(out)

    def selection(self, metric: str, system: str | None = None) -> Any:
        """The selection the labels of ``metric`` were drawn by (the last one the file
        records for it, a :class:`~ragmeter.stats.selection.Selection`), or ``None``: a
        file without one is taken as a simple random sample of the judged items."""
        chosen = self.meta.get("selections", {})
        return chosen.get((metric, system or "")) or (
            chosen.get((metric, "")) if system else None)

    def __len__(self) -> int:
        return len(self.labels)


def to_unit(raw: float, scale: str) -> float:
    """A raw label on its scale → 0–1 (ordinal grades 0/1/2 are halved)."""
    return raw / 2.0 if scale == "ordinal" else raw


def parse_label(value: Any) -> tuple[float, str | None] | str:
    """``(number, implied scale or None)`` or an error message."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0), "binary"
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        s = value.strip().lower()
        if s in _YES:
            return 1.0, "binary"
        if s in _NO:
            return 0.0, "binary"
        try:
            x = float(s.replace(",", "."))
        except ValueError:
            return f"expected yes/no, 0/1/2 or a number in [0, 1], got {value!r}"
    else:
        return f"expected yes/no, 0/1/2 or a number in [0, 1], got {type(value).__name__}"
    if not math.isfinite(x):
        return f"must be a finite number, got {value!r}"
    if x < 0 or x > 2 or (x > 1 and x != 2):
        return f"must be yes/no, a grade 0/1/2 or a number in [0, 1], got {value!r}"
    return x, None


_FITS = {"binary": ((0.0, 1.0), "yes/no or 0/1"), "ordinal": ((0.0, 1.0, 2.0), "a grade 0, 1 or 2"),
         "continuous": (None, "a number in [0, 1]")}


def _fits(raw: float, scale: str) -> bool:
    allowed = _FITS[scale][0]
    return raw <= 1.0 if allowed is None else raw in allowed


def _infer(raws: list[float], implied: set[str]) -> str:
    if "binary" in implied or all(r in (0.0, 1.0) for r in raws):
        return "binary"
    if all(r in (0.0, 1.0, 2.0) for r in raws):
        return "ordinal"
    return "continuous"


def label_scale_of(metric: str) -> str | None:
    """The scale the judged metric ``metric`` declares for its labels (``None``: no such row)."""
    from ragmeter.metrics.judged import label_scale_of as row_scale

    return row_scale(metric)


Row = tuple[Label, "str | None", "str | None"]


def _scale_problem(scale: Any, raw: float, label: Any) -> tuple[str, str] | None:
    """(field, message) when ``scale`` is unknown or ``raw`` does not fit it."""
    if scale is not None and scale not in SCALES:
        return "scale", f"unknown scale {scale!r} (allowed: {', '.join(SCALES)})"
    if scale == "binary" and raw not in (0.0, 1.0):
        return "label", f"scale binary needs yes/no or 0/1, got {label!r}"
    if scale == "ordinal" and raw not in (0.0, 1.0, 2.0):
        return "label", f"scale ordinal needs a grade 0, 1 or 2, got {label!r}"
    if scale == "continuous" and raw > 1.0:
        return "label", f"scale continuous needs a number in [0, 1], got {label!r}"
    return None


def _read_label(rec: Any, line: int | None, source: str
                ) -> Row | RecordProblem | list[RecordProblem]:
    """One labels record as a row, or what is wrong with it."""
    if not isinstance(rec, Mapping):
        return RecordProblem(source, line, None, "expected an object with sample_id, metric "
                             "and label")
    rec = {_ALIASES.get(str(k), str(k)): v for k, v in rec.items()}
    unknown = sorted(set(rec) - _KNOWN)
    if unknown:
        return RecordProblem(source, line, unknown[0], "unknown field (known: "
                             + ", ".join(sorted(_KNOWN)) + ")")
    missing = [RecordProblem(source, line, key, "is required")
               for key in ("sample_id", "metric", "label")
               if rec.get(key) is None or (isinstance(rec[key], str) and not rec[key].strip())]
    if missing:
        return missing
    parsed = parse_label(rec["label"])
    if isinstance(parsed, str):
        return RecordProblem(source, line, "label", parsed)
    raw, implied = parsed
    scale = rec.get("scale")
    wrong = _scale_problem(scale, raw, rec["label"])
    if wrong is not None:
        return RecordProblem(source, line, wrong[0], wrong[1])
    revised = rec.get("revised", False)
    if not isinstance(revised, bool):
        return RecordProblem(source, line, "revised", f"must be true or false, got {revised!r}")
    lab = Label(str(rec["sample_id"]).strip(), str(rec["metric"]).strip(), raw,
                str(rec.get("system") or ""), str(rec.get("rater") or ""), source, line,
                revised)
    return lab, scale, implied


def _metric_scales(rows: list[Row], source: str,
                   problems: list[RecordProblem]) -> dict[str, str]:
    """Each metric's label scale: declared, its judged row's, or inferred from the values."""
    by_metric: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_metric[row[0].metric].append(row)
    scales: dict[str, str] = {}
    for metric, items in by_metric.items():
        declared = {s for _, s, _ in items if s}
        if len(declared) > 1:
            first = next(lab for lab, s, _ in items if s and s != sorted(declared)[0])
            problems.append(RecordProblem(source, first.line, "scale", f"metric {metric!r} "
                                          f"is labelled on several scales: {sorted(declared)}"))
            continue
        row_scale = label_scale_of(metric)
        if declared:
            scales[metric] = declared.pop()
        elif row_scale is not None:
            scales[metric] = row_scale
            misfit = [lab for lab, _, _ in items if not _fits(lab.raw, row_scale)]
            for lab in misfit:
                problems.append(RecordProblem(
                    source, lab.line, "label", f"metric {metric!r} is labelled on the "
                    f"{row_scale} scale ({_FITS[row_scale][1]}), got {lab.raw:g}; add a "
                    "\"scale\" field to label it on another scale"))
            if misfit:
                continue
        else:
            scales[metric] = _infer([lab.raw for lab, _, _ in items],
                                    {i for _, _, i in items if i})
        if scales[metric] == "binary":
            problems.extend(RecordProblem(source, lab.line, "label", f"metric {metric!r} mixes "
                                          "yes/no with other values")
                            for lab, _, _ in items if lab.raw not in (0.0, 1.0))
    return scales


def _read_kind(rec: Mapping[str, Any], line: int | None, source: str,
               meta: dict[str, Any]) -> RecordProblem | None:
    """A ``selection`` or ``skip`` line into ``meta``, or what is wrong with it."""
    kind = rec.get("kind")
    if kind not in KINDS:
        return RecordProblem(source, line, "kind", f"unknown kind {kind!r} (allowed: "
                             f"{', '.join(KINDS)}; a label line has no kind)")
    metric = rec.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        return RecordProblem(source, line, "metric", "is required")
    system = str(rec.get("system") or "")
    if kind == "skip":
        if rec.get("sample_id") is None:
            return RecordProblem(source, line, "sample_id", "is required")
        meta.setdefault("skips", {})[(system, str(rec["sample_id"]), metric.strip(),
                                      str(rec.get("rater") or ""))] = line
        return None
    if kind == "examples":
        ids, shots = rec.get("sample_ids"), rec.get("shots")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            return RecordProblem(source, line, "sample_ids", "a list of the sample ids used "
                                 "as examples is required")
        if not isinstance(shots, str) or not shots:
            return RecordProblem(source, line, "shots", "the examples file's hash is required")
        key = (metric.strip(), system)
        meta.setdefault("examples", {}).setdefault(key, set()).update(ids)
        meta.setdefault("shots", {})[shots] = key
        return None
    from ragmeter.stats.selection import Selection

    try:
        sel = Selection.from_dict(rec["selection"])
        if len(sel.pi) != len(sel.ids) or any(not 0.0 < p <= 1.0 for p in sel.pi) \
                or any(not 0 <= i < len(sel.ids) for i in sel.order):
            raise ValueError("inclusion probabilities or order do not fit the items")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return RecordProblem(source, line, "selection", f"not a selection of items to label "
                             f"({type(exc).__name__}: {exc})")
    meta.setdefault("selections", {})[(metric.strip(), system)] = sel
    meta.setdefault("selection_lines", {})[(metric.strip(), system)] = line
    return None


def labels_from_records(records: Iterable[tuple[int | None, Any]], source: str) -> LabelSet:
    """Validate ``(line, mapping)`` records into a :class:`LabelSet` (all problems at once).

    A rater's later label of the same item replaces the earlier one when it says
    ``"revised": true``; lines with a ``kind`` (a labelling session's selection and skips)
    go to :attr:`LabelSet.meta`."""
    problems: list[RecordProblem] = []
    rows: list[Row] = []
    meta: dict[str, Any] = {}
    seen: dict[tuple[str, str, str, str], int | None] = {}
    where: dict[tuple[str, str, str, str], int] = {}
    for line, rec in records:
        if isinstance(rec, Mapping) and "kind" in rec:
            bad = _read_kind(rec, line, source, meta)
            if bad is not None:
                problems.append(bad)
            continue
        got = _read_label(rec, line, source)
        if isinstance(got, list):
            problems.extend(got)
            continue
        if isinstance(got, RecordProblem):
            problems.append(got)
            continue
        lab = got[0]
        ukey = (lab.system, lab.sample_id, lab.metric, lab.rater)
        if ukey in seen and lab.revised:
            rows[where[ukey]] = got
            continue
        if ukey in seen:
            problems.append(RecordProblem(source, line, "sample_id", f"duplicate label for "
                                          f"sample {lab.sample_id!r}, metric {lab.metric!r}"
                                          + (f", rater {lab.rater!r}" if lab.rater else "")
                                          + f" (first on line {seen[ukey]})"))
            continue
        seen[ukey] = line
        where[ukey] = len(rows)
        rows.append(got)
    scales = _metric_scales(rows, source, problems)
    if problems:
        raise DataError(problems, hint="a labels line looks like {\"sample_id\": \"q1\", "
                        "\"metric\": \"faithfulness\", \"label\": \"yes\"}")
    labels = [lab for lab, _, _ in rows]
    digest = hashlib.sha256()
    for lab in sorted(labels, key=lambda x: (x.system, x.metric, x.sample_id, x.rater)):
        digest.update(f"{lab.system}\t{lab.metric}\t{lab.sample_id}\t{lab.rater}\t"
                      f"{lab.raw!r}\n".encode())
    for key in sorted(meta.get("selections", {})):
        digest.update(f"selection\t{key[0]}\t{key[1]}\t"
                      f"{meta['selections'][key].signature}\n".encode())
    for key in sorted(meta.get("examples", {})):
        digest.update(f"examples\t{key[0]}\t{key[1]}\t"
                      f"{','.join(sorted(meta['examples'][key]))}\n".encode())
    return LabelSet(labels, scales, source, digest.hexdigest(), meta)


def load_labels(path: str | Path) -> LabelSet:
    """Read a labels file (``.jsonl``, ``.json`` list, ``.csv`` or ``.tsv``)."""
    from ragmeter.data.loaders import read_records

    records, problems = read_records(path)
    if problems:
        raise DataError(problems)
    if not records:
        raise DataError(RecordProblem(str(path), None, None, "no labels in the file"))
    return labels_from_records(records, str(path))


__all__ = ["KINDS", "SCALES", "Label", "LabelSet", "labels_from_records", "load_labels", "parse_label",
           "to_unit"]
