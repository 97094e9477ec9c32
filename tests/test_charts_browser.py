"""The new charts in real headless Chromium: box plots, hit@k bars and reading-scale shading
render, and no chart text is clipped by its chart or overlaps another label (long and Russian
labels included). Without Chromium these tests skip with that reason."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import cdp
from ragmeter.reports import svg
from ragmeter.reports.bands import SCALES, shades_for
from ragmeter.reports.boxplot import box_plot
from ragmeter.reports.html import write_run_html

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed "
                       "(run scripts/browser_setup.sh: apt-get install -y chromium)"),
]
OUT_DIR = Path(__file__).resolve().parent.parent / "test-output"
LONG = "очень-длинное-имя-системы-поиска-с-гибридным-слиянием-и-переранжированием"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    b = cdp.Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


def _gallery() -> str:
    """Every new chart kind with hard labels: long names, Russian legends, n/a values."""
    charts = []
    for lang in ("en", "ru"):
        charts.append(svg.bar_chart(
            ["k=1", "k=5", "k=10", "k=20"],
            {"bm25": [svg.Point(0.4, 0.3, 0.5), svg.Point(0.7, 0.6, 0.8), svg.Point(0.8),
                      svg.Point(None)],
             LONG: [svg.Point(0.45, 0.35, 0.55), svg.Point(0.75, 0.66, 0.84),
                    svg.Point(0.9, 0.85, 0.95), svg.Point(0.95, 0.9, 1.0)]},
            "hit@k", lang=lang))
        charts.append(box_plot("context_precision", [
            ("k=5 · bm25", [0.0, 0.2, 0.2, 0.4, 0.6, 1.0], svg.Point(0.4, 0.2, 0.6)),
            (f"k=5 · {LONG}", [0.1, 0.3, 0.5, 0.5, 0.7], svg.Point(0.42, 0.25, 0.6)),
            ("k=10 · dense", [float("nan")], svg.Point(None))],
            lang=lang, shades=shades_for("context_relevance", lang)))
        for scale in SCALES:
            key = scale.names[0]
            hi = 100.0 if key == "bleu" else 1.0
            charts.append(svg.forest(f"{key}, 95% CI", [
                ("bm25", svg.Point(0.55 * hi, 0.5 * hi, 0.6 * hi)),
                (LONG, svg.Point(0.85 * hi, 0.8 * hi, 0.9 * hi))],
                lang=lang, shades=shades_for(key, lang), higher_is_better=key != "bleu"))
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>charts</title></head>'
            '<body data-rendered="true">' + "".join(f"<figure>{c}</figure>" for c in charts)
            + "</body></html>")


def test_new_charts_have_no_clipped_or_overlapping_text(browser, tmp_path: Path) -> None:
    page = tmp_path / "gallery.html"
    page.write_text(_gallery(), encoding="utf-8")
    browser.open(page.as_uri())
    assert not browser.errors()
    check = browser.eval(cdp.CHART_TEXT_CHECK)
    assert check["texts"] > 300, check  # the check saw the labels
    assert not check["problems"], check["problems"]
    assert browser.eval("document.querySelectorAll('svg.rm-chart rect.rm-band').length") > 20
    browser.screenshot(OUT_DIR / "charts_gallery.png", max_height=9000)


def test_report_box_plots_and_bars_render_cleanly(browser, tmp_path: Path) -> None:
    page = write_run_html(builders.make_run("charts-browser"), tmp_path / "report.html")
    browser.open(page.as_uri())
    assert not browser.errors()
    kinds = browser.eval("Array.from(document.querySelectorAll('svg.rm-chart'))"
                         ".filter(s => s.getAttribute('data-rendered'))"
                         ".map(s => s.getAttribute('data-chart'))")
    assert "box" in kinds and "bars" in kinds and "line" not in kinds
    check = browser.eval(cdp.CHART_TEXT_CHECK)
    assert not check["problems"], check["problems"]
