"""A missing optional part is named as what it is, with the command that installs it."""
from __future__ import annotations

import pytest

from ragmeter.cli.app import run as cli


def test_judge_demo_without_the_model_names_no_option(capsys) -> None:
    from ragmeter.judges.gguf import DEMO_MODEL, demo_judge_status

    if demo_judge_status(DEMO_MODEL).available:
        pytest.skip("the demo judge is installed here")
    code = cli(["judge", "demo"])
    err = capsys.readouterr().err
    assert code == 2
    assert "option" not in err and "demo judge is not installed" in err
    assert "pip install 'ragmeter[local-judge]'" in err


def test_judges_page_without_cards_says_how_to_get_one() -> None:
    from ragmeter.reports.judge_card import judges_table

    for lang in ("en", "ru"):
        html = judges_table([], lang)
        assert "ragmeter judge card RUN_ID --labels labels.jsonl" in html
