"""Classic PPI, PPI++ and stratified PPI under uniform, stratified and active labelling."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter import stats as S
from ragmeter.stats.ppi_estimators import estimate, labels_for_half_width, ppi_estimate
from ragmeter.stats.selection import select


def _continuous(seed: int, N: int = 1000, n: int = 60) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = rng.beta(2, 1.5, N)
    f = np.clip(y + 0.1 + rng.normal(0, 0.15, N), 0, 1)
    lab = np.zeros(N, bool)
    lab[rng.choice(N, n, replace=False)] = True
    return f, y, lab


def test_classic_on_a_random_sample_is_ppi_mean_exactly() -> None:
    f, y, lab = _continuous(3)
    a, b = S.ppi_mean(f, f[lab], y[lab]), ppi_estimate(f, y, lab)
    for k in ("estimate", "ci_low", "ci_high", "std_error", "var_judge", "var_rect",
              "cov_judge_rect"):
        assert getattr(b, k) == pytest.approx(getattr(a, k), rel=1e-12), k
    rng = np.random.default_rng(4)
    yb = (rng.random(1000) < 0.3).astype(float)
    fb = np.where(rng.random(1000) < 0.1, 1 - yb, yb)
    a = S.ppi_mean(fb, fb[lab], yb[lab], discrete=True, interval="auto")
    b = ppi_estimate(fb, yb, lab, discrete=True)
    assert a.interval == b.interval == "exact"
    assert (b.ci_low, b.ci_high) == pytest.approx((a.ci_low, a.ci_high), rel=1e-12)
    assert b.signature == "ppi:classic|interval:exact|design:srs|lambda:1|n:60|N:1000|level:0.95"


def test_ppi_plus_plus_is_never_wider_than_classic_and_drops_a_useless_judge() -> None:
    for seed in range(30):
        f, y, lab = _continuous(seed, n=40)
        c, p = ppi_estimate(f, y, lab), ppi_estimate(f, y, lab, estimator="ppi++")
        assert p.std_error <= c.std_error + 1e-15 and 0.0 <= (p.lam or 0) <= 1.0
    rng = np.random.default_rng(1)
    y = rng.beta(2, 2, 2000)
    noise = rng.random(2000)                          # a judge that knows nothing
    lab = np.zeros(2000, bool)
    lab[:200] = True
    p = ppi_estimate(noise, y, lab, estimator="ppi++")
    c = ppi_estimate(noise, y, lab)
    assert p.lam is not None and p.lam < 0.15 and p.width < 0.8 * c.width
    assert p.ess is not None and 150 < p.ess < 260              # about the labels alone


def test_stratified_ppi_is_tighter_when_the_judge_is_good_on_some_slices_only() -> None:
    rng = np.random.default_rng(5)
    N = 2000
    strata = np.repeat(["good", "bad"], N // 2)
    y = rng.beta(2, 2, N)
    f = np.where(strata == "good", np.clip(y + rng.normal(0, 0.03, N), 0, 1), rng.random(N))
    widths = {"classic": [], "stratified": []}
    for s in range(20):
        lab = np.zeros(N, bool)
        lab[np.random.default_rng(s).choice(N, 200, replace=False)] = True
        for est in widths:
            e = ppi_estimate(f, y, lab, estimator=est, strata=strata)
            widths[est].append(e.width)
    e = ppi_estimate(f, y, lab, estimator="stratified", strata=strata)
    assert e.lams is not None and e.lams["good"] > 0.9 and e.lams["bad"] < 0.3
    assert "strata:2" in e.signature and e.lam is None
    assert np.median(widths["stratified"]) < 0.85 * np.median(widths["classic"])


def _population(rng: np.random.Generator, N: int = 1500) -> tuple[np.ndarray, ...]:
    """A lenient judge: probability q, verdict yes from q >= 0.3, so its errors (mostly
    false yeses) sit where it is unsure."""
    q = rng.beta(0.4, 0.3, N)
    y = (rng.random(N) < q).astype(float)
    return q, y, (q >= 0.3).astype(float)


def test_active_selection_is_unbiased_with_inverse_probability_weights() -> None:
    rng = np.random.default_rng(11)
    q, y, f = _population(rng)
    ids = [f"i{k}" for k in range(q.size)]
    truth = float(y.mean())                            # the mean over these items
    est, naive, hit = [], [], 0
    for s in range(300):
        sel = select(ids, "active", 120, seed=s, uncertainty=np.sqrt(q * (1 - q)))
        labels = {i: float(y[int(i[1:])]) for i in sel.chosen}
        e = estimate(labels, dict(zip(ids, f, strict=True)), sel, "classic", discrete=True,
                     target="items")
        assert e.design == "poisson" and e.interval == "t" and "select:active" in e.signature
        est.append(e.estimate)
        naive.append(f.mean() + np.mean([labels[i] - f[int(i[1:])] for i in labels]))
        hit += e.ci_low <= truth <= e.ci_high
    se = np.std(est) / np.sqrt(len(est))
    assert abs(np.mean(est) - truth) < 3 * se + 0.01          # weighted: unbiased
    assert abs(np.mean(naive) - truth) > 5 * se               # unweighted: biased
    assert hit / 300 >= 0.93


def test_stratified_selection_estimate_uses_its_strata() -> None:
    rng = np.random.default_rng(2)
    _q, y, f = _population(rng, 1200)
    ids = [f"i{k}" for k in range(1200)]
    strata = {i: ("a" if k < 400 else "b") for k, i in enumerate(ids)}
    sel = select(ids, "stratified", 100, seed=1, strata=strata, pilot={"a": 0.1, "b": 0.5})
    labels = {i: float(y[int(i[1:])]) for i in sel.chosen}
    for est in ("classic", "ppi++", "stratified"):
        e = estimate(labels, dict(zip(ids, f, strict=True)), sel, est, discrete=True)
        assert e.n_strata == 2 and e.n_labelled == 100 and e.ci_low < e.estimate < e.ci_high
    with pytest.raises(ValueError, match="own strata"):
        estimate(labels, dict(zip(ids, f, strict=True)), sel, "stratified",
                 strata={i: "x" for i in ids})


def test_labels_outside_the_selection_are_not_used_and_missing_ones_thin_it() -> None:
    rng = np.random.default_rng(3)
    q, y, f = _population(rng, 800)
    ids = [f"i{k}" for k in range(800)]
    sel = select(ids, "active", 100, seed=2, uncertainty=np.sqrt(q * (1 - q)))
    labels = {i: float(y[int(i[1:])]) for i in sel.chosen[:60]}       # stopped early
    extra = next(i for i in ids if i not in sel.chosen)
    labels[extra] = 1.0
    e = estimate(labels, dict(zip(ids, f, strict=True)), sel, "ppi++", discrete=True)
    assert e.n_labelled == 60 and e.n_unused == 1


def test_a_rare_outcome_without_a_positive_label_keeps_the_judge() -> None:
    """No positive among the labels: tuning would pick λ = 0 (trust the labels' "never");
    with so little spread λ stays 1 and the interval still holds the true rate."""
    rng = np.random.default_rng(4)
    N = 2000
    y = (rng.random(N) < 0.03).astype(float)
    f = np.where(rng.random(N) < 0.01, 1 - y, y)
    neg = np.flatnonzero(y == 0)
    lab = np.zeros(N, bool)
    lab[neg[f[neg] == 0][:50]] = True
    for est in ("ppi++", "stratified"):
        e = ppi_estimate(f, y, lab, estimator=est, discrete=True,
                         strata=np.repeat(["a", "b"], N // 2))
        assert (e.lam == 1.0) if est == "ppi++" else (set((e.lams or {}).values()) == {1.0})
        assert e.ci_low <= 0.03 <= e.ci_high


def test_the_planner_says_how_many_labels_reach_a_half_width() -> None:
    f, y, lab = _continuous(8, N=3000, n=50)
    e = ppi_estimate(f, y, lab, estimator="ppi++")
    plan = labels_for_half_width(e, e.width / 4)
    assert plan.n_needed is not None and plan.n_more and plan.n_more > 0
    lab2 = np.zeros(3000, bool)
    lab2[np.random.default_rng(1).choice(3000, plan.n_needed, replace=False)] = True
    again = ppi_estimate(f, y, lab2, estimator="ppi++")
    assert again.width / 2 <= e.width / 4 * 1.2
    assert labels_for_half_width(e, e.width).n_more == 0
    far = labels_for_half_width(e, 1e-4)
    assert far.n_needed is None and "more samples" in far.reason


def test_the_mean_of_these_items_and_its_effective_sample_size() -> None:
    f, y, lab = _continuous(9, N=400, n=399)
    items = ppi_estimate(f, y, lab, target="items", estimator="ppi++")
    pop = ppi_estimate(f, y, lab, target="population", estimator="ppi++")
    assert items.width < pop.width / 5 and "target:items" in items.signature
    assert items.ess is not None and items.ess > 300


def test_the_card_names_its_estimator_and_effective_labels() -> None:
    from ragmeter.judge_trust.labels import labels_from_records
    from ragmeter.judge_trust.ppi import ppi_estimates

    rng = np.random.default_rng(9)
    ids = [f"s{i}" for i in range(500)]
    y = {s: float(rng.random() < 0.55) for s in ids}
    f = {s: (1.0 if rng.random() < 0.3 else v) for s, v in y.items()}
    recs = [(None, {"sample_id": s, "metric": "faithfulness", "label": y[s]}) for s in ids[:80]]
    labels = labels_from_records(recs, "mem")
    for est in ("classic", "ppi++"):
        d = ppi_estimates({"faithfulness": f}, labels, estimator=est,
                          target_width=0.1)["faithfulness"].to_dict()
        assert d["estimator"] == est and d["ess"] > 80 and d["signature"].startswith(
            f"ppi:{est}|") and d["plan"]["n_needed"] is not None
    with pytest.raises(ValueError, match="stratum"):
        ppi_estimates({"faithfulness": f}, labels, estimator="stratified")
    with pytest.raises(ValueError, match="estimator"):
        ppi_estimates({"faithfulness": f}, labels, estimator="smart")
