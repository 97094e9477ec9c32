"""One record -> one :class:`Sample`: field names and their aliases, and the checks that
name the file, line and field of every bad value (``record_to_sample``).

Field names: RAGAS (``user_input``, ``retrieved_contexts``, ``response``, ``reference``,
``reference_contexts``) and the evalset format (``question`` → ``user_input``, ``id``,
``gold_doc_ids``, ``gold_chunk_ids``, ``type``; ``notes`` / ``source`` → ``metadata``),
``history`` for the earlier turns of a conversation. Unknown fields go to ``metadata`` unless
they look like a typo of a known field (then they are an error).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter.data.formats import ID_LIST_FIELDS
from ragmeter.data.grades import grade_problem
from ragmeter.data.reading import cell_list, cell_obj
from ragmeter.data.sample import QUESTION_TYPES, Sample
from ragmeter.errors import RecordProblem

__all__ = ["ALIASES", "FLOAT_LIST_FIELDS", "HISTORY_ROLES", "KNOWN", "META_FIELDS",
           "SINGLE_TEXT_ALIASES", "STR_FIELDS", "STR_LIST_FIELDS", "record_to_sample"]

STR_FIELDS = ("user_input", "response", "reference", "type")
STR_LIST_FIELDS = ("retrieved_contexts", "retrieved_ids", "reference_contexts",
                   "gold_doc_ids", "gold_chunk_ids")
FLOAT_LIST_FIELDS = ("retrieved_scores",)
ALIASES = {"question": "user_input", "query": "user_input", "answer": "response",
           "ground_truth": "reference", "ground_truth_answer": "reference",
           "contexts": "retrieved_contexts",
           "context": "retrieved_contexts", "sample_id": "id", "qid": "id",
           "chat_history": "history", "conversation_history": "history"}
#: aliases whose value may be one string instead of a list of strings
SINGLE_TEXT_ALIASES = ("context",)
META_FIELDS = ("notes", "source")
KNOWN = ("id", *STR_FIELDS, *STR_LIST_FIELDS, *FLOAT_LIST_FIELDS, "gold_grades", "metadata",
         "history",
         *ALIASES, *META_FIELDS)


_csv_list = cell_list
_csv_obj = cell_obj


def _int_id(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def record_to_sample(record: Any, *, source: str = "<data>", line: int | None = None,
                     index: int = 0, from_csv: bool = False, by_index: bool = True
                     ) -> tuple[Sample | None, list[RecordProblem]]:
    """Validate one record and build its :class:`Sample`; returns ``(None, problems)`` if bad.

    A record without an id gets ``#<index>`` whatever its container (``by_index`` is accepted
    for older callers and has no effect).
    """
    problems: list[RecordProblem] = []

    def bad(fld: str | None, msg: str) -> None:
        problems.append(RecordProblem(source, line, fld, msg))

    if not isinstance(record, Mapping):
        bad(None, f"a record must be a JSON object, got {type(record).__name__}")
        return None, problems
    values, metadata = _field_values(record, bad)
    if from_csv:
        _parse_cells(values)
    for name in ID_LIST_FIELDS:  # integer ids ("chunk_id": 17) are ids written as numbers
        ids = values.get(name)
        if isinstance(ids, list) and any(_int_id(x) for x in ids):
            values[name] = [str(x) if _int_id(x) else x for x in ids]
    sid = values.get("id")
    if sid is None:
        sid = f"#{index}"  # the record index in every container; line numbers are for errors
    elif isinstance(sid, bool) or not isinstance(sid, (str, int)):
        bad("id", f"must be a string, got {type(sid).__name__}")
    elif str(sid).strip() == "":
        bad("id", "must not be empty")
    _check_texts(values, bad)
    _check_scores(values, bad)
    _check_history(values, bad)
    grades = values.get("gold_grades")
    _check_grades(grades, bad)
    meta = values.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        bad("metadata", f"must be an object, got {type(meta).__name__}")
    qtype = values.get("type")   # any label: a slice (fact, multi_hop, ...); negative is known
    if isinstance(qtype, str) and not qtype.strip():
        bad("type", "is empty (a question type is a label such as "
            f"{', '.join(QUESTION_TYPES)} or your own)")
    if problems:
        return None, problems
    sample = Sample(
        id=str(sid),
        user_input=values.get("user_input"),
        retrieved_contexts=values.get("retrieved_contexts"),
        retrieved_ids=values.get("retrieved_ids"),
        retrieved_scores=values.get("retrieved_scores"),
        response=values.get("response"),
        reference=values.get("reference"),
        reference_contexts=values.get("reference_contexts"),
        gold_doc_ids=values.get("gold_doc_ids"),
        gold_chunk_ids=values.get("gold_chunk_ids"),
        gold_grades=dict(grades) if grades is not None else None,
        type=qtype,
        metadata={**(dict(meta) if meta else {}), **metadata},
        history=values.get("history"),
    )
    return sample, []


Bad = Callable[[str | None, str], None]


def _field_values(record: Mapping[str, Any], bad: Bad) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(values by ragmeter field, metadata)`` of a record: aliases resolved, unknown fields to
    metadata unless they look like a typo of a known field."""
    values: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, value in record.items():
        name = ALIASES.get(key, key)
        if key in META_FIELDS:
            metadata[key] = value
            continue
        if name not in KNOWN:
            close = difflib.get_close_matches(key, KNOWN, n=1, cutoff=0.85)
            if close:
                bad(key, f"unknown field (did you mean '{close[0]}'?)")
            else:
                metadata[key] = value
            continue
        if key in SINGLE_TEXT_ALIASES and isinstance(value, str):
            value = [value]
        if name in values and values[name] != value:
            bad(key, f"conflicts with another spelling of '{name}'")
            continue
        values[name] = value
    return values, metadata


def _parse_cells(values: dict[str, Any]) -> None:
    """CSV/TSV cells of list and object fields, parsed in place."""
    for name in (*STR_LIST_FIELDS, *FLOAT_LIST_FIELDS):
        if isinstance(values.get(name), str):
            values[name] = _csv_list(values[name])
    for name in ("gold_grades", "metadata", "history"):
        if isinstance(values.get(name), str):
            values[name] = _csv_obj(values[name])


def _check_texts(values: Mapping[str, Any], bad: Bad) -> None:
    for name in STR_FIELDS:
        v = values.get(name)
        if v is not None and not isinstance(v, str):
            bad(name, f"must be a string, got {type(v).__name__}")
    q = values.get("user_input")
    if isinstance(q, str) and q and not q.strip():
        bad("user_input", "is only whitespace (a question with no text)")
    for name in STR_LIST_FIELDS:
        v = values.get(name)
        if v is None:
            continue
        if not isinstance(v, list):
            bad(name, f"must be a list of strings, got {type(v).__name__}")
        else:
            wrong = [i for i, x in enumerate(v) if not isinstance(x, str)]
            if wrong:
                bad(name, f"must be a list of strings; item {wrong[0]} is "
                          f"{type(v[wrong[0]]).__name__}")


HISTORY_ROLES = ("user", "assistant", "system")


def _check_history(values: dict[str, Any], bad: Bad) -> None:
    """``history``: earlier turns as ``{"role", "content"}`` objects; plain strings alternate
    user / assistant, starting with the user; ``{"question", "answer"}`` turns (synthetic
    conversational items, UX sessions) are two messages. Without a top-level ``history``, a
    ``metadata.history`` (how the evalset format keeps it) is read the same way."""
    turns = values.get("history")
    meta = values.get("metadata")
    if turns is None and isinstance(meta, Mapping) and isinstance(meta.get("history"), list):
        probe: dict[str, Any] = {"history": meta["history"]}
        errors: list[str] = []
        _check_history(probe, lambda fld, msg: errors.append(msg))
        if not errors:  # free-form metadata: promoted only when it reads as turns
            values["history"] = probe["history"]
        return
    if turns is None:
        return
    if not isinstance(turns, list):
        bad("history", f"must be a list of {{role, content}} objects, got {type(turns).__name__}")
        return
    out: list[dict[str, str]] = []
    for i, t in enumerate(turns):
        if isinstance(t, str):
            t = {"role": "user" if i % 2 == 0 else "assistant", "content": t}
        if not isinstance(t, Mapping):
            bad("history", f"item {i} must be an object with role and content")
            return
        if "role" not in t and isinstance(t.get("question"), str):  # a {question, answer} turn
            out.append({"role": "user", "content": t["question"]})
            if isinstance(t.get("answer"), str) and t["answer"]:
                out.append({"role": "assistant", "content": t["answer"]})
            continue
        role, content = t.get("role"), t.get("content")
        if role not in HISTORY_ROLES:
            bad("history", f"item {i}: role must be one of {', '.join(HISTORY_ROLES)}, "
                           f"got {role!r}")
            return
        if not isinstance(content, str):
            bad("history", f"item {i}: content must be a string")
            return
        out.append({"role": str(role), "content": content})
    values["history"] = out


def _check_scores(values: dict[str, Any], bad: Bad) -> None:
    """``retrieved_scores``: numbers (no NaN), as many as ``retrieved_ids``; made floats."""
    scores = values.get("retrieved_scores")
    if scores is None:
        return
    if not isinstance(scores, list):
        bad("retrieved_scores", f"must be a list of numbers, got {type(scores).__name__}")
        return
    try:
        values["retrieved_scores"] = [float(x) for x in scores if not isinstance(x, bool)]
        if len(values["retrieved_scores"]) != len(scores) or any(
                math.isnan(x) for x in values["retrieved_scores"]):
            raise ValueError
    except (TypeError, ValueError):
        bad("retrieved_scores", "must be a list of numbers (no NaN)")
    else:
        ids = values.get("retrieved_ids")
        if isinstance(ids, list) and len(ids) != len(scores):
            bad("retrieved_scores", f"has {len(scores)} items but retrieved_ids has {len(ids)}")


def _check_grades(grades: Any, bad: Bad) -> None:
    if grades is not None and (not isinstance(grades, Mapping) or not all(
            isinstance(g, int) and not isinstance(g, bool) for g in grades.values())):
        bad("gold_grades", "must be an object {id: integer grade}")
    elif grades is not None:
        for doc, g in grades.items():
            if grade_problem(g) is not None:
                bad("gold_grades", f"doc '{doc}': {grade_problem(g)}")
