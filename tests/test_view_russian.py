"""Russian pages say everything in Russian: run and tier statuses, gate verdicts and the
viewer's own words (no "статус complete", no "FAIL")."""

from __future__ import annotations

import asyncio
import re

from ragmeter.reports.markdown import run_markdown
from ragmeter.runner.gating import Threshold, check_thresholds
from test_view_scale import _fill, _get, _run


def _text(html: str) -> str:
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_russian_pages_have_no_english_statuses(tmp_path):
    from ragmeter.view import make_app

    run = _run("r1", "альфа", 1)
    url = _fill(tmp_path / "s.sqlite", run)
    got = asyncio.run(_get(make_app(url, lang="ru"), ["/", "/run/r1", "/side", "/compare"]))
    for path, (status, html) in got.items():
        assert status == 200, path
        words = _text(html)
        for english in ("complete", "not run", "Runs", "Side by side", "Diff of two runs"):
            assert not re.search(rf"(?<![\w_-]){english}(?![\w_-])", words), (path, english)
    assert "завершён" in _text(got["/"][1])
    assert "статус: завершён" in _text(got["/run/r1"][1])


def test_russian_gate_verdicts():
    run = _run("r1", "альфа", 1)
    rows = check_thresholds(run.results(), [Threshold("mrr", min=0.99),
                                            Threshold("hit_rate@10", min=0.01)])
    md = run_markdown(run, rows, lang="ru")
    gate = md.split("| результат |", 1)[1] if "| результат |" in md else md
    assert "FAIL" not in gate and "PASS" not in gate
    assert "НЕ ПРОЙДЕНО" in gate and "ПРОЙДЕНО" in gate
