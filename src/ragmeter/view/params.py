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

from ragmeter.reports.i18n import t
from ragmeter.view.errors import ViewError

#: parameters every page accepts
COMMON = ("lang",)
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


class BadQuery(ViewError):
    """A query parameter the page cannot use (answered with HTTP 400): ``problem`` is an
    i18n key (``v_q_*``) formatted with ``fields``."""

    def __init__(self, name: str, problem: str, expected: Iterable[str] = (), **fields: Any):
        self.name, self.problem = name, problem
        self.expected = list(expected)[:12]
        super().__init__("v_q_bad", name=name, **fields)

    def text(self, lang: str) -> str:
        hint = (t("v_q_expected", lang, values=", ".join(self.expected))
                if self.expected else "")
        return t("v_q_bad", lang, name=self.name,
                 problem=t(self.problem, lang, **self.fields), hint=hint)


def check_names(query: Mapping[str, Any], allowed: Sequence[str] | None) -> None:
    """Refuse a parameter the page does not read (``allowed`` None: any)."""
    if allowed is None:
        return
    for name in query:
        if name not in allowed and name not in COMMON:
            raise BadQuery(name, "v_q_not_param", [*allowed, *COMMON])


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value and value not in choices:
        raise BadQuery(name, "v_q_unknown", choices, value=repr(value[:80]))
    return value


def check_date(name: str, value: str) -> str:
    if value and not _DATE.match(value):
        raise BadQuery(name, "v_q_not_date", ["YYYY", "YYYY-MM", "YYYY-MM-DD"],
                       value=repr(value[:40]))
    return value


def check_column(value: str) -> str:
    parts = value.split("|")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise BadQuery("col", "v_q_not_column", ["tier|system|metric"], value=repr(value[:80]))
    return value


def check_int(name: str, value: str, default: int, low: int, high: int) -> int:
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        raise BadQuery(name, "v_q_not_int", value=repr(value[:40])) from None
    if not low <= n <= high:
        raise BadQuery(name, "v_q_range", value=n, low=low, high=high)
    return n
