"""The one chart engine of ragmeter: small, dependency-free SVG for reports, viewer and files.

Every chart is a ``<svg class="rm-chart" data-chart="KIND">`` string whose labels go through
:func:`html.escape`, so user text (system or metric names) cannot inject markup. Charts tell the
truth: each point carries its 95% CI whisker; the value axis is chosen from the data (means
and CI bounds) so differences are visible, and a note inside the chart says so exactly when the
drawn axis does not reach 0 (bars always start at 0, so a bar chart never needs it); a metric's
reading scale can be shaded behind the data (:class:`Shade`) with a legend under the plot;
every system keeps one colour (:func:`system_colors`) across all charts of a
page; label space is measured from the text so nothing is clipped (long labels are shortened
with "…" and shown in full in the tooltip). Missing values are drawn as "n/a", never as 0.
:func:`write_svg` saves the same SVG as a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np

PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3",
           "#8C8C8C", "#CCB974", "#64B5CD")
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif\""
FONT_SIZE = 11
CHAR_W = 7.0  # generous width of one character at FONT_SIZE (Latin and Cyrillic)
MAX_LABEL = 40


@dataclass(frozen=True)
class Point:
    """A value with its 95% CI (bounds may be ``None``)."""

    mean: float | None
    low: float | None = None
    high: float | None = None

    @property
    def ok(self) -> bool:
        return _ok(self.mean)


@dataclass(frozen=True)
class Shade:
    """A reading-scale range drawn behind the data: values ``low``–``high`` read as ``label``
    (``None`` = unbounded on that side); ``text`` is the range as written ("> 0.7") and
    ``tone`` picks the fill: top, good, mid or bad."""

    low: float | None
    high: float | None
    label: str
    text: str = ""
    tone: str = "mid"


SHADE_FILL = {"top": ("#55A868", 0.17), "good": ("#9CC26A", 0.2), "mid": ("#E3B448", 0.2),
              "bad": ("#C44E52", 0.14)}


def _ok(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and (math.isnan(v) or math.isinf(v)))


#: room along the axis a label rotated by 35° needs not to touch the next (its line height
#: over sin 35°)
ROTATED_ROOM = 14.0 / math.sin(math.radians(35))


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """An upper estimate of the rendered width of ``text`` in pixels."""
    return len(text) * CHAR_W * size / FONT_SIZE


def short(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def system_colors(names: Iterable[str]) -> dict[str, str]:
    """One colour per system, in first-seen order: pass the same mapping to every chart."""
    out: dict[str, str] = {}
    for name in names:
        if name not in out:
            out[name] = PALETTE[len(out) % len(PALETTE)]
    return out


def _open(kind: str, width: float, height: float, title: str) -> list[str]:
    t = escape(title)
    return [f'<svg class="rm-chart" data-chart="{escape(kind)}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
            f'role="img" aria-label="{t}" {FONT} font-size="{FONT_SIZE}">',
            f"<title>{t}</title>",
            f'<text class="rm-title" x="8" y="16" font-size="13" font-weight="600">'
            f"{escape(short(title, int((width - 16) / 7.5)))}</text>"]


def nice_range(values: Iterable[float | None], *, unit: bool | None = None) -> tuple[float, float]:
    """An axis range around ``values`` (means and CI bounds) that makes differences visible.

    Starts at 0 when the data come within a fifth of the span of 0; stays inside [0, 1] for
    metrics on that scale (``unit`` True, or all values inside it)."""
    vals = [float(v) for v in values if v is not None and _ok(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if unit is None:
        unit = lo >= 0.0 and hi <= 1.0
    span = hi - lo
    pad = max(span * 0.12, (abs(hi) or 1.0) * (0.02 if span else 0.05))
    a, b = lo - pad, hi + pad
    if lo >= 0.0 and a < 0.2 * (b - a) + 0.0:
        a = 0.0
    if lo >= 0.0:
        a = max(0.0, a)
    if unit:
        a, b = max(0.0, a), min(1.0, b)
    step = _tick_step(b - a)
    a2, b2 = math.floor(a / step) * step, math.ceil(b / step) * step
    if lo >= 0.0:
        a2 = max(0.0, a2)
    if unit:
        b2 = min(1.0, b2)
    if b2 <= a2:
        b2 = a2 + step
    return round(a2, 10), round(b2, 10)


def _tick_step(span: float) -> float:
    raw = (span or 1.0) / 5
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def _ticks(a: float, b: float) -> list[float]:
    step = _tick_step(b - a)
    out, v = [], math.ceil(a / step - 1e-9) * step
    while v <= b + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _fmt_tick(v: float, step: float) -> str:
    del step
    return f"{v:.4g}"


def zoom_note(a: float, b: float, lang: str = "en") -> str | None:
    """The note a chart carries when its drawn value axis [a, b] does not reach 0, else None."""
    if a > 0:
        return (f"ось начинается с {a:g}, а не с 0" if lang == "ru" else
                f"axis starts at {a:g}, not 0")
    if b < 0:
        return (f"ось кончается на {b:g}, а не на 0" if lang == "ru" else
                f"axis ends at {b:g}, not 0")
    return None


def _zoom_note(parts: list[str], a: float, b: float, x: float, y: float, lang: str) -> None:
    note = zoom_note(a, b, lang)
    if note:
        parts.append(f'<text class="rm-note" x="{x:.1f}" y="{y:.1f}" fill="#a15c00" '
                     f'font-size="10">{escape(note)}</text>')


def draw_shades(parts: list[str], shades: Sequence[Shade], a: float, b: float,
                to_px: Callable[[float], float], span: tuple[float, float], *,
                vertical_axis: bool) -> None:
    """Rectangles of ``shades`` clipped to the drawn axis [a, b]; ``span`` is the extent across
    the value axis (y range for a horizontal value axis, x range for a vertical one)."""
    for sh in shades:
        lo = a if sh.low is None else max(a, sh.low)
        hi = b if sh.high is None else min(b, sh.high)
        if hi <= lo:
            continue
        fill, opacity = SHADE_FILL.get(sh.tone, SHADE_FILL["mid"])
        p0, p1 = sorted((to_px(lo), to_px(hi)))
        c0, c1 = span
        x, y, w, h = (c0, p0, c1 - c0, p1 - p0) if vertical_axis else (p0, c0, p1 - p0, c1 - c0)
        parts.append(f'<rect class="rm-band" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                     f'height="{h:.1f}" fill="{fill}" fill-opacity="{opacity}"><title>'
                     f"{escape(f'{sh.text} {sh.label}'.strip())}</title></rect>")


def shade_legend(shades: Sequence[Shade], x: float, y: float, width: float,
                 lang: str = "en") -> tuple[list[str], float]:
    """A wrapped legend of ``shades`` starting at (x, y) within ``width``: its SVG parts and
    its height."""
    if not shades:
        return [], 0.0
    head = "шкала:" if lang == "ru" else "reading scale:"
    parts = [f'<text class="rm-legend" x="{x:.1f}" y="{y + 9:.1f}" fill="#555" '
             f'font-size="10">{head}</text>']
    cx, line = x + text_width(head, 10) + 6, 0
    for sh in shades:
        label = short(f"{sh.text} {sh.label}".strip(), 48)
        w = 14 + text_width(label, 10) + 10
        if cx + w > x + width and cx > x + text_width(head, 10) + 6:
            cx, line = x + text_width(head, 10) + 6, line + 1
        yy = y + line * 14
        fill, opacity = SHADE_FILL.get(sh.tone, SHADE_FILL["mid"])
        parts.append(f'<rect x="{cx:.1f}" y="{yy + 1:.1f}" width="10" height="10" fill="{fill}" '
                     f'fill-opacity="{min(1.0, opacity * 3):.2f}"/>')
        parts.append(f'<text class="rm-legend" x="{cx + 14:.1f}" y="{yy + 9:.1f}" '
                     f'font-size="10"><title>{escape(sh.text)} {escape(sh.label)}</title>'
                     f"{escape(label)}</text>")
        cx += w
    return parts, (line + 1) * 14.0



def grid_x(parts: list[str], a: float, b: float, px: Callable[[float], float], y_top: float,
           y_axis: float) -> None:
    """Vertical grid lines at the ticks of ``[a, b]``, labelled under the axis at ``y_axis``
    (every k-th label when their texts would touch)."""
    step = _tick_step(b - a)
    ticks = _ticks(a, b)
    labels = [_fmt_tick(tv, step) for tv in ticks]
    gap = abs(px(ticks[1]) - px(ticks[0])) if len(ticks) > 1 else 1e9
    widest = max([text_width(x) for x in labels] + [1.0])
    every = max(1, math.ceil((widest + 6) / gap)) if gap > 0 else 1
    for i, (tv, label) in enumerate(zip(ticks, labels, strict=True)):
        x = px(tv)
        parts.append(f'<line x1="{x:.1f}" y1="{y_top:.1f}" x2="{x:.1f}" y2="{y_axis:.1f}" '
                     'stroke="#e5e5e5"/>')
        if i % every == 0:
            parts.append(f'<text class="rm-axis" x="{x:.1f}" y="{y_axis + 13:.1f}" '
                         f'text-anchor="middle" '
                         f'fill="#555">{label}</text>')


def grid_y(parts: list[str], a: float, b: float, py: Callable[[float], float], x0: float,
           plot_w: float) -> None:
    """Horizontal grid lines at the ticks of ``[a, b]``, labelled left of ``x0``."""
    step = _tick_step(b - a)
    for tv in _ticks(a, b):
        y = py(tv)
        parts.append(f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x0 + plot_w:.1f}" y2="{y:.1f}" '
                     'stroke="#e5e5e5"/>')
        parts.append(f'<text x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="#555">'
                     f"{_fmt_tick(tv, step)}</text>")

def forest(title: str, rows: Sequence[tuple[str, Point]], *, colors: Mapping[str, str]
           | None = None, lang: str = "en", higher_is_better: bool = True,
           axis: tuple[float, float] | None = None, best: str | None = None,
           shades: Sequence[Shade] = ()) -> str:
    """One metric, one row per system: a dot at the mean with its 95% CI as a whisker.

    The value axis is horizontal; labels sit on the left in a column as wide as the longest;
    ``shades`` (the metric's reading scale) are drawn behind the rows with a legend below."""
    colors = colors or system_colors(n for n, _ in rows)
    labels = [short(n) for n, _ in rows]
    left = max([text_width(s) for s in labels] + [40.0]) + 16
    plot_w = 300.0
    right = 70.0
    width = max(left + plot_w + right, text_width(title, 13) + 24)
    plot_w = width - left - right
    row_h = 22.0
    top = 30.0
    legend, legend_h = shade_legend(shades, 8, top + row_h * max(1, len(rows)) + 24,
                                    width - 16, lang)
    height = top + row_h * max(1, len(rows)) + 42 + legend_h
    a, b = axis or nice_range([v for _, p in rows for v in (p.mean, p.low, p.high)])
    span = (b - a) or 1.0

    def px(v: float) -> float:
        return left + plot_w * (min(max(v, a), b) - a) / span

    parts = _open("forest", width, height, title)
    y_axis = top + row_h * max(1, len(rows)) + 4
    parts.append(f'<g class="rm-plot" data-x="{left:.1f}" data-y="{top - 6:.1f}" '
                 f'data-w="{plot_w:.1f}" data-h="{y_axis - top + 6:.1f}">')
    draw_shades(parts, shades, a, b, px, (top - 6, y_axis), vertical_axis=False)
    grid_x(parts, a, b, px, top - 6, y_axis)
    for i, (name, p) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        color = colors.get(name, PALETTE[i % len(PALETTE)])
        weight = ' font-weight="700"' if name == best else ""
        parts.append(f'<text class="rm-label" x="{left - 8:.1f}" y="{y + 4:.1f}" '
                     f'text-anchor="end"{weight}>'
                     f"<title>{escape(name)}</title>{escape(labels[i])}</text>")
        if not p.ok:
            parts.append(f'<text x="{left + 4:.1f}" y="{y + 4:.1f}" fill="#999">'
                         f'{"н/д" if lang == "ru" else "n/a"}</text>')
            continue
        m = float(p.mean)  # type: ignore[arg-type]
        tip = f"{name}: {m:.4f}"
        if _ok(p.low) and _ok(p.high):
            lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
            tip += f" [{lo:.4f}, {hi:.4f}]"
            parts.append(f'<line class="rm-ci" x1="{px(lo):.1f}" y1="{y:.1f}" x2="{px(hi):.1f}" '
                         f'y2="{y:.1f}" stroke="{color}" stroke-width="2"/>')
            for xv in (px(lo), px(hi)):
                parts.append(f'<line x1="{xv:.1f}" y1="{y - 5:.1f}" x2="{xv:.1f}" '
                             f'y2="{y + 5:.1f}" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<circle class="rm-point" cx="{px(m):.1f}" cy="{y:.1f}" r="4.5" '
                     f'fill="{color}" stroke="#fff"><title>{escape(tip)}</title></circle>')
    parts.append("</g>")
    for i, (_name, p) in enumerate(rows):
        if p.ok:
            y = top + row_h * i + row_h / 2
            parts.append(f'<text class="rm-value" x="{left + plot_w + 8:.1f}" y="{y + 4:.1f}" '
                         f'fill="#333">{float(p.mean):.3f}</text>')  # type: ignore[arg-type]
    parts.extend(legend)
    _zoom_note(parts, a, b, left, height - 8, lang)
    if not higher_is_better:
        note = "меньше — лучше" if lang == "ru" else "lower is better"
        parts.append(f'<text class="rm-note" x="{width - 8:.1f}" y="{height - 8:.1f}" '
                     f'text-anchor="end" fill="#555" font-size="10">{note}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(x: Sequence[float], series: Mapping[str, Sequence[Point]], title: str, *,
               xlabel: str = "k", colors: Mapping[str, str] | None = None,
               lang: str = "en", links: Mapping[str, Sequence[str | None]] | None = None,
               xlabels: Sequence[str] | None = None, kind: str = "line") -> str:
    """One line per series over shared x values, each point with its 95% CI whisker.

    ``links`` gives an URL per point (the viewer links history points to their runs);
    ``xlabels`` replaces the numeric tick labels (one per x value, e.g. run dates)."""
    names = list(series)
    colors = colors or system_colors(names)
    legend_w = max([text_width(short(n)) for n in names] + [40.0]) + 30
    xs = list(x)
    tick_labels = [short(s, 16) for s in xlabels] if xlabels else [f"{v:g}" for v in xs]
    label_w = max([text_width(s) for s in tick_labels] + [10.0])
    plot_w = max(320.0, min(900.0, 60.0 * len(xs)))
    spacing = (plot_w - 2 * max(14.0, label_w / 2 + 4)) / max(1, len(xs) - 1)
    rotate = len(xs) > 1 and spacing < label_w + 8
    pad_x = 14.0 if rotate else max(14.0, label_w / 2 + 4)
    bottom = 44.0 + (label_w * 0.6 if rotate else 0.0)
    x0, y0, h = 52.0, 30.0, 200.0
    width = max(x0 + plot_w + 20 + legend_w, text_width(title, 13) + 24,
                x0 + plot_w + (label_w * 0.85 if rotate else 0.0) + 10)
    height = y0 + h + bottom + 18
    vals = [v for pts in series.values() for p in pts for v in (p.mean, p.low, p.high)]
    a, b = nice_range(vals)
    span = (b - a) or 1.0
    lo_x, hi_x = (min(xs), max(xs)) if xs else (0.0, 1.0)
    xspan = (hi_x - lo_x) or 1.0

    def px(v: float) -> float:
        if len(xs) == 1:
            return x0 + plot_w / 2
        return x0 + pad_x + (plot_w - 2 * pad_x) * (v - lo_x) / xspan

    def py(v: float) -> float:
        return y0 + h - h * (min(max(v, a), b) - a) / span

    parts = _open(kind, width, height, title)
    parts.append(f'<g class="rm-plot" data-x="{x0:.1f}" data-y="{y0:.1f}" data-w="{plot_w:.1f}" '
                 f'data-h="{h:.1f}">')
    grid_y(parts, a, b, py, x0, plot_w)
    parts.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x0:.1f}" y2="{y0 + h:.1f}" '
                 'stroke="#888"/>')
    dodge = min(6.0, 24.0 / max(1, len(names)))  # side by side, so whiskers do not hide
    for si, name in enumerate(names):
        off = (si - (len(names) - 1) / 2) * dodge
        _draw_series(parts, name, colors.get(name, PALETTE[si % len(PALETTE)]),
                     [px(xv) + off for xv in xs], list(series[name]), py,
                     [tick_labels[j] if j < len(tick_labels) else f"{xv}"
                      for j, xv in enumerate(xs)],
                     (links or {}).get(name, [None] * len(xs)))
    parts.append("</g>")
    # every k-th label when even rotated ones would touch (a rotated label needs its line
    # height divided by sin 35° of room along the axis); the first and the last always shown
    every = max(1, math.ceil(ROTATED_ROOM / spacing)) if rotate and spacing > 0 else 1
    for j, (xv, lab) in enumerate(zip(xs, tick_labels, strict=False)):
        if j % every and j != len(xs) - 1:
            continue
        if j == len(xs) - 1 and j % every and (j - j // every * every) * spacing < ROTATED_ROOM:
            continue  # too close to the last shown one
        cx, ty = px(xv), y0 + h + 20
        rot = f' transform="rotate(35 {cx:.1f} {ty:.1f})" text-anchor="start"' if rotate \
            else ' text-anchor="middle"'
        parts.append(f'<text class="rm-tick" x="{cx:.1f}" y="{ty:.1f}"{rot}>{escape(lab)}'
                     f'{"<title>" + escape(xlabels[j]) + "</title>" if xlabels else ""}</text>')
    parts.append(f'<text x="{x0 + plot_w:.1f}" y="{height - 6:.1f}" text-anchor="end" '
                 f'fill="#555">{escape(xlabel)}</text>')
    _legend(parts, names, colors, x0 + plot_w + 18, y0 + 4)
    _zoom_note(parts, a, b, 8, height - 6, lang)
    parts.append("</svg>")
    return "\n".join(parts)


def bar_chart(groups: Sequence[str], series: Mapping[str, Sequence[Point]], title: str, *,
              xlabel: str = "k", colors: Mapping[str, str] | None = None, lang: str = "en",
              kind: str = "bars") -> str:
    """Vertical bars grouped per x value (``groups``, e.g. "k=5"), one bar per series (system)
    in each group, each with its 95% CI whisker. Bars start at 0: the value axis always holds
    0, so a bar's length is its value (and the chart never needs an axis note)."""
    names = list(series)
    colors = colors or system_colors(names)
    legend_w = max([text_width(short(n)) for n in names] + [40.0]) + 30
    labels = [short(g, 16) for g in groups]
    bar_w = max(7.0, min(22.0, 110.0 / max(1, len(names))))
    group_w = max(bar_w * len(names) + 16, max([text_width(x) for x in labels] + [0.0]) + 10)
    x0, y0, h = 52.0, 30.0, 200.0
    plot_w = max(240.0, group_w * len(groups) + 16)
    width = max(x0 + plot_w + 20 + legend_w, text_width(title, 13) + 24)
    height = y0 + h + 52
    a, b = nice_range([0.0, *(v for pts in series.values() for p in pts
                              for v in (p.mean, p.low, p.high))])
    a, b = min(a, 0.0), max(b, 0.0)
    span = (b - a) or 1.0

    def py(v: float) -> float:
        return y0 + h - h * (min(max(v, a), b) - a) / span

    parts = _open(kind, width, height, title)
    parts.append(f'<g class="rm-plot" data-x="{x0:.1f}" data-y="{y0:.1f}" data-w="{plot_w:.1f}" '
                 f'data-h="{h:.1f}">')
    grid_y(parts, a, b, py, x0, plot_w)
    for gi, group in enumerate(groups):
        gx = x0 + 8 + gi * group_w + (group_w - bar_w * len(names)) / 2
        for si, name in enumerate(names):
            pts = series[name]
            _bar(parts, name, group, pts[gi] if gi < len(pts) else Point(None),
                 gx + si * bar_w, bar_w, colors.get(name, PALETTE[si % len(PALETTE)]), py, lang)
        parts.append(f'<text class="rm-tick" x="{x0 + 8 + gi * group_w + group_w / 2:.1f}" '
                     f'y="{y0 + h + 18:.1f}" text-anchor="middle">{escape(labels[gi])}'
                     f"<title>{escape(group)}</title></text>")
    parts.append(f'<line x1="{x0:.1f}" y1="{py(0.0):.1f}" x2="{x0 + plot_w:.1f}" '
                 f'y2="{py(0.0):.1f}" stroke="#888"/>')
    parts.append("</g>")
    parts.append(f'<text x="{x0 + plot_w:.1f}" y="{height - 8:.1f}" text-anchor="end" '
                 f'fill="#555">{escape(xlabel)}</text>')
    _legend(parts, names, colors, x0 + plot_w + 18, y0 + 4)
    parts.append("</svg>")
    return "\n".join(parts)


def _bar(parts: list[str], name: str, group: str, p: Point, x: float, w: float, color: str,
         py: Callable[[float], float], lang: str) -> None:
    """One bar from 0 to the mean with its CI whisker, or an "n/a" mark without a value."""
    if not p.ok:
        parts.append(f'<text class="rm-na" x="{x + w / 2 + 3:.1f}" y="{py(0.0) - 4:.1f}" '
                     f'transform="rotate(-90 {x + w / 2 + 3:.1f} {py(0.0) - 4:.1f})" '
                     f'fill="#999" font-size="9">{"н/д" if lang == "ru" else "n/a"}'
                     f"<title>{escape(name)} · {escape(group)}</title></text>")
        return
    m = float(p.mean)  # type: ignore[arg-type]
    tip = f"{name} · {group}: {m:.4f}"
    top, base = sorted((py(m), py(0.0)))
    if _ok(p.low) and _ok(p.high):
        tip += f" [{float(p.low):.4f}, {float(p.high):.4f}]"  # type: ignore[arg-type]
    parts.append(f'<rect class="rm-bar" data-series="{escape(name)}" x="{x + 1:.1f}" '
                 f'y="{top:.1f}" width="{w - 2:.1f}" height="{max(base - top, 0.5):.1f}" '
                 f'fill="{color}" fill-opacity="0.85"><title>{escape(tip)}</title></rect>')
    if _ok(p.low) and _ok(p.high):
        lo, hi = py(float(p.low)), py(float(p.high))  # type: ignore[arg-type]
        cx = x + w / 2
        parts.append(f'<line class="rm-ci" x1="{cx:.1f}" y1="{lo:.1f}" x2="{cx:.1f}" '
                     f'y2="{hi:.1f}" stroke="#222" stroke-width="1.3"/>')
        for yv in (lo, hi):
            parts.append(f'<line x1="{cx - 3:.1f}" y1="{yv:.1f}" x2="{cx + 3:.1f}" '
                         f'y2="{yv:.1f}" stroke="#222" stroke-width="1.3"/>')


def _draw_series(parts: list[str], name: str, color: str, cxs: Sequence[float],
                 points: Sequence[Point], py: Callable[[float], float],
                 tips: Sequence[str], href: Sequence[str | None]) -> None:
    """One series of a line chart: its line, and per point the CI whisker and a dot (a link
    when ``href`` gives the point an URL)."""
    pts = [(cx, p) for cx, p in zip(cxs, points, strict=False) if p.ok]
    if len(pts) > 1:
        parts.append(f'<polyline fill="none" stroke-width="2" stroke="{color}" '
                     'stroke-opacity="0.8" points="' + " ".join(
                         f"{cx:.1f},{py(float(p.mean)):.1f}" for cx, p in pts) + '"/>')  # type: ignore[arg-type]
    for j, (cx, p) in enumerate(zip(cxs, points, strict=False)):
        if not p.ok:
            continue
        m = float(p.mean)  # type: ignore[arg-type]
        tip = f"{name} · {tips[j]}: {m:.4f}"
        if _ok(p.low) and _ok(p.high):
            lo, hi = float(p.low), float(p.high)  # type: ignore[arg-type]
            tip += f" [{lo:.4f}, {hi:.4f}]"
            parts.append(f'<line class="rm-ci" x1="{cx:.1f}" y1="{py(lo):.1f}" x2="{cx:.1f}" '
                         f'y2="{py(hi):.1f}" stroke="{color}" stroke-width="1.5"/>')
        dot = (f'<circle class="rm-point" data-series="{escape(name)}" cx="{cx:.1f}" '
               f'cy="{py(m):.1f}" r="4" fill="{color}" stroke="#fff"><title>'
               f"{escape(tip)}</title></circle>")
        url = href[j] if j < len(href) else None
        parts.append(f'<a class="rm-link" href="{escape(url)}">{dot}</a>' if url else dot)


def _legend(parts: list[str], names: Sequence[str], colors: Mapping[str, str], x: float,
            y: float) -> None:
    for i, name in enumerate(names):
        yy = y + i * 16
        parts.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="10" height="10" '
                     f'fill="{colors.get(name, PALETTE[i % len(PALETTE)])}"/>')
        parts.append(f'<text class="rm-legend" x="{x + 14:.1f}" y="{yy + 9:.1f}">'
                     f"<title>{escape(name)}</title>{escape(short(name))}</text>")


def diff_chart(rows: Sequence[tuple[str, Point]], title: str, *, lang: str = "en",
               higher_is_better: Mapping[str, bool] | None = None) -> str:
    """Differences B − A with their 95% CIs around a zero line (axis covers every CI); a
    change for the better is green and one for the worse red, in each row's direction
    (``higher_is_better`` by row name; default: higher is better)."""
    vals = [v for _, p in rows for v in (p.mean, p.low, p.high)] + [0.0]
    finite = [abs(float(v)) for v in vals if v is not None and _ok(v)]
    top = max([*finite, 0.01]) * 1.1
    hib = higher_is_better or {}

    def worse(name: str, p: Point) -> bool:
        if not p.ok:
            return False
        d = float(p.mean)  # type: ignore[arg-type]
        return d < 0 if hib.get(name, True) else d > 0
    colors = {name: ("#C44E52" if worse(name, p) else "#55A868") for name, p in rows}
    svg = forest(title, rows, colors=colors, lang=lang, axis=(-top, top))
    return svg.replace('data-chart="forest"', 'data-chart="diff"', 1)


def finite_array(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """The finite values as a float array (None, NaN and ±inf left out)."""
    arr = np.asarray(values, dtype=float)   # None becomes NaN
    return arr[np.isfinite(arr)]


def box_stats(values: Sequence[float] | np.ndarray) -> dict[str, float] | None:
    """Quartiles and Tukey whiskers (1.5 IQR) of the finite values, or None when empty."""
    arr = finite_array(values)
    if arr.size == 0:
        return None
    q1, med, q3 = (float(q) for q in np.percentile(arr, [25, 50, 75]))
    iqr = q3 - q1
    lo_w = float(arr[arr >= q1 - 1.5 * iqr].min())
    hi_w = float(arr[arr <= q3 + 1.5 * iqr].max())
    return {"q1": q1, "median": med, "q3": q3, "lo": lo_w, "hi": hi_w,
            "mean": float(arr.mean()), "n": float(arr.size)}


def heatmap(matrix: Sequence[Sequence[float]], row_labels: Sequence[str],
            col_labels: Sequence[str], title: str, *, row_title: str = "actual",
            col_title: str = "predicted") -> str:
    """A labelled matrix with counts (confusion matrix of the production judge)."""
    rows, cols = len(row_labels), len(col_labels)
    cell = 64
    x0 = 40.0 + max([text_width(short(r)) for r in row_labels] + [20.0])
    y0 = 62.0
    width = max(x0 + cols * cell + 30, text_width(title, 13) + 24)
    height = y0 + rows * cell + 20
    parts = _open("heatmap", width, height, title)
    flat = [float(v) for r in matrix for v in r]
    top = max(flat) if flat and max(flat) > 0 else 1.0
    parts.append(f'<text x="{x0 + cols * cell / 2:.1f}" y="{y0 - 26:.1f}" text-anchor="middle" '
                 f'fill="#555">{escape(col_title)}</text>')
    parts.append(f'<text x="16" y="{y0 + rows * cell / 2:.1f}" fill="#555" '
                 f'transform="rotate(-90 16 {y0 + rows * cell / 2:.1f})" text-anchor="middle">'
                 f'{escape(row_title)}</text>')
    for j, c in enumerate(col_labels):
        parts.append(f'<text x="{x0 + j * cell + cell / 2:.1f}" y="{y0 - 8:.1f}" '
                     f'text-anchor="middle">{escape(short(c, 9))}</text>')
    parts.append(f'<g class="rm-plot" data-x="{x0:.1f}" data-y="{y0:.1f}" '
                 f'data-w="{cols * cell:.1f}" data-h="{rows * cell:.1f}">')
    for i in range(rows):
        for j in range(cols):
            v = float(matrix[i][j])
            shade = 0.12 + 0.8 * v / top
            parts.append(f'<rect class="rm-cell" x="{x0 + j * cell:.1f}" y="{y0 + i * cell:.1f}" '
                         f'width="{cell - 2}" height="{cell - 2}" fill="#4C72B0" '
                         f'fill-opacity="{shade:.2f}"/>')
            parts.append(f'<text x="{x0 + j * cell + cell / 2:.1f}" '
                         f'y="{y0 + i * cell + cell / 2 + 5:.1f}" text-anchor="middle" '
                         f'font-size="14" font-weight="600" '
                         f'fill="{"#fff" if shade > 0.6 else "#111"}">{v:g}</text>')
    parts.append("</g>")
    for i, r in enumerate(row_labels):
        parts.append(f'<text x="{x0 - 8:.1f}" y="{y0 + i * cell + cell / 2 + 4:.1f}" '
                     f'text-anchor="end">{escape(short(r))}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def write_svg(svg: str, path: str | Path) -> Path:
    """Save a chart of this module as a standalone ``.svg`` file (the same bytes as in HTML)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n", encoding="utf-8")
    return out
