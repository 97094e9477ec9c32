"""A judged metric declared once is scored by evaluate_generation and graded on the judge
benchmark with no further edit.

``tests/fixtures/generation/answer_focus.py`` declares, in one file, a new judge question
(``focused``), the call that asks it and the metric ``answer_focus`` (the worked example of
docs/ARCHITECTURE.md). The judges are rule-based scripts run through the real judge engine
(ScriptedJudge); the calls, the registry of metrics and the registry of calls are restored
after each test.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.data.sample import Sample
from ragmeter.errors import DataError
from ragmeter.generation.evaluate import evaluate_generation
from ragmeter.judge_trust import bench
from ragmeter.judge_trust.bench import (
    BenchItem,
    bench_tasks,
    compare_bench,
    item_request,
    load_bench,
    run_bench,
)
from ragmeter.judges.base import JudgeRequest
from ragmeter.judges.scripted import ScriptedJudge
from ragmeter.metrics import registry
from ragmeter.metrics.judged import calls as C
from ragmeter.metrics.judged import label_scale_of
from ragmeter.metrics.judged.rows import JUDGED_DEFAULT

FIXTURES = Path(__file__).parent / "fixtures" / "generation"
sys.path.insert(0, str(FIXTURES))
from fake_judge import fenced, make_script, paris  # noqa: E402


@pytest.fixture
def answer_focus(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Import the one-file declaration afresh; every registry is restored afterwards."""
    registry.list_specs()  # built-in metrics registered first
    calls, questions = list(C.CALLS), dict(C.QUESTIONS)
    spec = importlib.util.spec_from_file_location("answer_focus_decl",
                                                  FIXTURES / "answer_focus.py")
    assert spec is not None and spec.loader is not None
    with registry.scoped():
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        yield
    C.CALLS[:] = calls
    C.QUESTIONS.clear()
    C.QUESTIONS.update(questions)


def focus_script(fallback: Any = None) -> Any:
    """``gen.focus/v1``: focused unless the answer carries an ``[off]`` marker."""
    other = fallback or make_script()

    def script(req: JudgeRequest) -> Any:
        if req.schema.get("title") == "gen.focus/v1":
            answer = fenced(req.messages[1]["content"])["answer"][0]
            return {"focused": "no" if "[off]" in answer else "yes"}
        return other(req)
    return script


def test_the_one_file_metric_is_scored_by_evaluate_generation(answer_focus) -> None:
    samples = [paris(i) for i in range(4)] + [
        Sample(id="off", user_input="Where is Paris?",
               response="Paris is in France. [off] Buy our tours!",
               reference="Paris is in France.", retrieved_contexts=["[rel=2] Paris."])]
    judge = ScriptedJudge(focus_script())
    res = evaluate_generation(samples, [*JUDGED_DEFAULT, "answer_focus"], judge=judge,
                              embedder=lambda name: _Const())
    assert judge.scripted.calls == 25                       # 4 + the one new call per sample
    assert res.meta["judge_calls"]["by_prompt"]["gen.focus/v1"] == 5
    assert res["answer_focus"].values.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert res["answer_focus"].signature.get("prompt") == "gen.focus/v1"
    assert res["faithfulness"].mean is not None
    alone = ScriptedJudge(focus_script())
    evaluate_generation(samples[:2], ["answer_focus"], judge=alone)
    assert alone.scripted.calls == 2                        # only the question it needs
    assert label_scale_of("answer_focus") == "binary"
    assert "answer_focus" not in JUDGED_DEFAULT             # declared outside ROWS: opt-in


class _Const:
    name = "const"

    def embed(self, texts: list[str], kind: str = "symmetric") -> Any:
        import numpy as np

        return np.ones((len(texts), 4)) / 2.0


def _items_file(tmp_path: Path) -> Path:
    recs = []
    for i in range(6):
        off = i % 2 == 1
        recs.append({"id": f"f{i}", "lang": "en" if i < 4 else "ru", "task": "answer_focus",
                     "kind": "off" if off else "on", "label": "no" if off else "yes",
                     "question": f"Where is town {i}?",
                     "answer": f"Town {i} is on the river." + (" [off] Buy tours!" if off
                                                               else "")})
    recs.append({"id": "faith1", "lang": "en", "task": "faithfulness", "kind": "numbers",
                 "label": "yes", "context": "Town 1 has 5 bridges.",
                 "answer": "Town 1 has 5 bridges."})
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in recs) + "\n",
                    encoding="utf-8")
    return path


def _oracle(req: JudgeRequest) -> Any:
    title = req.schema.get("title", "")
    if title.startswith("gen.verify"):
        return {"answer_claims": [{"id": 1, "in_context": "yes"}]}
    return focus_script(lambda r: pytest.fail(f"unexpected request {title}"))(req)


def test_the_one_file_metric_is_graded_on_the_judge_benchmark(answer_focus,
                                                              tmp_path: Path) -> None:
    assert "answer_focus" in bench_tasks()
    assert "answer_focus" not in Path(bench.__file__).read_text(encoding="utf-8")
    items = load_bench(_items_file(tmp_path))
    focus = [i for i in items if i.task == "answer_focus"]
    assert len(focus) == 6 and focus[0].scale == "binary"
    req = item_request(focus[1], binary=False)
    assert req.prompt_version == "gen.focus/v1" and req.metric == "answer_focus"
    assert req.max_tokens == bench.MAX_TOKENS and "[off]" in req.messages[1]["content"]

    judge = ScriptedJudge(_oracle, name="oracle")
    run = run_bench(judge, items, n_boot=200)
    assert judge.scripted.calls == 7                        # one call per item
    mc = run.card.metrics["answer_focus"]
    assert mc.n == 6 and mc.n_unscored == 0
    assert mc.stats["accuracy"].value == 1.0
    assert "gen.focus/v1" in run.card.prompt_versions
    assert run.card.meta["by_kind"]["answer_focus"]["en:off"] == {
        "n": 2, "unscored": 0, "accuracy": 1.0}

    lenient = run_bench(ScriptedJudge(lambda r: {"focused": "yes", "answer_claims": [
        {"id": 1, "in_context": "yes"}]}, name="lenient"), items, repeats=2, n_boot=200)
    assert lenient.card.metrics["answer_focus"].stats["accuracy"].value == 0.5
    assert lenient.card.metrics["answer_focus"].flaky["flip_rate"] == 0.0
    rows = [r for r in compare_bench([lenient, run], n_resamples=500)
            if r["task"] == "answer_focus"]
    assert [r["judge"] for r in rows] == ["oracle", "lenient"]


def test_a_bad_reply_on_the_new_task_is_unscored_not_zero(answer_focus,
                                                          tmp_path: Path) -> None:
    items = load_bench(_items_file(tmp_path), tasks=["answer_focus"])
    run = run_bench(ScriptedJudge(lambda r: "I would rather not say.", name="bad"), items,
                    n_boot=200)
    mc = run.card.metrics["answer_focus"]
    assert mc.n == 0 and mc.n_unscored == 6 and mc.stats["accuracy"].value is None
    assert set(run.reasons[0].values()) == {"parse_error"}


def test_items_of_the_new_task_are_checked_like_the_others(answer_focus,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "a", "task": "answer_focus", "label": "yes",
                                "question": "Q?"}) + "\n"
                    + json.dumps({"id": "b", "task": "answer_focus", "label": 2,
                                  "question": "Q?", "answer": "A."}) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        load_bench(path)
    text = str(e.value)
    assert "bad.jsonl:1 field 'answer'" in text and "required for answer_focus" in text
    assert "bad.jsonl:2 field 'label'" in text and "yes" in text


def test_benchmark_tasks_are_the_judged_metrics_the_judge_alone_scores() -> None:
    tasks = bench_tasks()
    assert tasks[:len(bench.TASKS)] == bench.TASKS           # the bundled file's tasks first
    assert {"context_precision", "context_recall", "e2e_score"} <= set(tasks)
    assert "answer_correctness" not in tasks                 # needs an embedder as well
    assert BenchItem("x", "en", "e2e_score", "", 1).label_value == 0.5   # ordinal: 1 / 2
    assert BenchItem("x", "en", "production_gate", "", "no").scale == "binary"


def test_built_in_metrics_without_bundled_items_are_graded_from_a_file(tmp_path: Path) -> None:
    """e2e_score (ordinal labels) and context_recall (continuous labels) on items of one's
    own, read by the rule-based judge of fake_judge.py."""
    recs = [
        {"id": "e2", "task": "e2e_score", "label": 2, "question": "Where is Paris?",
         "answer": "Paris is in France.", "reference": "Paris is in France."},
        {"id": "e1", "task": "e2e_score", "label": 1, "question": "Where is Paris?",
         "answer": "Paris is in France. It is big.",
         "reference": "Paris is in France. It has 2 million people."},
        {"id": "e0", "task": "e2e_score", "label": 0, "question": "Where is Paris?",
         "answer": "Cats purr.", "reference": "Paris is in France."},
        {"id": "r1", "task": "context_recall", "label": 1.0, "context": "Paris is in France.",
         "reference": "Paris is in France."},
        {"id": "r0", "task": "context_recall", "label": 0, "context": "Cats purr.",
         "reference": "Paris is in France."},
    ]
    path = tmp_path / "own.jsonl"
    path.write_text("\n".join(json.dumps(dict(r, lang="en")) for r in recs), encoding="utf-8")
    items = load_bench(path)
    assert [i.scale for i in items] == ["ordinal"] * 3 + ["continuous"] * 2
    judge = ScriptedJudge(make_script())
    run = run_bench(judge, items, n_boot=100)
    assert judge.scripted.calls == 5
    for task in ("e2e_score", "context_recall"):
        assert run.card.metrics[task].stats["accuracy"].value == 1.0
    assert run.values[0].tolist() == [1.0, 0.5, 0.0, 1.0, 0.0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(dict(recs[3], label=1.5)) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="must be a number in 0–1"):
        load_bench(bad)


def test_without_the_declaration_the_task_is_unknown(tmp_path: Path) -> None:
    if "answer_focus" in {s.name for s in registry.list_specs("judged")}:
        pytest.skip("declared by another test in this process")
    with pytest.raises(DataError, match="unknown task 'answer_focus'"):
        load_bench(_items_file(tmp_path))


def test_metrics_never_import_generation() -> None:
    """The judged metric is one unit below generation/: no module of metrics/ imports
    ragmeter.generation, at module level or inside a function; loading every metric loads
    neither generation/ nor the judge engine (metrics stay cheap to import)."""
    import ast
    import subprocess

    src = Path(__file__).resolve().parents[1] / "src"
    upward = []
    for path in sorted((src / "ragmeter" / "metrics").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            upward += [f"{path.name}:{node.lineno}" for n in names
                       if n.startswith("ragmeter.generation")]
    assert upward == []
    code = ("import sys; from ragmeter.metrics.registry import list_specs; list_specs(); "
            "print(sorted(m for m in sys.modules if m.startswith(('ragmeter.generation', "
            "'ragmeter.judges'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "[]"
