"""Stable dataset hashes for signatures: sha256 over a canonical JSON of the records.

Canonical JSON: keys sorted, no insignificant whitespace, UTF-8 (not ASCII-escaped), records in
the order given. The short form (first 12 hex digits) is what signatures show.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

SHORT_LEN = 12


def _plain(obj: Any) -> Any:
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot hash object of type {type(obj).__name__}")


#: one encoder for every record (``json.dumps`` with options makes a new one per call)
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                            default=_plain, allow_nan=True)


def canonical_json(obj: Any) -> str:
    """One canonical JSON text for ``obj`` (dataclasses with ``to_dict`` are accepted)."""
    return _ENCODER.encode(obj)


def dataset_hash(records: Iterable[Any], *, short: bool = True) -> str:
    """sha256 of the records' canonical JSON, one record per line (12 hex digits if ``short``)."""
    h = hashlib.sha256()
    for rec in records:
        h.update(canonical_json(rec).encode("utf-8"))
        h.update(b"\n")
    digest = h.hexdigest()
    return digest[:SHORT_LEN] if short else digest


def mapping_hash(data: Mapping[str, Any], *, short: bool = True) -> str:
    """Hash of a ``{key: value}`` mapping (qrels, runs), independent of key order."""
    return dataset_hash(([k, data[k]] for k in sorted(data)), short=short)


def pairs_hash(data: Mapping[str, Mapping[str, Any]], *, short: bool = True) -> str:
    """Fast hash of ``{qid: {docid: value}}`` (qrels): sha256 of the sorted lines
    ``qid␟docid␟value`` (unit-separator ``\\x1f``), independent of key order."""
    lines = [f"{q}\x1f{d}\x1f{v!r}" for q, docs in data.items() for d, v in docs.items()]
    lines.sort()
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return digest[:SHORT_LEN] if short else digest


#: the fields that define *what is asked and what is right* — the dataset hash covers these only,
#: so a new system output (response, retrieved contexts/ids/scores) keeps the dataset's identity
GOLD_FIELDS = ("id", "user_input", "reference", "reference_contexts", "gold_doc_ids",
               "gold_chunk_ids", "gold_grades", "type", "history")


def gold_record(s: Any) -> dict[str, Any]:
    """The gold fields (:data:`GOLD_FIELDS`) of a sample or mapping, as ``Sample.to_dict``
    gives them (empty optional fields left out), read without copying the rest."""
    if isinstance(s, Mapping):
        return {k: s[k] for k in GOLD_FIELDS if s.get(k) is not None and s.get(k) != {}}
    out: dict[str, Any] = {}
    for k in GOLD_FIELDS:
        v = getattr(s, k, None)
        if v is not None and v != {}:
            out[k] = v
    return out


def gold_hash(samples: Iterable[Any], *, short: bool = True) -> str:
    """Dataset hash over the gold fields of samples (:data:`GOLD_FIELDS`), in order."""
    return dataset_hash((gold_record(s) for s in samples), short=short)


#: the system outputs a generation metric scores, hashed apart from the gold fields
OUTPUT_FIELDS = ("response", "retrieved_contexts")


def outputs_hash(samples: Iterable[Any], *, short: bool = True) -> str:
    """Hash of the system outputs of samples (id + :data:`OUTPUT_FIELDS`), in order: the
    signature's ``outputs:`` next to the gold-only ``data:``."""
    def rec(s: Any) -> list[Any]:
        get = s.get if isinstance(s, Mapping) else (lambda k: getattr(s, k, None))
        return [get("id"), *(get(k) for k in OUTPUT_FIELDS)]

    return dataset_hash((rec(s) for s in samples), short=short)
