"""The "axis does not start at 0" note appears exactly when the drawn value axis does not
reach 0, and names the axis' real end."""

from __future__ import annotations

import re

import pytest

from ragmeter.reports import svg
from ragmeter.reports.boxplot import box_plot


def _ticks(chart: str) -> list[float]:
    return [float(v) for v in re.findall(r'fill="#555">([-0-9.e]+)</text>', chart)]


@pytest.mark.parametrize("values", [(0.05, 0.02, 0.09), (0.6, 0.55, 0.66), (0.9, 0.87, 0.93),
                                    (-0.3, -0.4, -0.2), (-0.05, -0.1, 0.2), (0.0, 0.0, 0.0),
                                    (12.0, 11.0, 13.0)])
def test_axis_note_only_when_axis_misses_zero(values: tuple[float, float, float]) -> None:
    rows = [("a", svg.Point(*values)), ("b", svg.Point(values[0] * 0.9))]
    chart = svg.forest("m", rows)
    a, b = svg.nice_range([v for _, p in rows for v in (p.mean, p.low, p.high)])
    ticks = _ticks(chart)
    note = re.findall(r'class="rm-note"[^>]*>([^<]*)<', chart)
    if a > 0:
        assert min(ticks) == a  # the first tick shows where the axis starts
        assert note == [f"axis starts at {a:g}, not 0"]
    elif b < 0:
        assert max(ticks) <= b
        assert note == [f"axis ends at {b:g}, not 0"]
    else:
        assert 0.0 in ticks and note == []


def test_axis_note_on_line_and_box_charts_follows_the_drawn_axis() -> None:
    near_zero = svg.line_chart([1, 5], {"s": [svg.Point(0.1, 0.05, 0.15),
                                              svg.Point(0.2, 0.1, 0.3)]}, "t")
    assert "axis starts" not in near_zero and min(_ticks(near_zero)) == 0
    high = svg.line_chart([1, 5], {"s": [svg.Point(0.8), svg.Point(0.9)]}, "t", lang="ru")
    assert "ось начинается с" in high
    box0 = box_plot("b", [("s", [0.0, 0.3, 0.5, 0.9], svg.Point(0.425, 0.1, 0.7))])
    assert "axis starts" not in box0
    box_high = box_plot("b", [("s", [0.8, 0.85, 0.9, 0.95], svg.Point(0.875, 0.82, 0.93))])
    assert "axis starts at" in box_high


def test_zoom_note_text() -> None:
    assert svg.zoom_note(0.0, 1.0) is None and svg.zoom_note(-1.0, 1.0) is None
    assert svg.zoom_note(0.4, 1.0) == "axis starts at 0.4, not 0"
    assert svg.zoom_note(-0.6, -0.2) == "axis ends at -0.2, not 0"
