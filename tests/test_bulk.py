"""Fewer garbage collections inside bulk steps: the young generation's threshold raised for a
block and the application's thresholds back after it, nested, in threads, on errors; judged
planning and batch folders run inside such a block."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.bulk import YOUNG_THRESHOLD, fewer_collections
from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judges import JudgeConfig, ScriptedJudge, make_judge
from ragmeter.judges.batchfiles import batch_scope
from ragmeter.judges.mock_batches import run_batch_file
from ragmeter.judges.mock_server import MockConfig


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[tuple[int, ...]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_a_block_raises_the_young_threshold_and_puts_the_old_ones_back() -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        with fewer_collections():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)   # the outer block still open
    assert gc.get_threshold() == (700, 10, 10)


def test_an_error_inside_still_restores() -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("setting", [(200_000, 20, 20), (0, 10, 10)])
def test_an_application_setting_above_it_or_off_is_left_alone(setting: tuple[int, ...]) -> None:
    gc.set_threshold(*setting)
    with fewer_collections():
        assert gc.get_threshold() == setting
    assert gc.get_threshold() == setting


def test_overlapping_blocks_in_threads_restore_once_the_last_one_ends() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with fewer_collections():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    with fewer_collections():
        t.start()
        assert inside.wait(10)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD   # the thread's block is still open
    release.set()
    t.join(10)
    assert gc.get_threshold() == (700, 10, 10)


def _samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"What is rule {i}?", response=f"Rule {i} says yes.",
                   retrieved_contexts=[f"Rule {i} says yes."], reference=f"Rule {i}: yes.")
            for i in range(n)]


def test_judged_planning_runs_with_fewer_collections() -> None:
    seen: list[int] = []

    def script(req: Any) -> dict[str, Any]:
        seen.append(gc.get_threshold()[0])
        return {"relevance": 2, "reason": "fine"}

    evaluate_generation(_samples(3), ["context_relevance"], judge=ScriptedJudge(script))
    assert seen and set(seen) == {YOUNG_THRESHOLD}
    assert gc.get_threshold() == (700, 10, 10)


def test_a_batch_folder_is_written_and_collected_with_fewer_collections(tmp_path: Path) -> None:
    cfg = JudgeConfig(name="bench", backend="mock", base_url="http://127.0.0.1:9/v1",
                      model="mock", api_key_env=None, cache_dir=str(tmp_path / "cache"))
    folder = tmp_path / "batches"
    with batch_scope("write", folder) as session:
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        evaluate_generation(_samples(2), ["context_relevance"], judge=make_judge(cfg))
    assert session.report.requests == 2
    assert gc.get_threshold() == (700, 10, 10)
    (folder / "results").mkdir()
    for f in session.report.files:   # the fake server's offline batch runner answers them
        run_batch_file(folder / f["path"], folder / "results" / Path(f["path"]).name,
                       MockConfig())
    with batch_scope("collect", folder) as got:
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        make_judge(cfg)
    assert got.report.matched == 2
    assert gc.get_threshold() == (700, 10, 10)
