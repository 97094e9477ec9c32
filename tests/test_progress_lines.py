"""Progress lines tell the truth: a step that raised is "stopped", never "done"; an estimate
plans calls and scores nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.cli import common
from ragmeter.cli.app import run as cli
from ragmeter.errors import MissingExtraError


def test_a_step_that_raised_is_not_reported_done(capsys) -> None:
    common.reset_state()
    with pytest.raises(MissingExtraError), common.working("indexing and searching"):
        raise MissingExtraError("bm25s", "retrieval", "BM25")
    err = capsys.readouterr().err
    assert "indexing and searching stopped after" in err and "done" not in err


def test_a_step_that_finished_is_done(capsys) -> None:
    common.reset_state()
    with common.working("indexing"):
        pass
    assert "progress: indexing done in" in capsys.readouterr().err


def test_estimate_says_planning_not_scoring(tmp_path: Path, capsys) -> None:
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "1", "user_input": "q?", "response": "a",
                                "retrieved_contexts": ["c"]}) + "\n", "utf-8")
    code = cli(["score", "generation", "--samples", str(data), "--metrics", "faithfulness",
                "--judge-backend", "mock", "--estimate"])
    err = capsys.readouterr().err
    assert code == 0 and "planning the calls of 1 samples" in err and "scoring" not in err
