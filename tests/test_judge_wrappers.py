"""make_judge applies the wrappers cost/ and privacy/ register (judges import neither): they
are there in a fresh process that never imported them, in their order, and a wrapper of
one's own is one registration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ragmeter.judges import JudgeConfig, make_judge
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper

ROOT = Path(__file__).resolve().parents[1]


def test_a_fresh_process_gets_pseudonymisation_and_the_budget(tmp_path: Path) -> None:
    record = tmp_path / "replies.jsonl"
    record.write_text("", encoding="utf-8")
    code = f"""
import json, sys
from ragmeter.judges import JudgeConfig, make_judge
before = sorted(m for m in sys.modules if m.startswith(("ragmeter.cost", "ragmeter.privacy")))
cfg = JudgeConfig(backend="recorded", record_path={str(record)!r}, pseudonymise=True)
plain = make_judge(JudgeConfig(backend="recorded", record_path={str(record)!r}))
from ragmeter.cost import Budget, budget_scope
with budget_scope(Budget(max_calls=5)):
    guarded = make_judge(cfg)
print(json.dumps([before, type(plain).__name__, type(guarded).__name__,
                  type(guarded.inner).__name__]))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, cwd=tmp_path).stdout
    before, plain, outer, inner = json.loads(out.strip().splitlines()[-1])
    assert before == []                               # nothing of cost or privacy loaded yet
    assert plain == "RecordedJudge"                   # no wrapper active: the judge itself
    # the budget outside pseudonymisation: it counts what is really sent
    assert (outer, inner) == ("BudgetJudge", "PseudonymisingJudge")


def test_a_wrapper_of_ones_own_is_one_registration(tmp_path: Path) -> None:
    record = tmp_path / "replies.jsonl"
    record.write_text("", encoding="utf-8")
    seen: list[Any] = []

    class Logged:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

    def wrap(judge: Any, config: JudgeConfig) -> Any:
        seen.append(config.name)
        return Logged(judge)

    with WRAPPERS.scoped():
        WRAPPERS.register("log", JudgeWrapper(order=30, wrap=wrap))
        judge = make_judge(JudgeConfig(name="j1", backend="recorded", record_path=str(record)))
    assert isinstance(judge, Logged) and seen == ["j1"]
    assert not isinstance(make_judge(JudgeConfig(backend="recorded",
                                                 record_path=str(record))), Logged)
    assert {"estimate", "budget", "pseudonymise"} <= set(WRAPPERS.names())
