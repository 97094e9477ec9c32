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
         "phone", "address", "person")
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
    window: int = CONTEXT_WINDOW
    #: words shortly before the value that make it not personal (an office's address)
    not_after: re.Pattern[str] | None = None

    def find(self, text: str) -> list[Finding]:
        if self.context is None:
            found = [f for m in self.pattern.finditer(text) if (f := self._ok(m))]
        else:
            found = []
            for ctx in self.context.finditer(text):
                m = self.pattern.search(text, ctx.end(), min(len(text),
                                                             ctx.end() + self.window + 60))
                if m and m.start() - ctx.end() <= self.window and (f := self._ok(m)):
                    found.append(f)
        if self.not_after is not None:
            found = [f for f in found if _HOME.search(f.text)
                     or not self.not_after.search(text[max(0, f.start - 45):f.start])]
        return found

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
_DATE = (r"(?<![\d+.-])(?:\d{1,2}[./-]\d{1,2}[./-](?:\d{4}|\d{2})(?![\d-])|\d{4}-\d{2}-\d{2}"
         rf"|\d{{1,2}}\s+{_RU_MONTHS}\s+\d{{4}}(?:\s*(?:г\.|года|г(?!\w)))?"
         rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_EN_MONTHS},?\s+\d{{4}}"
         rf"|{_EN_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})")

_YEAR = r"(?:19[3-9]\d|20[0-2]\d)"
#: words before a date of birth, after it ("1990 г.р."), and before a bare year
_DOB_BEFORE = re.compile(r"(?i)дат\w*\s+рожд\w*|д\.\s?р\.|д/р|\bдр\b|день\s+рождения|"
                         r"родил(?:ся|ась|ись)|рожд\.|date\s+of\s+birth|birth\s*date|"
                         r"birthday|\bDOB\b|D\.O\.B\.|born(?:\s+on)?")
_DOB_AFTER = (r"(?:-?го)?\s*,?\s*(?:г\.?\s?р\.?|г\.?\s?рожд\w*\.?|года?\s+рождения|"
              r"\(?(?:DOB|date of birth)\)?|year\s+of\s+birth)")
_DOB_YEAR = re.compile(r"(?i)родил(?:ся|ась)\s+в|(?:год|года)\s+рождения[:\s—-]*|"
                       r"born\s+in|year\s+of\s+birth[:\s]*|рожд(?:ения|\.)\s*[:—-]?")
_CITY_RU = r"(?:[А-ЯЁ][а-яё]+(?:-[А-ЯЁа-яё][а-яё]+)*,\s*)?"
_STREET_RU = (r"(?:ул\.|улиц[аеуы]|пр-т|пр-кт|просп\.|проспект\w*|пр\.|пер\.|переул\w*|б-р|"
              r"бульвар\w*|ш\.|шоссе|наб\.|набережн\w+|пл\.|площад[ьи]|проезд\w*|мкр\.?|"
              r"микрорайон\w*|туп\.|тупик\w*|аллея|аллее|линия|линии|тракт\w*|кв-л|квартал\w*)")
_RU_NAME = r"(?:[А-ЯЁ0-9][\w-]*\.?)(?:\s+[А-ЯЁа-яё][\w-]*){0,3}?"
_HOUSE = r"(?:д\.?|дом)?\s*\d+[а-яА-Я]?(?:[-/]\d+)?"
_UNIT_RU = r"(?:,?\s*(?:корп\.|корпус|к\.|стр\.|строение|лит\.)\s*\d+[а-я]?)*" \
    r"(?:,?\s*(?:кв\.?|квартира|комн\.|оф\.|офис)\s*\d+)?(?:,\s*\d{6})?"
_LEAD_RU = (r"(?:\d{6},?\s*)?(?:[А-ЯЁ][а-яё]+\s+(?:обл\.|область|край|р-н|район),?\s*)?"
            r"(?:(?:г\.?|город|пос\.|пгт|с\.|дер\.)\s*[А-ЯЁ][\w-]+,?\s*)?")
_ADDRESS_RU = (rf"{_LEAD_RU}(?:(?:{_CITY_RU}{_STREET_RU}\s*{_RU_NAME}|{_RU_NAME}\s+{_STREET_RU})"
               rf",?\s*{_HOUSE}|(?:д\.|дом)\s*\d+[а-я]?\s+(?:по|на)\s+{_STREET_RU}\s*{_RU_NAME})"
               rf"{_UNIT_RU}")
_STREET_EN = (r"(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Lane|Ln\.?|Drive|Dr\.?|Boulevard|"
              r"Blvd\.?|Way|Court|Ct\.?|Place|Pl\.?|Square|Sq\.?|Terrace|Close|Crescent|Parkway|"
              r"Highway|Hwy\.?|Row|Gardens|Grove|Hill|Walk)")
_STREET_LAT = (r"(?:ul\.|ulitsa|pr\.|prospekt|prosp\.|per\.|pereulok|nab\.|naberezhnaya|sh\.|"
               r"shosse|bul\.|bulvar|pl\.|ploshchad)")
_ADDRESS_LAT = (rf"{_STREET_LAT}\s*[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?,?\s*(?:d\.\s*)?\d+[a-z]?"
                r"(?:[-/]\d+)?(?:,?\s*(?:korp\.|k\.|str\.|bldg\.?)\s*\d+)?"
                r"(?:,?\s*(?:apt\.?|kv\.?|flat|room)\s*\d+)?(?:,\s*[A-Z][a-z]+(?:-[A-Z][a-z]+)?)?")
_ADDRESS_EN = (r"(?:(?:Flat|Apt\.?|Apartment|Unit|Suite)\s*\d+[A-Za-z]?,?\s*)?\d+[A-Za-z]?"
               rf"\s+(?:[A-Z][a-z]+\s+){{1,3}}{_STREET_EN}(?![a-z])(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b)?"
               r"(?:,?\s*(?:[Aa]pt\.?|Apartment|Suite|Unit|Flat|#)\s*\d+[A-Za-z]?)?"
               r"(?:,\s*[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)?"
               r"(?:,?\s*(?:[A-Z]{2}\s+\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}))?")
#: a flat or a room: an address where somebody lives, whatever building it is in
_HOME = re.compile(r"(?i)(?:кв\.?|квартира|комн\.|комната|apt\.?|apartment|flat|room)\s*\d")
#: an office, branch or building before an address: not a person's address
_NOT_PERSONAL = re.compile(r"(?i)(?:офис|отделени|филиал|корпус|общежити|университет|"
                           r"мфц|аптек|магазин|пункт\w*\s+выдачи|банк|кампус|библиотек|"
                           r"деканат|office|branch|campus|store|shop|pharmacy|library|"
                           r"bank|headquarters|located)\w*[^.!?]{0,40}$")

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
    Detector("passport", re.compile(
        r"(?<!\d)(?P<v>\d{2}[\s-]?\d{2}[\s,-]*(?:(?:№|N|номер|номера|no\.?|number|#)[\s:]*)?"
        r"\d{6})(?!\d)", re.IGNORECASE),
             context=re.compile(r"(?i)паспорт\w*|серия|серии|passport|п/с|удостоверени\w+\s+"
                                r"личности")),
    Detector("record_book", re.compile(
        r"(?:№|N|No\.?|номер|number|:)?\s*(?P<v>\d[\dА-ЯA-Z-]{3,9}\d)(?![\d\w])"),
        context=re.compile(r"(?i)зач[её]тн\w*\s+книжк\w*|зач[её]тк\w*|студенческ\w*(?:\s+"
                           r"билет\w*)?|student\s+(?:id|card)(?:\s+no\.?)?|record\s+book")),
    Detector("birth_date", re.compile(rf"(?P<v>{_DATE})"), context=_DOB_BEFORE),
    Detector("birth_date", re.compile(rf"(?P<v>{_DATE}|{_YEAR})(?={_DOB_AFTER})")),
    Detector("birth_date", re.compile(rf"(?P<v>{_YEAR})(?!\d)"), context=_DOB_YEAR, window=12),
    Detector("address", re.compile(rf"(?P<v>{_ADDRESS_RU}|{_ADDRESS_EN}|{_ADDRESS_LAT})"),
             not_after=_NOT_PERSONAL),
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


def _found(text: str) -> list[Finding]:
    """Every detector's findings; a number read as a passport after «паспорт» is not also
    an ИНН / СНИЛС / ОГРН whose check digits it happens to satisfy."""
    found = [f for d in DETECTORS for f in d.find(text)]
    passports = {(f.start, f.end) for f in found if f.kind == "passport"}
    return [f for f in found if not (f.kind in ("inn", "snils", "ogrn")
                                     and (f.start, f.end) in passports)]


def find_identifiers(text: str) -> list[Finding]:
    """Every structured identifier of ``text`` (no names)."""
    return _resolve(_found(text))


_DATE_RE = re.compile(_DATE)
_AFTER_NAME = re.compile(r"\s*(?:,|\(|—|–|-)\s*$")


def dates_after_names(text: str, people: Sequence[Finding]) -> list[Finding]:
    """A full date written right after a person's name (``Андреев Тимур, 12 декабря 2005``,
    ``Smith (03/12/1990)``): in a list of people or a form, a date of birth."""
    out = []
    for m in _DATE_RE.finditer(text):
        year = re.findall(r"\d{4}", m.group(0))
        if year and not 1920 <= int(year[-1]) <= 2020:
            continue
        if any(0 <= m.start() - p.end <= 3 and _AFTER_NAME.match(text[p.end:m.start()])
               for p in people):
            out.append(Finding(m.start(), m.end(), "birth_date", m.group(0)))
    return out


def find_all(text: str, *, names: bool = True) -> list[Finding]:
    """Identifiers and, with ``names``, person names (Russian NER + Latin-letter patterns) and
    the dates of birth written right after them."""
    found = _found(text)
    if names:
        from ragmeter.privacy.names import find_names

        people = find_names(text)
        found.extend(people)
        found.extend(dates_after_names(text, people))
    return _resolve(found)
