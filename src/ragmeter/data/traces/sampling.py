"""Choosing which imported requests to evaluate: duplicates out, then a stratified sample.

Both steps are recorded (:class:`Selection`) so the output's signature says how the set was
drawn: the dedup key, how many were dropped, the sample size, the field, the seed, the count per
stratum and a hash of the chosen ids.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.errors import UsageError

MISSING = "(missing)"


def normalise_question(text: str | None) -> str:
    """The dedup key of a question: NFKC, case-folded, ``ё`` → ``е``, punctuation and
    repeated spaces dropped."""
    t = unicodedata.normalize("NFKC", text or "").casefold().replace("ё", "е")
    t = re.sub(r"[^\w\s]", " ", t)
    return " ".join(t.split())


def size_for_width(width: float, population: int, *, level: float = 0.95,
                   spread: float = 0.5) -> int:
    """Requests needed so a proportion metric's CI (normal approximation, worst case ``spread``
    = 0.5) is at most ``width`` wide, with the finite-population correction for drawing from
    ``population`` requests."""
    from statistics import NormalDist

    if not 0 < width < 1:
        raise UsageError("--ci-width", f"must be between 0 and 1, got {width}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    n0 = z * z * spread * (1 - spread) / (width / 2) ** 2
    n = n0 / (1 + (n0 - 1) / population) if population > 0 else n0
    return max(1, min(population, int(-(-n // 1))))


@dataclass
class Selection:
    """How the evaluated requests were chosen from the file."""

    n_read: int
    dedupe: bool = False
    n_duplicates: int = 0
    sample: int | None = None
    #: the CI width the sample size was planned for (``--ci-width``)
    ci_width: float | None = None
    stratify: str | None = None
    seed: int | None = None
    strata: dict[str, int] = field(default_factory=dict)
    n_selected: int = 0
    ids_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, "")}


def dedupe(samples: Sequence[Sample]) -> tuple[list[Sample], int]:
    """The first sample of each normalised question (samples without one are all kept)."""
    seen: set[str] = set()
    kept: list[Sample] = []
    for s in samples:
        key = normalise_question(s.user_input)
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(s)
    return kept, len(samples) - len(kept)


def field_value(sample: Sample, name: str) -> str:
    """``name`` of a sample (a field, or a metadata key, ``metadata.`` optional) as text."""
    key = name.removeprefix("metadata.")
    value = getattr(sample, key, None) if key in Sample.__dataclass_fields__ else None
    if value is None:
        value = sample.metadata.get(key)
    return MISSING if value is None else str(value)


def _allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of ``n`` over strata (largest remainder, ties by name)."""
    total = sum(sizes.values())
    quotas = {k: n * v / total for k, v in sizes.items()}
    out = {k: min(sizes[k], int(q)) for k, q in quotas.items()}
    rest = n - sum(out.values())
    for k in sorted(sizes, key=lambda k: (-(quotas[k] - int(quotas[k])), k)):
        if rest <= 0:
            break
        if out[k] < sizes[k]:
            out[k] += 1
            rest -= 1
    return out


def stratified_sample(samples: Sequence[Sample], n: int, stratify: str | None, seed: int
                      ) -> tuple[list[Sample], dict[str, int]]:
    """``n`` samples, each stratum of ``stratify`` in proportion to its size (a simple random
    sample without it), drawn with ``seed``; the file order is kept."""
    if n < 1:
        raise UsageError("--sample", f"must be at least 1, got {n}")
    if n >= len(samples):
        groups: dict[str, int] = defaultdict(int)
        for s in samples:
            groups[field_value(s, stratify) if stratify else "all"] += 1
        return list(samples), dict(groups)
    strata: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        strata[field_value(s, stratify) if stratify else "all"].append(i)
    quota = _allocate({k: len(v) for k, v in strata.items()}, n)
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for key in sorted(strata):
        idx = strata[key]
        pick = rng.permutation(len(idx))[:quota[key]]
        chosen.extend(idx[int(j)] for j in pick)
    chosen.sort()
    return [samples[i] for i in chosen], {k: v for k, v in sorted(quota.items()) if v}


def select(samples: Sequence[Sample], *, dedup: bool = False, n: int | None = None,
           stratify: str | None = None, seed: int = 42, ci_width: float | None = None
           ) -> tuple[list[Sample], Selection]:
    """Dedupe, then sample (``n`` requests, or as many as a ``ci_width`` needs); the
    :class:`Selection` records both."""
    sel = Selection(n_read=len(samples), dedupe=dedup)
    out = list(samples)
    if dedup:
        out, sel.n_duplicates = dedupe(out)
    if ci_width is not None:
        if n is not None:
            raise UsageError("--ci-width", "give --sample N or --ci-width W, not both")
        n, sel.ci_width = size_for_width(ci_width, len(out)), ci_width
    if stratify and n is None:
        raise UsageError("--stratify", "needs --sample N")
    if n is not None:
        out, sel.strata = stratified_sample(out, n, stratify, seed)
        sel.sample, sel.stratify, sel.seed = n, stratify, seed
    sel.n_selected = len(out)
    sel.ids_sha256 = hashlib.sha256("\n".join(sorted(s.id for s in out)).encode()).hexdigest()
    return out, sel
