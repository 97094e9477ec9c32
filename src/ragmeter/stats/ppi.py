"""Prediction-powered inference (PPI) for a mean, for paired differences, and label planning.

With judge values ``f`` on all ``N`` items and human labels ``y`` on a random subset of ``n``
of them (Angelopoulos et al., 2023), ``θ̂ = mean_N(f) + mean_n(y − f)``. The labelled items
are part of the ``N``, so ``Var θ̂ = σ²_f/N + σ²_r/n + 2·cov(f, r)/N`` with ``r = y − f`` (the
covariance term is exact for a labelled subset drawn from the ``N``; it vanishes as
``n/N → 0`` and makes the formula reduce to ``σ²_y/N`` when every item is labelled). The
interval is normal: ``θ̂ ± t_{1−α/2, n−1} √Var`` (Student t on the ``n`` labels, slightly wider
than the normal interval of the paper for small label budgets).

With yes/no labels *and* yes/no judge values the normal interval under-covers when outcomes
(or the judge's errors) are rare: 20 labels that show no disagreement say little about a
disagreement rate of 5–15 %, yet the normal interval treats the rectifier's variance as
nearly 0. ``interval="exact"`` then builds the interval from exact pieces instead: the judge
mean over the ``N`` items with its Clopper–Pearson interval, the correction ``(c − b)/n``
(``c`` labelled items the judge said no to and the human yes, ``b`` the reverse) with the
exact interval of a difference of two discordant shares (``discordant_bounds`` of
:mod:`ragmeter.stats.intervals`), the two combined by MOVER. ``interval="auto"`` takes it whenever every
label and judge value is 0 or 1, the normal interval otherwise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ragmeter.stats.intervals import clopper_pearson, discordant_bounds

#: the interval of a PPI estimate: ``t`` (normal, Student t), ``exact`` (yes/no labels and
#: judge values only), ``auto`` (``exact`` when every value is 0 or 1, else ``t``)
INTERVALS = ("t", "exact", "auto")


def _crit(level: float, n_labelled: np.ndarray | float) -> np.ndarray | float:
    """Student-t critical value with ``n − 1`` degrees of freedom (the rectifier's mean is
    estimated from the ``n`` labels, usually the dominant and smallest part)."""
    from scipy.stats import t

    return t.ppf(0.5 + level / 2.0, np.maximum(np.asarray(n_labelled, dtype=float) - 1.0, 1.0))


#: pseudo-observations ``±PSEUDO`` added to the rectifier's variance when labels are discrete
PSEUDO = 0.5


def _rect_var(ss: np.ndarray, mean: np.ndarray, n: np.ndarray, discrete: bool) -> np.ndarray:
    """Sample variance of the rectifier ``y − f`` from its sum of squares about the mean.

    With discrete human labels (yes/no, 0/1/2) a small labelled set often shows no
    disagreement at all by chance, and the plain variance (0) gives an interval that is far too
    narrow. Then two pseudo-observations ``mean ± PSEUDO`` are added to the variance (not to
    the estimate): ``(ss + 2·PSEUDO²) / (n + 1)``, a plus-two style floor that fades as ``n``
    grows.
    """
    if discrete:
        return (ss + 2.0 * PSEUDO ** 2) / (n + 1.0)
    return ss / (n - 1.0)


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate of a mean beside the raw judge mean."""

    estimate: float
    ci_low: float
    ci_high: float
    std_error: float
    judge_mean: float
    correction: float
    n_all: int
    n_labelled: int
    var_judge: float
    var_rect: float
    cov_judge_rect: float
    level: float = 0.95
    #: the metric's range when the normal interval reached outside it and was cut to it
    clipped_to: tuple[float, float] | None = None
    #: how the interval was made: ``t`` or ``exact`` (see the module doc)
    interval: str = "t"
    #: the estimator (``classic``, ``ppi++``, ``stratified``:
    #: :mod:`ragmeter.stats.ppi_estimators`) and the labelling design (``srs``, ``poisson``)
    estimator: str = "classic"
    design: str = "srs"
    #: effective sample size: human labels alone (drawn at random) with the same std. error
    ess: float | None = None
    #: the power-tuning weight of the judge (``ppi++``; 1 for classic), per stratum
    #: (``stratified``)
    lam: float | None = 1.0
    lams: dict[str, float] | None = None
    df: float | None = None
    n_strata: int = 1
    #: the variance labels cannot remove and the design's part (for the label planner)
    var_fixed: float | None = None
    var_design: float | None = None
    #: the selection's signature when the labels came from one; labels not used
    selection: str | None = None
    n_unused: int = 0
    #: ``population`` (what the items are a sample of) or ``items`` (these N items)
    target: str = "population"

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    @property
    def signature(self) -> str:
        """``ppi:<estimator>|interval:…|design:…|lambda:…|n:…|N:…|level:…`` (+ the
        selection's signature when there is one)."""
        parts = [f"ppi:{self.estimator}", f"interval:{self.interval}", f"design:{self.design}"]
        if self.lam is not None:
            parts.append(f"lambda:{self.lam:.3g}")
        if self.n_strata > 1:
            parts.append(f"strata:{self.n_strata}")
        if self.target != "population":
            parts.append(f"target:{self.target}")
        parts += [f"n:{self.n_labelled}", f"N:{self.n_all}", f"level:{self.level:g}"]
        if self.selection:
            parts.append(self.selection)
        return "|".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "width": self.width, "signature": self.signature}


def _binary(*arrays: np.ndarray) -> bool:
    return all(bool(np.all((x == 0.0) | (x == 1.0))) for x in arrays)


def _which_interval(interval: str, *arrays: np.ndarray) -> str:
    if interval not in INTERVALS:
        raise ValueError(f"unknown PPI interval {interval!r} (allowed: {', '.join(INTERVALS)})")
    if interval == "t":
        return "t"
    binary = _binary(*arrays)
    if interval == "exact" and not binary:
        raise ValueError("the exact PPI interval needs labels and judge values that are all "
                         "0 or 1")
    return "exact" if binary else "t"


def exact_bounds(n_all: np.ndarray | float, judge_yes: np.ndarray | float,
                 n_lab: np.ndarray | float, human_only: np.ndarray | float,
                 judge_only: np.ndarray | float, level: float = 0.95
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, low, high)`` of the PPI estimate of a yes/no metric with a yes/no judge
    (elementwise): ``judge_yes`` of the ``n_all`` judge values are yes; of the ``n_lab``
    labelled items, ``human_only`` the human said yes and the judge no, ``judge_only`` the
    reverse. Exact pieces combined by MOVER (module doc)."""
    N = np.asarray(n_all, dtype=np.float64)
    n = np.asarray(n_lab, dtype=np.float64)
    f_mean = np.asarray(judge_yes, dtype=np.float64) / N
    f_lo, f_hi = clopper_pearson(judge_yes, N, level)
    r_mean = (np.asarray(human_only, dtype=np.float64)
              - np.asarray(judge_only, dtype=np.float64)) / n
    r_lo, r_hi = discordant_bounds(n, human_only, judge_only, level)
    est = f_mean + r_mean
    lo = est - np.sqrt((f_mean - f_lo) ** 2 + (r_mean - r_lo) ** 2)
    hi = est + np.sqrt((f_hi - f_mean) ** 2 + (r_hi - r_mean) ** 2)
    return est, lo, hi


def ppi_mean(f_all: np.ndarray, f_lab: np.ndarray, y_lab: np.ndarray, *,
             level: float = 0.95, labelled_in_all: bool = True,
             discrete: bool = False, bounds: tuple[float, float] | None = None,
             interval: str = "t") -> PPIEstimate:
    """PPI estimate of the mean of ``y`` from judge values ``f_all`` (all ``N`` items) and
    the pairs ``(f_lab, y_lab)`` on the ``n`` labelled items.

    ``labelled_in_all``: the labelled items are among the ``N`` (ragmeter's case); then the
    covariance term ``2·cov(f, y − f)/N`` is added. With a separate unlabelled set pass False.
    ``bounds``: the metric's range (0–1 for judged metrics); a normal interval (or estimate)
    reaching outside it is cut to it, and ``clipped_to`` says so. ``interval``: ``t``,
    ``exact`` or ``auto`` (module doc); the standard error is the normal one either way.
    """
    f_all = np.asarray(f_all, dtype=np.float64)
    f_lab = np.asarray(f_lab, dtype=np.float64)
    y_lab = np.asarray(y_lab, dtype=np.float64)
    N, n = f_all.size, f_lab.size
    if n < 2 or N < 2 or y_lab.size != n:
        raise ValueError(f"PPI needs at least 2 labelled and 2 judged items (got n={n}, N={N})")
    how = _which_interval(interval, f_all, f_lab, y_lab)
    r = y_lab - f_lab
    var_f = float(f_all.var(ddof=1))
    var_r = float(_rect_var(np.asarray(((r - r.mean()) ** 2).sum()), np.asarray(r.mean()),
                            np.asarray(float(n)), discrete))
    cov = float(np.cov(f_lab, r, ddof=1)[0, 1]) if labelled_in_all else 0.0
    var = var_f / N + var_r / n + 2.0 * cov / N
    se = math.sqrt(max(var, 0.0))
    est = float(f_all.mean() + r.mean())
    if how == "exact":
        _e, lo_a, hi_a = exact_bounds(N, float(f_all.sum()), n,
                                      float(np.count_nonzero(r > 0)),
                                      float(np.count_nonzero(r < 0)), level)
        lo, hi = float(lo_a), float(hi_a)
    else:
        h = float(_crit(level, n)) * se
        lo, hi = est - h, est + h
    clipped = None
    if bounds is not None and (lo < bounds[0] or hi > bounds[1]):
        est, lo, hi = (min(max(x, bounds[0]), bounds[1]) for x in (est, lo, hi))
        clipped = (float(bounds[0]), float(bounds[1]))
    sigma_y = est * (1 - est) if how == "exact" else float(np.var(y_lab, ddof=1))
    return PPIEstimate(est, lo, hi, se, float(f_all.mean()), float(r.mean()), N, n,
                       var_f, var_r, cov, level, clipped, how,
                       ess=sigma_y / var if var > 0 else None, df=float(n - 1),
                       var_fixed=(var_f + 2.0 * cov + var_r) / N,
                       var_design=(1.0 - n / N) * var_r / n)


def ppi_mean_batch(f_all: np.ndarray, lab_mask: np.ndarray, y_all: np.ndarray, *,
                   level: float = 0.95, discrete: bool = False, interval: str = "t"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`ppi_mean` over rows (simulations): estimate, ci_low, ci_high.

    ``f_all``/``y_all``: (S, N); ``lab_mask``: (S, N) booleans, the labelled items of each row
    (``y_all`` is read only where labelled). ``interval="exact"``: every row's labels and
    judge values are 0 or 1 (``auto`` is not offered here: a row is one design).
    """
    f = np.asarray(f_all, dtype=np.float64)
    L = np.asarray(lab_mask, dtype=bool)
    y = np.where(L, np.asarray(y_all, dtype=np.float64), 0.0)
    N = f.shape[1]
    n = L.sum(axis=1).astype(np.float64)
    r = np.where(L, y - f, 0.0)
    if interval == "exact":
        if not _binary(f, y):
            raise ValueError("the exact PPI interval needs labels and judge values that are "
                             "all 0 or 1")
        return exact_bounds(float(N), f.sum(axis=1), n, (r > 0).sum(axis=1),
                            (r < 0).sum(axis=1), level)
    if interval != "t":
        raise ValueError(f"unknown PPI interval {interval!r} (allowed: t, exact)")
    fl = np.where(L, f, 0.0)
    r_mean = r.sum(axis=1) / n
    fl_mean = fl.sum(axis=1) / n
    ss_r = np.where(L, (r - r_mean[:, None]) ** 2, 0.0).sum(axis=1)
    var_r = _rect_var(ss_r, r_mean, n, discrete)
    cov = (np.where(L, (fl - fl_mean[:, None]) * (r - r_mean[:, None]), 0.0).sum(axis=1)
           ) / (n - 1)
    var_f = f.var(axis=1, ddof=1)
    var = var_f / N + var_r / n + 2.0 * cov / N
    se = np.sqrt(np.maximum(var, 0.0))
    est = f.mean(axis=1) + r_mean
    h = _crit(level, n) * se
    return est, est - h, est + h


@dataclass(frozen=True)
class PairedPPI:
    """PPI estimate of mean(B) − mean(A) on paired items, with a two-sided normal p-value."""

    diff: PPIEstimate
    raw_diff: float
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.diff.to_dict(), "raw_diff": self.raw_diff, "p_value": self.p_value}


def ppi_paired(f_a: np.ndarray, f_b: np.ndarray, lab: np.ndarray, y_a: np.ndarray,
               y_b: np.ndarray, *, level: float = 0.95, discrete: bool = False,
               bounds: tuple[float, float] | None = None) -> PairedPPI:
    """PPI on paired differences: judge values of systems A and B on the same ``N`` items,
    human labels of both on the items where ``lab`` is True (``y_*`` read only there).
    ``bounds``: the range of a difference (−1…1 for a 0–1 metric); the interval is cut to it."""
    f_a = np.asarray(f_a, dtype=np.float64)
    f_b = np.asarray(f_b, dtype=np.float64)
    lab = np.asarray(lab, dtype=bool)
    d_f = f_b - f_a
    d_y = np.asarray(y_b, dtype=np.float64)[lab] - np.asarray(y_a, dtype=np.float64)[lab]
    est = ppi_mean(d_f, d_f[lab], d_y, level=level, discrete=discrete, bounds=bounds)
    z = est.estimate / est.std_error if est.std_error > 0 else (0.0 if est.estimate == 0
                                                                else math.inf)
    p = 2.0 * (1.0 - NormalDist().cdf(abs(z))) if math.isfinite(z) else 0.0
    return PairedPPI(est, float(d_f.mean()), float(p))


@dataclass(frozen=True)
class LabelPlan:
    """How many labels reach a target CI width (``None`` = not reachable by labelling)."""

    target_width: float
    current_width: float
    n_labelled: int
    n_needed: int | None
    n_more: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def labels_needed(est: PPIEstimate, target_width: float) -> LabelPlan:
    """Labels needed so the PPI interval's full width is at most ``target_width``.

    Solves ``z²·(σ²_f/N + σ²_r/n + 2cov/N) ≤ (w/2)²`` for ``n`` using the current variance
    estimates; when even labelling every item cannot reach ``w``, ``n_needed`` is ``None``.
    """
    if not target_width > 0:
        raise ValueError("target width must be > 0")
    z = float(_crit(est.level, est.n_labelled))
    budget = (target_width / (2 * z)) ** 2 - (est.var_judge + 2 * est.cov_judge_rect) / est.n_all
    width = 2 * z * est.std_error  # the normal interval's width, before any cut to the range
    if width <= target_width:
        return LabelPlan(target_width, width, est.n_labelled, est.n_labelled, 0,
                         "already reached")
    if budget <= 0 or est.var_rect <= 0:
        return LabelPlan(target_width, width, est.n_labelled, None, None,
                         "not reachable by labelling more of these items: the judge's own "
                         "spread over the N items is already wider; evaluate more samples")
    n_need = math.ceil(est.var_rect / budget)
    if n_need > est.n_all:
        return LabelPlan(target_width, width, est.n_labelled, None, None,
                         f"needs about {n_need} labels, more than the {est.n_all} items; "
                         "evaluate more samples")
    return LabelPlan(target_width, width, est.n_labelled, n_need,
                     max(0, n_need - est.n_labelled), "estimate from the current variances")


