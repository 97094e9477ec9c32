"""``MetricResult.concat`` and ``MetricResult.unscored`` equal ``from_scores`` over the records
they stand for (the batched evaluation merges its slices with ``concat``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.results.records import MetricResult, SampleScore, Signature

SIG = Signature.make(metric="m", dataset="d")

_score = st.one_of(
    st.tuples(st.floats(0, 1), st.none(), st.none()),
    st.tuples(st.none(), st.sampled_from(["judge_error", "missing_field", ""]), st.none()),
    st.tuples(st.floats(0, 1), st.none(), st.fixed_dictionaries({"n": st.integers(0, 3)})),
)


def _part(scores: list[tuple[float | None, str | None, dict[str, int] | None]],
          start: int) -> MetricResult:
    return MetricResult.from_scores("m", [SampleScore(f"s{start + i}", v, why, det)
                                          for i, (v, why, det) in enumerate(scores)], SIG)


def _same(a: MetricResult, b: MetricResult) -> None:
    assert a.sample_ids == b.sample_ids and a.reasons == b.reasons and a.details == b.details
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert a.to_dict() == b.to_dict()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_score, max_size=6), min_size=1, max_size=4))
def test_concat_is_from_scores_over_the_parts_records(
        parts_scores: list[list[tuple[float | None, str | None, dict[str, int] | None]]]
) -> None:
    parts, start = [], 0
    for scores in parts_scores:
        parts.append(_part(scores, start))
        start += len(scores)
    joined = MetricResult.concat("m", parts, SIG, counts={"c": 1}, seed=7)
    ref = MetricResult.from_scores("m", (r for p in parts for r in p.records()), SIG,
                                   counts={"c": 1}, seed=7)
    _same(joined, ref)


def test_unscored_is_from_scores_of_one_reason() -> None:
    ids = [f"s{i}" for i in range(5)]
    got = MetricResult.unscored("m", ids, "batch_pending", SIG, seed=3)
    ref = MetricResult.from_scores("m", [SampleScore(i, None, "batch_pending") for i in ids],
                                   SIG, seed=3)
    _same(got, ref)
    assert got.aggregate.n_unscored == 5 and got.aggregate.mean is None


def test_a_nan_without_its_reason_is_still_refused() -> None:
    with pytest.raises(ValueError, match="need a reason"):
        MetricResult("m", ["a", "b"], np.array([0.5, math.nan]), SIG, reasons={})
