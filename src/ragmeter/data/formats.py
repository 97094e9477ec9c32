"""Other tools' sample layouts, mapped onto ragmeter's field names (detected by content).

=================  ===========================================================================
format             fields (→ ragmeter field)
=================  ===========================================================================
``ragas``          RAGAS ``EvaluationDataset``: ``user_input``, ``retrieved_contexts``,
                   ``response``, ``reference``, ``reference_contexts`` (native names; older
                   ``question``/``answer``/``contexts``/``ground_truth`` also read)
``deepeval``       DeepEval test cases (JSON, or CSV with ``;``-joined list cells):
                   ``input`` → user_input, ``actual_output`` → response,
                   ``expected_output`` → reference, ``retrieval_context`` → retrieved_contexts,
                   ``context`` → **reference_contexts** (DeepEval's ``context`` is the gold
                   context); ``additional_metadata`` and the rest → metadata
``synthetic``      a synthetic question set generated from a knowledge base's chunks: one
                   question per gold chunk — ``question``, ``chunk_id`` → gold_chunk_ids,
                   ``confluence_url``/``url``/``source_url`` → gold_doc_ids, ``chunk_text``/
                   ``chunk``/``context`` → reference_contexts, ``answer``/``expected_answer`` →
                   reference (often a compact one-line JSON array without ids)
``evalset``        ``id, question, gold_doc_ids, gold_chunk_ids, type, notes, source``
``samples``/``hf``  generic records (Hugging Face ``datasets`` JSON Lines/Parquet exports are
                   plain records): RAGAS or evalset names plus the aliases of
                   :mod:`ragmeter.data.loaders`
=================  ===========================================================================

``column_map`` (``--map target=source``) renames a source column to a ragmeter field first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter.errors import ConfigError, DataError, RecordProblem, UsageError

FORMATS = ("auto", "samples", "ragas", "deepeval", "hf", "synthetic", "evalset")

DEEPEVAL_MAP = {"input": "user_input", "actual_output": "response",
                "expected_output": "reference", "retrieval_context": "retrieved_contexts",
                "context": "reference_contexts"}
DEEPEVAL_META = ("additional_metadata",)
SYNTHETIC_MAP = {"question": "user_input", "chunk_id": "gold_chunk_ids",
                 "chunk_ids": "gold_chunk_ids", "confluence_url": "gold_doc_ids",
                 "source_url": "gold_doc_ids", "url": "gold_doc_ids", "doc_id": "gold_doc_ids",
                 "chunk_text": "reference_contexts", "chunk": "reference_contexts",
                 "context": "reference_contexts", "answer": "reference",
                 "expected_answer": "reference"}
#: ragmeter fields a --map may target
TARGETS = ("id", "user_input", "response", "reference", "type", "retrieved_contexts",
           "retrieved_ids", "reference_contexts", "gold_doc_ids", "gold_chunk_ids",
           "retrieved_scores", "gold_grades", "metadata")
_LIST_TARGETS = ("retrieved_contexts", "retrieved_ids", "reference_contexts", "gold_doc_ids",
                 "gold_chunk_ids")


def _keys(records: Iterable[tuple[int | None, Any]], n: int = 50) -> set[str]:
    out: set[str] = set()
    for i, (_, rec) in enumerate(records):
        if i >= n:
            break
        if isinstance(rec, Mapping):
            out.update(str(k) for k in rec)
    return out


def detect_format(records: Sequence[tuple[int | None, Any]]) -> str:
    """The sample layout of ``records`` by their keys: ``deepeval``, ``ragas``, ``synthetic``,
    ``evalset`` or ``samples``."""
    keys = _keys(records)
    if "input" in keys and keys & {"actual_output", "expected_output", "retrieval_context"}:
        return "deepeval"
    if "user_input" in keys:
        return "ragas"
    if "gold_doc_ids" in keys or "gold_chunk_ids" in keys:
        return "evalset"
    if "question" in keys and keys & {"chunk_id", "confluence_url", "source_url", "chunk_text"}:
        return "synthetic"
    return "samples"


#: what each detected layout looks like, for errors that name it
LAYOUT_NAMES = {"deepeval": "DeepEval test cases (input, actual_output, expected_output, "
                            "retrieval_context, context)",
                "synthetic": "a synthetic question set (question, chunk_id, confluence_url/url, "
                             "chunk_text, answer)",
                "ragas": "a RAGAS EvaluationDataset (user_input, retrieved_contexts, response, "
                         "reference, reference_contexts)"}
#: explicit formats that would silently remap (or drop into metadata) another layout's fields
_CONFLICTS = {"samples": ("deepeval", "synthetic"), "hf": ("deepeval", "synthetic"),
              "ragas": ("deepeval", "synthetic"), "evalset": ("deepeval", "synthetic", "ragas"),
              "synthetic": ("deepeval",)}


def check_explicit_format(fmt: str, records: Sequence[tuple[int | None, Any]],
                          source: str) -> None:
    """An explicit ``fmt`` must not be applied to records of another known layout: DeepEval's
    gold ``context`` read as retrieved contexts under ``samples``, RAGAS names under
    ``evalset``… Raises a :class:`DataError` naming the likely format."""
    looks = detect_format(records)
    if looks in _CONFLICTS.get(fmt, ()):
        raise DataError(RecordProblem(source, None, None,
                                      f"format '{fmt}' was given, but the records look like "
                                      f"{LAYOUT_NAMES[looks]}"),
                        hint=f"use format '{looks}' (--format {looks}), or --format auto")


def other_kind_hint(records: Sequence[tuple[int | None, Any]]) -> str | None:
    """A hint when the records look like another ragmeter input rather than samples."""
    keys = _keys(records)
    if "ground_truth_show" in keys:
        return ("these look like labelled production-judge items: use "
                "`ragmeter judge-pipeline FILE`")
    if "turns" in keys and "session_id" in keys:
        return "these look like UX sessions: use `ragmeter ux --sessions FILE`"
    if "_id" in keys and "text" in keys:
        return ("these look like a BEIR corpus or queries file: use "
                "ragmeter.data.beir.load_beir(folder) (corpus.jsonl, queries.jsonl, qrels/*.tsv)")
    if "doc_id" in keys and "text" in keys and "question" not in keys:
        return "these look like a corpus (doc_id, text): use it as --corpus"
    if "query-id" in keys and "corpus-id" in keys:
        return "this looks like a BEIR qrels TSV: use --qrels FILE"
    return None


def parse_map(items: Iterable[str] | None) -> dict[str, str]:
    """``["user_input=prompt", "response=output"]`` → ``{"user_input": "prompt", ...}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            target, eq, source = part.partition("=")
            target, source = target.strip(), source.strip()
            if not eq or not target or not source:
                raise UsageError("--map", f"expected TARGET=SOURCE, got {part!r}")
            if target not in TARGETS:
                raise UsageError("--map", f"unknown target field {target!r} (allowed: "
                                          f"{', '.join(TARGETS)})")
            if target in out:
                raise UsageError("--map", f"target {target!r} mapped twice")
            out[target] = source
    return out


def check_map(column_map: Mapping[str, str], records: Sequence[tuple[int | None, Any]],
              source: str) -> None:
    """Every mapped source column must occur in the data."""
    keys = _keys(records, n=len(records))
    missing = [s for s in column_map.values() if s not in keys]
    if missing and records:
        raise ConfigError("column_map", f"column(s) {', '.join(map(repr, missing))} not found "
                                        f"in {source} (columns: {', '.join(sorted(keys)[:40])})")


def apply_format(rec: Mapping[str, Any], fmt: str, column_map: Mapping[str, str] | None = None,
                 *, tabular: bool = False) -> dict[str, Any]:
    """``rec`` with ragmeter field names for layout ``fmt`` (after ``column_map``).

    In a DeepEval CSV, list cells (``context``, ``retrieval_context``) are split on ``;``
    (DeepEval's default ``context_col_delimiter``) unless they hold a JSON/Python list.
    """
    out: dict[str, Any] = dict(rec)
    if column_map:
        for target, src in column_map.items():
            if src in out:
                value = out.pop(src)
                out.pop(target, None)
                out[target] = value
    if fmt == "deepeval":
        mapped: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for k, v in out.items():
            if k in DEEPEVAL_MAP and DEEPEVAL_MAP[k] not in out:
                if tabular and k in ("context", "retrieval_context") and isinstance(v, str) \
                        and not v.lstrip().startswith("["):
                    v = [part.strip() for part in v.split(";") if part.strip()]
                mapped[DEEPEVAL_MAP[k]] = v
            elif k in DEEPEVAL_META and isinstance(v, Mapping):
                meta.update(v)
            elif k in TARGETS or k in ("notes", "source"):
                mapped[k] = v
            elif k == "name" and "id" not in out:
                mapped["id"] = v
            elif v is not None:
                meta[k] = v
        if meta:
            base = mapped.get("metadata")
            mapped["metadata"] = {**meta, **(dict(base) if isinstance(base, Mapping) else {})}
        return mapped
    if fmt == "synthetic":
        mapped = {}
        for k, v in out.items():
            target = SYNTHETIC_MAP.get(k, k)
            if target in mapped:
                continue
            if target in _LIST_TARGETS and isinstance(v, str):
                v = [v]
            mapped[target] = v
        return mapped
    return out


def plain_value(value: Any) -> Any:
    """numpy arrays / scalars and pandas NA values → plain Python (lists, floats, None)."""
    if value is None:
        return None
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        return plain_value(tolist())
    if isinstance(value, float) and value != value:  # NaN cell = missing
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    return value
