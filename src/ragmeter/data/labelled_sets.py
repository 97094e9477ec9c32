"""Records of a labelled detector set (refusals, personal data, legal references), checked
field by field: a missing or wrongly typed field is a problem naming the file, the line and
the field. Every bad record is listed, not only the first, and the good ones are kept, so a
measurement can report the good records and still fail on the bad ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.reading import read_table
from ragmeter.errors import DataError, RecordProblem

_TYPE_NAMES = {str: "a string", list: "a list", int: "an integer", dict: "an object",
               bool: "true or false"}


@dataclass
class Records:
    """The good records of a file as ``(line, record)`` and the problems of the others."""

    source: str
    records: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)
    problems: list[RecordProblem] = field(default_factory=list)

    def raise_problems(self) -> None:
        """A :class:`DataError` listing every problem, when there is one."""
        if self.problems:
            raise DataError(self.problems)


def read_records(path: str | Path, fields: Mapping[str, type | tuple[type, ...]],
                 choices: Mapping[str, tuple[str, ...]] | None = None) -> Records:
    """Every record of ``path``; each must hold ``fields`` with the given types (and, for
    ``choices``, one of the listed values). A file that cannot be read at all, or holds no
    good record, raises :class:`DataError`."""
    table = read_table(path)
    problems = list(table.problems)
    out: list[tuple[int | None, dict[str, Any]]] = []
    for line, rec in table.records:
        if not isinstance(rec, dict):
            problems.append(RecordProblem(table.source, line, None, "not a JSON object"))
            continue
        bad = False
        for name, typ in fields.items():
            value = rec.get(name)
            if name not in rec:
                problems.append(RecordProblem(table.source, line, name, "missing"))
                bad = True
            elif not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
                want = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in
                                   (typ if isinstance(typ, tuple) else (typ,)))
                problems.append(RecordProblem(table.source, line, name,
                                              f"must be {want}, got {type(value).__name__}"))
                bad = True
            elif choices and name in choices and value not in choices[name]:
                problems.append(RecordProblem(table.source, line, name,
                                              f"{value!r} is not one of {list(choices[name])}"))
                bad = True
        if not bad:
            out.append((line, rec))
    if not out:
        raise DataError([*problems, RecordProblem(table.source, None, None, "no good records")])
    return Records(table.source, out, problems)
