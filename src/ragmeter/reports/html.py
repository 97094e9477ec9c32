"""Self-contained HTML reports that decide: one file per run or per comparison, no external URL.

A run's report leads with the decision (:mod:`.decision`): per tier, systems × key metrics
with mean, 95% CI and n, the best in bold, † for a gap to the best that is significant under a
paired randomization test (its seed and resamples stated), and a one-line verdict. Then the
tiers' status, per-tier charts (:mod:`.svg`: CI whiskers, zoomed axes said so, one colour per
system), every metric folded per system, a compact worst-first explorer (question × system on
each tier's primary metric, filters by question type, tier and unscored, details on demand)
and the signature. All text is English or Russian (:mod:`.i18n`; default: the data's language).

CSS and JavaScript are inlined from ``reports/assets``. All user text goes through
:func:`html.escape`; the JSON data block is made safe inside ``<script>`` by
:func:`json_for_script` (``<``, ``>``, ``&`` and the JS line separators as ``\\uXXXX``), so a
question such as ``<script>alert(1)</script>`` is shown, never executed. The page's script marks
each drawn chart with ``data-rendered`` and the ``<body>`` with ``data-rendered="true"`` once
it has run (the browser tests rely on it).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter._version import __version__
from ragmeter.judge_trust.runs import TIER as JUDGE_TRUST_TIER
from ragmeter.metrics.registry import split_metric_key
from ragmeter.reports import svg
from ragmeter.reports.bands import BANDS, SCALES, classify, find_band, from_demo_judge, shades_for
from ragmeter.reports.boxplot import box_plot
from ragmeter.reports.charts import per_query_panels
from ragmeter.reports.decision import TierDecision, decide
from ragmeter.reports.explorer import explorer
from ragmeter.reports.explorer import fmt_value as _fmt_value
from ragmeter.reports.explorer import (  # noqa: F401 (the viewer's pages import it from here)
    reasons_from_details as _reasons_from_details,
)
from ragmeter.reports.i18n import check_lang, join_names, results_lang, status_text, t
from ragmeter.reports.judge_card import card_section
from ragmeter.reports.judge_labels import is_demo, mock_banner
from ragmeter.reports.slices import decision_slices_html
from ragmeter.reports.tiers_view import tier_title
from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.results.statistic import COST_METRICS, UNITS, is_latency
from ragmeter.results.store import StoredRun
from ragmeter.text import detect_language


# --------------------------------------------------------------------------- helpers
def json_for_script(obj: Any) -> str:
    """JSON that can sit inside ``<script type="application/json">`` without ending it."""
    text = json.dumps(obj, ensure_ascii=False, default=str, allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _asset(name: str) -> str:
    return (resources.files("ragmeter.reports") / "assets" / name).read_text(encoding="utf-8")


def _f(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _clean(x: Any) -> Any:
    """NaN/inf → None for JSON."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, Mapping):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _band_badge(metric: str, value: float | None, tier: str | None, demo: bool = False,
                lang: str = "en") -> str:
    if demo and find_band(metric, tier) is not None:
        tip = ("from the weak offline demonstration judge: shows how ragmeter works, not a "
               "measurement") if lang != "ru" else ("от слабого демонстрационного офлайн-судьи: "
                                                   "показывает работу ragmeter, а не измерение")
        return f'<span class="band mid" title="{escape(tip)}">{t("demo_judge", lang)}</span>'
    band = classify(metric, value, tier)
    if band is None:
        return ""
    b = find_band(metric, tier)
    cls = {"excellent": "ok", "good": "mid", "needs attention": "bad"}[band]
    tip = (f"{b.title(lang)}: " + t("band_rule", lang, hi=f"{b.excellent_above:g}",
                              lo=f"{b.attention_below:g}")) if b else ""
    return f'<span class="band {cls}" title="{escape(tip)}">{escape(t(band, lang))}</span>'


def _parse_key(key: str) -> tuple[str, int | None, str]:
    return split_metric_key(key.replace(" ", ""))




# --------------------------------------------------------------------------- charts
def _hit_at_k(results: Sequence[EvalResult]) -> dict[str, dict[int, svg.Point]]:
    """Plain ``hit_rate@k`` (no parameters) per system: {system: {k: point}}."""
    out: dict[str, dict[int, svg.Point]] = {}
    for res in results:
        for key, mr in res.results.items():
            name, k, params = _parse_key(key)
            if k is None or params or name not in ("hit_rate", "hit"):
                continue
            a = mr.aggregate
            if a.n > 0:
                out.setdefault(res.name, {})[k] = svg.Point(a.mean, a.ci_low, a.ci_high)
    return out


def _point(mr: MetricResult | None) -> svg.Point:
    if mr is None or mr.aggregate.n == 0:
        return svg.Point(None)
    a = mr.aggregate
    return svg.Point(a.mean, a.ci_low, a.ci_high)


def decision_charts(dec: TierDecision, results: Sequence[tuple[str, EvalResult]],
                    colors: Mapping[str, str], lang: str) -> list[str]:
    """One dot-and-whisker chart per key metric (rows = systems); with one system, one chart
    of its key metrics on the 0–1 scale (rows = metrics)."""
    by_label = dict(results)
    charts: list[str] = []
    if len(results) > 1:
        for key in dec.metrics:
            rows = [(label, _point(by_label[label].results.get(key))) for label in dec.systems]
            if not any(p.ok for _, p in rows):
                continue
            best = next((s for s in dec.systems if dec.cells[(s, key)].best), None)
            hib = next((dec.cells[(s, key)].higher_is_better for s in dec.systems), True)
            charts.append(svg.forest(t("chart_key", lang, metric=key), rows, colors=colors,
                                     lang=lang, higher_is_better=hib, best=best,
                                     shades=shades_for(key, lang)))
        return charts
    label, res = results[0]
    unit: list[tuple[str, svg.Point]] = []
    other: list[tuple[str, svg.Point]] = []
    for key in dec.metrics:
        p = _point(res.results.get(key))
        if not p.ok:
            continue
        in_unit = all(v is None or 0.0 <= v <= 1.0 for v in (p.mean, p.low, p.high))
        # a metric with a reading scale gets a chart of its own, shaded by that scale
        (unit if in_unit and not shades_for(key) else other).append((key, p))
    color = colors.get(label, svg.PALETTE[0])
    if unit:
        charts.append(svg.forest(t("chart_keys_one", lang, system=label), unit,
                                 colors={k: color for k, _ in unit}, lang=lang))
    for key, p in other:
        charts.append(svg.forest(t("chart_key", lang, metric=key), [(label, p)],
                                 colors=colors, lang=lang, shades=shades_for(key, lang)))
    return charts


def tier_charts(tier: str, results: Sequence[EvalResult], *, lang: str = "en",
                colors: Mapping[str, str] | None = None,
                decision: TierDecision | None = None) -> list[str]:
    """Every chart whose data exists for this tier (same colour per system everywhere)."""
    colors = colors or svg.system_colors(r.name for r in results)
    pairs = [(r.name, r) for r in results]
    dec = decision or decide(tier, pairs, lang=lang)
    quality = [(name, r) for name, r in pairs if not is_latency(r)]
    charts = decision_charts(dec, quality, colors, lang) if quality else []
    hits = _hit_at_k(results)
    ks = sorted({k for pts in hits.values() for k in pts})
    if len(ks) > 1:
        series = {name: [pts.get(k, svg.Point(None)) for k in ks] for name, pts in hits.items()}
        charts.append(svg.bar_chart([f"k={k}" for k in ks], series, t("chart_hit_bars", lang),
                                    colors=colors, lang=lang))
    charts += box_charts(results, colors, lang)
    for res in results:
        cm = confusion_of(res)
        if cm is not None:
            matrix, labels = cm
            charts.append(svg.heatmap(matrix, labels, labels,
                                      t("chart_confusion", lang, name=res.name),
                                      row_title=t("actual", lang),
                                      col_title=t("predicted", lang)))
    return charts


#: the per-query metrics the report shows as box plots (context precision / recall and the
#: retrieval precision / recall they generalise; the retrievers' files add ndcg and mrr)
REPORT_BOX_METRICS = ("context_precision", "context_recall", "id_context_precision",
                      "id_context_recall", "precision", "recall", "context_relevance")


def box_charts(results: Sequence[EvalResult], colors: Mapping[str, str], lang: str) -> list[str]:
    """Box plots of the per-query values of :data:`REPORT_BOX_METRICS` (all k in one chart,
    each system in its colour), shaded by a reading scale where the metric has one."""
    by_name = {r.name: r for r in results}
    charts = []
    for family, rows in per_query_panels(by_name, REPORT_BOX_METRICS).items():
        several_k = any(" · " in label for label, _, _ in rows)
        row_colors = {label: colors.get(label.split(" · ")[-1], svg.PALETTE[0])
                      for label, _, _ in rows}
        charts.append(box_plot(t("chart_box_k" if several_k else "chart_box", lang,
                                 metric=family),
                               [(label, values, svg.Point(*p)) for label, values, p in rows],
                               colors=row_colors, lang=lang, shades=shades_for(family, lang)))
    return charts


def confusion_of(res: EvalResult) -> tuple[list[list[float]], list[str]] | None:
    """A confusion matrix from ``meta`` (``confusion_matrix``/``confusion``: tp/fp/fn/tn,
    ``{"labels", "matrix"}`` or a 2×2 list with rows = actual yes/no)."""
    cm = res.meta.get("confusion_matrix", res.meta.get("confusion"))
    if cm is None:
        return None
    if isinstance(cm, Mapping) and {"tp", "fp", "fn", "tn"} <= set(cm):
        return ([[cm["tp"], cm["fn"]], [cm["fp"], cm["tn"]]], ["yes", "no"])
    if isinstance(cm, Mapping) and "matrix" in cm:
        labels = [str(x) for x in cm.get("labels") or range(len(cm["matrix"]))]
        return [list(map(float, r)) for r in cm["matrix"]], labels
    if isinstance(cm, list) and cm and all(isinstance(r, list) for r in cm):
        return [list(map(float, r)) for r in cm], (["yes", "no"] if len(cm) == 2
                                                   else [str(i) for i in range(len(cm))])
    return None


# --------------------------------------------------------------------------- sections
def _ci(lo: float | None, hi: float | None, digits: int = 3) -> str:
    if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)):
        return "–"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _ci_of(lo: float | None, hi: float | None, metric: str) -> str:
    """A cell's CI: a cost (a small number) with four significant digits."""
    if metric not in COST_METRICS or lo is None or hi is None or math.isnan(lo):
        return _ci(lo, hi)
    return f"[{lo:.4g}, {hi:.4g}]"


def _direction_note(dec: TierDecision, m: str, lang: str, block: bool) -> str:
    """Under a column head: "lower is better" (and in the latency block the unit and "higher
    is better" too)."""
    lower = any(not dec.cells[(s, m)].higher_is_better for s in dec.systems)
    if not block:
        return f'<div class=muted>{t("lower_better", lang)}</div>' if lower else ""
    unit = UNITS.get(m)
    unit_text = f"{t('unit_' + unit, lang)} · " if unit else ""
    return (f'<div class=muted>{escape(unit_text)}'
            f'{t("lower_better" if lower else "higher_better", lang)}</div>')


def decision_table(dec: TierDecision, lang: str, *, demo_names: Sequence[str] = (),
                   results: Mapping[str, EvalResult] | None = None,
                   links: Mapping[str, str] | None = None, block: bool = False,
                   front: Sequence[str] | None = None) -> str:
    """The decision table of one tier: systems × key metrics, best in bold, † significant;
    ``block``: the latency block (units and each column's direction under its head);
    ``front``: the targets on the quality–latency–cost front, marked ◆ (default: the
    decision's own). A cost column shows how many calls had no known usage."""
    on_front = set(dec.front if front is None else front)
    multi = sum(1 for s in dec.systems if any(dec.cells[(s, m)].scored for m in dec.metrics)) > 1
    head = "".join(
        f"<th class=num><code>{escape(m)}</code>" + _direction_note(dec, m, lang, block)
        + "</th>" for m in dec.metrics)
    rows = []
    for s in dec.systems:
        cells = []
        for m in dec.metrics:
            c = dec.cells[(s, m)]
            if not c.scored:
                why = ""
                if results and s in results and m in results[s].results:
                    reasons = results[s].results[m].aggregate.unscored_by_reason
                    why = ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items()))
                unknown = (f'<div class="ci cost-unknown">{t("cost_unknown", lang)}: '
                           f'{c.n_unscored}</div>' if m in COST_METRICS and c.n_unscored
                           else "")
                cells.append(f'<td class="num nodata" title="{escape(why)}">'
                             f'{t("no_scored", lang)}'
                             + (f" <span class=muted>({c.n_unscored})</span>" if c.n_unscored
                                else "") + unknown + "</td>")
                continue
            value = _fmt_value(c.mean) if m not in COST_METRICS else f"{c.mean:.4g}"
            if c.best and multi:
                value = f"<b>{value}</b>"
            mark = ""
            if c.significant:
                mark = f'<sup class=sig title="p = {c.p_value:.4f}">†</sup>'
            elif not c.paired:
                mark = f'<sup class=nopair title="{escape(t("no_pair", lang))}">∅</sup>'
            elif c.p_value is not None:
                mark = f'<sup class=nosig title="p = {c.p_value:.4f}">&nbsp;</sup>'
            band = ""
            if results is not None and s in results and m in results[s].results:
                mr = results[s].results[m]
                band = _band_badge(m, c.mean, dec.tier,
                                   from_demo_judge(demo_names, mr.signature.as_dict()), lang)
            unknown = ""
            if m in COST_METRICS:   # the unknown count beside every cost figure, 0 included
                unknown = (f'<div class="ci cost-unknown">{t("cost_unknown", lang)}: '
                           f'{c.n_unscored}</div>')
            cells.append(f'<td class="num{" best" if c.best and multi else ""}">{value}{mark}'
                         f'<div class=ci>{_ci_of(c.ci_low, c.ci_high, m)} · '
                         f'n={c.n}</div>{unknown}{band}'
                         f"{card_mark(c.card, lang)}</td>")
        name = escape(s)
        if links and s in links:
            name = f'<a href="{escape(links[s])}">{name}</a>'
        if s in on_front:
            word = escape(t("pareto_front", lang))
            name += f' <span class=front title="{word}" aria-label="{word}">◆</span>'

        rows.append(f'<tr><th scope=row>{name}</th>{"".join(cells)}</tr>')
    kind = ' data-block="latency"' if block else ""
    return (f'<table class="decision{" latency" if block else ""}" data-tier='
            f'"{escape(dec.tier)}"{kind}><thead><tr>'
            f'<th>{t("system", lang)}</th>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def card_mark(back: Any, lang: str) -> str:
    """Under a judged metric's cell: ◆ card-backed (its bias-corrected interval) or ◇
    advisory (why no judge card matches, on hover); nothing for other metrics."""
    if back is None:
        return ""
    if back.backed:
        return (f'<div class=card-gate data-card=backed title="{escape(back.card)}">◆ '
                f'{escape(t("gate_card", lang))} {_ci(back.ci_low, back.ci_high)}</div>')
    return (f'<div class="card-gate muted" data-card=advisory title="{escape(back.reason)}">◇ '
            f'{escape(t("gate_advisory", lang))}</div>')


def latency_block(dec: TierDecision, lang: str, *,
                  results: Mapping[str, EvalResult] | None = None,
                  links: Mapping[str, str] | None = None) -> str:
    """The decision's latency block (a table of its own under the quality table), or "" when
    the tier has no target latency. ``results``: keyed by the labels given to
    :func:`~ragmeter.reports.decision.decide`."""
    lat = dec.latency
    if lat is None or not lat.systems:
        return ""
    by_label = ({label: results[name] for label, name in lat.names.items() if name in results}
                if results is not None else None)
    note = ""
    if dec.front:
        dims = join_names([f"<code>{escape(d)}</code>" for d in dec.front_dims], lang)
        note = f'<p class="muted pareto-note">{t("pareto_note", lang, dims=dims)}</p>'
    return (f'<div class=latency-block><h4>{t("latency_block", lang)}</h4>'
            f'<p class=muted>{t("latency_block_intro", lang)}</p>'
            + decision_table(lat, lang, results=by_label, links=links, block=True,
                             front=dec.front) + note + "</div>")


def _bands_legend(lang: str) -> str:
    items = "".join(
        f"<li><b>{escape(b.title(lang))}</b>: "
        f"{escape(t('band_rule', lang, hi=f'{b.excellent_above:g}', lo=f'{b.attention_below:g}'))}"
        "</li>" for b in BANDS)
    scales = "".join(
        f"<li><b>{escape(s.title(lang))}</b>: "
        + escape("; ".join(f"{lv.range_text()} {lv.title(lang)}" for lv in s.levels))
        + "</li>" for s in SCALES)
    return (f'<details class=bands><summary>{t("bands", lang)}</summary>'
            f'<p>{t("bands_intro", lang)}</p><ul>{items}</ul>'
            f'<h4>{t("scales", lang)}</h4><p>{t("scales_intro", lang)}</p>'
            f'<ul class=scales>{scales}</ul></details>')


def _decision_section(run: StoredRun, lang: str,
                      decisions: Mapping[str, TierDecision]) -> str:
    demo_names = is_demo(run)
    parts = [f'<section id=decision><h2>{t("decision", lang)}</h2>'
             f'<p class=intro>{t("decision_intro", lang)}</p>']
    n_res = seed = None
    for tier, dec in decisions.items():
        rec = run.tiers[tier]
        results = {r.name: r for r in rec.results}
        parts.append(f'<div class=tier-decision id="decision-{escape(tier)}"><h3>'
                     f'{escape(tier_title(tier, lang))} <span class=muted><code>{escape(tier)}'
                     f"</code></span></h3><p class=verdict>{escape(dec.verdict(lang))}</p>"
                     + (decision_table(dec, lang, demo_names=demo_names, results=results)
                        if dec.systems else "")
                     + decision_slices_html(dec) + latency_block(dec, lang, results=results)
                     + "</div>")
        n_res, seed = dec.n_resamples, dec.seed
    if not decisions:
        parts.append(f"<p class=note>{t('no_results', lang)}</p>")
    if n_res is not None:
        parts.append(f'<p class="muted test-note">{escape(t("test_note", lang, method=t("method_randomization", lang), n=n_res, seed=seed))}</p>')
    if any(c.card is not None for dec in decisions.values() for c in dec.cells.values()):
        parts.append(f'<p class="muted card-note">{escape(t("gate_card_note", lang))}</p>')
    parts.append(_bands_legend(lang))
    parts.append("</section>")
    return "".join(parts)


def _metric_table(tier: str, res: EvalResult, demo_names: Sequence[str] = (),
                  lang: str = "en") -> str:
    rows = []
    for key, mr in res.results.items():
        a = mr.aggregate
        reasons = ", ".join(f"{escape(str(r))}: {n}" for r, n in
                            sorted(a.unscored_by_reason.items()))
        counts = ", ".join(f"{escape(str(c))}={v}" for c, v in sorted(mr.counts.items()))
        direction = ("" if mr.higher_is_better else
                     f' <span class="muted">({t("lower_better", lang)})</span>')
        if a.n == 0:
            mean_cell = f'<td class="num nodata" colspan=2>{t("no_scored", lang)}</td>'
        else:
            mean_cell = (f"<td class=num>{_f(a.mean)}</td><td class=num>"
                         f"{_ci(a.ci_low, a.ci_high, 4)}</td>")
        rows.append(
            f"<tr><td><code>{escape(key)}</code>{direction}</td>{mean_cell}"
            f"<td class=num>{a.n}</td><td class=num>{a.n_unscored}</td><td>{reasons}</td>"
            f"<td>{_band_badge(key, a.mean, tier, from_demo_judge(demo_names, mr.signature.as_dict()), lang)}</td>"
            f"<td>{counts}</td><td class=sig><code>{escape(str(mr.signature))}</code></td></tr>")
    return ("<table class=metrics><thead><tr>"
            + "".join(f"<th>{t(k, lang)}</th>" for k in ("metric", "mean", "ci95", "n",
                                                       "n_unscored", "unscored_reasons", "band",
                                                       "counts"))
            + f'<th>{t("signature", lang)}</th></tr></thead><tbody>' + "".join(rows)
            + "</tbody></table>")


def _tier_status(run: StoredRun, lang: str) -> str:
    items = []
    for tier, rec in run.tiers.items():
        cls = {"ok": "ok", "not_run": "mid", "error": "bad"}.get(rec.status, "mid")
        stats = rec.stats or {}
        extra = ""
        if stats.get("llm_calls") or stats.get("cached_calls"):
            extra = " · " + t("llm_stats", lang, calls=stats.get("llm_calls", 0),
                              cached=stats.get("cached_calls", 0),
                              tokens=stats.get("tokens_in", 0) + stats.get("tokens_out", 0),
                              cost=f"{stats.get('cost', 0):.4f}", errors=stats.get("errors", 0))
        reason = f" — {escape(rec.reason)}" if rec.reason else ""
        items.append(f'<li><span class="band {cls}">{escape(t("st_" + rec.status, lang))}'
                     f"</span> <b>{escape(tier_title(tier, lang))}</b> <code>{escape(tier)}"
                     f"</code>{reason}{escape(extra)}</li>")
    not_run = [x for x, r in run.tiers.items() if r.status != "ok"]
    head = f"<p>{t('tiers_not_run', lang, n=len(not_run))}</p>" if not_run else ""
    return (f"<section id=tiers><h2>{t('tiers', lang)}</h2>{head}<ul class=tiers>"
            f"{''.join(items)}</ul></section>")


# --------------------------------------------------------------------------- page
def _page(title: str, body: str, data: Mapping[str, Any], lang: str = "en",
          extra_css: str = "") -> str:
    return (
        f"<!DOCTYPE html>\n<html lang={lang}><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{_asset('report.css')}{extra_css}</style></head>"
        f"<body>{body}"
        f'<script type="application/json" id="rm-data">{json_for_script(_clean(data))}</script>'
        f"<script>{_asset('report.js')}</script></body></html>\n")


def run_lang(run: StoredRun) -> str:
    """The language of a run's data: its questions; without samples (a results JSON file) the
    language recorded in the results' meta; system names when there is neither."""
    texts = [str(s.get("user_input") or "") for s in run.samples.values()]
    if not any(texts):
        recorded = results_lang(r for rec in run.tiers.values() for r in rec.results)
        if recorded:
            return recorded
    return detect_language(texts or [run.name])


def tier_decisions(run: StoredRun, lang: str = "en", compare: Any = None
                   ) -> dict[str, TierDecision]:
    """Per tier with results, its decision; the judge cards' tier is shown as the judge card
    section instead (its results are human labels, not systems to choose between).
    ``compare``: the paired test (see :func:`ragmeter.reports.decision.decide`)."""
    from ragmeter.judge_trust.backing import run_backing

    backing = run_backing(run)
    return {tier: decide(tier, [(r.name, r) for r in rec.results], lang=lang, compare=compare,
                         backing=backing)
            for tier, rec in run.tiers.items()
            if rec.status == "ok" and rec.results and tier != JUDGE_TRUST_TIER}


def render_run_body(run: StoredRun, lang: str | None = None, *,
                    sample_href: str | None = None, source: Any = None,
                    compare: Any = None, hide_paths: bool = False,
                    explorer_rows: int | None = None) -> tuple[str, dict[str, Any], str]:
    """The report's body HTML, its JSON data and its language (the viewer embeds these).
    ``source``: where the explorer reads the shown samples' text and details (default: the
    run); ``compare``: the paired test of the decisions (default ``compare_metric``);
    ``explorer_rows``: the explorer's rows (default: the report's)."""
    lang = check_lang(lang) if lang else run_lang(run)
    demo = is_demo(run)
    decisions = tier_decisions(run, lang, compare)
    colors = svg.system_colors(r.name for rec in run.tiers.values() for r in rec.results)
    parts = [f"<header><h1>{escape(run.name)}</h1><p class=meta>{t('run', lang)} "
             f"<code>{escape(run.id)}</code> · {escape(run.created_at)} · {t('status', lang)}: "
             f"{escape(status_text(run.status, lang))} · git <code>{escape((run.git_commit or '–')[:12])}</code>"
             f" · ragmeter {escape(__version__)}</p></header>"]
    if demo:
        parts.append('<div class="banner demo" id="demo-banner">'
                     + escape(t("demo_banner", lang, names=", ".join(demo))) + "</div>")
    parts.append(mock_banner(run, lang))
    parts.append(_decision_section(run, lang, decisions))
    nav = "".join(f'<a href="#tier-{escape(x)}">{escape(tier_title(x, lang))}</a>'
                  for x in decisions)
    if JUDGE_TRUST_TIER in run.tiers:
        nav += f' <a href="#judge-card">{escape(t("jc_title", lang))}</a>'
    parts.append(f'<nav class=toc>{t("contents", lang)}: {nav} <a href="#explorer">'
                 f'{t("explorer", lang)}</a> <a href="#signature">{t("signature", lang)}</a></nav>')
    parts.append(_tier_status(run, lang))
    for tier, dec in decisions.items():
        rec = run.tiers[tier]
        section = [f'<section class=tier id="tier-{escape(tier)}"><h2>'
                   f"{escape(tier_title(tier, lang))} <span class=muted><code>{escape(tier)}"
                   "</code></span></h2>"]
        charts = tier_charts(tier, rec.results, lang=lang, colors=colors, decision=dec)
        if charts:
            section.append("<div class=charts>" + "".join(
                f"<figure>{c}</figure>" for c in charts) + "</div>")
        for res in rec.results:
            section.append(f"<details class=allmetrics><summary>"
                           f"{escape(t('all_metrics', lang, system=res.name))}</summary>"
                           f"{_metric_table(tier, res, demo, lang)}</details>")
        section.append("</section>")
        parts.append("".join(section))
    parts.append(card_section(run, lang))
    html_explorer, sample_data = explorer(run, decisions, lang, sample_href, source,
                                          **({"max_rows": explorer_rows} if explorer_rows
                                             else {}))
    parts.append(html_explorer)
    from ragmeter.secrets import mask_secrets

    shown = mask_secrets(run.config)
    if hide_paths:  # a page that leaves this machine: no local path in it
        shown = short_paths(shown)
    cfg = json.dumps(shown, ensure_ascii=False, indent=2, default=str)
    parts.append(f"<section id=signature><h2>{t('signature', lang)}</h2><p><code>"
                 f"{escape(run.signature)}</code></p><details><summary>"
                 f"{t('config_masked', lang)}</summary><pre>{escape(cfg)}</pre></details>"
                 "</section>")
    data = {"kind": "run", "run_id": run.id, "name": run.name, "demo": demo, "lang": lang,
            "tiers": {x: {"status": r.status, "reason": r.reason} for x, r in run.tiers.items()},
            "samples": sample_data}
    return "".join(parts), data, lang


_LOCAL_PATH = re.compile(r"^(?:sqlite:/+|file:/*)?(?:/|[A-Za-z]:[\\/]|~[\\/])")


def short_paths(obj: Any) -> Any:
    """``obj`` with every absolute local path (``/home/u/x/data.jsonl``, ``sqlite:///…``,
    ``C:\\…``) shortened to its last two parts (``…/x/data.jsonl``)."""
    if isinstance(obj, Mapping):
        return {k: short_paths(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [short_paths(v) for v in obj]
    if isinstance(obj, str) and _LOCAL_PATH.match(obj):
        parts = [x for x in re.split(r"[\\/]", obj) if x]
        return "…/" + "/".join(parts[-2:])
    return obj


def render_run_html(run: StoredRun, lang: str | None = None) -> str:
    """The HTML report of one run (a string; see :func:`write_run_html`)."""
    body, data, lang = render_run_body(run, lang)
    return _page(f"ragmeter · {run.name} · {run.id}", body, data, lang)


def write_run_html(run: StoredRun, path: str | Path, lang: str | None = None) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_run_html(run, lang), encoding="utf-8")
    return out
