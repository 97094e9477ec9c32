"""Bias-corrected (prediction-powered) estimates of judged metrics per slice.

Per slice (question type, section, language, … — :mod:`ragmeter.results.slices`) and
labelled metric: the judge's mean over the slice's scored samples beside the
prediction-powered estimate from the human labels that fall in the slice
(:func:`ragmeter.judge_trust.ppi.ppi_by_slice`), with its 95 % CI, ``n`` and the labels'
``n``. A cell with fewer than ``min_n`` judge values or fewer than ``min_labels`` usable
labels is *withheld*: its counts are shown, its means are not. The table travels on the judge
card (``meta["ppi_by_slice"]``), so the report and the viewer show it with the card.

The slices come from the run itself (the keys a run made with ``--by`` keeps with its
results) or from the samples file (any sample field or metadata key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.judge_trust.labels import LabelSet
from ragmeter.judge_trust.ppi import ppi_by_slice
from ragmeter.results.slices import DEFAULT_MIN_N, slice_keys, slice_label, stored_slices

META_KEY = "ppi_by_slice"


@dataclass(frozen=True)
class SlicePPI:
    """One slice × labelled metric: judge mean vs prediction-powered estimate."""

    metric: str
    slice: str
    n: int                       # scored judge values in the slice
    n_labelled: int              # usable human labels in the slice
    withheld: bool
    judge_mean: float | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    correction: float | None = None
    clipped_to: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_slice_keys(run: Any, by: Sequence[str], *, system: str | None = None,
                   samples: Sequence[Sample] | None = None) -> dict[str, tuple[str, ...]]:
    """Sample id → slice over the ``by`` fields: read from ``samples`` when given, else from
    the slices a run made with ``--by`` keeps with its results (those fields, or more)."""
    if samples is not None:
        return slice_keys(samples, by)
    keys: dict[str, tuple[str, ...]] = {}
    kept: set[str] = set()
    for rec in run.tiers.values():
        for res in rec.results:
            stored = stored_slices(res) if system is None or res.name == system else None
            if stored is None:
                continue
            spec, k = stored
            kept.update(spec.by)
            if all(b in spec.by for b in by):
                at = [spec.by.index(b) for b in by]
                for sid, key in k.items():
                    keys.setdefault(sid, tuple(key[i] for i in at))
    if not keys:
        have = f"its results keep slices by {', '.join(sorted(kept))}" if kept else \
            "it was not run with --by"
        raise ConfigError("by", f"run {getattr(run, 'id', '')} has no slices by "
                          f"{', '.join(by)} ({have}); give the samples file to read the "
                          "fields from")
    return keys


def slice_ppi_table(values: Mapping[str, Mapping[str, float | None]], labels: LabelSet,
                    keys: Mapping[str, tuple[str, ...]], by: Sequence[str], *,
                    system: str | None = None, min_n: int = DEFAULT_MIN_N,
                    min_labels: int = 2, level: float = 0.95) -> dict[str, Any]:
    """Per slice and labelled metric: a :class:`SlicePPI` row (as a dict), with the table's
    settings — what a judge card keeps under ``meta["ppi_by_slice"]``."""
    rows: list[dict[str, Any]] = []
    for metric in labels.metrics:
        if metric not in values:
            continue
        jv = {s: v for s, v in values[metric].items() if v is not None and v == v}
        lab = labels.values(metric, system)
        est = ppi_by_slice(metric, jv, labels, keys, system=system, min_n=min_n,
                           min_labels=min_labels, level=level)
        for key, p in est.items():
            ids = [s for s in jv if keys.get(s) == key]
            n_lab = sum(1 for s in ids if s in lab)
            label = slice_label(by, key)
            if p is None:
                rows.append(SlicePPI(metric, label, len(ids), n_lab, True).to_dict())
                continue
            e = p.estimate
            rows.append(SlicePPI(metric, label, len(ids), n_lab, False, e.judge_mean,
                                 e.estimate, e.ci_low, e.ci_high, e.correction,
                                 e.clipped_to).to_dict())
    return {"by": list(by), "min_n": min_n, "min_labels": min_labels, "level": level,
            "system": system, "rows": rows}


__all__ = ["META_KEY", "SlicePPI", "run_slice_keys", "slice_ppi_table"]
