"""Measure ragmeter's three detectors on labelled files written by others, with 95 % CIs.

    PYTHONPATH=src python scripts/measure_detectors.py FILE [FILE ...] [--errors]

Each file is recognised by its records: ``answer`` + ``label`` → refusals, ``refs`` → legal
references, ``entities`` → personal data. Scored as the shared format's README says:

* refusals — per language separately (never pooled): balanced accuracy (percentile bootstrap
  over answers, seed 42), refusals caught and answers kept (Wilson), accuracy per kind
  (Wilson), the share ``detector=rules+judge`` routes to the judge and the ceiling a perfect
  judge on the routed answers would reach;
* personal data — per type: recall (every letter and digit of a label inside detections of its
  kind) and precision (a detection overlaps a label of its kind), Wilson intervals; names also
  per language; values flagged on look-alike and invalid-checksum lines;
* legal references — tuples ``(act, article, part, point, subpoint)`` after the explicit alias
  table ``ragmeter.metrics.legal_refs_data.ACT_ALIASES``: micro precision and recall (Wilson),
  F1 (bootstrap over sentences), sentences exactly right (Wilson), references on distractors.

Exit 0; 2 when a file has bad records (its good records are still scored and printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError


def _kind(path: Path) -> str | None:
    for line in path.read_text("utf-8-sig").splitlines():
        if not line.strip():
            continue
        try:
            rec: Any = json.loads(line)
        except ValueError:
            return None
        if not isinstance(rec, dict):
            return None
        if "entities" in rec:
            return "pii"
        if "refs" in rec:
            return "legal"
        if "answer" in rec and "label" in rec:
            return "refusals"
        return None
    return None


def _refusals(path: Path, errors: bool) -> list[str]:
    from ragmeter.metrics.refusal import detect_refusals, detector_name
    from ragmeter.metrics.refusal_data import read_answer_set, score_answer_set
    from ragmeter.metrics.refusal_model import embedder_available, shipped

    items, recs = read_answer_set(path)
    out = []
    for name in (["e5"] if embedder_available() else []) + ["cues"]:
        model = shipped(name)
        out.append(f"refusals: {path} ({len(items)} answers), detector "
                   f"{detector_name(model)}")
        for s in score_answer_set(items, lambda t, m=model: detect_refusals(t, m)):
            out += s.lines()
            if errors and s.wrong:
                out.append(f"    wrong: {', '.join(s.wrong)}")
    return out + _problems(recs)


def _pii(path: Path, errors: bool) -> list[str]:
    from ragmeter.privacy.evaluate import read_typed_set, score_typed_set

    items, recs = read_typed_set(path)
    score = score_typed_set(items)
    out = [f"personal data: {path} ({score.n_texts} texts)", *score.lines()]
    if errors:
        for r in score.rows:
            out += [f"    MISS {r.type} {m}" for m in r.missed if r.lang == "all"]
            out += [f"    FALSE {r.type} {m}" for m in r.false if r.lang == "all"]
    return out + _problems(recs)


def _legal(path: Path, errors: bool) -> list[str]:
    from ragmeter.metrics.legal_refs_data import read_sentence_set, score_sentence_set

    items, recs = read_sentence_set(path)
    score = score_sentence_set(items)
    out = [f"legal references: {path} ({score.n} sentences)", *score.lines()]
    if errors:
        out += [f"    {w}" for w in score.wrong]
    return out + _problems(recs)


def _problems(recs: Any) -> list[str]:
    return [f"  BAD RECORD {p}" for p in recs.problems]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="measure_detectors.py", description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--errors", action="store_true", help="List each wrong item.")
    args = ap.parse_args(argv)
    code = 0
    for path in args.files:
        kind = _kind(path) if path.is_file() else None
        if kind is None:
            print(f"{path}: not a labelled refusal, personal-data or legal-reference file",
                  file=sys.stderr)
            code = 2
            continue
        try:
            lines = {"refusals": _refusals, "pii": _pii, "legal": _legal}[kind](path, args.errors)
        except DataError as exc:
            print(str(exc), file=sys.stderr)
            code = 2
            continue
        print("\n".join(lines))
        if any(line.startswith("  BAD RECORD") for line in lines):
            code = 2
    return code


if __name__ == "__main__":
    sys.exit(main())
