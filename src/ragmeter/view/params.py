"""Query parameters of the viewer's pages, checked: a bad one is an HTTP 400 naming it.

A page declares the parameters it reads (``@page(..., params=(...))``); any other name, a
malformed value (a column that is not ``tier|system|metric``, a date that is not
``YYYY[-MM[-DD]]``, a page number that is not a positive integer) or a value outside the
page's choices is refused with a message that says what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter.errors import RagmeterError

#: parameters every page accepts
COMMON = ("lang",)
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


class BadQuery(RagmeterError):
    """A query parameter the page cannot use (answered with HTTP 400)."""

    def __init__(self, name: str, problem: str, expected: Iterable[str] = ()):
        self.name = name
        shown = list(expected)[:12]
        hint = f" (expected: {', '.join(shown)})" if shown else ""
        super().__init__(f"query parameter '{name}': {problem}{hint}")


def check_names(query: Mapping[str, Any], allowed: Sequence[str] | None) -> None:
    """Refuse a parameter the page does not read (``allowed`` None: any)."""
    if allowed is None:
        return
    for name in query:
        if name not in allowed and name not in COMMON:
            raise BadQuery(name, "not a parameter of this page",
                           [*allowed, *COMMON])


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value and value not in choices:
        raise BadQuery(name, f"unknown value {value[:80]!r}", choices)
    return value


def check_date(name: str, value: str) -> str:
    if value and not _DATE.match(value):
        raise BadQuery(name, f"{value[:40]!r} is not a date", ["YYYY", "YYYY-MM", "YYYY-MM-DD"])
    return value


def check_column(value: str) -> str:
    parts = value.split("|")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise BadQuery("col", f"{value[:80]!r} is not a column", ["tier|system|metric"])
    return value


def check_int(name: str, value: str, default: int, low: int, high: int) -> int:
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        raise BadQuery(name, f"{value[:40]!r} is not a whole number") from None
    if not low <= n <= high:
        raise BadQuery(name, f"{n} is out of range {low}..{high}")
    return n
