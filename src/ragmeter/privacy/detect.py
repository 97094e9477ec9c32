"""Finding personal data in a text: structured identifiers (validated by their check digits
where they have one), identifiers recognised by the words before them, and names.

Each detector is one row of :data:`DETECTORS`: a kind, a pattern and, where the kind has one, a
checksum or the context words that must come shortly before the value. Names come from
:mod:`ragmeter.privacy.names`. Overlaps are resolved in favour of the earlier row, then the
longer span.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragmeter.privacy.checksums import inn_ok, luhn_ok, ogrn_ok, snils_ok

KINDS = ("email", "snils", "ogrn", "inn", "card", "passport", "record_book", "birth_date",
         "phone", "person")
#: how far after its context words a value may start (characters)
CONTEXT_WINDOW = 40


@dataclass(frozen=True)
class Finding:
    """One detected value."""

    start: int
    end: int
    kind: str
    text: str


@dataclass(frozen=True)
class Detector:
    """A kind, its value pattern, and either a checksum on its digits or context words."""

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    context: re.Pattern[str] | None = None

    def find(self, text: str) -> list[Finding]:
        if self.context is None:
            return [f for m in self.pattern.finditer(text) if (f := self._ok(m))]
        out = []
        for ctx in self.context.finditer(text):
            m = self.pattern.search(text, ctx.end(), min(len(text), ctx.end() + CONTEXT_WINDOW
                                                         + 30))
            if m and m.start() - ctx.end() <= CONTEXT_WINDOW and (f := self._ok(m)):
                out.append(f)
        return out

    def _ok(self, m: re.Match[str]) -> Finding | None:
        value = m.group("v") if "v" in self.pattern.groupindex else m.group(0)
        start = m.start("v") if "v" in self.pattern.groupindex else m.start()
        if self.check is not None and not self.check(re.sub(r"\D", "", value)):
            return None
        return Finding(start, start + len(value), self.kind, value)


_NOT_DIGIT_BEFORE = r"(?<![\d\w+])"
_NOT_DIGIT_AFTER = r"(?![\d])"
_RU_MONTHS = (r"(?:января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября"
              r"|декабря)")
_EN_MONTHS = (r"(?:January|February|March|April|May|June|July|August|September|October"
              r"|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?")
_DATE = (r"(?:\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})(?!\d)|\d{4}-\d{2}-\d{2}"
         rf"|\d{{1,2}}\s+{_RU_MONTHS}\s+\d{{4}}(?:\s*(?:г\.|года|г(?!\w)))?"
         rf"|\d{{1,2}}\s+{_EN_MONTHS}\s+\d{{4}}|{_EN_MONTHS}\s+\d{{1,2}},?\s+\d{{4}})")

DETECTORS: tuple[Detector, ...] = (
    Detector("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-zА-Яа-я]{2,}")),
    Detector("card", re.compile(_NOT_DIGIT_BEFORE + r"(?:\d{4}[ -]?){3}\d{1,7}"
                                + _NOT_DIGIT_AFTER), check=luhn_ok),
    Detector("snils", re.compile(_NOT_DIGIT_BEFORE + r"\d{3}[- ]?\d{3}[- ]?\d{3}[- ]?\d{2}"
                                 + _NOT_DIGIT_AFTER), check=snils_ok),
    Detector("ogrn", re.compile(_NOT_DIGIT_BEFORE + r"(?:\d{15}|\d{13})" + _NOT_DIGIT_AFTER),
             check=ogrn_ok),
    Detector("inn", re.compile(_NOT_DIGIT_BEFORE + r"(?:\d{12}|\d{10})" + _NOT_DIGIT_AFTER),
             check=inn_ok),
    Detector("passport", re.compile(r"(?<!\d)(?P<v>\d{2}\s?\d{2}\s?(?:№\s?)?\d{6})(?!\d)"),
             context=re.compile(r"(?i)паспорт\w*|серия|серии|passport")),
    Detector("record_book", re.compile(
        r"(?:№|N|No\.?|номер|number|:)?\s*(?P<v>\d[\dА-ЯA-Z-]{3,9}\d)(?![\d\w])"),
        context=re.compile(r"(?i)зач[её]тн\w*\s+книжк\w*|зач[её]тк\w*|студенческ\w*(?:\s+"
                           r"билет\w*)?|student\s+(?:id|card)(?:\s+no\.?)?|record\s+book")),
    Detector("birth_date", re.compile(rf"(?P<v>{_DATE})"),
             context=re.compile(r"(?i)дат\w*\s+рождения|д\.\s?р\.|родил(?:ся|ась|ись)"
                                r"|date\s+of\s+birth|birth\s*date|\bDOB\b|born(?:\s+on)?")),
    Detector("phone", re.compile(
        r"(?<![\w+])(?:(?:\+7|8)[\s-]?\(?\d{3}\)?[\s-]?\d{3}[\s-]?\d{2}[\s-]?\d{2}"
        r"|\+(?!7)\d{1,3}(?:[\s-]?\(?\d{1,4}\)?){1,4}[\s-]?\d{2,4})(?!\d)")),
)


def _resolve(found: Sequence[Finding]) -> list[Finding]:
    """Non-overlapping findings: the earlier detector wins, then the longer span."""
    rank = {k: i for i, k in enumerate(KINDS)}
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: (rank[f.kind], -(f.end - f.start), f.start)):
        if all(f.end <= g.start or f.start >= g.end for g in out):
            out.append(f)
    return sorted(out, key=lambda f: f.start)


def find_identifiers(text: str) -> list[Finding]:
    """Every structured identifier of ``text`` (no names)."""
    return _resolve([f for d in DETECTORS for f in d.find(text)])


def find_all(text: str, *, names: bool = True) -> list[Finding]:
    """Identifiers and, with ``names``, person names (Russian NER + English heuristic)."""
    found = [f for d in DETECTORS for f in d.find(text)]
    if names:
        from ragmeter.privacy.names import find_names

        found.extend(find_names(text))
    return _resolve(found)
