"""The generation tier accepts several judges (``judges: [a, b, c]``): they judge as a jury."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import ConfigError
from ragmeter.judges.multi import MultiJudge
from ragmeter.runner.config import parse_config
from ragmeter.tiers.context import TierContext
from ragmeter.tiers.generation import tier_judge


def _cfg(tmp_path: Path, tier: dict) -> dict:
    (tmp_path / "s.jsonl").write_text('{"id": "q1", "user_input": "q", "response": "a"}\n',
                                      encoding="utf-8")
    return {"name": "jury", "datasets": [{"name": "main", "path": "s.jsonl"}],
            "judges": [{"name": n, "backend": "mock"} for n in ("a", "b", "c")],
            "tiers": [tier]}


def _ctx(tmp_path: Path, tier: dict) -> TierContext:
    cfg = parse_config(_cfg(tmp_path, tier), tmp_path)
    return TierContext(cfg, cfg.tiers[0], "h", [])


def test_several_judges_make_a_jury(tmp_path: Path) -> None:
    tier = {"name": "generation", "judges": ["a", "b", "c"],
            "options": {"vote": "weighted_mean", "weights": [1, 1, 2]}}
    ctx = _ctx(tmp_path, tier)
    judge = tier_judge(ctx, ctx.tier.options)
    assert isinstance(judge, MultiJudge)
    assert judge.members == ["a", "b", "c"]
    assert judge.jury_signature()["vote"] == "weighted_mean~1/1/2"


def test_one_judge_stays_one_judge(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, {"name": "generation", "judges": ["b"]})
    judge = tier_judge(ctx, ctx.tier.options)
    assert not isinstance(judge, MultiJudge) and judge.name == "b"


def test_bad_vote_and_weights_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vote"):
        parse_config(_cfg(tmp_path, {"name": "generation", "judges": ["a", "b"],
                                     "options": {"vote": "mode"}}), tmp_path)
    ctx = _ctx(tmp_path, {"name": "generation", "judges": ["a", "b"],
                          "options": {"weights": [1, 2, 3]}})
    with pytest.raises(ConfigError, match="weights"):
        tier_judge(ctx, ctx.tier.options)
