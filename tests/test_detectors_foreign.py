"""The personal-data and legal-reference detectors on text written by others (the shared
foreign sets' dev halves, when present beside the repository: ``../shared/datasets/foreign``
or ``$RAGMETER_FOREIGN_SETS``), scored as their README says, and the one command that prints
all three detectors' figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = Path(os.environ.get("RAGMETER_FOREIGN_SETS")
               or ROOT.parent / "shared" / "datasets" / "foreign")
SCRIPT = ROOT / "scripts" / "measure_detectors.py"


def _file(name: str) -> Path:
    path = FOREIGN / name
    if not path.is_file():
        pytest.skip(f"the foreign set is not here ({path})")
    return path


def test_legal_references_meet_the_targets_on_foreign_sentences() -> None:
    from ragmeter.metrics.legal_refs_data import read_sentence_set, score_sentence_set

    items, recs = read_sentence_set(_file("legal_refs.dev.jsonl"))
    assert not recs.problems
    s = score_sentence_set(items)
    assert (s.exact.value or 0) >= 0.97, s.lines()
    assert (s.recall.value or 0) >= 0.97 and (s.precision.value or 0) >= 0.98, s.lines()
    assert s.distractors > 0 and s.distractor_refs == 0


def test_personal_data_meets_the_targets_on_foreign_texts() -> None:
    pytest.importorskip("natasha", reason="needs the 'privacy' extra")
    from ragmeter.privacy.evaluate import read_typed_set, score_typed_set

    items, recs = read_typed_set(_file("pii.dev.jsonl"))
    assert not recs.problems
    s = score_typed_set(items)
    rows = {(r.type, r.lang): r for r in s.rows}
    assert (rows["PERSON", "ru"].recall.value or 0) >= 0.95, rows["PERSON", "ru"].line()
    assert (rows["PERSON", "en"].recall.value or 0) >= 0.90, rows["PERSON", "en"].line()
    assert (rows["PERSON", "all"].precision.value or 0) >= 0.97
    for (typ, _lang), r in rows.items():
        if typ != "PERSON" and r.recall.n:
            assert (r.recall.value or 0) >= 0.97, r.line()
            assert r.precision.n == 0 or (r.precision.value or 0) >= 0.97, r.line()
    assert s.lookalike_texts > 0 and s.lookalike_flags == []
    assert s.not_covered == []


def test_the_command_prints_every_detector_with_intervals(tmp_path: Path) -> None:
    files = [_file(n) for n in ("refusals.dev.jsonl", "legal_refs.dev.jsonl",
                                "pii.dev.jsonl")]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SCRIPT), *map(str, files)], capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for needle in ("refusals:", "  ru (n=", "  en (n=", "balanced accuracy", "ceiling",
                   "legal references:", "sentences exactly right", "personal data:",
                   "PERSON       ru", "look-alike lines"):
        assert needle in out, needle
    assert out.count(" [0.") + out.count(" [1.") >= 20      # intervals beside the figures


def test_the_command_names_file_line_and_field_of_a_bad_record(tmp_path: Path) -> None:
    bad = tmp_path / "answers.jsonl"
    rows = [{"id": "1", "lang": "ru", "answer": "Не знаю.", "label": "refusal"},
            {"id": "2", "lang": "ru", "answer": "Стипендия 3 000 рублей.", "label": "maybe"},
            {"id": "3", "lang": "ru", "answer": "Справка готова.", "label": "answer"}]
    bad.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(bad)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 2
    assert f"{bad}:2 field 'label'" in proc.stdout + proc.stderr
    assert "ru (n=2)" in proc.stdout                       # the good records still scored
