"""The metric history page: one benchmark's metric over its runs, one line per system."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ragmeter.reports import svg
from ragmeter.reports.decision import rank_metrics
from ragmeter.reports.html import _fmt_value
from ragmeter.reports.i18n import t
from ragmeter.reports.tiers_view import tier_position
from ragmeter.results.store import MetricSummary, RunRow
from ragmeter.view.links import run_href, tags_html

#: tiers whose key metric a history opens on, in order of preference (then the others, and the
#: dataset checks of tier 0 last: they describe the data, not the system)
HEADLINE_TIERS = ("retrieval", "generation", "e2e", "judge_pipeline", "ux", "real_users")


def metric_choices(summaries: Sequence[MetricSummary]) -> list[str]:
    """``tier|metric`` pairs present in the store, tiers in canonical order, key metrics first."""
    by_tier: dict[str, list[str]] = {}
    has: set[str] = set()
    for m in summaries:
        by_tier.setdefault(m.tier, []).append(m.metric)
        if m.n > 0:
            has.add(m.metric)
    out = []
    for tier in sorted(by_tier, key=tier_position):
        out += [f"{tier}|{x}" for x in rank_metrics(by_tier[tier], has, tier)]
    return out


def headline(choices: Sequence[str]) -> str:
    """The metric a history opens on: the key metric of the first tier of
    :data:`HEADLINE_TIERS` present, else of the first tier other than tier 0."""
    tiers = [c.split("|", 1)[0] for c in choices]
    for tier in (*HEADLINE_TIERS, *[x for x in tiers if x != "tier0"], "tier0"):
        if tier in tiers:
            return choices[tiers.index(tier)]
    return ""


def history_page(rows: Sequence[RunRow], summaries: Sequence[MetricSummary],
                 choices: Sequence[str], choice: str, lang: str, name: str = "", *,
                 bench: str = "", benches: Sequence[str] = ()) -> str:
    """Trend of one metric over runs (oldest left), one line per system, points → runs."""
    opts = "".join(f'<option value="{escape(c)}"{" selected" if c == choice else ""}>'
                   f'{escape(c.replace("|", " · "))}</option>' for c in choices)
    bench_opts = "".join(f'<option value="{escape(b)}"{" selected" if b == bench else ""}>'
                         f"{escape(b)}</option>" for b in benches)
    form = (f'<form class=filters method=get action="/history"><label>{t("v_bench", lang)}'
            f'<select name=bench id=bench>{bench_opts}</select></label>'
            f'<label>{t("v_metric", lang)}'
            f'<select name=metric id=metric>{opts}</select></label><label>{t("name", lang)}'
            f'<input name=name value="{escape(name)}"></label><input type=hidden name=lang '
            f'value="{lang}"><button>{t("v_show", lang)}</button></form>')
    parts = [f"<h1>{t('v_history', lang)}</h1>", form,
             f"<p class=intro>{t('v_history_intro', lang)}</p>"]
    if not choice or "|" not in choice:
        return "".join([*parts, f"<p class=note>{t('v_no_metric', lang)}</p>"])
    tier, metric = choice.split("|", 1)
    chrono = sorted(rows, key=lambda r: (r.created_at, r.id))
    mine = [m for m in summaries if m.tier == tier and m.metric == metric]
    run_ids = [r.id for r in chrono if any(m.run_id == r.id for m in mine)]
    if not run_ids:
        return "".join([*parts, f"<p class=note>{t('v_no_metric', lang)}</p>"])
    systems = list(dict.fromkeys(m.system for m in mine))
    lookup = {(m.run_id, m.system): m for m in mine}
    series: dict[str, list[svg.Point]] = {}
    links: dict[str, list[str | None]] = {}
    for s in systems:
        pts, hrefs = [], []
        for rid in run_ids:
            m = lookup.get((rid, s))
            ok = m is not None and m.n > 0
            pts.append(svg.Point(m.mean, m.ci_low, m.ci_high) if ok and m else svg.Point(None))
            hrefs.append(run_href(rid, lang) if ok else None)
        series[s] = pts
        links[s] = hrefs
    by_id = {r.id: r for r in rows}
    xlabels = [f"{by_id[rid].created_at[5:16].replace('T', ' ')}" for rid in run_ids]
    chart = svg.line_chart(list(range(1, len(run_ids) + 1)), series,
                           t("v_history_chart", lang, metric=metric, tier=tier),
                           xlabel=t("v_runs_label", lang), lang=lang, links=links,
                           xlabels=xlabels, kind="history",
                           colors=svg.system_colors(systems))
    parts.append(f'<div class=charts><figure id=history-chart data-runs="{len(run_ids)}">'
                 f"{chart}</figure></div>")
    head = "".join(f"<th class=num>{escape(s)}</th>" for s in systems)
    trs = []
    for rid in reversed(run_ids):
        tds = []
        for s in systems:
            m = lookup.get((rid, s))
            if m is None:
                tds.append("<td></td>")
            elif m.error:
                tds.append(f'<td class="num bad-text unreadable" title="{escape(m.error)}">'
                           f'{t("st_unreadable", lang)}: {escape(m.error)}</td>')
            elif m.n == 0 or m.mean is None:
                tds.append(f'<td class="num nodata">{t("no_scored", lang)}</td>')
            else:
                tds.append(f"<td class=num>{_fmt_value(m.mean)}<div class=ci>"
                           f"{'' if m.ci_low is None else f'[{m.ci_low:.3f}, {m.ci_high:.3f}]'}"
                           f" · n={m.n}</div></td>")
        r = by_id[rid]
        trs.append(f'<tr><td><a href="{escape(run_href(rid, lang))}"><code>{escape(rid)}</code>'
                   f"</a></td><td>{escape(r.created_at)}</td><td>{escape(r.name)} "
                   f"{tags_html(r.tags)}</td>"
                   f"{''.join(tds)}</tr>")
    parts.append(f"<table><thead><tr><th>{t('run', lang)}</th><th>{t('created', lang)}</th>"
                 f"<th>{t('name', lang)}</th>{head}</tr></thead><tbody>{''.join(trs)}"
                 "</tbody></table>")
    return "".join(parts)


