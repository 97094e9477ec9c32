"""Charts as PNG and SVG with matplotlib (Agg, no global pyplot state, reproducible SVG).

Inputs are plain data, so any tier can use them::

    series = {"bm25": {5: (0.71, 0.65, 0.77), 10: (0.80, 0.75, 0.85)}, "dense": {...}}

maps a system to ``{k: (mean, ci_low, ci_high)}``; CI bounds may be ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Point = tuple[float | None, float | None, float | None]
Series = Mapping[str, Mapping[int, Point]]

FORMATS = ("png", "svg")


def _figure(width: float, height: float) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots


def save_figure(fig: Any, out_stem: Path, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``out_stem.<fmt>`` for each format; SVGs are byte-stable across runs."""
    import matplotlib

    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "ragmeter", "svg.fonttype": "none"}):
        for fmt in formats:
            path = out_stem.with_suffix(f".{fmt}")
            meta = {"Date": None} if fmt == "svg" else {}
            fig.savefig(path, format=fmt, metadata=meta)
            paths.append(path)
    return paths


def _err(points: Sequence[Point]) -> list[list[float]]:
    low, high = [], []
    for mean, lo, hi in points:
        m = mean if mean is not None else 0.0
        low.append(max(0.0, m - lo) if lo is not None and mean is not None else 0.0)
        high.append(max(0.0, hi - m) if hi is not None and mean is not None else 0.0)
    return [low, high]


def grouped_bar_chart(panels: Mapping[str, Series], out_stem: str | Path, *,
                      title: str = "", ylabel: str = "score",
                      formats: Sequence[str] = FORMATS) -> list[Path]:
    """One panel per entry of ``panels`` (e.g. hit@k, doc_hit@k): bars per system grouped by k,
    with 95% CI error bars. Returns the written files."""
    import numpy as np

    fig, _ = _figure(4.2 * max(1, len(panels)) + 0.8, 3.8)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    for ax, (panel, series) in zip(axes, panels.items(), strict=False):
        systems = list(series)
        ks = sorted({k for pts in series.values() for k in pts})
        width = 0.8 / max(1, len(systems))
        x = np.arange(len(ks))
        for i, system in enumerate(systems):
            pts = [series[system].get(k, (None, None, None)) for k in ks]
            heights = [p[0] if p[0] is not None else 0.0 for p in pts]
            pos = x - 0.4 + width * (i + 0.5)
            bars = ax.bar(pos, heights, width, label=system, yerr=_err(pts), capsize=3)
            for rect, p in zip(bars, pts, strict=True):
                if p[0] is not None:  # value above the bar and its CI whisker
                    top = max(p[0], p[2] if p[2] is not None else p[0])
                    ax.annotate(f"{p[0]:.2f}", (rect.get_x() + rect.get_width() / 2, top + 0.01),
                                ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x, [f"k={k}" for k in ks])
        ax.set_ylim(0, 1.1)
        ax.set_title(panel)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5),
                   fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, Path(out_stem), formats)


def line_chart_by_k(panels: Mapping[str, Series], out_stem: str | Path, *, title: str = "",
                    ylabel: str = "score", formats: Sequence[str] = FORMATS) -> list[Path]:
    """Metric against k, one line per system (shaded 95% CI), one panel per entry."""
    fig, _ = _figure(4.2 * max(1, len(panels)) + 0.8, 3.8)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    for ax, (panel, series) in zip(axes, panels.items(), strict=False):
        all_ks: set[int] = set()
        for system, pts in series.items():
            ks = sorted(k for k, p in pts.items() if p[0] is not None)
            all_ks.update(ks)
            means = [pts[k][0] for k in ks]
            line = ax.plot(ks, means, marker="o", label=system)[0]
            if all(pts[k][1] is not None and pts[k][2] is not None for k in ks):
                ax.fill_between(ks, [pts[k][1] for k in ks], [pts[k][2] for k in ks],
                                alpha=0.15, color=line.get_color())
        ax.set_xticks(sorted(all_ks))
        ax.set_xlabel("k")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.05)
        ax.set_title(panel)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5),
                   fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, Path(out_stem), formats)
