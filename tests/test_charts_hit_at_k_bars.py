"""The hit@k chart is drawn as bars grouped per k (one bar per system), starting at 0, in the
report and in `ragmeter score baselines`' chart file."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from ragmeter.reports import svg
from ragmeter.reports.charts import grouped_bar_chart
from ragmeter.reports.html import render_run_html

_spec = importlib.util.spec_from_file_location(
    "runner_builders", Path(__file__).parent / "fixtures" / "runner" / "builders.py")
builders = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["runner_builders"] = builders
_spec.loader.exec_module(builders)  # type: ignore[union-attr]


def test_bar_chart_groups_bars_per_k_with_ci_from_zero() -> None:
    series = {"bm25": [svg.Point(0.72, 0.65, 0.79), svg.Point(0.9, 0.85, 0.95)],
              "dense": [svg.Point(0.8, 0.74, 0.86), svg.Point(None)]}
    chart = svg.bar_chart(["k=5", "k=10"], series, "hit@k")
    bars = re.findall(r'<rect class="rm-bar" data-series="(\w+)" x="([\d.]+)" y="([\d.]+)" '
                      r'width="[\d.]+" height="([\d.]+)"', chart)
    assert [b[0] for b in bars] == ["bm25", "dense", "bm25"]  # grouped per k; n/a drawn as text
    assert ">n/a<" in chart
    assert chart.count('class="rm-ci"') == 3
    # every bar starts at the 0 line, and its height is proportional to its value
    base = {round(float(y) + float(h), 1) for _, _, y, h in bars}
    assert len(base) == 1
    heights = [float(h) for *_, h in bars]
    assert abs(heights[0] / heights[1] - 0.72 / 0.8) < 0.01
    assert "axis starts" not in chart  # the axis holds 0: no note


def test_report_hit_at_k_chart_is_bars() -> None:
    html = render_run_html(builders.make_run("bars"), lang="en")
    assert 'data-chart="line"' not in html
    bars = re.search(r'<svg class="rm-chart" data-chart="bars".*?</svg>', html, re.S)
    assert bars and "hit@k per system, 95% CI" in bars.group(0)
    n_systems = len(builders.make_run("bars").tiers["retrieval"].results)
    assert bars.group(0).count('class="rm-bar"') == 3 * n_systems  # k = 1, 5, 10


def test_retrievers_hit_at_k_file_is_bars(tmp_path: Path) -> None:
    panels = {"hit@k (chunk)": {"bm25": {5: (0.9, 0.8, 0.97), 10: (0.95, 0.9, 1.0)},
                                "dense": {5: (0.85, 0.75, 0.93), 10: (0.97, 0.93, 1.0)}}}
    (path,) = grouped_bar_chart(panels, tmp_path / "hit_at_k_bars")
    text = path.read_text(encoding="utf-8")
    assert text.count('class="rm-bar"') == 4 and 'data-chart="forest"' not in text
    assert "axis starts" not in text  # bars from 0, even with every value above 0.75
