"""Person names written in Latin letters (English texts, transliterated Russian names), by
patterns rather than a first-name list alone:

* a title (``Mr``, ``Dr``, ``Prof.``…) followed by capitalised words or initials — the span
  leaves the title out;
* runs of two to four capitalised words or initials with at least one known given name or
  surname (``data/latin_names.txt``: English and other traditions, Russian names in their
  usual transliterations) or a surname ending (``-ov``, ``-enko``, ``-yan``, ``-ovna``…), and
  none of them a capitalised common word (``Street``, ``University``, ``Monday``…);
* a single capitalised word after a context cue (``my name is``, ``Dear``, ``Thanks,``,
  ``ask``, ``call``…) that is a known name or has a surname ending; a single known given name
  anywhere it is not one of the given names that are also common words (``May``, ``Will``…).

It does not find lower-case names or unknown names without a cue.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from ragmeter.privacy.detect import Finding

TITLES = r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Professor|Doctor|Sir|Dame|Lady|Lord|Rev|Captain)"
#: Latin capitals and small letters, those with diacritics included (Wiśniewski, Müller,
#: Đorđević): a name written in Latin letters is not only ASCII
UP = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽȘȚ"
LOW = "a-zß-öø-ÿā-žșț"
_TITLE = re.compile(rf"\b{TITLES}\.?\s+(?=[{UP}])")
_TOKEN = re.compile(rf"(?<![\w'’])(?:(?:Mc|Mac|O')[{UP}][{LOW}]+|[{UP}][{LOW}]+"
                    rf"(?:['’-][{UP}]?[{LOW}]+)*|[{UP}]\.)")
_SURNAME_END = re.compile(
    r"(?:ov|ova|ev|eva|yov|yova|in|ina|yn|sky|skiy|skii|skaya|ski|ska|enko|chuk|uk|yan|ian|"
    r"ich|vich|ovich|evich|ovna|evna|shvili|dze|adze|oglu|escu|poulos|ides|wicz|czyk|"
    r"sson|sen|stein|berg|mann)$")
_CUE = re.compile(
    r"(?:\bmy name is|\bi am|\bi'm|\bthis is|\bdear|\bhi|\bhello|\bhey|\bthanks,?|"
    r"\bthank you,?|\bregards,?|\bsincerely,?|\bcheers,?|\bask|\bcall|\bcontact|\btell|\bemail|"
    r"\bcc|\bsigned by|\bon behalf of|\bwith|\bfor|\bto|\bfrom|\bby|\bstudent|\bpatient|"
    r"\bcustomer|\bclient|\bapplicant|\bsupervisor|\bcolleague|\bmanager|\bteacher|"
    r"\btutor|\blecturer)[\s,:]+$", re.IGNORECASE)
#: cues after which a run of two to four capitalised words is a person's name whatever the
#: names (the weak cues above — "to", "for", "with" — also precede organisations and places)
_PERSON_CUE = re.compile(
    r"(?:\bmy name is|\bi am|\bi'm|\bthis is|\bdear|\bhi|\bhello|\bask|\bcall|\bcontact|"
    r"\btell|\bsigned by|\bon behalf of|\bstudent|\bpatient|\bcustomer|\bclient|\bapplicant|"
    r"\bsupervisor|\bcolleague|\bteacher|\btutor|\blecturer)[\s,:]+$", re.IGNORECASE)
#: capitalised words that are not names even next to one
_NOT_NAMES = """
The A An And Or But If In On At To From For With By Of Is Are Was Were Be I We You He She They
It This That These Those My Your Our Their His Her Its Please Thank Thanks Hello Hi Hey Dear
Regards Best Kind Yours Sincerely Cheers Yes No Not Ok Okay Also Then So Just Hope Sorry
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Room Building Floor University College
School Institute Academy Faculty Street Avenue Road Lane Drive Square Office Dean Department
Group Course Bank Card Account Student Students Service Services Support Team Manager Customer
Client Order Invoice Ticket Number Phone Email Address Passport Date Birth Moscow Russia Russian
London English British America American Europe European State City Centre Center Hospital
Clinic Pharmacy Court Police Council Ministry Company Ltd Inc Group Library Hall House Park
North South East West New Old Great Saint St Mount Lake River Portal Online App Mobile Plan
Tariff Family Basic Premium Gold Silver Home Internet Registrar Admissions Reception Dorm
Hostel Campus Exam Session Module Thesis Diploma Certificate Form Visa Insurance Tax Health
Care Social Fund Public Centre Welcome Good Morning Evening Afternoon Night Today Tomorrow
Yesterday God Christmas Easter Id Pin Sim Ok Rf Ru Inn Ogrn Snils Dob
"""
NOT_NAMES = frozenset(_NOT_NAMES.split())
#: given names that are also everyday words: names only next to another name part or a cue
_AMBIGUOUS = """
May June April August Will Mark Bill Rose Grace Hope Faith Joy Summer Sunny Dawn Jay Lee
Long Young King Green White Black Brown Grant Hunter Carter Mason Cook Baker Bell Hill Wood
Rice Ray Lane Stone Fox West Page Price Hall Park Ford Field Fields Mills Banks Jordan Chase
Sandy Penny Holly Ivy Violet Ruby Amber Crystal Art Max Bob Pat Sam Ken Van Can Li Le Ma He Wu
Lin Sun Gao Yan Jun Hui Lei Mei Ming Kim Deniz Elif Emre
"""
AMBIGUOUS = frozenset(_AMBIGUOUS.split())


@lru_cache(maxsize=1)
def name_lists() -> tuple[frozenset[str], frozenset[str]]:
    """(given names, surnames) of ``data/latin_names.txt``."""
    text = resources.files("ragmeter.privacy").joinpath("data", "latin_names.txt").read_text(
        "utf-8")
    parts: dict[str, set[str]] = {"first": set(), "surname": set()}
    section = "first"
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif line and not line.startswith("#"):
            parts[section].update(line.split())
    return frozenset(parts["first"]), frozenset(parts["surname"])


def _namish(word: str) -> bool:
    first, last = name_lists()
    w = word.replace("’", "'")
    return (w in first or w in last or (len(w) > 4 and bool(_SURNAME_END.search(w.lower()))
                                        and w not in NOT_NAMES))


def _sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    if re.search(rf"\b{TITLES}\.$", before):
        return False                    # "Dr. Grace Walker": the dot ends a title
    return not before or before[-1] in ".!?:\n\"«"


def _runs(text: str) -> list[list[re.Match[str]]]:
    """Runs of capitalised words and initials separated by single spaces."""
    runs: list[list[re.Match[str]]] = []
    for m in _TOKEN.finditer(text):
        if runs and re.fullmatch(r" ", text[runs[-1][-1].end():m.start()]) and len(runs[-1]) < 4:
            runs[-1].append(m)
        else:
            runs.append([m])
    return runs


def _common(m: re.Match[str], marked: bool) -> bool:
    """A capitalised common word — unless it is a known surname after an initial or a title
    (``A. Park``, ``Dr. Long``)."""
    return m.group(0) in NOT_NAMES and not (marked and m.group(0) in name_lists()[1])


def _trim(run: list[re.Match[str]], marked: bool) -> list[re.Match[str]]:
    """The run without capitalised common words at its ends."""
    while run and _common(run[0], marked):
        run = run[1:]
    while run and _common(run[-1], marked):
        run = run[:-1]
    return run


def english_names(text: str) -> list[Finding]:
    """Person names in Latin letters by the patterns above."""
    first, _ = name_lists()
    out: list[Finding] = []
    titled = {m.end() for m in _TITLE.finditer(text)}
    for raw in _runs(text):
        marked = any(m.group(0).endswith(".") for m in raw) or raw[0].start() in titled
        run = _trim(raw, marked)
        first_names, _ = name_lists()
        if run and len(run) > 1 and _sentence_start(text, run[0].start()) \
                and not _namish(run[0].group(0)) and not run[0].group(0).endswith(".") \
                and run[0].group(0) not in first_names:
            run = run[1:]           # a capitalised first word of a sentence: "Contact Ivanov"
        if not run or any(_common(m, marked) for m in run):
            continue
        words = [m.group(0) for m in run if not m.group(0).endswith(".")]
        if not words:
            continue
        start, end = run[0].start(), run[-1].end()
        after_title = start in titled
        cue = bool(_CUE.search(text[max(0, start - 20):start]))
        if len(run) >= 2:
            initials = len(words) < len(run)    # "O. Clarke", "J. R. Tolkien"
            person_cue = bool(_PERSON_CUE.search(text[max(0, start - 20):start]))
            ok = after_title or initials or person_cue or any(_namish(w) for w in words)
        else:
            w = words[0]
            ok = after_title or (cue and _namish(w)) or (
                w in first and w not in AMBIGUOUS and not (
                    _sentence_start(text, start) and text[end:end + 1] not in (",", " ")))
        if ok:
            out.append(Finding(start, end, "person", text[start:end]))
    return out
