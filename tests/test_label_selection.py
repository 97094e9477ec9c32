"""Which items to label: uniform, stratified (Neyman) and active (by uncertainty) selections
with the inclusion probability of every item, seeded and resumable."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.stats.selection import (
    Selection,
    active_probabilities,
    neyman_allocation,
    pilot_sigmas,
    select,
    uncertainty_from_logprobs,
    uncertainty_from_margin,
    uncertainty_from_votes,
)

IDS = [f"s{i}" for i in range(200)]


def test_uniform_is_a_seeded_random_sample_whose_prefix_is_one_too() -> None:
    a = select(IDS, "uniform", 30, seed=7)
    assert a == select(IDS, "uniform", 30, seed=7) and a != select(IDS, "uniform", 30, seed=8)
    assert len(a.chosen) == len(set(a.chosen)) == 30 and set(a.pi) == {30 / 200}
    assert a.signature == "select:uniform|n:30|N:200|seed:7"
    kept = select(IDS, "uniform", 40, seed=9, keep=a.chosen)     # resume: 10 more
    assert kept.chosen[:30] == a.chosen and len(set(kept.chosen)) == 40
    assert Selection.from_dict(a.to_dict()) == a


def test_neyman_allocation_follows_size_times_spread() -> None:
    alloc = neyman_allocation({"a": 100, "b": 100, "c": 100}, {"a": 0.1, "b": 0.2, "c": 0.3}, 60)
    assert alloc == {"a": 10, "b": 20, "c": 30}
    assert neyman_allocation({"a": 300, "b": 100}, None, 40) == {"a": 30, "b": 10}
    capped = neyman_allocation({"a": 5, "b": 500}, {"a": 1.0, "b": 0.01}, 50)
    assert capped["a"] == 5 and sum(capped.values()) == 50        # at most its items
    floor = neyman_allocation({"a": 100, "b": 100}, {"a": 0.0, "b": 1.0}, 30)
    assert floor == {"a": 2, "b": 28}                              # a variance needs two
    with pytest.raises(ValueError, match="too few"):
        neyman_allocation({k: 10 for k in "abcdef"}, None, 5)


def test_stratified_selection_spends_labels_where_the_judge_errs() -> None:
    strata = {s: ("easy" if i < 150 else "hard") for i, s in enumerate(IDS)}
    rng = np.random.default_rng(1)
    judge = {s: float(rng.random() < 0.5) for s in IDS}
    truth = {s: (judge[s] if strata[s] == "easy" else float(rng.random() < 0.5)) for s in IDS}
    pilot = select(IDS, "stratified", 20, seed=3, strata=strata)
    assert pilot.allocation == {"easy": 15, "hard": 5}              # proportional first
    sig = pilot_sigmas(strata, {s: truth[s] for s in pilot.chosen}, judge)
    # no disagreement in 15 pilot labels: the floor, not 0 (it cannot tell "never" from rare)
    assert sig["easy"] == pytest.approx((0.5 / 16) ** 0.5) and sig["hard"] > 0.3
    assert pilot_sigmas(strata, {s: truth[s] for s in pilot.chosen}, judge,
                        discrete=False)["easy"] == 0.0
    sel = select(IDS, "stratified", 40, seed=4, strata=strata, pilot=sig, keep=pilot.chosen)
    assert sel.allocation["easy"] >= 15 and sel.allocation["hard"] >= 15   # 10 proportionally
    assert sum(sel.allocation.values()) == 40
    assert set(pilot.chosen) <= set(sel.chosen) and len(sel.chosen) == 40
    pi = sel.pi_of()
    assert pi[IDS[0]] == pytest.approx(sel.allocation["easy"] / 150)
    assert pi[IDS[-1]] == pytest.approx(sel.allocation["hard"] / 50)
    with pytest.raises(ValueError, match="stratum"):
        select(IDS, "stratified", 10, seed=1)


def test_active_probabilities_follow_uncertainty_with_a_floor_and_a_cap() -> None:
    u = np.r_[np.zeros(100), np.full(90, 0.5), np.full(10, 50.0)]
    p = active_probabilities(u, 40, mix=0.2)
    assert p.sum() == pytest.approx(40) and p.max() <= 1.0
    assert p[0] >= 40 * 0.2 / 200                                  # at least the uniform share
    assert np.all(p[190:] == 1.0) and p[100] > p[0]                # capped, excess spread
    sel = select(IDS, "active", 40, seed=5, uncertainty=dict(zip(IDS, u, strict=True)))
    assert sel.mix == 0.2 and sel.pi == tuple(p)
    assert 25 <= len(sel.chosen) <= 55                             # Poisson: n on average
    assert set(IDS[190:]) <= set(sel.chosen)                       # certain inclusions
    with pytest.raises(ValueError, match="uncertainty"):
        select(IDS, "active", 10, seed=1)


def test_uncertainty_scores() -> None:
    assert uncertainty_from_margin([0.5, 0.0, 1.0, 0.75]).tolist() == [1.0, 0.0, 0.0, 0.5]
    assert uncertainty_from_votes([2, 3, 0], [4, 3, 3]).tolist() == [1.0, 0.0, 0.0]
    h = uncertainty_from_logprobs([np.log(0.5), np.log(0.99)], [np.log(0.5), np.log(0.01)])
    assert h[0] == pytest.approx(1.0) and h[1] < 0.1


def test_bad_requests_are_errors() -> None:
    with pytest.raises(ValueError, match="mode"):
        select(IDS, "smart", 10, seed=1)
    with pytest.raises(ValueError, match="between 1"):
        select(IDS, "uniform", 0, seed=1)
    with pytest.raises(ValueError, match="unique"):
        select(["a", "a"], "uniform", 1, seed=1)
    with pytest.raises(ValueError, match="keep"):
        select(IDS, "uniform", 5, seed=1, keep=["nope"])
