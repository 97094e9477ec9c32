"""The sign-flip randomization test reads the same random signs as multiplying them out (the
generator's bounded int8 draws) and counts the same extremes — only faster."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.stats import paired_test
from ragmeter.stats.resampling import _CHUNK_CELLS


def _direct_p(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """The test as it was written first: signs drawn as int8 and multiplied out."""
    d = b - a
    n, obs = d.size, float(d.mean())
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_CELLS // n)
    extreme = 0
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        perm = (signs * d).mean(axis=1)
        extreme += int(np.count_nonzero(np.abs(perm) >= abs(obs) - 1e-12))
    p = (1 + extreme) / (1 + n_resamples)
    return 1.0 if obs == 0.0 and np.all(d == 0) else min(1.0, p)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 37, 100, 1001, 5000])
@pytest.mark.parametrize("kind", ["binary", "graded", "continuous"])
def test_same_p_value_as_the_signs_multiplied_out(n: int, kind: str) -> None:
    rng = np.random.default_rng(n)
    if kind == "binary":
        a, b = (rng.random(n) < 0.6).astype(float), (rng.random(n) < 0.64).astype(float)
    elif kind == "graded":
        a, b = rng.integers(0, 3, n) / 2, rng.integers(0, 3, n) / 2
    else:
        a = rng.random(n)
        b = np.clip(a + rng.normal(0.01, 0.2, n), 0, 1)
    for seed, resamples in ((42, 10000), (7, 999), (123, 1)):
        got = paired_test(a, b, seed=seed, n_resamples=resamples)
        assert got.p_value == _direct_p(a, b, resamples, seed), (kind, n, seed)
