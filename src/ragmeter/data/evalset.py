"""The evalset format (``evalset.jsonl``): ``id, question, gold_doc_ids, gold_chunk_ids, type, notes, source``.

Rules on top of the generic loader: every record needs ``id`` and ``question``; a non-negative
question needs at least one ``gold_doc_ids`` entry; a ``negative`` question must have empty gold
lists. Records may also carry ``retrieved_ids`` / ``retrieved_scores`` of one retriever.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.data.loaders import LoadResult, load_samples
from ragmeter.data.sample import Sample


def check_evalset_sample(sample: Sample, record: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """Evalset-format rules for one sample (and its raw record), as ``(field, message)`` pairs."""
    problems: list[tuple[str | None, str]] = []
    if not any(k in record for k in ("id", "sample_id", "qid")):
        problems.append(("id", "missing"))
    if not sample.user_input:
        problems.append(("question", "missing or empty"))
    if sample.is_negative:
        if sample.gold_doc_ids or sample.gold_chunk_ids:
            problems.append(("gold_doc_ids", "a negative question must have empty gold lists"))
    elif not sample.gold_doc_ids:
        problems.append(("gold_doc_ids", "required (non-empty) for a non-negative question"))
    return problems


def load_evalset(path: str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Load and validate an evalset-format file (jsonl, json or csv)."""
    return load_samples(path, skip_invalid=skip_invalid, validate=check_evalset_sample)


def evalset_record(sample: Sample) -> dict[str, Any]:
    """A sample in evalset-format field names (retrieval fields kept when present)."""
    rec: dict[str, Any] = {
        "id": sample.id,
        "question": sample.user_input or "",
        "gold_doc_ids": list(sample.gold_doc_ids or []),
        "gold_chunk_ids": list(sample.gold_chunk_ids or []),
        "type": sample.type,
    }
    meta = dict(sample.metadata)
    for key in ("notes", "source"):
        if key in meta:
            rec[key] = meta.pop(key)
    for key in ("gold_grades", "retrieved_ids", "retrieved_scores", "retrieved_contexts",
                "reference_contexts", "reference", "response"):
        value = getattr(sample, key)
        if value is not None:
            rec[key] = value
    if meta:
        rec["metadata"] = meta
    return rec


def write_evalset(samples: Iterable[Sample], path: str | Path) -> None:
    """Write samples in the evalset format (``evalset.jsonl``, (one JSON object per line, UTF-8)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for s in samples:
            fh.write(json.dumps(evalset_record(s), ensure_ascii=False) + "\n")
