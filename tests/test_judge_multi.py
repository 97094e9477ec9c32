"""Several judges: combination of replies, aggregation, agreement, Krippendorff's alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragmeter.judges import (
    JudgeRequest,
    MultiJudge,
    ScriptedJudge,
    aggregate_scores,
    krippendorff_alpha,
    pairwise_agreement,
)
from ragmeter.judges.multi import combine_data, score_matrix

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"},
                                           "score": {"type": "number"}},
          "required": ["verdict", "score"]}


def req(i: int) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": str(i)},), schema=SCHEMA,
                        prompt_version="multi@1")


def judge(name: str, verdicts: list[str], scores: list[float], bad: set[int] = frozenset()
          ) -> ScriptedJudge:
    def fn(r: JudgeRequest) -> object:
        i = int(r.messages[0]["content"])
        if i in bad:
            return "not json"
        return {"verdict": verdicts[i], "score": scores[i]}

    return ScriptedJudge(fn, name=name, model=f"model-{name}")


def test_multi_judge_majority_and_per_judge_replies() -> None:
    a = judge("a", ["yes", "no", "yes"], [1, 0, 2])
    b = judge("b", ["yes", "yes", "no"], [2, 0, 2])
    c = judge("c", ["no", "yes", "no"], [0, 1, 1], bad={2})
    multi = MultiJudge([a, b, c], combine="majority")
    out = multi.ask_many([req(i) for i in range(3)])
    assert [r.data["verdict"] for r in out] == ["yes", "yes", "yes"]  # item 2: a vs b tie → a
    assert out[0].data["score"] == 1  # all differ → first judge's value
    assert set(out[0].extra["per_judge"]) == {"a", "b", "c"}
    assert out[2].extra["n_scored"] == 2
    assert out[2].extra["per_judge"]["c"].reason == "parse_error"
    assert multi.model == "model-a+model-b+model-c"
    assert multi.last_stats.calls == 3 * 3 + 1  # c's parse_error on item 2 had one repair


def test_multi_judge_mean_and_min_judges() -> None:
    a = judge("a", ["yes"] * 2, [1, 0], bad={1})
    b = judge("b", ["yes"] * 2, [2, 1], bad={1})
    out = MultiJudge([a, b], combine="mean").ask_many([req(0), req(1)])
    assert out[0].data["score"] == 1.5
    assert out[1].reason == "parse_error" and "0 of 2 judges scored" in (out[1].detail or "")
    strict = MultiJudge([judge("a", ["yes"], [1]), judge("b", ["no"], [0], bad={0})],
                        min_judges=2).ask_many([req(0)])
    assert not strict[0].ok


def test_combine_data_median() -> None:
    assert combine_data([{"s": 1}, {"s": 5}, {"s": 2}], "median") == {"s": 2.0}


def test_score_matrix_and_aggregate() -> None:
    a = judge("a", ["yes"] * 3, [1, 0, 2])
    b = judge("b", ["yes"] * 3, [2, 0, 2], bad={1})
    import asyncio

    per = asyncio.run(MultiJudge([a, b]).ask_all([req(i) for i in range(3)]))
    names, mat = score_matrix(per, lambda d: d["score"])
    assert names == ["a", "b"]
    assert np.isnan(mat[1, 1]) and mat[0, 1] == 0
    np.testing.assert_allclose(aggregate_scores(mat, "mean"), [1.5, 0.0, 2.0])
    np.testing.assert_allclose(aggregate_scores(mat, "median"), [1.5, 0.0, 2.0])
    assert np.isnan(aggregate_scores(np.full((2, 1), np.nan))[0])


def test_pairwise_agreement() -> None:
    m = np.array([[1, 0, 1, np.nan], [1, 1, 1, 0], [1, 0, 0, 0]], dtype=float)
    out = pairwise_agreement(m, ["a", "b", "c"])
    assert out["pairs"]["a~b"] == {"agreement": pytest.approx(2 / 3), "n": 3}
    assert out["pairs"]["b~c"]["agreement"] == pytest.approx(0.5)
    assert out["mean"] == pytest.approx((2 / 3 + 2 / 3 + 0.5) / 3)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_alpha_matches_reference(level: str) -> None:
    kd = pytest.importorskip("krippendorff", reason="reference package (test extra)")
    rng = np.random.default_rng(7)
    for _ in range(5):
        truth = rng.integers(0, 3, size=25)
        m = np.vstack([np.where(rng.random(25) < 0.7, truth, rng.integers(0, 3, size=25))
                       for _ in range(3)]).astype(float) + 1.0
        m[rng.random(m.shape) < 0.15] = np.nan
        ours = krippendorff_alpha(m, level)  # type: ignore[arg-type]
        ref = kd.alpha(reliability_data=m, level_of_measurement=level)
        assert ours == pytest.approx(ref, abs=1e-9)


def test_krippendorff_known_value_and_degenerate() -> None:
    # Krippendorff (2011) worked example, nominal: alpha = 0.743
    m = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ])
    assert krippendorff_alpha(m, "nominal") == pytest.approx(0.743, abs=1e-3)
    assert krippendorff_alpha(np.ones((2, 5))) != krippendorff_alpha(np.ones((2, 5)))  # NaN
    assert math.isnan(krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])))
    assert krippendorff_alpha(np.array([[0, 1, 0, 1], [0, 1, 0, 1]], dtype=float)) == 1.0


def test_agreement_report_counts_unscored() -> None:
    import asyncio

    from ragmeter.judges import agreement

    a = judge("a", ["yes", "no", "yes", "no"], [0] * 4)
    b = judge("b", ["yes", "no", "no", "no"], [0] * 4, bad={3})
    per = asyncio.run(MultiJudge([a, b]).ask_all([req(i) for i in range(4)]))
    rep = agreement(per, lambda d: 1.0 if d["verdict"] == "yes" else 0.0)
    assert rep["unscored"] == {"a": 0, "b": 1} and rep["n_items"] == 4
    assert rep["pairwise"]["a~b"] == {"agreement": pytest.approx(2 / 3), "n": 3}
    assert -1.0 <= rep["krippendorff_alpha"] <= 1.0
