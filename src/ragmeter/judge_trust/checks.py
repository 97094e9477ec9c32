"""What ``judge card`` checks before it builds a card: its options, and whether the human
labels name samples of the run at all.

A labels file whose sample ids match none of the run's judged samples would give an empty
card; one that matches only part of them is usually the wrong file or another dataset's ids.
Both are said, naming the file and example ids on each side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmeter.errors import DataError, RecordProblem, UsageError
from ragmeter.judge_trust.labels import LabelSet


def check_card_options(threshold: float, target_width: float | None, seed: int) -> None:
    """``--threshold`` strictly between 0 and 1, ``--target-width`` in (0, 1], ``--seed`` ≥ 0."""
    if not (math.isfinite(threshold) and 0.0 < threshold < 1.0):
        raise UsageError("--threshold", f"must be a number strictly between 0 and 1 (the "
                                        f"good/bad cut on the 0-1 scale), got {threshold}")
    if target_width is not None and not (math.isfinite(target_width)
                                         and 0.0 < target_width <= 1.0):
        raise UsageError("--target-width", "must be a 95% CI width greater than 0 and at most "
                                           f"1 (metrics are on 0-1), got {target_width}")
    if seed < 0 or seed >= 2 ** 32:
        raise UsageError("--seed", f"must be between 0 and {2 ** 32 - 1}, got {seed}")


def check_compare_systems(spec: str, run_systems: Sequence[str],
                          label_systems: Sequence[str]) -> tuple[str, str]:
    """``A,B`` → (A, B), each a system of the run that the labels also name."""
    a, _, b = (x.strip() for x in spec.partition(","))
    if not a or not b or "," in b:
        raise UsageError("--compare-systems", f"expected two system names A,B, got {spec!r}")
    for name in (a, b):
        if name not in run_systems:
            raise UsageError("--compare-systems", f"{name!r} is not a system of the run",
                             sorted(run_systems))
        if name not in label_systems:
            raise UsageError("--compare-systems", f"no label carries system {name!r} "
                             "(the labels file needs a 'system' column for comparisons)",
                             sorted(s for s in label_systems if s))
    return a, b


@dataclass(frozen=True)
class Coverage:
    """How many labels name a sample the run judged, per metric."""

    matched: dict[str, int]
    unmatched: dict[str, list[str]]

    @property
    def n_matched(self) -> int:
        return sum(self.matched.values())

    def warning(self) -> str | None:
        """A line for labels that name samples outside the run (None when all match)."""
        lost = {m: ids for m, ids in self.unmatched.items() if ids}
        if not lost:
            return None
        n = sum(len(v) for v in lost.values())
        total = n + self.n_matched
        some = ", ".join(repr(s) for ids in lost.values() for s in ids[:3])
        return (f"{n} of {total} labels name samples the run did not judge and are not used "
                f"(e.g. {some}); are the labels from this dataset?")


def label_coverage(values: Mapping[str, Mapping[str, float | None]], labels: LabelSet,
                   system: str | None = None) -> Coverage:
    """Per labelled metric found in the run: labels whose sample id the run judged, and the
    ids of those it did not."""
    matched: dict[str, int] = {}
    unmatched: dict[str, list[str]] = {}
    for metric, judged in values.items():
        ids = list(labels.values(metric, system))
        matched[metric] = sum(1 for s in ids if s in judged)
        unmatched[metric] = [s for s in ids if s not in judged]
    return Coverage(matched, unmatched)


def require_matches(cov: Coverage, values: Mapping[str, Mapping[str, float | None]],
                    labels: LabelSet, run_id: str) -> None:
    """Exit 2 when no label names a judged sample of the run (an empty card is no card)."""
    if cov.n_matched:
        return
    theirs = sorted({s for ids in cov.unmatched.values() for s in ids})[:3]
    ours = sorted({s for v in values.values() for s in v})[:3]
    raise DataError(RecordProblem(labels.source or "labels", None, "sample_id",
                                  f"no label's sample_id matches a sample judged in run "
                                  f"{run_id} (labels: {', '.join(map(repr, theirs))}; run: "
                                  f"{', '.join(map(repr, ours))})"),
                    hint="label samples of this run's dataset, by the ids the run stored")


__all__ = ["Coverage", "check_card_options", "check_compare_systems", "label_coverage",
           "require_matches"]
