"""Which items to label: a seeded selection with the inclusion probability of every item.

A prediction-powered estimate (:mod:`ragmeter.stats.ppi_estimators`) corrects the judge with
human labels on a subset of the judged items; it stays unbiased for any subset whose
inclusion probabilities are known, by weighting each label by ``1/π`` (inverse-probability
weighting). :func:`select` draws such a subset in one of three modes:

* ``uniform`` — a simple random sample of ``n`` items (``π = n/N``). The items come in a
  random order and any first part of it is again a simple random sample, so a labeller may
  stop early.
* ``stratified`` — ``n`` labels spread over strata (slices: question type, section, …) by
  Neyman allocation, ``n_h ∝ N_h·σ_h``, with ``σ_h`` the spread of the human − judge
  correction in the stratum from a pilot (:func:`pilot_sigmas`); without a pilot, in
  proportion to the strata's sizes. At least 2 labels per stratum (a variance needs two),
  never more than its items; a simple random sample within each stratum (``π = n_h/N_h``).
  The order interleaves the strata in proportion to their allocations.
* ``active`` — items the judge is unsure about are labelled more often: ``π`` proportional
  to a given uncertainty score (token log-probabilities, a jury's split, the distance of a
  grade to a threshold — :func:`uncertainty_from_margin`, :func:`uncertainty_from_votes`),
  mixed with a uniform share ``mix`` so that no item's probability is tiny (the weights
  ``1/π`` stay bounded), capped at 1 (the excess spread over the rest). Each item is drawn
  on its own (Poisson sampling), so the number labelled is ``n`` on average; an item the
  labeller never reached counts as not drawn, the rest as a random thinning (the estimate
  then scales every ``π`` by the share labelled).

The selection is deterministic for a seed, carries its signature and round-trips through
``to_dict`` / ``from_dict`` so a labelling session can resume and the estimate can find the
probabilities again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MODES = ("uniform", "stratified", "active")
#: the uniform share mixed into ``active`` inclusion probabilities by default
DEFAULT_MIX = 0.2
#: at least this many labels per stratum in ``stratified`` mode (a variance needs two)
MIN_PER_STRATUM = 2


@dataclass(frozen=True)
class Selection:
    """Items to label (``order``: indices into ``ids``, in the order to present them) and the
    inclusion probability of every item (``pi``, aligned with ``ids``)."""

    mode: str
    ids: tuple[str, ...]
    pi: tuple[float, ...]
    order: tuple[int, ...]
    seed: int
    n: int
    strata: tuple[str, ...] | None = None
    mix: float | None = None
    #: per stratum: the labels allocated (``stratified``)
    allocation: Mapping[str, int] = field(default_factory=dict)

    @property
    def chosen(self) -> tuple[str, ...]:
        """The ids to label, in order."""
        return tuple(self.ids[i] for i in self.order)

    def pi_of(self) -> dict[str, float]:
        return dict(zip(self.ids, self.pi, strict=True))

    def stratum_of(self) -> dict[str, str] | None:
        return None if self.strata is None else dict(zip(self.ids, self.strata, strict=True))

    @property
    def signature(self) -> str:
        parts = [f"select:{self.mode}", f"n:{self.n}", f"N:{len(self.ids)}",
                 f"seed:{self.seed}"]
        if self.strata is not None:
            parts.append(f"strata:{len(set(self.strata))}")
        if self.mix is not None:
            parts.append(f"mix:{self.mix:g}")
        return "|".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "ids": list(self.ids), "pi": list(self.pi),
                "order": list(self.order), "seed": self.seed, "n": self.n,
                "strata": None if self.strata is None else list(self.strata),
                "mix": self.mix, "allocation": dict(self.allocation),
                "signature": self.signature}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Selection:
        strata = d.get("strata")
        return cls(str(d["mode"]), tuple(str(x) for x in d["ids"]),
                   tuple(float(x) for x in d["pi"]), tuple(int(x) for x in d["order"]),
                   int(d["seed"]), int(d["n"]),
                   None if strata is None else tuple(str(x) for x in strata),
                   None if d.get("mix") is None else float(d["mix"]),
                   {str(k): int(v) for k, v in (d.get("allocation") or {}).items()})


def _check(ids: Sequence[str], n: int) -> None:
    if len(set(ids)) != len(ids):
        raise ValueError("item ids must be unique")
    if not 1 <= n <= len(ids):
        raise ValueError(f"n must be between 1 and the number of items ({len(ids)}), got {n}")


def neyman_allocation(sizes: Mapping[str, int], sigmas: Mapping[str, float] | None, n: int,
                      minimum: int | Mapping[str, int] = MIN_PER_STRATUM) -> dict[str, int]:
    """Labels per stratum: ``n_h ∝ N_h·σ_h`` (``∝ N_h`` without ``sigmas``), each at least
    ``min(minimum, N_h)`` (a number, or one per stratum: labels it already has) and at most
    ``N_h``, summing to ``n`` (largest remainders). Strata pushed to a bound are fixed there
    and the rest shared again in proportion."""
    keys = sorted(sizes)
    cap = {k: float(sizes[k]) for k in keys}
    if n > sum(cap.values()):
        raise ValueError(f"n = {n} is more than the {int(sum(cap.values()))} items")
    mins = minimum if isinstance(minimum, Mapping) else dict.fromkeys(keys, minimum)
    low = {k: min(float(max(mins.get(k, 0), 0)), cap[k]) for k in keys}
    if sum(low.values()) > n:
        raise ValueError(f"n = {n} is too few for {len(keys)} strata: each needs "
                         f"{MIN_PER_STRATUM if not isinstance(minimum, Mapping) else 'its'} "
                         "labels (at least)")
    weight = {k: cap[k] * (1.0 if sigmas is None else max(float(sigmas.get(k, 0.0)), 0.0))
              for k in keys}
    if not any(weight.values()):
        weight = dict(cap)
    fixed: dict[str, float] = {}
    while True:
        free = [k for k in keys if k not in fixed]
        room = n - sum(fixed.values())
        total = sum(weight[k] for k in free)
        want = {k: room * weight[k] / total if total else room / len(free) for k in free}
        out = {k: low[k] for k in free if want[k] < low[k]}
        out.update({k: cap[k] for k in free if want[k] > cap[k]})
        if not out:
            break
        fixed.update(out)
    real = {**fixed, **want}
    alloc = {k: math.floor(real[k] + 1e-9) for k in keys}
    left = n - sum(alloc.values())
    for k in sorted(keys, key=lambda k: (-(real[k] - alloc[k]), k)):
        if left <= 0:
            break
        if alloc[k] < cap[k]:
            alloc[k] += 1
            left -= 1
    return alloc


def pilot_sigmas(strata: Mapping[str, str], labels: Mapping[str, float],
                 predictions: Mapping[str, float], *, tuned: bool = True,
                 discrete: bool = True) -> dict[str, float]:
    """Per stratum, the spread of the correction over the pilot's labelled items — the
    ``σ_h`` of Neyman allocation. ``tuned``: the correction ``label − λ_h·judge`` with the
    pilot's best ``λ_h`` in [0, 1] (what the stratified estimator will use: a judge no better
    than chance in a stratum counts as absent there); else ``label − judge`` (classic PPI).
    ``discrete`` labels get the pseudo-observation floor of the estimates
    (``(SS + 0.5)/(n + 1)``): a pilot of ten that saw no disagreement cannot tell a stratum
    without errors from one with a few, and a zero would starve it of labels."""
    by: dict[str, tuple[list[float], list[float]]] = {}
    for sid, y in labels.items():
        if sid in predictions and sid in strata:
            ys, fs = by.setdefault(strata[sid], ([], []))
            ys.append(float(y))
            fs.append(float(predictions[sid]))
    out: dict[str, float] = {}
    for k, (ys, fs) in by.items():
        ya, fa = np.asarray(ys), np.asarray(fs)
        lam = 1.0
        if tuned and ya.size > 1 and float(fa.var()) > 0:
            lam = float(np.clip(np.cov(ya, fa)[0, 1] / np.var(fa, ddof=1), 0.0, 1.0))
        r = ya - lam * fa
        ss = float(((r - r.mean()) ** 2).sum())
        if discrete:
            out[k] = math.sqrt((ss + 2 * 0.5 ** 2) / (r.size + 1))
        else:
            out[k] = math.sqrt(ss / (r.size - 1)) if r.size > 1 else 0.0
    return out


def active_probabilities(uncertainty: np.ndarray, n: int, mix: float = DEFAULT_MIX
                         ) -> np.ndarray:
    """``π_i = n·((1 − mix)·u_i/Σu + mix/N)``, capped at 1 with the excess spread over the
    items below the cap in proportion to their ``π`` (sums to ``n``)."""
    u = np.asarray(uncertainty, dtype=np.float64)
    N = u.size
    if not (np.all(np.isfinite(u)) and np.all(u >= 0)):
        raise ValueError("uncertainty scores must be finite and >= 0")
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix must be within 0-1, got {mix}")
    share = u / u.sum() if u.sum() > 0 else np.full(N, 1.0 / N)
    p = n * ((1.0 - mix) * share + mix / N)
    for _ in range(N):
        over = p > 1.0
        if not over.any():
            break
        excess = float((p[over] - 1.0).sum())
        p[over] = 1.0
        under = p < 1.0
        if not under.any():
            break
        p[under] += excess * p[under] / p[under].sum()
    return np.minimum(p, 1.0)


def select(items: Sequence[str], mode: str, n: int, seed: int, *,
           uncertainty: Mapping[str, float] | Sequence[float] | None = None,
           strata: Mapping[str, str] | Sequence[str] | None = None,
           pilot: Mapping[str, float] | None = None, mix: float = DEFAULT_MIX,
           keep: Sequence[str] = ()) -> Selection:
    """Choose about ``n`` of ``items`` (ids) to label; see the module doc for the modes.

    ``uncertainty`` (``active``): a score per item, higher = the judge is less sure.
    ``strata`` (``stratified``; optional for the others, kept for a stratified estimate):
    each item's stratum. ``pilot`` (``stratified``): σ per stratum (:func:`pilot_sigmas`).
    ``keep`` (``uniform``, ``stratified``): items already labelled by a simple random sample
    (of all items, or within each stratum — a pilot): they stay in the selection, first, and
    the rest is drawn among the other items, so the whole is again such a sample (a stratum
    keeps at least its pilot; the others share the rest).
    """
    ids = [str(x) for x in items]
    _check(ids, n)
    if mode not in MODES:
        raise ValueError(f"unknown selection mode {mode!r} (allowed: {', '.join(MODES)})")
    rng = np.random.default_rng([int(seed), 20_24])
    N = len(ids)
    st = _aligned(strata, ids, "strata")
    st_t = None if st is None else tuple(str(x) for x in st)
    pos = {sid: i for i, sid in enumerate(ids)}
    kept = [pos[k] for k in dict.fromkeys(str(x) for x in keep) if k in pos]
    if len(kept) != len(set(map(str, keep))):
        raise ValueError("keep: an id that is not among the items")
    if kept and mode == "active":
        raise ValueError("keep is for uniform and stratified selections (an active selection "
                         "draws each item on its own)")
    if mode == "uniform":
        kept_set = set(kept)
        rest = [int(i) for i in rng.permutation(N) if int(i) not in kept_set]
        m = max(n, len(kept))
        order = tuple(kept + rest[:m - len(kept)])
        return Selection(mode, tuple(ids), tuple([m / N] * N), order, int(seed), m, st_t)
    if mode == "stratified":
        if st_t is None:
            raise ValueError("stratified selection needs each item's stratum (strata=...)")
        keys = np.asarray(st_t)
        kept_mask = np.zeros(N, bool)
        kept_mask[kept] = True
        members = {str(k): np.flatnonzero(keys == k) for k in np.unique(keys)}
        have = {k: int(kept_mask[v].sum()) for k, v in members.items()}
        alloc = neyman_allocation({k: int(v.size) for k, v in members.items()}, pilot,
                                  max(n, sum(have.values())),
                                  {k: max(MIN_PER_STRATUM, c) for k, c in have.items()})
        pi_arr = np.zeros(N)
        picks: list[tuple[float, int]] = []
        for k in sorted(members):
            idx = members[k]
            own = [int(i) for i in idx[kept_mask[idx]]]
            alloc[k] = max(alloc[k], len(own))
            others = rng.permutation(idx[~kept_mask[idx]])
            chosen = own + [int(i) for i in others[:alloc[k] - len(own)]]
            pi_arr[idx] = alloc[k] / idx.size
            # interleave: the j-th label of a stratum with n_h labels sits at (j + U)/n_h
            u = rng.random()
            picks.extend(((j + u) / max(alloc[k], 1), c) for j, c in enumerate(chosen))
        kept_set = set(kept)
        kept_first = sorted(picks, key=lambda t: (t[1] not in kept_set, t[0]))
        order = tuple(i for _key, i in kept_first)
        pi = [float(x) for x in pi_arr]
        return Selection(mode, tuple(ids), tuple(pi), order, int(seed),
                         sum(alloc.values()), st_t, allocation=alloc)
    un = _aligned(uncertainty, ids, "uncertainty")
    if un is None:
        raise ValueError("active selection needs an uncertainty score per item "
                         "(uncertainty=...)")
    p = active_probabilities(np.asarray(un, dtype=np.float64), n, mix)
    drawn = np.flatnonzero(rng.random(N) < p)
    order = tuple(int(i) for i in rng.permutation(drawn))
    return Selection(mode, tuple(ids), tuple(float(x) for x in p), order, int(seed), n, st_t,
                     mix=float(mix))


def _aligned(values: Mapping[str, Any] | Sequence[Any] | None, ids: Sequence[str],
             what: str) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(values, Mapping):
        missing = [i for i in ids if i not in values]
        if missing:
            raise ValueError(f"{what}: no value for {len(missing)} item(s), e.g. {missing[0]!r}")
        return [values[i] for i in ids]
    out = list(values)
    if len(out) != len(ids):
        raise ValueError(f"{what}: {len(out)} values for {len(ids)} items")
    return out


def uncertainty_from_margin(values: Sequence[float], threshold: float = 0.5) -> np.ndarray:
    """Uncertainty from a grade or a probability: ``1 − |v − threshold| / max distance`` —
    highest at the threshold, 0 at the far end of the scale (0–1)."""
    v = np.asarray(values, dtype=np.float64)
    far = max(threshold, 1.0 - threshold)
    return np.clip(1.0 - np.abs(v - threshold) / far, 0.0, 1.0)


def uncertainty_from_votes(yes: Sequence[int], total: Sequence[int]) -> np.ndarray:
    """Uncertainty from a jury's split: ``1 − |2·yes/total − 1|`` (1 at an even split, 0 when
    unanimous)."""
    y = np.asarray(yes, dtype=np.float64)
    t = np.maximum(np.asarray(total, dtype=np.float64), 1.0)
    return 1.0 - np.abs(2.0 * y / t - 1.0)


def uncertainty_from_logprobs(logprob_yes: Sequence[float], logprob_no: Sequence[float]
                              ) -> np.ndarray:
    """Uncertainty from the token log-probabilities of a yes/no verdict: the binary entropy
    (in bits) of the renormalised ``P(yes)`` — 1 at 50/50, 0 when certain."""
    a = np.asarray(logprob_yes, dtype=np.float64)
    b = np.asarray(logprob_no, dtype=np.float64)
    p = 1.0 / (1.0 + np.exp(b - a))
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return -(p * np.log2(p) + (1 - p) * np.log2(1 - p))


__all__ = ["DEFAULT_MIX", "MIN_PER_STRATUM", "MODES", "Selection", "active_probabilities",
           "neyman_allocation", "pilot_sigmas", "select", "uncertainty_from_logprobs",
           "uncertainty_from_margin", "uncertainty_from_votes"]
