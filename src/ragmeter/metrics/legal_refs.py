"""Russian legal references in text, normalised so that different spellings of one reference
match: ``п. 6 ч. 1 ст. 81 ТК РФ``, ``пункт 6 части первой статьи 81 Трудового кодекса``
and ``ТК РФ, ст. 81, ч. 1, п. 6`` are all ``ТК РФ, ст. 81, ч. 1, п. 6``.

Recognised: articles (ст., ст. ст., статья / статей in any case, ordinals «81-й статьи»,
lists ``ст. 80 и 81``, ranges ``ст. 238–241``, dotted numbers ``ст. 12.9``); parts (ч.,
часть / частей, ordinal words) and points (п., пункт) — lists and ranges of them give one
reference each (``ч. 1 и 2 ст. 5`` is two); subpoints (пп., п.п., подп., letters in quotes);
the codes by abbreviation or full name in any case (ТК, ГК, УК, КоАП, НК, ЖК, СК, АПК, ГПК,
УПК, БК, ЗК, КАС, ГрК, the Constitution); laws by number (``№ 152-ФЗ``, ``ФЗ-152``,
``ФЗ № 229``, ``Закон РФ № 2300-1``, a Latin ``N``) with their date when given, and by short
title through a table of common titles (:mod:`ragmeter.metrics.legal_titles`: «Закона о
персональных данных» is 152-ФЗ). «этой же статьи», «той же статьи», «указанной статьи»
refer to the article cited just before, «того же кодекса» / «указанного закона» to its act.
Deterministic: no judge call.

A code named without an article is not a reference (``гл. 32 ГК РФ`` names a chapter); a
law named without an article is one (the whole law). Every reference carries the span of the
text it was read from (``span``, not part of its identity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ragmeter.metrics.legal_titles import ABBREVIATIONS, TITLE_RE, title_act

_NUM = r"\d+(?:\.\d+)*"
_ORD = ("перв", "втор", "трет", "четверт", "пят", "шест", "седьм", "восьм", "девят", "десят")
_ORD_RE = r"(?:" + "|".join(_ORD) + r")\w*"
_SUFFIX = r"(?:-?(?:й|я|ой|ей|ую|ом|го|му|е)(?![а-я]))?"      # «81-й», «3-я»
_MONTHS = ("январ", "феврал", "март", "апрел", "ма", "июн", "июл", "август", "сентябр",
           "октябр", "ноябр", "декабр")
_DATE = (r"(?:(\d{1,2})\.(\d{1,2})\.(\d{4})|(\d{1,2})\s+(" + "|".join(_MONTHS) +
         r")\w*\s+(\d{4})(?:\s*(?:г\.|года?))?)")
_SEP = r"\s*(?:,\s*(?:и\s+)?|\s+и\s+|\s+или\s+|\s*[–—-]\s*|\s+по\s+)\s*"
_LETTER = r"[\"'«]?\s*[а-я](?![а-я])\s*[\"'»]?"


def _list(item: str) -> str:
    return rf"({item}(?:{_SEP}{item})*)"


_SUB = re.compile(r"(?<!\w)(?:п\.\s?п\.|пп\.|подп\.|подпункт\w*)\s*"
                  + _list(rf"(?:{_LETTER}|{_NUM})"), re.IGNORECASE)
_POINT = re.compile(r"(?<![\w.])(?:п\.|пункт\w*)\s*" + _list(rf"(?:{_LETTER}|{_NUM}{_SUFFIX})"),
                    re.IGNORECASE)
_PART = re.compile(r"(?<!\w)(?:ч\.|част[ьиюе]\w*|частей)\s*"
                   + _list(rf"(?:{_NUM}{_SUFFIX}|{_ORD_RE})") + r"(?!\w)", re.IGNORECASE)
_ART = re.compile(r"(?<!\w)(?:ст\.\s*ст\.|ст\.|стать[яиеюй]\w*|статей)\s*"
                  + _list(rf"{_NUM}{_SUFFIX}") + r"(?![\w-])", re.IGNORECASE)
_ART_BEFORE = re.compile(rf"(?<![\w.])({_NUM})-?(?:й|я|ой|ей|ую|ом)\s+стать\w*", re.IGNORECASE)
_ART_ANAPHOR = re.compile(r"(?<!\w)(?:этой\s+же|той\s+же|этой|указанной|данной|названной|"
                          r"настоящей|приведенной|упомянутой)\s+стать\w*", re.IGNORECASE)
_ACT_ANAPHOR = re.compile(r"(?<!\w)(?:этого\s+же|того\s+же|указанного|данного|названного|"
                          r"упомянутого)\s+(?:кодекса|закона)(?!\w)", re.IGNORECASE)

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
_LAW_WORD = (r"(?:(?:федеральн\w*\s+)?закон(?!одат)\w*|фз)\s+"
             r"(?:рф\s+|российской\s+федерации\s+)?")
_LAW = re.compile(
    r"(?:" + _LAW_WORD + r")?(?:от\s+" + _DATE + r"\s+)?"
    r"(?:№\s*)?(?:(\d+)-фз|фз-(\d+))(?:\s+от\s+" + _DATE + r")?", re.IGNORECASE)
_LAW_NO_SUFFIX = re.compile(r"(?:федеральн\w*\s+закон\w*|фз)\s+№\s*(\d+)(?![\d-])",
                            re.IGNORECASE)
_NUMBERED_LAW = re.compile(r"закон\w*\s+(?:рф\s+|рсфср\s+)?(?:от\s+" + _DATE +
                           r"\s+)?№\s*(\d+-\d+)", re.IGNORECASE)
_TITLED_LAW = re.compile(
    _LAW_WORD + r"(?:от\s+" + _DATE + r"\s+)?(?:№\s*(?P<num>\d+)(?:-фз|-\d+)?\s+)?" + TITLE_RE,
    re.IGNORECASE)
_ABBR_LAW = re.compile(r"(?<![а-я])(" + "|".join(ABBREVIATIONS) + r")(?![а-я])", re.IGNORECASE)
_STRICT_GAP = re.compile(r"^(?:[\s,()]*|\s*,?\s*(?:и|или|а\s+также)\s+)$")


@dataclass(frozen=True, order=True)
class LegalRef:
    """One normalised reference; ``str()`` is its canonical form. ``span`` (start, end) is
    where it was read; ``range`` marks one of the references a range (``ч. 1–3``) stands for;
    ``anaphoric`` one resolved from «этой же статьи». None of the three is part of its
    identity."""

    act: str
    article: str | None = None
    part: str | None = None
    point: str | None = None
    subpoint: str | None = None
    span: tuple[int, int] | None = field(default=None, compare=False)
    range: bool = field(default=False, compare=False)
    anaphoric: bool = field(default=False, compare=False)

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
    kind: str                    # "art" | "part" | "point" | "sub" | "act" | "ana"
    values: list[str] = field(default_factory=list)
    ranged: set[str] = field(default_factory=set)


def _ordinal(v: str) -> str:
    low = v.lower()
    for i, stem in enumerate(_ORD):
        if low.startswith(stem):
            return str(i + 1)
    return re.sub(r"-?[а-я]+$", "", low) or low


def _values(raw: str, kind: str) -> tuple[list[str], set[str]]:
    """The items of a list (``1, 2 и 3``), ranges expanded (``1–3``) and marked."""
    items = re.split(r"(" + _SEP + r")", raw, flags=re.IGNORECASE)
    nums, seps = items[0::2], items[1::2]

    def clean(v: str) -> str:
        v = v.strip().strip("\"'«»").strip()
        return _ordinal(v) if kind in ("part", "art", "point") and not re.fullmatch(
            r"[а-я]", v, re.IGNORECASE) else v.lower()

    out = [clean(nums[0])]
    ranged: set[str] = set()
    for sep, n in zip(seps, nums[1:], strict=False):
        prev, cur = out[-1], clean(n)
        if re.search(r"[–—-]|\bпо\b", sep) and prev.isdigit() and cur.isdigit() \
                and 0 < int(cur) - int(prev) <= 20:
            span = [str(x) for x in range(int(prev), int(cur) + 1)]
            ranged.update(span)
            out.extend(span[1:])
        elif re.fullmatch(r"[а-я]", prev) and re.fullmatch(r"[а-я]", cur) and \
                re.search(r"[–—-]", sep) and 0 < ord(cur) - ord(prev) <= 10:
            span = [chr(c) for c in range(ord(prev), ord(cur) + 1)]
            ranged.update(span)
            out.extend(span[1:])
        else:
            out.append(cur)
    return list(dict.fromkeys(out)), ranged


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
        date = _date(g[0:6]) or _date(g[8:14])
        toks.append(_Tok(m.start(), m.end(), "act",
                         [f"{g[6] or g[7]}-ФЗ" + (f" от {date}" if date else "")]))
    for m in _LAW_NO_SUFFIX.finditer(text):
        toks.append(_Tok(m.start(), m.end(), "act", [f"{m.group(1)}-ФЗ"]))
    for m in _NUMBERED_LAW.finditer(text):
        date = _date(m.groups()[0:6])
        toks.append(_Tok(m.start(), m.end(), "act",
                         [m.group(7) + (f" от {date}" if date else "")]))
    for m in _TITLED_LAW.finditer(text):
        act = title_act(m.groupdict())
        num = m.group("num")
        if act is not None:
            if num and not act.startswith(f"{num}-"):
                act = f"{num}-ФЗ"           # the number written wins over the table
            date = _date(m.groups()[0:6])
            toks.append(_Tok(m.start(), m.end(), "act", [act + (f" от {date}" if date else "")]))
    for m in _ABBR_LAW.finditer(text):
        toks.append(_Tok(m.start(), m.end(), "act", [ABBREVIATIONS[m.group(1).lower()]]))
    for m in _ACT_ANAPHOR.finditer(text):
        toks.append(_Tok(m.start(), m.end(), "act", ["=act"]))
    return toks


def _tokens(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for kind, rx in (("sub", _SUB), ("point", _POINT), ("part", _PART), ("art", _ART)):
        for m in rx.finditer(text):
            vals, ranged = _values(m.group(1), kind)
            toks.append(_Tok(m.start(), m.end(), kind, vals, ranged))
    for m in _ART_BEFORE.finditer(text):
        toks.append(_Tok(m.start(), m.end(), "art", [m.group(1)]))
    for m in _ART_ANAPHOR.finditer(text):
        toks.append(_Tok(m.start(), m.end(), "ana", []))
    toks += _act_tokens(text)
    toks.sort(key=lambda t: (t.start, -(t.end - t.start)))
    kept: list[_Tok] = []
    for t in toks:                      # earliest, then longest, wins an overlap
        if not kept or t.start >= kept[-1].end:
            kept.append(t)
    return kept


def _law(act: str) -> str:
    return act.split(" от ")[0]


def _groups(text: str, toks: list[_Tok]) -> list[list[_Tok]]:
    groups: list[list[_Tok]] = []
    for t in toks:
        prev = groups[-1][0] if groups and groups[-1][0].kind == "act" else None
        if (t.kind == "act" and prev is not None and _law(prev.values[0]) == _law(t.values[0])
                and re.fullmatch(r"[\s,(]*", text[prev.end:t.start])):
            # one law named twice in a row ("Закона о полиции (3-ФЗ)"): one act
            value = max(prev.values[0], t.values[0], key=len)
            groups[-1][0] = _Tok(prev.start, t.end, "act", [value])
            continue
        if t.kind == "act":
            groups.append([t])
        elif (groups and groups[-1][-1].kind != "act"
              and _STRICT_GAP.match(text[groups[-1][-1].end:t.start])):
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def _refs_of(group: list[_Tok], act: str, span: tuple[int, int],
             previous: LegalRef | None) -> list[LegalRef]:
    """The references of one group of tokens (subpoints, points, parts, articles) under
    ``act``: one per listed value; an anaphoric article is ``previous``'s."""
    refs: list[LegalRef] = []
    pending: dict[str, _Tok] = {}
    last: list[int] = []

    def emit(articles: list[str], ranged: set[str], anaphoric: bool, a: str) -> None:
        nonlocal last
        levels = [pending.get(k) for k in ("part", "point", "sub")]
        start = len(refs)
        for art in articles:
            for part in (levels[0].values if levels[0] else [None]):
                for point in (levels[1].values if levels[1] else [None]):
                    for sub in (levels[2].values if levels[2] else [None]):
                        rng = art in ranged or any(
                            lv is not None and v in lv.ranged
                            for lv, v in zip(levels, (part, point, sub), strict=True))
                        refs.append(LegalRef(a, art, part, point, sub, span, rng, anaphoric))
        last = list(range(start, len(refs)))

    for t in group:
        if t.kind == "art":
            emit(t.values, t.ranged, False, act)
            pending = {}
        elif t.kind == "ana":
            if previous is not None and previous.article is not None:
                emit([previous.article], set(), True,
                     previous.act if act == "=act" else act)
            pending = {}
        else:
            pending[t.kind] = t
    if pending and last:                # trailing parts: "ст. 80, ч. 1"
        tail = [refs[i] for i in last]
        del refs[last[0]:]
        for r in tail:
            for part in (pending["part"].values if "part" in pending else [r.part]):
                for point in (pending["point"].values if "point" in pending else [r.point]):
                    for sub in (pending["sub"].values if "sub" in pending else [r.subpoint]):
                        refs.append(replace(r, part=r.part or part, point=r.point or point,
                                            subpoint=r.subpoint or sub))
    return refs


def _act_for(text: str, groups: list[list[_Tok]], i: int) -> tuple[str | None, int]:
    """The act of group ``i`` and the index of its act group (-1 when none)."""
    g = groups[i]
    if i + 1 < len(groups) and groups[i + 1][0].kind == "act":
        gap = text[g[-1].end:groups[i + 1][0].start]
        if len(gap) <= 45 and not re.search(r"[\d.!?;]|\bст\b", gap):
            return groups[i + 1][0].values[0], i + 1
    if i > 0 and groups[i - 1][0].kind == "act":
        gap = text[groups[i - 1][0].end:g[0].start]
        if len(gap) <= 5 and re.fullmatch(r"[\s,(]*", gap):
            return groups[i - 1][0].values[0], i - 1
    if any(t.kind == "ana" for t in g):
        return "=act", -1
    return None, -1


def _normalised(text: str) -> str:
    """Same length as ``text`` (spans stay valid): ё → е, no-break spaces, one kind of
    double quote, a Latin ``N`` before a number read as ``№``."""
    norm = (text.replace("ё", "е").replace("Ё", "Е").replace("\u00a0", " ")
            .replace("“", '"').replace("”", '"').replace("„", '"'))
    return re.sub(r"(?<![A-Za-z])N(?=\s*\d)", "№", norm)


def find_legal_refs(text: str) -> list[LegalRef]:
    """Every legal reference in ``text`` in order of appearance, each with its span (a
    reference cited twice appears twice)."""
    norm = _normalised(text)
    groups = _groups(norm, _tokens(norm))
    used: set[int] = set()
    out: list[LegalRef] = []
    for i, g in enumerate(groups):
        if g[0].kind == "act":
            continue
        if all(t.kind not in ("art", "ana") for t in g):
            # "статья 93 ТК РФ (ч. 1)": parts after the act belong to the article before it
            if i >= 2 and groups[i - 1][0].kind == "act" and out and _STRICT_GAP.match(
                    norm[groups[i - 1][0].end:g[0].start]):
                prev = out.pop()
                out.extend(_refs_of([_Tok(0, 0, "art", [prev.article or ""]), *g], prev.act,
                                    (*(prev.span or (0, 0))[0:1], g[-1].end), None))
            continue
        act, at = _act_for(norm, groups, i)
        if act is None:
            continue
        if act == "=act" and out:
            act = out[-1].act
        elif act == "=act":
            continue
        used.add(at)
        start, end = g[0].start, g[-1].end
        if at >= 0:
            start, end = min(start, groups[at][0].start), max(end, groups[at][0].end)
        out.extend(_refs_of(g, act, (start, end), out[-1] if out else None))
    for i, g in enumerate(groups):      # a law named on its own is a reference to it
        if (g[0].kind == "act" and i not in used and "РФ" not in g[0].values[0]
                and g[0].values[0] != "=act"):
            out.append(LegalRef(g[0].values[0], span=(g[0].start, g[0].end)))
    return sorted(out, key=lambda r: (r.span or (0, 0))[0])


def parse_legal_refs(text: str) -> list[LegalRef]:
    """Every legal reference in ``text``, normalised, in order of appearance, no repeats."""
    return list(dict.fromkeys(find_legal_refs(text)))
