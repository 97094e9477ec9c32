"""Labelled items harvested as graded examples for the judge's prompt, held out of the
judge's card.

``ragmeter judge examples`` draws ``k`` of a metric's labelled items **at random** (seeded,
whatever their grade: a choice by grade would leave a labelled set whose correction is no
longer a random sample), writes them to an examples file the judge config names
(``examples: shots.jsonl``, :mod:`ragmeter.judges.fewshot`), and records them in the labels
file (an ``examples`` line with their ids and the file's hash). From then on
:meth:`~ragmeter.judge_trust.labels.LabelSet.values` leaves them out: agreement with the judge
and the bias-corrected estimate use only the other labels — a random thinning of the labelled
sample, so its inclusion probabilities still hold — and ``judge card`` drops the examples
from the judged items too. A run whose judge prompt carried examples (``shots`` in its
signature) is refused by ``judge card`` unless the labels file records those very examples.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import UsageError
from ragmeter.judge_trust.labels import LabelSet
from ragmeter.judges.fewshot import Example, Shots


def harvest(labels: LabelSet, metric: str, items: Mapping[str, Any], k: int, seed: int,
            system: str | None = None) -> Shots:
    """``k`` labelled items of ``metric`` drawn at random (``seed``) among those not yet
    used as examples and present in ``items`` (sample id → an item with ``question``,
    ``contexts``, ``answer``, ``reference``), with their human labels (raters averaged)."""
    if k < 1:
        raise UsageError("-k", f"must be at least 1, got {k}")
    if metric not in labels.scales:
        raise UsageError("--metric", f"the labels file has no labels of {metric!r}",
                         labels.metrics)
    have = labels.values(metric, system)
    pool = sorted(s for s in have if s in items)
    if len(pool) <= k:
        raise UsageError("-k", f"{len(pool)} labelled item(s) of {metric} are left: take "
                               f"fewer than that as examples (the rest grade the judge)")
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(pool), size=k, replace=False).tolist())
    scale = labels.scales[metric]
    out = []
    for i in picked:
        sid = pool[i]
        it = items[sid]
        value = have[sid]
        shown = value * 2 if scale == "ordinal" else value
        out.append(Example(sid, str(getattr(it, "question", "") or ""),
                           tuple(str(c) for c in getattr(it, "contexts", ()) or ()),
                           str(getattr(it, "answer", "") or ""),
                           str(getattr(it, "reference", "") or ""), float(shown)))
    return Shots(metric.split("(")[0], tuple(out))


def record(labels_path: str | Path, shots: Shots, system: str | None = None) -> None:
    """Append the ``examples`` line to the labels file (durably)."""
    from ragmeter.journal import Journal

    journal = Journal(Path(labels_path))
    try:
        journal.append({"kind": "examples", "metric": shots.metric, "system": system or "",
                        "sample_ids": [e.sample_id for e in shots.examples],
                        "shots": shots.digest})
    finally:
        journal.close()


def check_shots(signatures: Mapping[str, str], labels: LabelSet) -> dict[str, str]:
    """Metric → shots hash of each judged result whose prompt carried examples; a
    :class:`UsageError` when the labels file does not record those examples (their labels
    would enter the card)."""
    from ragmeter.results.records import Signature

    out: dict[str, str] = {}
    recorded = labels.shots()
    for metric, sig in signatures.items():
        shots = Signature.parse(sig).get("shots")
        if not shots:
            continue
        digest = str(shots).partition("@")[2]
        if digest not in recorded:
            raise UsageError("--labels", f"the judge's prompt for {metric} carried graded "
                                         f"examples (shots {shots}) that {labels.source} does "
                                         "not record: give the labels file the examples were "
                                         "harvested from (`ragmeter judge examples`)")
        out[metric] = digest
    return out


__all__ = ["check_shots", "harvest", "record"]
