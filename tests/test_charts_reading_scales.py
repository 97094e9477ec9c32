"""Reading scales: the methodology's ranges in reports/bands.py (its docstring table in sync),
read at their boundaries, shaded behind the charts of those metrics and listed in the report."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ragmeter.reports import bands, svg
from ragmeter.reports.bands import SCALES, find_scale, shades_for
from ragmeter.reports.charts import tier0_chart
from ragmeter.reports.i18n import TEXT
from ragmeter.results.records import EvalResult, MetricResult, Signature


def test_docstring_table_matches_the_scales() -> None:
    doc = bands.__doc__ or ""
    rows = {m.group(1).strip(): m.group(2).strip()
            for m in re.finditer(r"^\| ([^|]+) \| ([^|]+) \|$", doc, re.M)}
    listed = {k: v for k, v in rows.items() if k not in ("metric", "---")}
    assert listed == {s.label: s.describe() for s in SCALES}


@pytest.mark.parametrize("metric, value, level", [
    ("silhouette", 0.71, "strong cluster structure"),
    ("silhouette", 0.7, "reasonable structure"),  # "> 0.7" is strict
    ("silhouette", 0.5, "reasonable structure"),
    ("silhouette", 0.3, "weak structure"),
    ("silhouette", -0.2, "no cluster structure"),
    ("context_relevance", 0.9, "excellent"),  # "90–100 %" includes 90 %
    ("context_relevance", 0.89, "good"),
    ("context_relevance", 0.5, "average"),
    ("context_relevance", 0.49, "poor"),
    ("faithfulness", 0.81, "high quality, minimal hallucinations"),
    ("faithfulness", 0.65, None),  # the methodology names no range here
    ("faithfulness", 0.49, "serious faithfulness problems"),
    ("bleu", 55.0, "very good"), ("bleu", 45.0, None), ("bleu", 20.0, "acceptable"),
    ("bleu", 19.9, "needs substantial improvement"),
    ("rouge_l", 0.51, "good quality"), ("rouge_l(measure=p)", 0.9, "no scale"),
    ("rouge_l(stem=ru)", 0.49, None), ("rouge_l(measure=r,stem=ru)", 0.9, "no scale"),
    ("rouge_1", 0.41, "acceptable for short texts"),
    ("cache_hit_rate", 0.6, "high caching potential"), ("cache_hit_rate", 0.3, None),
    ("cache_hit_rate", 0.05, "the cache brings no benefit"),
    ("context_preservation", 0.75, "questions are related, context is kept"),
    ("context_preservation", 0.2, "questions are unrelated"),
    ("hit_rate@5", 0.9, "no scale"),
])
def test_scale_levels_at_their_boundaries(metric: str, value: float, level: str | None) -> None:
    scale = find_scale(metric)
    if level == "no scale":
        assert scale is None
        return
    assert scale is not None
    got = scale.read(value)
    assert (got.name if got else None) == level


def test_scales_are_translated_and_cite_no_document() -> None:
    for scale in SCALES:
        assert f"scale:{scale.label}" in TEXT
        for lv in scale.levels:
            assert f"lvl:{lv.name}" in TEXT and lv.title("ru") != lv.name
            assert lv.tone in bands.TONES
    text = (bands.__doc__ or "") + " ".join(" ".join(v) for k, v in TEXT.items()
                                            if k.startswith(("scale", "lvl:")))
    assert "§" not in text and "seed" not in text.lower()


def test_forest_shades_reading_scale_behind_the_rows() -> None:
    rows = [("a", svg.Point(0.8, 0.75, 0.85)), ("b", svg.Point(0.6, 0.5, 0.7))]
    plain = svg.forest("context_relevance", rows)
    shaded = svg.forest("context_relevance", rows, shades=shades_for("context_relevance"))
    assert 'class="rm-band"' not in plain
    bands_drawn = re.findall(r'<rect class="rm-band" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"',
                             shaded)
    # the axis 0.4–0.9 shows three ranges: 0.4–0.5 poor, 0.5–0.7 average, 0.7–0.9 good
    assert len(bands_drawn) == 3
    assert "≥ 0.9 excellent" in shaded and "0.7–0.9 good" in shaded  # legend lists the scale
    widths = [float(w) for _, w in bands_drawn]
    assert abs(widths[0] / widths[1] - 1.0) < 0.01  # 0.7–0.9 and 0.5–0.7 are equally wide
    assert abs(widths[1] / widths[2] - 2.0) < 0.01  # twice 0.4–0.5
    assert shaded.index('class="rm-band"') < shaded.index('class="rm-point"')  # behind the data


def _tier0(name: str, sil: list[float]) -> SimpleNamespace:
    res = EvalResult(name)
    res.add(MetricResult("silhouette", [f"d{i}" for i in range(len(sil))], np.asarray(sil),
                         Signature.make(metric="silhouette")))
    return SimpleNamespace(name=name, results=res.results)


def test_tier0_chart_shades_silhouette_scale(tmp_path: Path) -> None:
    (path,) = tier0_chart([_tier0("e5", [0.55, 0.6, 0.65, 0.72]),
                           _tier0("use", [0.3, 0.35, 0.4, 0.45])], tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count('class="rm-band"') >= 2
    assert "0.5–0.7 reasonable structure" in text and "0.25–0.5 weak structure" in text


def test_report_lists_reading_scales() -> None:
    from ragmeter.reports.html import _bands_legend

    legend = _bands_legend("ru")
    assert "Шкалы интерпретации" in legend and "&gt; 0.7 сильная кластерная структура" in legend
