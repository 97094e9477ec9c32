"""Dataset hashes in signatures cover the gold data only: system outputs (answers, retrieved
contexts) are hashed apart, in generation, batched generation and UX sessions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli, write_jsonl

run = run_cli
_jsonl = write_jsonl


def _sig(sig: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in sig.split("|"))


def test_generation_data_signature_ignores_system_outputs(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gold = {"user_input": "q1", "reference": "Paris is the capital"}
    sigs = []
    for name, resp in (("h1", "Paris"), ("h2", "London")):
        f = _jsonl(tmp_path / f"{name}.jsonl", [{**gold, "response": resp}])
        code, out, err = run(capsys, "-q", "score", "generation", "--samples", str(f),
                             "--metrics", "rouge_1", "--json")
        assert code == 0, err
        sigs.append(_sig(json.dumps(json.loads(out)).split('"signature": "')[1].split('"')[0]))
    assert sigs[0]["data"] == sigs[1]["data"]
    assert sigs[0]["outputs"] != sigs[1]["outputs"]  # the outputs are hashed apart


def test_generation_context_hashes_gold_and_outputs_apart() -> None:
    from ragmeter.data.hashing import gold_hash
    from ragmeter.data.sample import Sample
    from ragmeter.generation.context import GenerationContext

    a = [Sample(id="1", user_input="q", reference="r", response="x")]
    b = [Sample(id="1", user_input="q", reference="r", response="y")]
    assert GenerationContext(a).data_hash == GenerationContext(b).data_hash == gold_hash(a)
    assert GenerationContext(a).outputs_hash != GenerationContext(b).outputs_hash


def test_batched_generation_keeps_gold_data_and_whole_outputs_hashes() -> None:
    import ragmeter
    from ragmeter.data.hashing import gold_hash, outputs_hash
    from ragmeter.data.sample import Sample

    samples = [Sample(id=str(i), user_input=f"q{i}", reference="a b c", response=f"a {i}")
               for i in range(5)]
    whole = ragmeter.evaluate_generation(samples, metrics=["rouge_1"])["rouge_1"].signature
    batched = ragmeter.evaluate_generation(samples, metrics=["rouge_1"], batch_size=2)
    sig = batched["rouge_1"].signature
    assert sig.get("data") == whole.get("data") == gold_hash(samples)
    assert sig.get("outputs") == whole.get("outputs") == outputs_hash(samples)


def test_ux_sessions_hash_questions_as_data_and_answers_as_outputs() -> None:
    import numpy as np

    from ragmeter.tiers.ux import Session, evaluate_sessions

    class Fixed:
        name = "fixed"
        dim = 3

        def embed(self, texts: Sequence[str], kind: Any = "symmetric") -> Any:
            return np.array([[1.0, float(len(t)), 0.0] for t in texts]) / np.sqrt(
                1.0 + np.array([[len(t) ** 2] for t in texts], dtype=float))

    sigs = []
    answer_sets: list[list[str | None]] = [["a1", "a2", "a3"], ["b1", "b2", "b33"]]
    for answers in answer_sets:
        res = evaluate_sessions([Session("s", ["q1", "q22", "q333"], answers)], Fixed())
        sigs.append(res["context_preservation"].signature)
    assert sigs[0].get("data") == sigs[1].get("data")
    assert sigs[0].get("outputs") != sigs[1].get("outputs")
