"""Why a metric scored nothing, and what to do about it: one line per unscored reason.

Every "nothing scored" message (the command's exit-3 line, the quality gate) ends with the
reasons counted and the fix of the most frequent one, so a user never has to guess from
``n=0`` what was missing.
"""

from __future__ import annotations

from collections.abc import Mapping

_FIXES = {
    "missing_field:gold_chunk_ids": (
        "the data has document gold only: leave the metric's level unset (auto scores at "
        "document level then) or write level=doc, e.g. hit_rate@5(level=doc); or add "
        "gold_chunk_ids to the records"),
    "missing_field:gold_doc_ids": (
        "add gold_doc_ids (or gold_chunk_ids whose ids name their document: 'doc#n', "
        "'doc_chunk_n', or --doc-id-pattern)"),
    "missing_field:retrieved_ids": (
        "add the retriever's retrieved_ids to the records, give a run (--run FILE) or "
        "configure retrievers"),
    "missing_field:retrieved_scores": "add retrieved_scores (the retriever's scores, best first)",
    "missing_field:reference_contexts": "add reference_contexts (the gold passages' texts)",
    "missing_field:reference": "add a reference answer (field reference or ground_truth)",
    "missing_field:response": "add the system's answer (field response or answer)",
}


def fix_for(reason: str) -> str | None:
    """The fix for one unscored reason, or ``None`` when there is no general advice."""
    if reason in _FIXES:
        return _FIXES[reason]
    if reason.startswith("missing_field:"):
        field = reason.split(":", 1)[1]
        return f"add the field '{field}' to the records (or map a column to it with --column-map)"
    return None


def describe_unscored(by_reason: Mapping[str, int]) -> str:
    """``"missing_field:gold_chunk_ids×1190; fix: …"`` for a reason → count mapping."""
    if not by_reason:
        return "no reason recorded"
    ordered = sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k}×{v}" for k, v in ordered)
    fix = fix_for(ordered[0][0])
    return text + (f"; fix: {fix}" if fix else "")
