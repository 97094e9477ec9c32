"""Russian legal references in text, normalised so that different spellings of one reference
match: ``п. 6 ч. 1 ст. 81 ТК РФ``, ``пункт 6 части первой статьи 81 Трудового кодекса``
and ``ТК РФ, ст. 81, ч. 1, п. 6`` are all ``ТК РФ, ст. 81, ч. 1, п. 6``.

Recognised: articles (ст., статья in any case, lists ``ст. 80 и 81``, ranges ``ст. 238–241``,
dotted numbers ``ст. 12.9``), parts (ч., часть, ordinal words), points and subpoints (п.,
пп., подп., letters in quotes), the codes by abbreviation or full name in any case (ТК, ГК,
УК, КоАП, НК, ЖК, СК, АПК, ГПК, УПК, БК, ЗК, КАС, ГрК, the Constitution) and laws by number
(``№ 152-ФЗ``, ``ФЗ-152``, ``Закон РФ № 2300-1``) with their date when given
(``от 27.07.2006``, ``от 27 июля 2006 года``). Deterministic: no judge call.

A code named without an article is not a reference (``гл. 32 ГК РФ`` names a chapter); a
law named without an article is one (the whole law).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUM = r"\d+(?:\.\d+)*"
_ORD = ("перв", "втор", "трет", "четверт", "пят", "шест", "седьм", "восьм", "девят", "десят")
_ORD_RE = r"(?:" + "|".join(_ORD) + r")\w*"
_MONTHS = ("январ", "феврал", "март", "апрел", "ма", "июн", "июл", "август", "сентябр",
           "октябр", "ноябр", "декабр")
_DATE = (r"(?:(\d{1,2})\.(\d{1,2})\.(\d{4})|(\d{1,2})\s+(" + "|".join(_MONTHS) +
         r")\w*\s+(\d{4})(?:\s*(?:г\.|года?))?)")

_SUB = re.compile(r"(?<!\w)(?:пп\.|подп\.|подпункт\w*)\s*[\"'«]?\s*([а-я](?![а-я])|\d+)"
                  r"\s*[\"'»]?", re.IGNORECASE)
_POINT = re.compile(r"(?<![\w.])(?:п\.|пункт\w*)\s*[\"'«]?\s*([а-я](?![а-я])|" + _NUM +
                    r")\s*[\"'»]?", re.IGNORECASE)
_PART = re.compile(r"(?<!\w)(?:ч\.|част[ьиюе]\w*)\s*(" + _NUM + "|" + _ORD_RE + r")(?!\w)",
                   re.IGNORECASE)
_ART = re.compile(r"(?<!\w)(?:ст\.\s*ст\.|ст\.|стать[яиеюй]\w*)\s*(" + _NUM +
                  r"(?:\s*(?:,|и|–|—|-)\s*" + _NUM + r")*)(?![\w-])", re.IGNORECASE)

_CODE_ABBR = re.compile(
    r"(?<![А-Яа-яA-Za-z])(ТК|ГК|УК|КоАП|КОАП|НК|ЖК|СК|АПК|ГПК|УПК|БК|ЗК|КАС|ГрК)"
    r"(?:\s*(?:РФ|России|Российской\s+Федерации))?(?![А-Яа-я])")
_CODE_NAMES = (
    (r"гражданск\w*\s+процессуальн\w*\s+кодекс\w*", "ГПК"),
    (r"арбитражн\w*\s+процессуальн\w*\s+кодекс\w*", "АПК"),
    (r"уголовно-процессуальн\w*\s+кодекс\w*", "УПК"),
    (r"трудов\w*\s+кодекс\w*", "ТК"), (r"гражданск\w*\s+кодекс\w*", "ГК"),
    (r"уголовн\w*\s+кодекс\w*", "УК"), (r"налогов\w*\s+кодекс\w*", "НК"),
    (r"жилищн\w*\s+кодекс\w*", "ЖК"), (r"семейн\w*\s+кодекс\w*", "СК"),
    (r"бюджетн\w*\s+кодекс\w*", "БК"), (r"земельн\w*\s+кодекс\w*", "ЗК"),
    (r"градостроительн\w*\s+кодекс\w*", "ГрК"),
    (r"кодекс\w*\s+(?:российской\s+федерации\s+|рф\s+)?об\s+административных\s+"
     r"правонарушениях", "КоАП"),
    (r"кодекс\w*\s+административного\s+судопроизводства", "КАС"),
    (r"конституци\w*", "Конституция"),
)
_CODE_NAME_RE = re.compile(
    "(?:" + "|".join(f"(?P<c{i}>{p})" for i, (p, _) in enumerate(_CODE_NAMES)) + ")" +
    r"(?:\s+(?:рф|российской\s+федерации|россии))?", re.IGNORECASE)
_LAW = re.compile(
    r"(?:(?:федеральн\w*\s+)?закон\w*\s+(?:рф\s+)?|фз\s+)?(?:от\s+" + _DATE + r"\s+)?"
    r"(?:№\s*)?(?:(\d+)-фз|фз-(\d+))(?:\s+от\s+" + _DATE + r")?", re.IGNORECASE)
_NUMBERED_LAW = re.compile(r"закон\w*\s+(?:рф\s+)?(?:от\s+" + _DATE + r"\s+)?№\s*(\d+-\d+)",
                           re.IGNORECASE)
_STRICT_GAP = re.compile(r"^(?:[\s,()]*|\s+и\s+)$")


@dataclass(frozen=True, order=True)
class LegalRef:
    """One normalised reference; ``str()`` is its canonical form."""

    act: str
    article: str | None = None
    part: str | None = None
    point: str | None = None
    subpoint: str | None = None

    def __str__(self) -> str:
        out = [self.act]
        for label, v in (("ст.", self.article), ("ч.", self.part), ("п.", self.point),
                         ("пп.", self.subpoint)):
            if v is not None:
                out.append(f"{label} {v}")
        return ", ".join(out)


@dataclass
class _Tok:
    start: int
    end: int
    kind: str                    # "art" | "part" | "point" | "sub" | "act"
    values: list[str] = field(default_factory=list)


def _ordinal(v: str) -> str:
    low = v.lower()
    for i, stem in enumerate(_ORD):
        if low.startswith(stem):
            return str(i + 1)
    return low


def _articles(raw: str) -> list[str]:
    out: list[str] = []
    parts = re.split(r"\s*(,|и|–|—|-)\s*", raw)
    nums, seps = parts[0::2], parts[1::2]
    out.append(nums[0])
    for sep, n in zip(seps, nums[1:], strict=False):
        prev = out[-1]
        if sep in "–—-" and prev.isdigit() and n.isdigit() and 0 < int(n) - int(prev) <= 20:
            out.extend(str(x) for x in range(int(prev) + 1, int(n) + 1))
        else:
            out.append(n)
    return out


def _date(groups: tuple[str | None, ...]) -> str | None:
    d, m, y, d2, mname, y2 = groups
    if d and m and y:
        return f"{int(d):02d}.{int(m):02d}.{y}"
    if d2 and mname and y2:
        month = next(i + 1 for i, s in enumerate(_MONTHS) if mname.lower().startswith(s))
        return f"{int(d2):02d}.{month:02d}.{y2}"
    return None


def _act_tokens(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for m in _CODE_ABBR.finditer(text):
        abbr = "КоАП" if m.group(1).upper() == "КОАП" else m.group(1)
        toks.append(_Tok(m.start(), m.end(), "act", [f"{abbr} РФ"]))
    for m in _CODE_NAME_RE.finditer(text):
        name = next(_CODE_NAMES[int(k[1:])][1] for k, v in m.groupdict().items() if v)
        toks.append(_Tok(m.start(), m.end(), "act", [f"{name} РФ"]))
    for m in _LAW.finditer(text):
        g = m.groups()
        number = g[6] or g[7]
        date = _date(g[0:6]) or _date(g[8:14])
        toks.append(_Tok(m.start(), m.end(), "act",
                         [f"{number}-ФЗ" + (f" от {date}" if date else "")]))
    for m in _NUMBERED_LAW.finditer(text):
        date = _date(m.groups()[0:6])
        toks.append(_Tok(m.start(), m.end(), "act",
                         [m.group(7) + (f" от {date}" if date else "")]))
    return toks


def _tokens(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for kind, rx in (("sub", _SUB), ("point", _POINT), ("part", _PART), ("art", _ART)):
        for m in rx.finditer(text):
            value = m.group(1)
            vals = _articles(value) if kind == "art" else [
                _ordinal(value) if kind == "part" else value.lower()]
            toks.append(_Tok(m.start(), m.end(), kind, vals))
    toks += _act_tokens(text)
    toks.sort(key=lambda t: (t.start, -(t.end - t.start)))
    kept: list[_Tok] = []
    for t in toks:                      # earliest, then longest, wins an overlap
        if not kept or t.start >= kept[-1].end:
            kept.append(t)
    return kept


def _groups(text: str, toks: list[_Tok]) -> list[list[_Tok]]:
    groups: list[list[_Tok]] = []
    for t in toks:
        if t.kind == "act":
            groups.append([t])
        elif (groups and groups[-1][-1].kind != "act"
              and _STRICT_GAP.match(text[groups[-1][-1].end:t.start])):
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def _refs_of(group: list[_Tok], act: str) -> list[LegalRef]:
    refs: list[LegalRef] = []
    pending: dict[str, str] = {}
    last: list[int] = []
    for t in group:
        if t.kind == "art":
            last = list(range(len(refs), len(refs) + len(t.values)))
            for a in t.values:
                refs.append(LegalRef(act, a, pending.get("part"), pending.get("point"),
                                     pending.get("sub")))
            pending = {}
        else:
            pending[t.kind] = t.values[0]
    if pending and last:                # trailing parts: "ст. 80, ч. 1"
        for i in last:
            r = refs[i]
            refs[i] = LegalRef(r.act, r.article, r.part or pending.get("part"),
                               r.point or pending.get("point"), r.subpoint or pending.get("sub"))
    return refs


def _act_for(text: str, groups: list[list[_Tok]], i: int) -> str | None:
    g = groups[i]
    if i + 1 < len(groups) and groups[i + 1][0].kind == "act":
        gap = text[g[-1].end:groups[i + 1][0].start]
        if len(gap) <= 45 and not re.search(r"[\d.!?;]|\bст\b", gap):
            return groups[i + 1][0].values[0]
    if i > 0 and groups[i - 1][0].kind == "act":
        gap = text[groups[i - 1][0].end:g[0].start]
        if len(gap) <= 5 and re.fullmatch(r"[\s,(]*", gap):
            return groups[i - 1][0].values[0]
    return None


def parse_legal_refs(text: str) -> list[LegalRef]:
    """Every legal reference in ``text``, normalised, in order of appearance, no repeats."""
    norm = (text.replace("ё", "е").replace("Ё", "Е").replace("\u00a0", " ")
            .replace("“", '"').replace("”", '"').replace("„", '"'))
    norm = re.sub(r"(?<![A-Za-z])N\s*(?=\d)", "№ ", norm)
    groups = _groups(norm, _tokens(norm))
    used: set[int] = set()
    out: list[LegalRef] = []
    for i, g in enumerate(groups):
        if g[0].kind == "act":
            continue
        if all(t.kind != "art" for t in g):
            # "статья 93 ТК РФ (ч. 1)": parts after the act belong to the article before it
            if i >= 2 and groups[i - 1][0].kind == "act" and out and _STRICT_GAP.match(
                    norm[groups[i - 1][0].end:g[0].start]):
                prev = out.pop()
                out.extend(_refs_of([_Tok(0, 0, "art", [prev.article or ""]), *g], prev.act))
            continue
        act = _act_for(norm, groups, i)
        if act is None:
            continue
        used.add(i + 1 if i + 1 < len(groups) and groups[i + 1][0].values[0] == act
                 and groups[i + 1][0].kind == "act" else i - 1)
        out.extend(_refs_of(g, act))
    for i, g in enumerate(groups):      # a law named on its own is a reference to it
        if g[0].kind == "act" and i not in used and "РФ" not in g[0].values[0]:
            out.append(LegalRef(g[0].values[0]))
    return list(dict.fromkeys(out))
