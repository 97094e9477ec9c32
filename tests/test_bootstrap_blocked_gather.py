"""The bootstrap gathers a few resamples at a time; its means stay bit-equal to one big draw of
every resample's indices followed by ``x[idx].mean(axis=1)`` (the definition), for any length."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.stats.resampling import bootstrap_cis, bootstrap_means_many


@pytest.mark.parametrize("n", [2, 7, 1000, 9_999, 70_000])
def test_bootstrap_means_equal_one_big_draw_bit_for_bit(n: int) -> None:
    rs = np.random.default_rng(5)
    xs = [rs.random(n), rs.integers(0, 11, n) / 10.0, rs.random(n) * 10.0 ** rs.integers(-9, 9, n)]
    n_boot = 120
    idx = np.random.default_rng(42).integers(0, n, size=(n_boot, n))
    got = bootstrap_means_many(xs, seed=42, n_boot=n_boot)
    for x, g in zip(xs, got, strict=True):
        assert np.array_equal(g, x[idx].mean(axis=1))


def test_bootstrap_cis_of_several_arrays_equal_each_alone() -> None:
    rs = np.random.default_rng(9)
    xs = [rs.random(3000), rs.random(3000), rs.random(500)]
    together = bootstrap_cis(xs, seed=7)
    assert together == [bootstrap_cis([x], seed=7)[0] for x in xs]
