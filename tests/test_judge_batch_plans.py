"""A later batch round does not plan again what its plan's earlier rounds got answered: calls
all answered that no call still to ask needs (contexts, answer) are neither rebuilt nor read;
a changed sample, or an answer gone from the cache, makes the plan whole again; the values after
the cycle are the online run's."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation
from ragmeter.judges import JudgeConfig, make_judge
from ragmeter.judges.batchfiles import batch_scope
from ragmeter.judges.batchfiles.rounds import BatchSession, WriteReport
from ragmeter.judges.mock_batches import run_batch_file

DEAD = "http://127.0.0.1:9/v1"   # nothing listens: a run that calls fails
METRICS = list(JUDGED_DEFAULT)


def _samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"question {i} about topic {i % 5}?",
                   response=f"answer {i}. It names topic {i % 5}.",
                   retrieved_contexts=[f"context {i} a", f"context {i} b"],
                   reference=f"reference {i}. Topic {i % 5}.") for i in range(n)]


@pytest.fixture()
def made(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The requests the batch judge is given while rounds are written, by call kind."""
    seen: Counter[str] = Counter()
    answer = BatchSession.answer

    def counting(self: BatchSession, engine: Any, requests: list[Any]) -> Any:
        if self.mode == "write":
            seen.update(r.kind for r in requests)
        return answer(self, engine, requests)

    monkeypatch.setattr(BatchSession, "answer", counting)
    return seen


def _cycle(folder: Path, cfg: JudgeConfig, samples: list[Sample], rnd: int) -> WriteReport:
    """Write a round, answer it with the fake provider, collect it."""
    with batch_scope("write", folder) as w:
        evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    report: WriteReport = w.report
    if report.round is None:
        return report
    (folder / "results").mkdir(exist_ok=True)
    for i, f in enumerate(report.files):
        run_batch_file(folder / f["path"], folder / "results" / f"r{rnd}-{i}.jsonl")
    with batch_scope("collect", folder) as c:
        make_judge(cfg)
    assert c.report.ok, c.report.summary()
    return report


def _forget(cache_dir: Path, key: str) -> None:
    """Remove one stored reply from a judge cache behind the batch folder's back."""
    db = next(cache_dir.glob("*.sqlite"))
    with sqlite3.connect(db) as conn:
        table = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchone()[0]
        assert conn.execute(f"DELETE FROM {table} WHERE key = ?", (key,)).rowcount == 1


def _values(result: Any) -> dict[str, Any]:
    return {k: v.to_dict() for k, v in result.results.items()}


def test_round_two_makes_only_the_calls_that_need_round_one(
        tmp_path: Path, made: Counter[str]) -> None:
    samples = _samples(9)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    r1 = _cycle(tmp_path / "b", cfg, samples, 1)
    assert r1.requests == 27 and made == {"claims": 9, "contexts": 9, "answer": 9}
    made.clear()
    r2 = _cycle(tmp_path / "b", cfg, samples, 2)
    # contexts and answer: all answered, nothing needs them: not made again
    assert made == {"claims": 9, "verify": 9}
    assert (r2.round, r2.requests, r2.answered) == (2, 9, 27)
    assert r2.by_prompt == {"gen.verify/v1": 9}
    made.clear()
    r3 = _cycle(tmp_path / "b", cfg, samples, 3)
    assert r3.round is None and r3.answered == 36 and sum(made.values()) == 0
    # the ordinary run from the cache: every value, no call (the judge's port is dead)
    batch = evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    assert all(r.aggregate.n_unscored == 0 for r in batch.results.values())
    ref = cfg.with_(cache_dir=str(tmp_path / "ref"))
    for rnd in (1, 2, 3):   # the same cycle planning every call in every round
        with batch_scope("write", tmp_path / "ref-b") as w:
            evaluate_generation(samples, METRICS, judge=make_judge(ref))
            w.manifest.plans.clear()
        if w.report.round is None:
            break
        (tmp_path / "ref-b" / "results").mkdir(exist_ok=True)
        run_batch_file(tmp_path / "ref-b" / w.report.files[0]["path"],
                       tmp_path / "ref-b" / "results" / f"{rnd}.jsonl")
        with batch_scope("collect", tmp_path / "ref-b"):
            make_judge(ref)
    assert _values(batch) == _values(evaluate_generation(samples, METRICS,
                                                         judge=make_judge(ref)))


def test_a_changed_sample_makes_its_plan_whole_again(tmp_path: Path,
                                                     made: Counter[str]) -> None:
    samples = _samples(6)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    _cycle(tmp_path / "b", cfg, samples, 1)
    samples[2] = Sample(id="s2", user_input=samples[2].user_input, response=samples[2].response,
                        retrieved_contexts=["a context that changed"],
                        reference=samples[2].reference)
    made.clear()
    r2 = _cycle(tmp_path / "b", cfg, samples, 2)
    assert made == {"claims": 6, "contexts": 6, "answer": 6, "verify": 6}
    # the changed sample's contexts call is new; its verification too (it reads the contexts)
    assert r2.by_prompt == {"gen.contexts/v1": 1, "gen.verify/v1": 6}
    r3 = _cycle(tmp_path / "b", cfg, samples, 3)
    assert r3.round is None
    batch = evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    assert all(r.aggregate.n_unscored == 0 for r in batch.results.values())


def test_an_answer_gone_from_the_cache_makes_the_plan_whole(tmp_path: Path,
                                                            made: Counter[str]) -> None:
    samples = _samples(6)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    _cycle(tmp_path / "b", cfg, samples, 1)
    # one stored contexts reply removed behind the folder's back (a cache cleared in part)
    index = [json.loads(line) for line in
             (tmp_path / "b" / "round-01" / "index.jsonl").read_text().splitlines()]
    key = next(r["k"] for r in index if r["kd"] == "contexts")
    _forget(tmp_path / "c", key)
    made.clear()
    r2 = _cycle(tmp_path / "b", cfg, samples, 2)
    # the contexts calls are not all answered: made again; the answer calls are
    assert made == {"claims": 6, "contexts": 6, "verify": 6}
    assert r2.by_prompt == {"gen.contexts/v1": 1, "gen.verify/v1": 6}
    assert key in (tmp_path / "b" / r2.files[0]["path"]).read_text()
    while _cycle(tmp_path / "b", cfg, samples, 9).round is not None:
        pass
    batch = evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    assert all(r.aggregate.n_unscored == 0 for r in batch.results.values())


def test_an_answer_from_before_the_folder_gone_asks_the_plan_whole(
        tmp_path: Path, made: Counter[str]) -> None:
    """A request answered before round 1 was written is in no round's index: found unanswered
    in a later round, the plan is not the recorded one and is asked whole."""
    samples = _samples(4)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    # round 1 of another folder, for the first sample only, answers its first calls
    pre = tmp_path / "pre"
    with batch_scope("write", pre) as w:
        evaluate_generation(samples[:1], METRICS, judge=make_judge(cfg))
    (pre / "results").mkdir()
    run_batch_file(pre / w.report.files[0]["path"], pre / "results" / "r.jsonl")
    with batch_scope("collect", pre):
        make_judge(cfg)
    r1 = _cycle(tmp_path / "b", cfg, samples, 1)     # those calls: answered, not written
    assert (r1.requests, r1.answered) == (10, 3)   # with its verification
    pre_key = next(r["k"] for r in map(json.loads, (pre / "round-01" / "index.jsonl")
                                       .read_text().splitlines()) if r["kd"] == "claims")
    _forget(tmp_path / "c", pre_key)
    made.clear()
    r2 = _cycle(tmp_path / "b", cfg, samples, 2)
    # asked with contexts and answer left out, the lost claims reply was found: asked whole
    assert made["contexts"] == 4 and made["answer"] == 4
    assert r2.by_prompt.get("gen.claims/v1") == 1
    while _cycle(tmp_path / "b", cfg, samples, 9).round is not None:
        pass
    batch = evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    assert all(r.aggregate.n_unscored == 0 for r in batch.results.values())


def test_a_broken_index_line_is_named(tmp_path: Path) -> None:
    from ragmeter.errors import DataError
    from ragmeter.judges.batchfiles.manifest import Manifest, load_index

    samples = _samples(3)
    cfg = JudgeConfig(name="j", backend="mock", base_url=DEAD, cache_dir=str(tmp_path / "c"))
    with batch_scope("write", tmp_path / "b"):
        evaluate_generation(samples, METRICS, judge=make_judge(cfg))
    manifest = Manifest.load(tmp_path / "b")
    assert manifest is not None and len(load_index(tmp_path / "b", manifest)) == 9
    path = tmp_path / "b" / "round-01" / "index.jsonl"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:20]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_index(tmp_path / "b", manifest)
    assert "round-01/index.jsonl:5: " in str(err.value)
