"""Drift check: a fixed subset of the judge benchmark re-run against a stored card; a drop in
per-item agreement is a failure (exit 1), an unchanged judge passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import ConfigError
from ragmeter.judge_trust.bench import BenchItem, load_bench, run_bench
from ragmeter.judge_trust.card import JudgeCard
from ragmeter.judge_trust.drift import drift_check, drift_subset, mcnemar_drop
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.scripted import ScriptedJudge


def _items() -> list[BenchItem]:
    return [i for i in load_bench(lang="all") if i.task == "faithfulness"]


def _judge(items: list[BenchItem], flip_every: int = 0) -> ScriptedJudge:
    """The label (an oracle), or the label flipped on every ``flip_every``-th item."""
    known = sorted(((i.answer or "", i.context or "", k, i) for k, i in enumerate(items)),
                   key=lambda t: -len(t[0]) - len(t[1]))

    def fn(req: JudgeRequest) -> dict[str, Any]:
        user = req.messages[-1]["content"]
        _, _, k, it = next(t for t in known if t[0] in user and t[1] in user)
        yes = it.label_value >= 0.5
        if flip_every and k % flip_every == 0:
            yes = not yes
        return {"answer_claims": [{"id": 1, "in_context": "yes" if yes else "no"}]}
    return ScriptedJudge(fn, name="j")


def test_card_stores_per_item_correctness() -> None:
    items = _items()[:40]
    card = run_bench(_judge(items, flip_every=4), items, n_boot=50).card
    correct = card.metrics["faithfulness"].correct
    assert len(correct) == 40 and sum(v == 0 for v in correct.values()) == 10
    back = JudgeCard.from_dict(card.to_dict())
    assert back.metrics["faithfulness"].correct == correct


def test_same_judge_passes_a_changed_judge_fails() -> None:
    items = _items()
    card = run_bench(_judge(items), items, n_boot=50).card
    same = drift_check(_judge(items), card, items)
    assert same.n == 50 and same.lost == 0 and not same.drifted and same.p_value == 1.0
    worse = drift_check(_judge(items, flip_every=3), card, items)
    assert worse.lost >= 15 and worse.gained == 0 and worse.drifted
    assert worse.accuracy_now < worse.accuracy_then
    subset, _ = drift_subset(card, items)
    assert [i.id for i in subset] == list(worse.item_ids)    # fixed by the card's seed


def test_mcnemar_drop() -> None:
    assert mcnemar_drop(0, 0) == 1.0
    assert mcnemar_drop(5, 0) == pytest.approx(1 / 32)
    assert mcnemar_drop(3, 3) > 0.5


def test_a_card_without_item_correctness_is_refused() -> None:
    items = _items()[:10]
    card = run_bench(_judge(items), items, n_boot=20).card
    for mc in card.metrics.values():
        mc.correct = {}
    with pytest.raises(ConfigError, match="per-item correctness"):
        drift_subset(card, items)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "COLUMNS": "200", "RAGMETER_CACHE_DIR": str(cwd / "cache"),
           "PYTHONPATH": src}
    return subprocess.run([sys.executable, "-m", "ragmeter", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def test_cli_check_against_card(tmp_path: Path) -> None:
    made = _cli("judge", "bench", "--judge-backend", "mock", "--task", "faithfulness",
                "--lang", "all", "--out", "card.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    (tmp_path / "m.yaml").write_text("name: m\nbackend: mock\n", encoding="utf-8")
    ok = _cli("--json", "judge", "check", "--judge-config", "m.yaml", "--against", "card.json",
              cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    (row,) = json.loads(ok.stdout)["drift"]
    assert row["n"] == 50 and not row["drifted"]
    data = json.loads((tmp_path / "card.json").read_text())
    for m in data["cards"][0]["metrics"].values():     # pretend it was always right
        m["correct"] = {k: 1 for k in m["correct"]}
    (tmp_path / "better.json").write_text(json.dumps(data), encoding="utf-8")
    bad = _cli("judge", "check", "--judge-config", "m.yaml", "--against", "better.json",
               cwd=tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "dropped significantly" in bad.stderr
