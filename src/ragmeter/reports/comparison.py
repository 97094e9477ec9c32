"""The report of a comparison of two runs (``ragmeter compare --html``, the dashboard's diff):
significant changes first (regressions on top), the metrics without a significant change
folded below, the targets' latency and throughput in a block of their own, and a chart of the
largest changes in quality coloured in each metric's direction."""

from __future__ import annotations

import math
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

from ragmeter.reports import svg
from ragmeter.reports.html import _f, _page, run_lang
from ragmeter.reports.i18n import check_lang, t
from ragmeter.reports.judge_labels import is_demo, mock_banner
from ragmeter.results.statistic import UNITS


def _verdict_rank(verdict: str) -> int:
    return {"regression": 0, "improvement": 1, "no significant change": 2}.get(verdict, 3)


def comparison_body(a: Any, b: Any, rows: Iterable[Any], lang: str = "en") -> str:
    """Body of a comparison of runs A and B: significant changes first (regressions on top),
    the metrics without a significant change folded below, the targets' latency and
    throughput in a block of their own; a chart of the largest changes in quality."""
    rows = sorted(rows, key=lambda r: (_verdict_rank(r.verdict), r.comparison.p_value))
    timing = [r for r in rows if getattr(r, "block", "") == "latency"]
    rows = [r for r in rows if r not in timing]
    multi = len({x.result for x in rows}) > 1

    def tr(r: Any, block: bool = False) -> str:
        c = r.comparison
        cls = {"regression": "regression", "improvement": "improvement"}.get(r.verdict, "")
        ok = not math.isnan(c.diff)
        unit = UNITS.get(c.metric) if block else None
        metric = (f"<code>{escape(c.metric)}</code>" + (
            f' <span class=muted>({escape(t("unit_" + unit, lang))}, '
            f'{t("higher_better" if c.higher_is_better else "lower_better", lang)})</span>'
            if unit else ""))
        return (f'<tr class="{cls}"><td>{escape(r.result)}</td><td>{metric}'
                f"</td><td class=num>{_f(c.mean_a)}</td><td class=num>{_f(c.mean_b)}</td>"
                f"<td class=num>{f'{c.diff:+.4f}' if ok else '–'}</td><td class=num>"
                f"{f'[{c.ci_low:+.4f}, {c.ci_high:+.4f}]' if ok else '–'}</td>"
                f"<td class=num>{c.p_value:.4f}</td><td class=num>{c.n}</td>"
                f"<td>{escape(t('v_' + r.verdict, lang))}</td></tr>")

    head = ("<thead><tr>" + "".join(f"<th>{escape(x)}</th>" for x in (
        t("result", lang), t("metric", lang), "A", "B", "B − A", t("diff_ci", lang), "p", "n",
        t("verdict", lang))) + "</tr></thead>")
    sig = [r for r in rows if r.verdict in ("regression", "improvement")]
    rest = [r for r in rows if r not in sig]
    n_reg = sum(r.verdict == "regression" for r in [*rows, *timing])
    first = (rows or timing)[0].comparison if (rows or timing) else None
    method = first.method if first else "randomization"
    n_res = first.n_resamples if first else 0
    seed = first.seed if first else 0
    method_text = t("method_randomization", lang) if method == "randomization" else method
    body = (f'<p class="{"bad-text" if n_reg else ""}" id=n-regressions>'
            f'{t("regressions", lang, n=n_reg)}</p>'
            f'<p class="muted test-note">{escape(t("cmp_note", lang, method=method_text, n=n_res, seed=seed))}</p>')
    if sig:
        body += f"<table class=compare id=significant>{head}<tbody>" + "".join(
            tr(r) for r in sig) + "</tbody></table>"
    if rest:
        body += (f"<details class=allmetrics><summary>{escape(t('v_no significant change', lang))}"
                 f": {len(rest)}</summary><table class=compare>{head}<tbody>"
                 + "".join(tr(r) for r in rest) + "</tbody></table></details>")
    if timing:
        c0 = timing[0].comparison
        body += (f'<section class=latency-block id=latency-compare><h3>'
                 f'{t("latency_block", lang)}</h3><p class="muted test-note">'
                 f"{escape(c0.method)}, {c0.n_resamples} resamples, seed {c0.seed}</p>"
                 f"<table class=compare>{head}<tbody>"
                 + "".join(tr(r, block=True) for r in timing) + "</tbody></table></section>")
    changed = [r for r in rows if not math.isnan(r.comparison.diff)
               and (r in sig or abs(r.comparison.diff) > 1e-12)]
    changed = sorted(changed, key=lambda r: (r not in sig, -abs(r.comparison.diff)))[:24]
    if changed:
        def label(r: Any) -> str:
            return f"{r.result}: {r.comparison.metric}" if multi else r.comparison.metric
        chart_rows = [(label(r), svg.Point(r.comparison.diff, r.comparison.ci_low,
                                           r.comparison.ci_high)) for r in changed]
        body += ("<div class=charts><figure>"
                 + svg.diff_chart(chart_rows, t("chart_diff", lang), lang=lang,
                                  higher_is_better={label(r): r.comparison.higher_is_better
                                                    for r in changed})
                 + "</figure></div>")
    return body


def render_comparison_html(a: Any, b: Any, rows: Iterable[Any], lang: str | None = None) -> str:
    """HTML of ``ragmeter compare`` (``a``/``b`` are :class:`~ragmeter.runner.sources.Source`)."""
    rows = list(rows)
    lang = check_lang(lang) if lang else run_lang(a.run)
    body = (f"<header><h1>{t('comparison', lang)}</h1><p class=meta>A = <code>"
            f"{escape(a.label)}</code> ({escape(a.run.name)}) · B = <code>{escape(b.label)}"
            f"</code> ({escape(b.run.name)})</p></header>")
    demo = sorted(set(is_demo(a.run)) | set(is_demo(b.run)))
    if demo:
        body += ('<div class="banner demo" id="demo-banner">'
                 + escape(t("demo_banner", lang, names=", ".join(demo))) + "</div>")
    body += mock_banner(a.run, lang) or mock_banner(b.run, lang)
    body += comparison_body(a, b, rows, lang)
    body += (f"<section id=signature><h2>{t('signatures', lang)}</h2><p>A: <code>"
             f"{escape(a.run.signature)}</code></p><p>B: <code>{escape(b.run.signature)}</code>"
             "</p></section>")
    n_reg = sum(r.verdict == "regression" for r in rows)
    data = {"kind": "comparison", "a": a.label, "b": b.label, "regressions": n_reg,
            "samples": []}
    return _page(f"ragmeter · compare {a.label} vs {b.label}", body, data, lang)


def write_comparison_html(a: Any, b: Any, rows: Iterable[Any], path: str | Path,
                          lang: str | None = None) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_comparison_html(a, b, rows, lang), encoding="utf-8")
    return out
