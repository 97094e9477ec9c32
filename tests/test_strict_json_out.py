"""``--out`` JSON is strict JSON: a number that could not be computed is null with its reason."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ragmeter.cli.app import run
from ragmeter.results.jsonout import dumps, finite_or_none


def _strict(text: str) -> object:
    def refuse(word: str) -> object:
        raise AssertionError(f"non-standard JSON constant {word}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null() -> None:
    doc = {"a": float("nan"), "b": [np.float32("inf"), np.float64(-np.inf), 1.5],
           "c": np.array([np.nan, 2.0]), "d": (np.int64(3),)}
    assert finite_or_none(doc) == {"a": None, "b": [None, None, 1.5], "c": [None, 2.0],
                                   "d": [3]}
    assert _strict(dumps(doc)) == {"a": None, "b": [None, None, 1.5], "c": [None, 2.0],
                                   "d": [3]}


def test_corpus_bleu_with_nothing_scorable_is_null_with_reason(tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "s.jsonl"
    data.write_text('{"id":"1","user_input":"q?","response":"a"}\n'
                    '{"id":"2","user_input":"q2?","response":"b"}\n', "utf-8")
    out = tmp_path / "o.json"
    code = run(["score", "generation", "--samples", str(data), "--metrics", "bleu", "--out",
                str(out)])
    assert code == 3  # nothing scored
    saved = _strict(out.read_text("utf-8"))
    corpus = saved["meta"]["corpus"]["bleu"]  # type: ignore[index]
    assert corpus["corpus_bleu"] is None and "reference" in corpus["reason"]


def test_eval_result_json_has_no_bare_nan() -> None:
    from ragmeter.results.records import EvalResult

    res = EvalResult("x", meta={"score": math.nan, "inf": math.inf})
    assert _strict(res.to_json()) == {"name": "x", "meta": {"score": None, "inf": None},
                                      "results": {}}
