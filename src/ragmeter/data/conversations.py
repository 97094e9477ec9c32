"""Conversations as multi-turn samples: every turn of a session after the first becomes a
sample whose ``history`` holds the turns before it.

Sessions are the UX tier's format (``{"session_id", "turns": [{"question", "answer"}, ...]}``,
JSON Lines) — logged dialogues, synthetic ``conversational`` items written as sessions, or a
target's replayed sessions. The sample id is ``<session_id>#<turn index>``; the turn's answer is
the sample's ``response``; ``metadata`` keeps the session id and the turn index (slice by it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import DataError, RecordProblem


def session_samples(sessions: Iterable[Mapping[str, Any]], *, source: str = "<sessions>",
                    first_turn: bool = False) -> list[Sample]:
    """One sample per turn (from the second on; from the first with ``first_turn``)."""
    out: list[Sample] = []
    problems: list[RecordProblem] = []
    for n, sess in enumerate(sessions, 1):
        sid, turns = sess.get("session_id"), sess.get("turns")
        if not isinstance(sid, (str, int)) or isinstance(sid, bool) or not isinstance(turns, list):
            problems.append(RecordProblem(source, n, "session_id" if not isinstance(
                sid, (str, int)) else "turns", "a session needs session_id and a list of turns"))
            continue
        history: list[dict[str, str]] = []
        for i, t in enumerate(turns):
            q = t.get("question") if isinstance(t, Mapping) else None
            if not isinstance(q, str) or not q.strip():
                problems.append(RecordProblem(source, n, f"turns[{i}].question",
                                              "must be a non-empty text"))
                break
            a = t.get("answer")
            if i > 0 or first_turn:
                out.append(Sample(id=f"{sid}#{i}", user_input=q,
                                  response=a if isinstance(a, str) else None,
                                  history=list(history) or None,
                                  metadata={"session_id": str(sid), "turn": i}))
            history.append({"role": "user", "content": q})
            if isinstance(a, str) and a:
                history.append({"role": "assistant", "content": a})
    if problems:
        raise DataError(problems)
    return out


def load_session_samples(path: str | Path, *, first_turn: bool = False) -> list[Sample]:
    """:func:`session_samples` of a sessions file (JSON Lines, or a JSON list)."""
    from ragmeter.data.reading import read_table

    t = read_table(path)
    if t.problems:
        raise DataError(t.problems)
    return session_samples([r for _, r in t.records if isinstance(r, Mapping)],
                           source=str(path), first_turn=first_turn)


__all__ = ["load_session_samples", "session_samples"]
