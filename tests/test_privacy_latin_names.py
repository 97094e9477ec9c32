"""Person names in Latin letters (privacy/names_en.py) beyond ASCII and name lists: letters
with diacritics stay inside the name, and a strong person cue ("ask", "my name is",
"customer") makes a run of capitalised words a name even when no part is a known name."""

from __future__ import annotations

import pytest

from ragmeter.privacy.detect import find_all


def _people(text: str) -> list[str]:
    return [text[f.start:f.end] for f in find_all(text) if f.kind == "person"]


@pytest.mark.parametrize(("text", "name"), [
    ("Please call Tomasz Wiśniewski back tomorrow.", "Tomasz Wiśniewski"),
    ("Dr. Đorđe Petrović will see you.", "Đorđe Petrović"),
    ("Ask Ana-María Núñez about it.", "Ana-María Núñez"),
    ("My name is Kofi Boateng.", "Kofi Boateng"),
    ("Customer Oluwaseun Adeyemi requested a refund.", "Oluwaseun Adeyemi"),
])
def test_latin_names_keep_every_letter(text: str, name: str) -> None:
    assert _people(text) == [name]


@pytest.mark.parametrize("text", [
    "Please contact Customer Service.",
    "Send it to Acme Widgets.",
    "The office moved to São Paulo last year.",
])
def test_organisations_and_places_after_weak_cues_are_not_people(text: str) -> None:
    assert _people(text) == []
