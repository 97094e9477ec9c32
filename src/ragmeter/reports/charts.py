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

import numpy as np

from ragmeter.reports import boxplot, svg
from ragmeter.reports.i18n import t

Point = tuple[float | None, float | None, float | None]
Series = Mapping[str, Mapping[int, Point]]

FORMATS = ("svg",)
#: per-query metrics whose distribution a box plot shows (retrieval and context metrics)
BOX_METRICS = ("context_precision", "context_recall", "id_context_precision",
               "id_context_recall", "precision", "recall", "ndcg", "mrr", "map",
               "context_relevance")
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
    """One panel per entry of ``panels`` (e.g. hit@k, doc_hit@k): bars grouped per k, one bar
    per system with its mean and 95% CI, from 0. Returns the written files."""
    del ylabel
    systems = list(dict.fromkeys(s for series in panels.values() for s in series))
    colors = svg.system_colors(systems)
    charts = []
    for panel, series in panels.items():
        ks = sorted({k for pts in series.values() for k in pts})
        charts.append(svg.bar_chart([f"k={k}" for k in ks],
                                    {s: _points(pts, ks) for s, pts in series.items()},
                                    panel, colors=colors, lang=lang))
    return _write(compose(charts, title, kind="bars"), out_stem, formats)


def box_chart(panels: Mapping[str, Sequence[tuple[str, Sequence[float] | np.ndarray, Point]]],
              out_stem: str | Path, *, title: str = "", formats: Sequence[str] = FORMATS,
              lang: str = "en", colors: Mapping[str, str] | None = None) -> list[Path]:
    """Box plots of per-query values, one panel per metric (rows: label, values and the
    (mean, ci_low, ci_high) of the mean), stacked; shaded by the metric's reading scale."""
    from ragmeter.reports.bands import shades_for

    if colors is None:  # one colour per system: a row "k=5 · bm25" is drawn in bm25's colour
        labels = [label for rows in panels.values() for label, _, _ in rows]
        by_system = svg.system_colors(label.split(" · ")[-1] for label in labels)
        colors = {label: by_system[label.split(" · ")[-1]] for label in labels}
    charts = [boxplot.box_plot(t("chart_box", lang, metric=panel),
                               [(label, values, svg.Point(*p)) for label, values, p in rows],
                               colors=colors, lang=lang, shades=shades_for(panel, lang))
              for panel, rows in panels.items() if rows]
    return _write(compose(charts, title, kind="boxes", vertical=True), out_stem, formats)


def per_query_panels(results: Mapping[str, Any], names: Sequence[str] = BOX_METRICS,
                     ) -> dict[str, list[tuple[str, np.ndarray, Point]]]:
    """Box-plot panels from ``{system: EvalResult}``: one per metric of ``names`` (with its
    parameters; every k in one panel), rows ``(label, per-query values, (mean, lo, hi))`` per k
    and system. A metric whose values are all 0 or 1 (hit@k, precision@1) is left out: its
    box says nothing a mean does not."""
    from ragmeter.metrics.registry import split_metric_key

    found: dict[str, list[tuple[int | None, str, Any]]] = {}
    for system, res in results.items():
        for key, mr in res.results.items():
            name, k, params = split_metric_key(key)
            if name in names:
                found.setdefault(f"{name}({params})" if params else name, []).append(
                    (k, system, mr))
    systems = list(results)
    panels: dict[str, list[tuple[str, np.ndarray, Point]]] = {}
    for family, entries in found.items():
        finite = np.concatenate([mr.values[np.isfinite(mr.values)] for _, _, mr in entries])
        if finite.size == 0 or np.isin(finite, (0.0, 1.0)).all():
            continue
        several_k = len({k for k, _, _ in entries}) > 1
        rows = []
        for k, system, mr in sorted(entries, key=lambda e: (e[0] or 0, systems.index(e[1]))):
            a = mr.aggregate
            label = f"k={k} · {system}" if several_k else system
            rows.append((label, mr.values,
                         (a.mean, a.ci_low, a.ci_high) if a.n else (None, None, None)))
        panels[family] = rows
    return panels


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


def retriever_charts(comparison: Any, out_dir: str | Path) -> list[Path]:
    """The charts of a retriever comparison (:class:`~ragmeter.tiers.compare_retrievers.
    RetrieverComparison`): bars of hit@k and doc_hit@k per k, hit@k-vs-k lines, and box plots
    of the per-query values (precision, recall, ndcg, mrr), each as SVG."""
    panels = {"hit@k (chunk)": comparison.chart_series("hit_rate@{k}"),
              "doc_hit@k": comparison.chart_series("hit_rate@{k}(level=doc)")}
    chunking = comparison.meta.get("chunking", {})
    sub = (f"chunk_size={chunking.get('chunk_size')}, overlap={chunking.get('overlap')}"
           if chunking else "")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = grouped_bar_chart(panels, out / "hit_at_k_bars", title=f"Hit rate by k  {sub}",
                              ylabel="hit rate")
    files += line_chart_by_k(panels, out / "hit_vs_k", title=f"Hit rate vs k  {sub}",
                             ylabel="hit rate")
    boxes = per_query_panels(comparison.results)
    if boxes:
        files += box_chart(boxes, out / "per_query_boxes", title=f"Per-query values  {sub}")
    return files


def tier0_chart(results: Sequence[Any], out_dir: str | Path, stem: str = "tier0",
                lang: str = "en") -> list[Path]:
    """Embedding quality per model (silhouette, intra-cluster similarity, inter-cluster
    distance) with 95% CIs, from tier-0 :class:`~ragmeter.results.records.EvalResult`\\ s;
    the silhouette's reading scale is shaded behind it."""
    from ragmeter.reports.bands import shades_for

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
            charts.append(svg.forest(f"{metric}, 95% CI", rows, colors=colors, lang=lang,
                                     shades=shades_for(metric, lang)))
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
