"""Prediction-powered estimators of a mean under any labelling design: classic PPI, PPI++ and
stratified PPI, with their intervals, effective sample size, signature and label planner.

The items are the ``N`` judged items; human labels come for a subset chosen by a design
(:mod:`ragmeter.stats.selection`): a simple random sample (``srs`` — the ``uniform`` mode, or
within strata for the ``stratified`` mode) or independent draws with known inclusion
probabilities ``π_i`` (``poisson`` — the ``active`` mode). In each stratum ``h`` (one stratum
unless the design or the estimator has them) with ``N_h`` items and ``n_h`` labels:

``θ_h = λ_h·mean_{N_h}(f) + Σ w_i (y_i − λ_h f_i) / Σ w_i``  (``w_i = 1/π_i``, equal for ``srs``)

and ``θ = Σ_h (N_h/N)·θ_h``. The estimators differ in ``λ``:

* ``classic`` — ``λ = 1`` (Angelopoulos et al., 2023); one stratum and ``srs`` give exactly
  :func:`ragmeter.stats.ppi_mean`;
* ``ppi++`` — one ``λ`` in [0, 1] chosen to minimise the estimated variance (power tuning,
  Angelopoulos, Duchi and Zrnic, 2023); ``λ = 1`` is among the choices, so its estimated
  variance is never above classic PPI's on the same labels; ``λ = 0`` is the human labels
  alone (a judge that does not help is switched off);
* ``stratified`` — a ``λ_h`` per stratum, each tuned the same way (Fisch et al., 2024):
  tighter when the judge's accuracy differs between strata.

Tuning needs labels that show both the humans' and the judge's spread: a stratum (for
``ppi++``: the labels as a whole) with fewer than :data:`MIN_TUNE` labels away from the most
common label, or from the most common judge value, keeps ``λ = 1`` — with a rare outcome and
no positive among its labels, a tuned ``λ = 0`` would trust the labels' "never" over the
judge's few yeses and cover badly.

Variance, for ``target="population"`` (the judged items are a sample of the population the
metric describes — the default, as :func:`ragmeter.stats.ppi_mean`):
``V = Σ_h (N_h/N)²·(σ²_{y,h}/N_h + D_h) + Σ_h (N_h/N)(θ_h − θ)²/N`` with
``σ²_{y,h} = λ²σ²_f + 2λ·cov(f, r) + σ²_r`` (``r = y − λf``) and ``D_h`` the design variance of
the labelled mean of ``r``: ``(1 − n_h/N_h)·σ²_r/n_h`` for ``srs``,
``n_h/(n_h−1)·Σ (1−π_i)/π_i²·(r_i − r̄)²/N_h²`` for ``poisson``. With discrete labels the
rectifier's variance gets the pseudo-observation floor of :mod:`ragmeter.stats.ppi`.
For ``target="items"`` (the mean over exactly these ``N`` items, had all been labelled) only
the design part remains: ``V = Σ_h (N_h/N)²·D_h``.

Interval: Student t (one stratum: ``n − 1`` degrees of freedom; several: Satterthwaite's), or
for yes/no labels of a yes/no judge the exact construction: per stratum the weighted shares of
the labelled (human, judge) cells with their Clopper–Pearson intervals (on Kish's effective
size for unequal weights), combined into the correction by MOVER for a linear combination of
multinomial shares, the judge mean with its Clopper–Pearson interval, strata added in
quadrature. ``interval="auto"`` takes it for yes/no data from a simple random sample in one
stratum — few labels and rare outcomes, where the normal interval under-covers; with strata
or unequal weights its pieces' conservatism adds up, and the normal interval is used.

Effective sample size: how many human labels drawn at random, with no judge, would give the
same standard error (``σ̂²_y / V``; for ``target="items"`` with the finite-population factor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from ragmeter.stats.intervals import clopper_pearson
from ragmeter.stats.ppi import INTERVALS, PSEUDO, LabelPlan, PPIEstimate, _crit
from ragmeter.stats.selection import Selection

ESTIMATORS = ("classic", "ppi++", "stratified")
#: labels away from the most common value (of the labels, and of the judge on them) needed to
#: tune λ; with fewer, λ = 1
MIN_TUNE = 5
DESIGNS = ("srs", "poisson")
TARGETS = ("population", "items")
POOLED = "(pooled)"


@dataclass
class _Stratum:
    """One stratum's data: all its judge values, its labelled pairs and their weights."""

    key: str
    f: np.ndarray          # judge values of the N_h items
    fl: np.ndarray         # judge values of the labelled items
    yl: np.ndarray         # their labels
    w: np.ndarray          # their weights 1/π (ones for srs)
    pi: np.ndarray         # their inclusion probabilities (poisson)

    @property
    def N(self) -> int:
        return int(self.f.size)

    @property
    def n(self) -> int:
        return int(self.yl.size)


@dataclass(frozen=True)
class _Fit:
    theta: float
    var: float
    var_fixed: float
    var_design: float
    thetas: list[float]
    lams: list[float]
    comps: list[tuple[float, float]]    # per stratum (W_h² σ²_r/n_h, n_h − 1), for the df
    var_f: float
    var_r: float
    cov: float


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    return float((w * x).sum() / w.sum())


def _terms(s: _Stratum, lam: float, design: str, discrete: bool
           ) -> tuple[float, float, float, float, float, float, float]:
    """``(θ_h, σ²_y part / N_h, D_h, σ²_f, σ²_r, cov, σ²_r/n_h)`` of one stratum at ``λ``."""
    n, N = s.n, s.N
    r = s.yl - lam * s.fl
    rbar = _wmean(r, s.w)
    fbar_all = float(s.f.mean())
    var_f = float(s.f.var(ddof=1)) if N > 1 else 0.0
    ss = float((s.w * (r - rbar) ** 2).sum() / s.w.sum() * n)
    var_r = (ss + 2.0 * PSEUDO ** 2) / (n + 1.0) if discrete else ss / (n - 1.0)
    fl_bar = _wmean(s.fl, s.w)
    cov = float((s.w * (s.fl - fl_bar) * (r - rbar)).sum() / s.w.sum() * n / (n - 1.0))
    if design == "srs":
        d = (1.0 - n / N) * var_r / n
    else:
        extra = 2.0 * PSEUDO ** 2 / (n + 1.0) if discrete else 0.0
        d = (n / (n - 1.0) * float(((1.0 - s.pi) / s.pi ** 2 * ((r - rbar) ** 2 + extra)).sum())
             / N ** 2)
    fixed = (lam * lam * var_f + 2.0 * lam * cov + var_r) / N
    return lam * fbar_all + rbar, fixed, d, var_f, var_r, cov, var_r / n


def _fit(strata: Sequence[_Stratum], lams: Sequence[float], design: str, discrete: bool,
         N: int, target: str = "population") -> _Fit:
    W = [s.N / N for s in strata]
    parts = [_terms(s, lam, design, discrete) for s, lam in zip(strata, lams, strict=True)]
    theta = float(sum(w * p[0] for w, p in zip(W, parts, strict=True)))
    fixed = float(sum(w * w * p[1] for w, p in zip(W, parts, strict=True)))
    design_v = float(sum(w * w * p[2] for w, p in zip(W, parts, strict=True)))
    if target == "items":
        fixed = 0.0
    elif len(strata) > 1:
        fixed += float(sum(w * (p[0] - theta) ** 2 for w, p in zip(W, parts, strict=True))) / N
    comps = [(w * w * p[6], float(s.n - 1)) for w, p, s in zip(W, parts, strata, strict=True)]
    one = parts[0] if len(parts) == 1 else None
    return _Fit(theta, fixed + design_v, fixed, design_v, [p[0] for p in parts], list(lams),
                comps, one[3] if one else float("nan"), one[4] if one else float("nan"),
                one[5] if one else float("nan"))


def _argmin_lambda(v0: float, vh: float, v1: float) -> float:
    """The ``λ`` in [0, 1] minimising the quadratic through (0, v0), (½, vh), (1, v1)."""
    a = 2.0 * (v0 - 2.0 * vh + v1)
    b = -3.0 * v0 + 4.0 * vh - v1
    if a <= 1e-300:
        return 1.0 if v1 <= v0 else 0.0
    return float(min(1.0, max(0.0, -b / (2.0 * a))))


def _spread(x: np.ndarray) -> int:
    """How many values differ from the most common one."""
    if x.size == 0:
        return 0
    _vals, counts = np.unique(x, return_counts=True)
    return int(x.size - counts.max())


def _can_tune(yl: np.ndarray, fl: np.ndarray) -> bool:
    return _spread(yl) >= MIN_TUNE and _spread(fl) >= MIN_TUNE


def _tune(strata: Sequence[_Stratum], estimator: str, design: str, discrete: bool,
          N: int, target: str) -> list[float]:
    H = len(strata)
    if estimator == "classic":
        return [1.0] * H
    if estimator == "ppi++":
        if not _can_tune(np.concatenate([s.yl for s in strata]),
                         np.concatenate([s.fl for s in strata])):
            return [1.0] * H
        v = [_fit(strata, [lam] * H, design, discrete, N, target).var
             for lam in (0.0, 0.5, 1.0)]
        lam = _argmin_lambda(*v)
        if _fit(strata, [lam] * H, design, discrete, N, target).var > v[2]:
            lam = 1.0                                   # never worse than λ = 1
        return [lam] * H
    out = []
    for s in strata:
        if not _can_tune(s.yl, s.fl):
            out.append(1.0)
            continue
        v = [_fit([s], [lam], design, discrete, s.N, target).var for lam in (0.0, 0.5, 1.0)]
        lam = _argmin_lambda(*v)
        out.append(lam if _fit([s], [lam], design, discrete, s.N, target).var <= v[2]
                   else 1.0)
    return out


def _mover_lincomb(est: np.ndarray, lo: np.ndarray, hi: np.ndarray, coef: np.ndarray,
                   corr: np.ndarray) -> tuple[float, float]:
    """MOVER bounds of ``Σ c_j θ_j`` from each ``θ_j``'s interval and their correlations."""
    theta = float(coef @ est)
    dl = np.where(coef > 0, est - lo, hi - est)      # distance to the bound that lowers θ
    du = np.where(coef > 0, hi - est, est - lo)
    cl, cu = coef * dl, coef * du
    vl = float(cl @ corr @ cl)
    vu = float(cu @ corr @ cu)
    return theta - math.sqrt(max(vl, 0.0)), theta + math.sqrt(max(vu, 0.0))


def _exact_parts(s: _Stratum, lam: float, level: float, target: str
                 ) -> tuple[float, float, float, float]:
    """Lower and upper deviations of one stratum's ``θ_h`` (yes/no labels of a yes/no judge):
    ``(θ_h − low, high − θ_h)`` split into the judge part and the correction part, returned as
    squared deviations ``(judge_lo², rect_lo², judge_hi², rect_hi²)``."""
    w = s.w
    n_eff = float(w.sum() ** 2 / (w * w).sum())
    if target == "items":            # sampling without replacement from these N_h items
        n_eff /= max(1.0 - float(np.mean(s.pi)), 1.0 / s.N)
    cells = [((s.yl == 1) & (s.fl == 1)), ((s.yl == 1) & (s.fl == 0)),
             ((s.yl == 0) & (s.fl == 1))]
    p = np.asarray([float(w[c].sum() / w.sum()) for c in cells])
    coef = np.asarray([1.0 - lam, 1.0, -lam])
    lo, hi = clopper_pearson(p * n_eff, n_eff, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.sqrt(p / (1.0 - p))
        corr = -np.outer(q, q)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    r_est = float(coef @ p)
    r_lo, r_hi = _mover_lincomb(p, np.asarray(lo), np.asarray(hi), coef, corr)
    if target == "items":            # the judge mean of these N items is known exactly
        return 0.0, (r_est - r_lo) ** 2, 0.0, (r_hi - r_est) ** 2
    fbar = float(s.f.mean())
    f_lo, f_hi = clopper_pearson(float(s.f.sum()), s.N, level)
    return ((lam * (fbar - float(f_lo))) ** 2, (r_est - r_lo) ** 2,
            (lam * (float(f_hi) - fbar)) ** 2, (r_hi - r_est) ** 2)


def _groups(strata: np.ndarray | None, lab: np.ndarray, min_labels: int
            ) -> list[np.ndarray]:
    """Item indices per stratum; strata with fewer than ``min_labels`` labels pooled (and the
    pool, if still short, joined to the stratum with the most labels)."""
    N = lab.size
    if strata is None:
        return [np.arange(N)]
    keys = np.asarray([str(x) for x in strata])
    groups = {k: np.flatnonzero(keys == k) for k in sorted(set(keys.tolist()))}
    small = [k for k, idx in groups.items() if lab[idx].sum() < min_labels]
    if not small:
        return list(groups.values())
    pooled = np.sort(np.concatenate([groups.pop(k) for k in small]))
    if lab[pooled].sum() >= min_labels or not groups:
        return [*groups.values(), pooled]
    big = max(groups, key=lambda k: int(lab[groups[k]].sum()))
    groups[big] = np.sort(np.concatenate([groups[big], pooled]))
    return list(groups.values())


def _check_names(estimator: str, design: str, interval: str, target: str) -> None:
    for name, value, allowed in (("estimator", estimator, ESTIMATORS),
                                 ("design", design, DESIGNS),
                                 ("PPI interval", interval, INTERVALS),
                                 ("target", target, TARGETS)):
        if value not in allowed:
            raise ValueError(f"unknown {name} {value!r} (allowed: {', '.join(allowed)})")


def _strata_parts(f: np.ndarray, y: np.ndarray, lab: np.ndarray, p_all: np.ndarray,
                  st: np.ndarray | None, design: str, min_labels: int) -> list[_Stratum]:
    """The strata (small ones pooled) with their judge values, labels and weights."""
    parts = []
    for idx in _groups(st, lab, min_labels):
        li = idx[lab[idx]]
        pis = p_all[li] if design == "poisson" else np.full(li.size, li.size / idx.size)
        parts.append(_Stratum(str(st[idx[0]]) if st is not None else "", f[idx], f[li], y[li],
                              1.0 / pis, pis))
    return parts


def _df(fit: _Fit, n: int) -> float:
    """Degrees of freedom: ``n − 1`` in one stratum, Satterthwaite's over several."""
    if len(fit.comps) == 1:
        return float(n - 1)
    tot = sum(c for c, _ in fit.comps)
    den = sum(c * c / max(d, 1.0) for c, d in fit.comps)
    return float(max(1.0, tot * tot / den)) if den > 0 else float(n - 1)


def _exact_bounds(parts: Sequence[_Stratum], lams: Sequence[float], fit: _Fit, N: int,
                  level: float, target: str) -> tuple[float, float]:
    """The exact construction's bounds (yes/no data): strata added in quadrature."""
    est = fit.theta
    W = [s.N / N for s in parts]
    ex = [_exact_parts(s, lam, level, target) for s, lam in zip(parts, lams, strict=True)]
    comp = 0.0
    if len(parts) > 1 and target == "population":   # the strata's shares vary too
        z = NormalDist().inv_cdf(0.5 + level / 2.0)
        comp = z * z * sum(w * (t - est) ** 2 for w, t in zip(W, fit.thetas, strict=True)) / N
    lo = est - math.sqrt(sum(w * w * (e[0] + e[1]) for w, e in zip(W, ex, strict=True)) + comp)
    hi = est + math.sqrt(sum(w * w * (e[2] + e[3]) for w, e in zip(W, ex, strict=True)) + comp)
    return lo, hi


def ppi_estimate(f_all: np.ndarray, y_all: np.ndarray, labelled: np.ndarray, *,
                 estimator: str = "classic", design: str = "srs",
                 pi: np.ndarray | None = None, strata: np.ndarray | Sequence[str] | None = None,
                 interval: str = "auto", discrete: bool = False, level: float = 0.95,
                 bounds: tuple[float, float] | None = None, min_labels: int = 2,
                 target: str = "population") -> PPIEstimate:
    """The estimate of the mean of ``y`` over the ``N`` items (module doc).

    ``f_all``: judge values of all ``N`` items; ``y_all``: labels, read only where
    ``labelled``; ``pi``: inclusion probabilities (``poisson``); ``strata``: each item's
    stratum — the design's strata (``srs`` within strata) and the ``stratified`` estimator's.
    ``interval``: ``t``, ``exact`` (yes/no labels and judge values) or ``auto``.
    ``target``: ``population`` or ``items`` (module doc).
    """
    _check_names(estimator, design, interval, target)
    f = np.asarray(f_all, dtype=np.float64)
    lab = np.asarray(labelled, dtype=bool)
    y = np.where(lab, np.asarray(y_all, dtype=np.float64), 0.0)
    N, n = f.size, int(lab.sum())
    if n < 2 or N < 2:
        raise ValueError(f"PPI needs at least 2 labelled and 2 judged items (got n={n}, N={N})")
    p_all = np.ones(N)
    if design == "poisson":
        if pi is None:
            raise ValueError("the poisson design needs the inclusion probabilities (pi)")
        p_all = np.asarray(pi, dtype=np.float64)
        if np.any(p_all[lab] <= 0):
            raise ValueError("a labelled item has inclusion probability 0")
    binary = bool(np.all((f == 0) | (f == 1)) and np.all((y[lab] == 0) | (y[lab] == 1)))
    if interval == "exact" and not binary:
        raise ValueError("the exact PPI interval needs labels and judge values that are all "
                         "0 or 1")
    st = None if strata is None else np.asarray([str(x) for x in strata])
    if st is not None and st.size != N:
        raise ValueError(f"strata: {st.size} values for {N} items")
    parts = _strata_parts(f, y, lab, p_all, st, design, min_labels)
    # the exact construction for yes/no data; ``auto`` takes it for a simple random sample in
    # one stratum (its home: few labels, rare outcomes), the normal interval otherwise
    how = "exact" if binary and (interval == "exact" or (
        interval == "auto" and design == "srs" and len(parts) == 1)) else "t"
    lams = _tune(parts, estimator, design, discrete, N, target)
    fit = _fit(parts, lams, design, discrete, N, target)
    se = math.sqrt(max(fit.var, 0.0))
    df = _df(fit, n)
    est = fit.theta
    if how == "exact":
        lo, hi = _exact_bounds(parts, lams, fit, N, level, target)
    else:
        h = float(_crit(level, df + 1.0)) * se
        lo, hi = est - h, est + h
    ess = _ess(_sigma_y(parts, fit, N, binary, est), fit.var, N, target)
    clipped = None
    if bounds is not None and (lo < bounds[0] or hi > bounds[1] or est < bounds[0]
                               or est > bounds[1]):
        est, lo, hi = (min(max(x, bounds[0]), bounds[1]) for x in (est, lo, hi))
        clipped = (float(bounds[0]), float(bounds[1]))
    one = len(parts) == 1
    return PPIEstimate(
        est, lo, hi, se, float(f.mean()), fit.theta - float(f.mean()), N, n,
        fit.var_f if one else float(f.var(ddof=1)), fit.var_r, fit.cov, level, clipped, how,
        estimator=estimator, design=design, ess=ess,
        lam=lams[0] if estimator != "stratified" else None,
        lams={s.key: lam for s, lam in zip(parts, lams, strict=True)}
        if estimator == "stratified" else None,
        df=df, n_strata=len(parts), var_fixed=fit.var_fixed, var_design=fit.var_design,
        target=target)


def _ess(sigma_y: float, var: float, N: int, target: str) -> float | None:
    """Human labels alone (at random) with the same variance."""
    if var <= 0:
        return None
    if target == "items":   # (1 − m/N)·σ²/m = V  →  m = σ²/(V + σ²/N)
        return sigma_y / (var + sigma_y / N)
    return sigma_y / var


def _sigma_y(parts: Sequence[_Stratum], fit: _Fit, N: int, binary: bool, est: float) -> float:
    """The variance of one human label (for the effective sample size)."""
    if binary:
        p = min(max(est, 0.0), 1.0)
        return p * (1.0 - p)
    tot = 0.0
    for s, t in zip(parts, fit.thetas, strict=True):
        yb = _wmean(s.yl, s.w)
        v = float((s.w * (s.yl - yb) ** 2).sum() / s.w.sum() * s.n / max(s.n - 1, 1))
        tot += s.N / N * (v + (t - fit.theta) ** 2)
    return tot


def labels_for_half_width(est: PPIEstimate, half_width: float) -> LabelPlan:
    """How many labels (drawn by the same design) bring the interval's half-width to
    ``half_width``: the design variance shrinks as ``1/n − 1/N`` from its current value, the
    part of the variance that labels cannot remove stays (then ``n_needed`` is ``None``)."""
    if not half_width > 0:
        raise ValueError("target half-width must be > 0")
    if est.var_fixed is None or est.var_design is None:
        raise ValueError("this estimate carries no variance parts to plan with "
                         "(ppi_estimate makes them)")
    z = float(_crit(est.level, est.n_labelled))
    now = 2 * z * est.std_error
    if now <= 2 * half_width:
        return LabelPlan(2 * half_width, now, est.n_labelled, est.n_labelled, 0,
                         "already reached")
    room = (half_width / z) ** 2 - est.var_fixed
    n0, N = est.n_labelled, est.n_all
    scale = 1.0 / n0 - 1.0 / N
    if room <= 0 or est.var_design <= 0 or scale <= 0:
        return LabelPlan(2 * half_width, now, n0, None, None,
                         "not reachable by labelling more of these items: the judge's own "
                         "spread over the N items is already wider; evaluate more samples")
    inv = room / est.var_design * scale + 1.0 / N     # 1/n at the target
    n_need = math.ceil(1.0 / inv)
    if n_need > N:
        return LabelPlan(2 * half_width, now, n0, None, None,
                         f"needs about {n_need} labels, more than the {N} items; evaluate "
                         "more samples")
    return LabelPlan(2 * half_width, now, n0, n_need, max(0, n_need - n0),
                     f"estimate from the current variances ({est.estimator}, {est.design})")


def estimate(labels: Mapping[str, float], predictions: Mapping[str, float | None],
             selection: Selection | None = None, estimator: str = "ppi++", *,
             strata: Mapping[str, str] | None = None, interval: str = "auto",
             discrete: bool = False, level: float = 0.95,
             bounds: tuple[float, float] | None = None, target: str = "population"
             ) -> PPIEstimate:
    """The prediction-powered estimate from human ``labels`` (id → value) and judge
    ``predictions`` (id → value; ``None``/NaN = unscored, outside ``N``), under the design of
    ``selection`` (``None``: the labels are a simple random sample of the judged items).

    Only labels on items the selection chose count (``n_unused`` tells how many did not); for
    ``active`` selections, chosen items left unlabelled thin the sample at random (every ``π``
    scaled by the share labelled). ``strata``: each item's stratum for the ``stratified``
    estimator (default: the selection's strata)."""
    judged = {str(k): float(v) for k, v in predictions.items()
              if v is not None and math.isfinite(float(v))}
    ids = [i for i in (selection.ids if selection is not None else judged) if i in judged]
    usable = set(ids)
    mode = selection.mode if selection is not None else "uniform"
    if selection is not None:
        chosen = [i for i in selection.chosen if i in usable]
        lab_ids = {i for i in chosen if i in labels}
    else:
        chosen = [i for i in ids if i in labels]
        lab_ids = set(chosen)
    f = np.asarray([judged[i] for i in ids])
    lab = np.asarray([i in lab_ids for i in ids])
    y = np.asarray([float(labels[i]) if i in lab_ids else 0.0 for i in ids])
    st_map = strata if strata is not None else (selection.stratum_of() if selection else None)
    if estimator == "stratified" and st_map is None:
        raise ValueError("the stratified estimator needs each item's stratum (strata=... or "
                         "a stratified selection)")
    if mode == "stratified" and strata is not None and selection is not None:
        own = selection.stratum_of() or {}
        if any(strata.get(i) != own.get(i) for i in ids):
            raise ValueError("a stratified selection is estimated with its own strata")
    st = None if st_map is None else [st_map.get(i, POOLED) for i in ids]
    if estimator != "stratified" and mode != "stratified":
        st = None
    pi = None
    design = "srs"
    if mode == "active":
        assert selection is not None
        share = len(lab_ids) / max(1, len(chosen))
        pmap = selection.pi_of()
        pi = np.asarray([pmap[i] * share for i in ids])
        design = "poisson"
    out = ppi_estimate(f, y, lab, estimator=estimator, design=design, pi=pi, strata=st,
                       interval=interval, discrete=discrete, level=level, bounds=bounds,
                       target=target)
    return replace(out, selection=None if selection is None else selection.signature,
                   n_unused=len([k for k in labels if k not in lab_ids]))


__all__ = ["DESIGNS", "ESTIMATORS", "estimate", "labels_for_half_width", "ppi_estimate"]
