"""Small, dependency-free SVG charts for the self-contained HTML report.

Every chart is a ``<svg class="rm-chart" data-chart="KIND">`` string; every label goes
through :func:`html.escape`, so user text (system names, metric names) cannot inject markup.
Missing values (``None``/NaN) are drawn as gaps and marked "n/a", never as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

import numpy as np

PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3",
           "#8C8C8C", "#CCB974", "#64B5CD")
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\""


def _ok(v: float | None) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _open(kind: str, width: int, height: int, title: str) -> list[str]:
    t = escape(title)
    return [f'<svg class="rm-chart" data-chart="{escape(kind)}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{t}" {FONT} font-size="11">',
            f"<title>{t}</title>",
            f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" '
            f'font-weight="600">{t}</text>']


def _nice_max(values: Sequence[float | None], floor: float = 1.0) -> float:
    vals = [float(v) for v in values if v is not None and _ok(v)]
    top = max(vals) if vals else floor
    if top <= floor:
        return floor
    mag = 10 ** math.floor(math.log10(top))
    for step in (1, 2, 2.5, 5, 10):
        if top <= step * mag:
            return float(step * mag)
    return float(top)


def _y_axis(parts: list[str], x0: float, y0: float, h: float, w: float, ymin: float,
            ymax: float, ticks: int = 5) -> None:
    for i in range(ticks + 1):
        v = ymin + (ymax - ymin) * i / ticks
        y = y0 + h - h * i / ticks
        parts.append(f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x0 + w:.1f}" y2="{y:.1f}" '
                     'stroke="#e5e5e5"/>')
        parts.append(f'<text x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" '
                     f'fill="#555">{v:.2f}</text>')
    parts.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x0:.1f}" y2="{y0 + h:.1f}" '
                 'stroke="#888"/>')


def _legend(parts: list[str], names: Sequence[str], x: float, y: float) -> None:
    for i, name in enumerate(names):
        yy = y + i * 16
        parts.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="10" height="10" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + 14:.1f}" y="{yy + 9:.1f}">{escape(name)}</text>')


def bar_chart(categories: Sequence[str], series: Mapping[str, Sequence[float | None]],
              title: str, *, ymax: float | None = None,
              errors: Mapping[str, Sequence[tuple[float | None, float | None]]] | None = None
              ) -> str:
    """Grouped bars: one group per category, one bar per series (with optional CI whiskers)."""
    names = list(series)
    n_cat, n_ser = len(categories), max(1, len(names))
    width = max(420, 90 + n_cat * (18 * n_ser + 24) + 150)
    height = 300
    x0, y0, h = 50.0, 30.0, 200.0
    w = width - x0 - 160
    all_vals = [v for vals in series.values() for v in vals if _ok(v)]
    top = ymax if ymax is not None else _nice_max(all_vals)
    parts = _open("bar", width, height, title)
    _y_axis(parts, x0, y0, h, w, 0.0, top)
    group_w = w / max(1, n_cat)
    bar_w = min(28.0, (group_w - 12) / n_ser)
    for ci, cat in enumerate(categories):
        gx = x0 + ci * group_w + (group_w - bar_w * n_ser) / 2
        for si, name in enumerate(names):
            v = series[name][ci] if ci < len(series[name]) else None
            x = gx + si * bar_w
            if not _ok(v):
                parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{y0 + h - 4:.1f}" '
                             'text-anchor="middle" fill="#999" font-size="9">n/a</text>')
                continue
            val = float(v)  # type: ignore[arg-type]
            bh = h * max(0.0, min(val, top)) / top
            parts.append(f'<rect class="rm-bar" x="{x:.1f}" y="{y0 + h - bh:.1f}" '
                         f'width="{bar_w - 2:.1f}" height="{bh:.1f}" '
                         f'fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(name)} · '
                         f'{escape(cat)} = {val:.4f}</title></rect>')
            err = errors.get(name) if errors else None
            if err and ci < len(err) and _ok(err[ci][0]) and _ok(err[ci][1]):
                lo, hi = (float(e) for e in err[ci])  # type: ignore[arg-type]
                ylo = y0 + h - h * max(0.0, min(lo, top)) / top
                yhi = y0 + h - h * max(0.0, min(hi, top)) / top
                cx = x + (bar_w - 2) / 2
                parts.append(f'<line x1="{cx:.1f}" y1="{ylo:.1f}" x2="{cx:.1f}" y2="{yhi:.1f}" '
                             'stroke="#222" stroke-width="1"/>')
        parts.append(f'<text x="{x0 + ci * group_w + group_w / 2:.1f}" y="{y0 + h + 14:.1f}" '
                     f'text-anchor="middle" transform="rotate(20 '
                     f'{x0 + ci * group_w + group_w / 2:.1f} {y0 + h + 14:.1f})">'
                     f'{escape(cat)}</text>')
    _legend(parts, names, x0 + w + 14, y0 + 4)
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(x: Sequence[float], series: Mapping[str, Sequence[float | None]], title: str,
               *, xlabel: str = "k", ymax: float | None = None) -> str:
    """One polyline per series over shared x values (e.g. hit@k against k)."""
    names = list(series)
    width, height = 560, 300
    x0, y0, h = 50.0, 30.0, 200.0
    w = width - x0 - 170
    all_vals = [v for vals in series.values() for v in vals if _ok(v)]
    top = ymax if ymax is not None else _nice_max(all_vals)
    parts = _open("line", width, height, title)
    _y_axis(parts, x0, y0, h, w, 0.0, top)
    xs = list(x)
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span = (hi - lo) or 1.0

    def px(v: float) -> float:
        return x0 + 10 + (w - 20) * (v - lo) / span

    for xv in xs:
        parts.append(f'<text x="{px(xv):.1f}" y="{y0 + h + 14:.1f}" text-anchor="middle">'
                     f'{xv:g}</text>')
    parts.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 30:.1f}" text-anchor="middle" '
                 f'fill="#555">{escape(xlabel)}</text>')
    for si, name in enumerate(names):
        color = PALETTE[si % len(PALETTE)]
        pts = [(px(xv), y0 + h - h * max(0.0, min(float(v), top)) / top)  # type: ignore[arg-type]
               for xv, v in zip(xs, series[name], strict=False) if _ok(v)]
        if len(pts) > 1:
            parts.append('<polyline fill="none" stroke-width="2" stroke="' + color + '" points="'
                         + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        for a, b in pts:
            parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>')
    _legend(parts, names, x0 + w + 14, y0 + 4)
    parts.append("</svg>")
    return "\n".join(parts)


def box_stats(values: Sequence[float]) -> dict[str, float] | None:
    """Quartiles and Tukey whiskers (1.5 IQR) of the finite values, or None when empty."""
    arr = np.asarray([v for v in values if _ok(v)], dtype=float)
    if arr.size == 0:
        return None
    q1, med, q3 = (float(q) for q in np.percentile(arr, [25, 50, 75]))
    iqr = q3 - q1
    lo_w = float(arr[arr >= q1 - 1.5 * iqr].min())
    hi_w = float(arr[arr <= q3 + 1.5 * iqr].max())
    return {"q1": q1, "median": med, "q3": q3, "lo": lo_w, "hi": hi_w,
            "mean": float(arr.mean()), "n": float(arr.size)}


def box_plot(groups: Mapping[str, Sequence[float]], title: str, *,
             ymin: float = 0.0, ymax: float | None = None) -> str:
    """Box plots of per-sample values, one box per group (unscored values are left out)."""
    names = list(groups)
    width = max(380, 80 + 70 * len(names))
    height = 300
    x0, y0, h = 50.0, 30.0, 200.0
    w = width - x0 - 20
    all_vals = [v for vals in groups.values() for v in vals if _ok(v)]
    top = ymax if ymax is not None else _nice_max(all_vals)
    span = (top - ymin) or 1.0
    parts = _open("box", width, height, title)
    _y_axis(parts, x0, y0, h, w, ymin, top)

    def py(v: float) -> float:
        return y0 + h - h * (min(max(v, ymin), top) - ymin) / span

    slot = w / max(1, len(names))
    for i, name in enumerate(names):
        cx = x0 + slot * i + slot / 2
        st = box_stats(groups[name])
        label_y = y0 + h + 14
        parts.append(f'<text x="{cx:.1f}" y="{label_y:.1f}" text-anchor="middle" '
                     f'transform="rotate(15 {cx:.1f} {label_y:.1f})">{escape(name)}</text>')
        if st is None:
            parts.append(f'<text x="{cx:.1f}" y="{y0 + h - 4:.1f}" text-anchor="middle" '
                         'fill="#999">n/a</text>')
            continue
        bw = min(40.0, slot * 0.6)
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<line x1="{cx:.1f}" y1="{py(st["lo"]):.1f}" x2="{cx:.1f}" '
                     f'y2="{py(st["hi"]):.1f}" stroke="#444"/>')
        parts.append(f'<rect class="rm-box" x="{cx - bw / 2:.1f}" y="{py(st["q3"]):.1f}" '
                     f'width="{bw:.1f}" height="{max(1.0, py(st["q1"]) - py(st["q3"])):.1f}" '
                     f'fill="{color}" fill-opacity="0.55" stroke="#333"><title>'
                     f'{escape(name)}: median {st["median"]:.3f}, IQR [{st["q1"]:.3f}, '
                     f'{st["q3"]:.3f}], n={int(st["n"])}</title></rect>')
        parts.append(f'<line x1="{cx - bw / 2:.1f}" y1="{py(st["median"]):.1f}" '
                     f'x2="{cx + bw / 2:.1f}" y2="{py(st["median"]):.1f}" stroke="#111" '
                     'stroke-width="2"/>')
        parts.append(f'<circle cx="{cx:.1f}" cy="{py(st["mean"]):.1f}" r="2.5" fill="#fff" '
                     'stroke="#111"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def heatmap(matrix: Sequence[Sequence[float]], row_labels: Sequence[str],
            col_labels: Sequence[str], title: str, *, row_title: str = "actual",
            col_title: str = "predicted") -> str:
    """A labelled matrix with counts (confusion matrix of the production judge)."""
    rows, cols = len(row_labels), len(col_labels)
    cell = 64
    x0, y0 = 110.0, 56.0
    width = int(x0 + cols * cell + 30)
    height = int(y0 + rows * cell + 30)
    parts = _open("heatmap", width, height, title)
    flat = [float(v) for r in matrix for v in r]
    top = max(flat) if flat and max(flat) > 0 else 1.0
    parts.append(f'<text x="{x0 + cols * cell / 2:.1f}" y="{y0 - 24:.1f}" text-anchor="middle" '
                 f'fill="#555">{escape(col_title)}</text>')
    parts.append(f'<text x="14" y="{y0 + rows * cell / 2:.1f}" fill="#555" '
                 f'transform="rotate(-90 14 {y0 + rows * cell / 2:.1f})" text-anchor="middle">'
                 f'{escape(row_title)}</text>')
    for j, c in enumerate(col_labels):
        parts.append(f'<text x="{x0 + j * cell + cell / 2:.1f}" y="{y0 - 6:.1f}" '
                     f'text-anchor="middle">{escape(c)}</text>')
    for i, r in enumerate(row_labels):
        parts.append(f'<text x="{x0 - 6:.1f}" y="{y0 + i * cell + cell / 2 + 4:.1f}" '
                     f'text-anchor="end">{escape(r)}</text>')
        for j in range(cols):
            v = float(matrix[i][j])
            shade = 0.12 + 0.8 * v / top
            parts.append(f'<rect class="rm-cell" x="{x0 + j * cell:.1f}" y="{y0 + i * cell:.1f}" '
                         f'width="{cell - 2}" height="{cell - 2}" fill="#4C72B0" '
                         f'fill-opacity="{shade:.2f}"/>')
            parts.append(f'<text x="{x0 + j * cell + cell / 2:.1f}" '
                         f'y="{y0 + i * cell + cell / 2 + 5:.1f}" text-anchor="middle" '
                         f'font-size="14" font-weight="600">{v:g}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
