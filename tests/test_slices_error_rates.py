"""The seeded simulation of benchmarks/slice_error_rates.py, small: under the null the
adjusted per-slice tests keep their error rate (the unadjusted ones do not), and per-slice
intervals cover."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "slice_error_rates.py"


def _bench():
    spec = importlib.util.spec_from_file_location("slice_error_rates", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod                  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_null_error_rates_and_coverage() -> None:
    b = _bench()
    for slices, sims in ((5, 200), (20, 60)):
        r = b.simulate(slices, sims, seed=1)
        lo, _ = b.wilson(r.fwer_holm * sims, sims)
        assert lo <= 0.05, (slices, r)            # consistent with a family-wise error ≤ 5 %
        assert r.fdr_bh <= r.fwer_raw
        assert r.coverage_t >= 0.93 and r.coverage_wilson >= 0.93, r
        if slices == 20:
            assert r.fwer_raw >= 0.4, r           # looking at 20 slices unadjusted misleads


def test_alternative_finds_regressed_slices() -> None:
    b = _bench()
    r = b.simulate(5, 40, alternative=True, seed=1)
    assert r.power_holm is not None and r.power_holm >= 0.6, r
    assert "| alternative | 5 | 40 |" in b.table([r])
