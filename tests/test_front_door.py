"""`import ragmeter` gives the verbs and nouns, lazily: importing the package stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ragmeter

SRC = str(Path(ragmeter.__file__).resolve().parents[1])


@pytest.mark.parametrize(("name", "module"), [
    ("evaluate_retrieval", "ragmeter.retrieval.evaluate"),
    ("evaluate_generation", "ragmeter.generation.evaluate"),
    ("run_benchmark", "ragmeter.runner.engine"),
    ("load_config", "ragmeter.runner.config"),
    ("make_judge", "ragmeter.judges.factory"),
    ("load_samples", "ragmeter.data.loaders"),
    ("JudgeConfig", "ragmeter.judges.config"),
])
def test_verbs_at_the_front_door(name: str, module: str) -> None:
    import importlib

    assert getattr(ragmeter, name) is getattr(importlib.import_module(module), name)
    assert name in ragmeter.__all__ and name in dir(ragmeter)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ragmeter.nope  # noqa: B018


def test_import_is_lazy() -> None:
    code = ("import sys, ragmeter; heavy = ['ragmeter.judges', 'ragmeter.runner.engine', "
            "'ragmeter.retrieval.evaluate', 'ragmeter.generation.evaluate']; "
            "print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": SRC}, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_readme_quickstart_runs() -> None:
    fix = Path(__file__).parent / "fixtures" / "retrieval" / "evalset.jsonl"  # with rankings
    samples = ragmeter.load_samples(fix).samples
    result = ragmeter.evaluate_retrieval(samples, metrics=["hit_rate@1,5", "mrr"])
    assert [r.metric for r in result][:3] == ["hit_rate@1", "hit_rate@5", "mrr"]


DEMO = Path(__file__).parents[1] / "src" / "ragmeter" / "demo" / "data"


def test_front_door_rejects_evalset_without_ranking() -> None:
    import ragmeter
    from ragmeter.data.sample import Sample
    from ragmeter.errors import DataError

    evalset = ragmeter.load_samples(DEMO / "evalset.jsonl").samples
    with pytest.raises(DataError, match="retrieved_ids"):
        ragmeter.evaluate_retrieval(evalset, metrics=["hit_rate@1", "mrr"])
    # one query without a ranking among others keeps the documented policy: scored 0, counted
    ranked = [Sample(id="a", user_input="q", gold_chunk_ids=["d1"], retrieved_ids=["d1"]),
              Sample(id="b", user_input="q", gold_chunk_ids=["d2"])]
    res = ragmeter.evaluate_retrieval(ranked, metrics=["hit_rate@1"])
    mr = res["hit_rate@1"]
    assert mr.mean == 0.5 and len(mr.sample_ids) == 2
    # a ranking that found nothing ([]) is a ranking: scored 0, not "no ranking"
    empty = [Sample(id="a", user_input="q", gold_chunk_ids=["d1"], retrieved_ids=[])]
    assert ragmeter.evaluate_retrieval(empty, metrics=["hit_rate@1"])["hit_rate@1"].mean == 0.0
