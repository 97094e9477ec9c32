"""Box plots of per-query values, drawn by the chart engine (:mod:`.svg`) in its style.

One row per system (or per k and system): the box spans the quartiles with a line at the
median, the whiskers reach the furthest values within 1.5 IQR (Tukey), values beyond are open
dots, and under the box the mean is a dot with its 95% CI whisker, as in every other chart.
The value axis is chosen from the values themselves and carries the engine's axis note exactly
when it does not reach 0; a reading scale (:class:`.svg.Shade`) can be shaded behind the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

import numpy as np

from ragmeter.reports import svg

#: at most this many outlier dots per row (distinct pixel positions): a large run stays small
MAX_OUTLIERS = 200


def box_plot(title: str, rows: Sequence[tuple[str, Sequence[float] | np.ndarray, svg.Point]], *,
             colors: Mapping[str, str] | None = None, lang: str = "en",
             shades: Sequence[svg.Shade] = ()) -> str:
    """Box plots of per-query ``values`` per row label, each with its mean and 95% CI."""
    colors = colors or svg.system_colors(n for n, _, _ in rows)
    labels = [svg.short(n) for n, _, _ in rows]
    finite = [svg.finite_array(values) for _, values, _ in rows]
    stats = [svg.box_stats(values) for values in finite]
    note = ("ящик: квартили, усы: 1,5 IQR, точка: среднее с 95% ДИ" if lang == "ru" else
            "box: quartiles, whiskers: 1.5 IQR, dot: mean with 95% CI")
    left = max([svg.text_width(s) for s in labels] + [40.0]) + 16
    right = 100.0
    width = max(left + 300.0 + right, svg.text_width(title, 13) + 24,
                svg.text_width(note, 10) + 24)
    plot_w = width - left - right
    row_h, top = 32.0, 30.0
    y_axis = top + row_h * max(1, len(rows)) + 4
    legend, legend_h = svg.shade_legend(shades, 8, y_axis + 20, width - 16, lang)
    height = y_axis + 20 + legend_h + 30
    vals: list[float | None] = []   # the axis spans every value: its ends are enough
    for (_, _, p), values, st in zip(rows, finite, stats, strict=True):
        if st is not None:
            vals += [float(values.min()), float(values.max()), p.low, p.high]
    a, b = svg.nice_range(vals)
    span = (b - a) or 1.0

    def px(v: float) -> float:
        return left + plot_w * (min(max(v, a), b) - a) / span

    parts = svg._open("box", width, height, title)
    parts.append(f'<g class="rm-plot" data-x="{left:.1f}" data-y="{top - 6:.1f}" '
                 f'data-w="{plot_w:.1f}" data-h="{y_axis - top + 6:.1f}">')
    svg.draw_shades(parts, shades, a, b, px, (top - 6, y_axis), vertical_axis=False)
    svg.grid_x(parts, a, b, px, top - 6, y_axis)
    for i, ((name, _, point), values) in enumerate(zip(rows, finite, strict=True)):
        y = top + row_h * i + row_h / 2 - 4
        parts.append(f'<text class="rm-label" x="{left - 8:.1f}" y="{y + 4:.1f}" '
                     f'text-anchor="end"><title>{escape(name)}</title>{escape(labels[i])}</text>')
        st = stats[i]
        if st is None:
            parts.append(f'<text x="{left + 4:.1f}" y="{y + 4:.1f}" fill="#999">'
                         f'{"н/д" if lang == "ru" else "n/a"}</text>')
            continue
        color = colors.get(name, svg.PALETTE[i % len(svg.PALETTE)])
        _box(parts, name, values, point, st, y, color, px)
    parts.append("</g>")
    for i, ((_name, _values, point), st) in enumerate(zip(rows, stats, strict=True)):
        if st is not None and point.mean is not None and point.ok:
            y = top + row_h * i + row_h / 2 - 4
            parts.append(f'<text class="rm-value" x="{left + plot_w + 8:.1f}" y="{y + 4:.1f}" '
                         f'fill="#333">{float(point.mean):.3f} · n={int(st["n"])}</text>')
    parts.extend(legend)
    parts.append(f'<text class="rm-note" x="8" y="{height - 20:.1f}" fill="#555" '
                 f'font-size="10">{escape(note)}</text>')
    zoom = svg.zoom_note(a, b, lang)
    if zoom:
        parts.append(f'<text class="rm-note" x="8" y="{height - 6:.1f}" fill="#a15c00" '
                     f'font-size="10">{escape(zoom)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _box(parts: list[str], name: str, values: np.ndarray, point: svg.Point,
         st: Mapping[str, float], y: float, color: str, px: Callable[[float], float]) -> None:
    """One row (``values``: the finite ones): whiskers with caps, the quartile box, the
    median, outliers, mean and CI."""
    tip = (f"{name}: median {st['median']:.4f}, quartiles [{st['q1']:.4f}, {st['q3']:.4f}], "
           f"whiskers [{st['lo']:.4f}, {st['hi']:.4f}], mean {st['mean']:.4f}, n={int(st['n'])}")
    for x1, x2 in ((st["lo"], st["q1"]), (st["q3"], st["hi"])):
        parts.append(f'<line class="rm-whisker" x1="{px(x1):.1f}" y1="{y:.1f}" '
                     f'x2="{px(x2):.1f}" y2="{y:.1f}" stroke="{color}" stroke-width="1.5"/>')
    for xv in (st["lo"], st["hi"]):
        parts.append(f'<line x1="{px(xv):.1f}" y1="{y - 5:.1f}" x2="{px(xv):.1f}" '
                     f'y2="{y + 5:.1f}" stroke="{color}" stroke-width="1.5"/>')
    x1, x2 = px(st["q1"]), px(st["q3"])
    parts.append(f'<rect class="rm-box" x="{x1:.1f}" y="{y - 7:.1f}" '
                 f'width="{max(x2 - x1, 1.0):.1f}" height="14" fill="{color}" '
                 f'fill-opacity="0.3" stroke="{color}" stroke-width="1.5">'
                 f"<title>{escape(tip)}</title></rect>")
    parts.append(f'<line class="rm-median" x1="{px(st["median"]):.1f}" y1="{y - 7:.1f}" '
                 f'x2="{px(st["median"]):.1f}" y2="{y + 7:.1f}" stroke="{color}" '
                 'stroke-width="3"/>')
    out = np.unique(values[(values < st["lo"]) | (values > st["hi"])])
    outliers = sorted({round(px(v) * 2) / 2 for v in out.tolist()})  # distinct half-pixels
    for ox in outliers[:MAX_OUTLIERS]:
        parts.append(f'<circle class="rm-outlier" cx="{ox:.1f}" cy="{y:.1f}" r="2.2" '
                     f'fill="none" stroke="{color}"/>')
    if point.ok:
        m, cy = float(point.mean), y + 12  # type: ignore[arg-type]
        if svg._ok(point.low) and svg._ok(point.high):
            lo, hi = px(float(point.low)), px(float(point.high))  # type: ignore[arg-type]
            parts.append(f'<line class="rm-ci" x1="{lo:.1f}" y1="{cy:.1f}" x2="{hi:.1f}" '
                         f'y2="{cy:.1f}" stroke="{color}" stroke-width="2"/>')
            for xv in (lo, hi):
                parts.append(f'<line x1="{xv:.1f}" y1="{cy - 3:.1f}" x2="{xv:.1f}" '
                             f'y2="{cy + 3:.1f}" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<circle class="rm-point" cx="{px(m):.1f}" cy="{cy:.1f}" r="3.5" '
                     f'fill="{color}" stroke="#fff"><title>{escape(tip)}</title></circle>')
