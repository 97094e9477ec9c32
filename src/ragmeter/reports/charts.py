"""Chart files (``.svg``) drawn by the same engine as the HTML report (:mod:`.svg`).

Inputs are plain data, so any tier can use them::

    series = {"bm25": {5: (0.71, 0.65, 0.77), 10: (0.80, 0.75, 0.85)}, "dense": {...}}

maps a system to ``{k: (mean, ci_low, ci_high)}``; CI bounds may be ``None``. Every point is
drawn with its 95% CI, the value axis is chosen from the data (and says so when it does not
start at 0), each system keeps one colour in every panel, and the output is byte-stable.
Files are SVG only: one engine for the report and the files, so a chart looks the same in both.

:func:`tier0_chart` and :func:`confusion_chart` draw the embedding-quality and production-judge
charts from their results.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ragmeter.reports import svg

Point = tuple[float | None, float | None, float | None]
Series = Mapping[str, Mapping[int, Point]]

FORMATS = ("svg",)
_SIZE = re.compile(r'<svg [^>]*?width="(\d+)" height="(\d+)"')


def compose(charts: Sequence[str], title: str = "", *, kind: str = "panels",
            vertical: bool = False) -> str:
    """Place several charts of :mod:`.svg` side by side (or one below the other) in one
    standalone SVG."""
    sizes = []
    for c in charts:
        m = _SIZE.search(c)
        sizes.append((int(m.group(1)), int(m.group(2))) if m else (400, 300))
    top = 26 if title else 0
    ws, hs = [w for w, _ in sizes] or [200], [h for _, h in sizes] or [40]
    gap = 10 * max(0, len(sizes) - 1)
    width = max(ws) if vertical else sum(ws) + gap
    height = top + (sum(hs) + gap if vertical else max(hs))
    width = max(width, int(svg.text_width(title, 14)) + 16)
    parts = [f'<svg class="rm-chart" data-chart="{kind}" xmlns="http://www.w3.org/2000/svg" '
             f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}" {svg.FONT} font-size="{svg.FONT_SIZE}">']
    if title:
        parts.append(f'<text x="8" y="18" font-size="14" font-weight="600">{escape(title)}'
                     "</text>")
    x, y = 0, top
    for c, (w, h) in zip(charts, sizes, strict=True):
        parts.append(c.replace('<svg class="rm-chart"', f'<svg x="{x}" y="{y}" class="rm-chart"',
                               1))
        if vertical:
            y += h + 10
        else:
            x += w + 10
    parts.append("</svg>")
    return "\n".join(parts)


def _write(chart: str, out_stem: str | Path, formats: Sequence[str]) -> list[Path]:
    unknown = [f for f in formats if f != "svg"]
    if unknown:
        from ragmeter.errors import ConfigError

        raise ConfigError("formats", f"chart files are SVG only (asked for {unknown})", ["svg"])
    return [svg.write_svg(chart, Path(out_stem).with_suffix(".svg"))]


def _points(series: Mapping[int, Point], ks: Sequence[int]) -> list[svg.Point]:
    return [svg.Point(*series.get(k, (None, None, None))) for k in ks]


def grouped_bar_chart(panels: Mapping[str, Series], out_stem: str | Path, *,
                      title: str = "", ylabel: str = "score",
                      formats: Sequence[str] = FORMATS, lang: str = "en") -> list[Path]:
    """One panel per entry of ``panels`` (e.g. hit@k, doc_hit@k): for each k, one row per
    system with its mean and 95% CI. Returns the written files."""
    del ylabel
    systems = list(dict.fromkeys(s for series in panels.values() for s in series))
    colors = svg.system_colors(systems)
    charts = []
    for panel, series in panels.items():
        ks = sorted({k for pts in series.values() for k in pts})
        rows = [(f"k={k} · {s}", svg.Point(*series[s].get(k, (None, None, None))))
                for k in ks for s in series]
        row_colors = {f"k={k} · {s}": colors[s] for k in ks for s in series}
        charts.append(svg.forest(panel, rows, colors=row_colors, lang=lang))
    return _write(compose(charts, title, kind="bars"), out_stem, formats)


def line_chart_by_k(panels: Mapping[str, Series], out_stem: str | Path, *, title: str = "",
                    ylabel: str = "score", formats: Sequence[str] = FORMATS,
                    lang: str = "en") -> list[Path]:
    """Metric against k, one line per system with 95% CI whiskers, one panel per entry."""
    del ylabel
    systems = list(dict.fromkeys(s for series in panels.values() for s in series))
    colors = svg.system_colors(systems)
    charts = []
    for panel, series in panels.items():
        ks = sorted({k for pts in series.values() for k in pts})
        charts.append(svg.line_chart(ks, {s: _points(pts, ks) for s, pts in series.items()},
                                     panel, colors=colors, lang=lang))
    return _write(compose(charts, title, kind="lines"), out_stem, formats)


def tier0_chart(results: Sequence[Any], out_dir: str | Path, stem: str = "tier0",
                lang: str = "en") -> list[Path]:
    """Embedding quality per model (silhouette, intra-cluster similarity, inter-cluster
    distance) with 95% CIs, from tier-0 :class:`~ragmeter.results.records.EvalResult`\\ s."""
    colors = svg.system_colors(r.name for r in results)
    charts = []
    for metric in ("silhouette", "intra_cluster_sim", "inter_cluster_dist"):
        rows = []
        for r in results:
            mr = r.results.get(metric)
            a = mr.aggregate if mr is not None else None
            rows.append((r.name, svg.Point(a.mean, a.ci_low, a.ci_high) if a and a.n
                         else svg.Point(None)))
        if any(p.ok for _, p in rows):
            charts.append(svg.forest(f"{metric}, 95% CI", rows, colors=colors, lang=lang))
    return _write(compose(charts, "Tier 0: embedding quality", vertical=True),
                  Path(out_dir) / stem, FORMATS)


def confusion_chart(result: Any, out_dir: str | Path, stem: str = "judge_pipeline_confusion",
                    lang: str = "en") -> list[Path]:
    """The production judge's 2×2 confusion matrix (rows gold, columns predicted)."""
    c = result.meta["confusion"]
    chart = svg.heatmap([[c["tp"], c["fn"]], [c["fp"], c["tn"]]], ["show", "hide"],
                        ["show", "hide"], f"confusion matrix of {result.name}",
                        row_title="gold", col_title="predicted")
    return _write(chart, Path(out_dir) / stem, FORMATS)
