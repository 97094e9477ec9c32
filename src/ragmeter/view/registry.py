"""The runs registry page: filters, key-metric columns of the filtered runs, one page of runs
(newest first) and, above them, the runs still running."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragmeter.reports import svg
from ragmeter.reports.decision import rank_metrics
from ragmeter.reports.html import _fmt_value
from ragmeter.reports.i18n import status_text, t
from ragmeter.reports.tiers_view import tier_position
from ragmeter.results.store import MetricSummary, RunRow
from ragmeter.view.links import href, run_href, tags_html

#: runs shown on one registry page
PAGE_SIZE = 50


def default_columns(summaries: Sequence[MetricSummary], limit: int = 8) -> list[str]:
    """Registry columns ``tier|system|metric``: each tier's primary metric for its systems."""
    by_tier: dict[str, dict[str, list[str]]] = {}
    has: set[str] = set()
    for m in summaries:
        by_tier.setdefault(m.tier, {}).setdefault(m.system, []).append(m.metric)
        if m.n > 0:
            has.add(m.metric)
    cols: list[str] = []
    for tier in sorted(by_tier, key=tier_position):
        names = [x for ms in by_tier[tier].values() for x in ms]
        ranked = rank_metrics(names, has, tier)
        if not ranked:
            continue
        for system, ms in list(by_tier[tier].items())[:3]:
            if ranked[0] in ms:
                cols.append(f"{tier}|{system}|{ranked[0]}")
    return cols[:limit]


def filter_runs(rows: Sequence[RunRow], *, name: str = "", tag: str = "", commit: str = "",
                since: str = "", until: str = "") -> list[RunRow]:
    out = []
    for r in rows:
        if name and name.lower() not in r.name.lower():
            continue
        if tag and not any(tag.lower() == x.lower() for x in r.tags):
            continue
        if commit and not (r.git_commit or "").lower().startswith(commit.lower()):
            continue
        if since and r.created_at[:len(since)] < since:
            continue
        if until and r.created_at[:len(until)] > until:
            continue
        out.append(r)
    return out


def registry_page(rows: Sequence[RunRow], all_rows: int,
                  summaries: Sequence[MetricSummary], columns: Sequence[str],
                  params: Mapping[str, Any], lang: str, *,
                  paging: tuple[int, int, int] = (1, 1, 0),
                  live: Sequence[Any] = (), static: bool = False) -> str:
    """The runs page; ``static``: written as a file (no ticks and Diff / Side by side
    buttons: they need the server)."""
    cells: dict[tuple[str, str], MetricSummary] = {
        (m.run_id, f"{m.tier}|{m.system}|{m.metric}"): m for m in summaries}
    head = "".join(
        f'<th class=num title="{escape(c)}">{escape(svg.short(c.split("|")[1], 20))}'
        f'<div class=muted>{escape(c.split("|")[0])} · <code>{escape(c.split("|")[2])}</code>'
        "</div></th>" for c in columns)
    body = []
    for r in rows:
        tds = []
        for c in columns:
            m = cells.get((r.id, c))
            if m is None:
                tds.append("<td class=num></td>")
            elif m.error:
                tds.append(f'<td class="num bad-text unreadable" title="{escape(m.error)}">'
                           f'{t("st_unreadable", lang)}: {escape(m.error)}</td>')
            elif m.n == 0 or m.mean is None:
                tds.append(f'<td class="num nodata">{t("no_scored", lang)}</td>')
            else:
                ci = ("" if m.ci_low is None else
                      f"<div class=ci>[{m.ci_low:.3f}, {m.ci_high:.3f}]</div>")
                tds.append(f"<td class=num>{_fmt_value(m.mean)}{ci}</td>")
        tags = tags_html(r.tags)
        body.append(
            f'<tr class=run-row data-run="{escape(r.id)}">'
            + ("" if static else f'<td><input type=checkbox name=pick value="{escape(r.id)}" '
                                 f'aria-label="pick {escape(r.id)}"></td>') +
            f'<td><a href="{escape(run_href(r.id, lang))}"><code>{escape(r.id)}</code></a></td>'
            f"<td>{escape(r.created_at[:16].replace('T', ' '))}</td><td>{escape(r.name)} {tags}</td>"
            + _status_cells(r, lang)
            + f"<td><code>{escape((r.git_commit or '–')[:10])}</code></td>{''.join(tds)}</tr>")
    fields = "".join(
        f'<label>{label}<input name="{key}" value="{escape(params.get(key, ""))}"'
        f'{" type=date" if key in ("since", "until") else ""}></label>'
        for key, label in (("name", t("name", lang)), ("tag", t("tag", lang)),
                           ("commit", t("v_commit", lang)), ("since", t("v_since", lang)),
                           ("until", t("v_until", lang))))
    col_inputs = "".join(f'<input type=hidden name=col value="{escape(c)}">'
                         for c in params.get("col_list", []))
    form = (f'<form class=filters method=get action="/">{fields}{col_inputs}'
            f'<input type=hidden name=lang value="{lang}"><button>{t("v_apply", lang)}</button>'
            "</form>")
    if not all_rows:
        table = f"<p class=note>{escape(t('v_empty_store', lang))}</p>"
    elif not rows:
        table = f"<p class=note>{t('v_no_runs', lang)}</p>"
    else:
        pick = ("" if static else
                f'<p class=muted>{t("v_pick_two", lang)} <button '
                f'id=diff-btn>{t("v_diff_btn", lang)}</button> <button formaction="/side" '
                f'id=side-btn>{t("v_side_btn", lang)}</button></p>')
        table = (f'<form method=get action="/diff" id=pick-form><input type=hidden name=lang '
                 f'value="{lang}">{pick}'
                 f"<div class=scroll><table class=runs id=runs><thead><tr>"
                 f"{'' if static else '<th></th>'}<th>id</th>"
                 f"<th>{t('created', lang)}</th><th>{t('name', lang)}</th>"
                 f"<th>{t('status', lang)}</th><th class=num>{t('v_tiers_ok', lang)}</th>"
                 f"<th>git</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></form>")
    number, n_pages, n_shown = paging
    return (f"<h1>{t('v_runs', lang)} <span class=muted>({n_shown or len(rows)} / {all_rows})"
            f"</span></h1>" + form + live_table(live, lang) + table
            + pager(number, n_pages, params, lang))


def pager(number: int, n_pages: int, params: Mapping[str, Any], lang: str) -> str:
    """Links to the previous and next page of runs (same filters)."""
    if n_pages <= 1:
        return ""
    keep = {k: v for k, v in params.items() if k != "col_list"}

    def link(n: int, label: str, rel: str) -> str:
        url = href("/", **keep, col=list(params.get("col_list", [])), page=n, lang=lang)
        return f'<a href="{escape(url)}" rel={rel}>{label}</a>'
    parts = []
    if number > 1:
        parts.append(link(number - 1, "← " + t("v_prev", lang), "prev"))
    parts.append(f"<span>{t('v_page', lang, n=number, of=n_pages)}</span>")
    if number < n_pages:
        parts.append(link(number + 1, t("v_next", lang) + " →", "next"))
    return "<nav class=pager>" + " ".join(parts) + "</nav>"


def live_table(live: Sequence[Any], lang: str) -> str:
    """The runs still running (from their progress logs), each linked to its live page."""
    if not live:
        return ""
    def state(x: Any) -> str:
        if x.error:
            return (f'<td class="bad-text unreadable" title="{escape(x.error)}">'
                    f"{escape(x.state_text(lang))}: {escape(x.error)}</td>")
        return f"<td>{escape(x.state_text(lang))}</td>"
    trs = "".join(
        f'<tr class=live-row data-run="{escape(x.run_id)}"><td><a href="'
        f'{escape(href("/live/" + x.run_id, lang=lang))}"><code>{escape(x.run_id)}</code></a>'
        f"</td><td>{escape(x.name)} {tags_html(x.tags)}</td>{state(x)}"
        f"<td class=num>{x.done}/{x.total if x.total else '?'}</td></tr>" for x in live)
    words = escape(json.dumps({k: t(k, lang) for k in ("st_running", "st_stalled", "st_stored",
                                                       "st_unreadable")},
                              ensure_ascii=False))
    return (f"<h2>{t('v_live', lang)}</h2><table id=live-runs data-src=\"/api/live?lang={lang}\" "
            f"data-words='{words}'><thead><tr><th>id</th>"
            f"<th>{t('name', lang)}</th><th>{t('status', lang)}</th>"
            f"<th class=num>{t('v_progress', lang)}</th></tr></thead><tbody>{trs}</tbody>"
            "</table>")


def _status_cells(r: RunRow, lang: str) -> str:
    """Status and tier counts of a registry row: an errored tier is shown, never hidden."""
    status = r.effective_status
    cls = " class=bad-text" if status == "failed" else ""
    notes = []
    if r.n_tiers_error:
        notes.append(f"<span class=bad-text>{t('v_tiers_errored', lang, n=r.n_tiers_error)}</span>")
    if r.n_tiers_partial:
        notes.append(f"<span class=bad-text>{t('v_tiers_partial', lang, n=r.n_tiers_partial)}"
                     "</span>")
    if r.n_tiers_not_run:
        notes.append(f"<span class=muted>{t('v_tiers_not_run', lang, n=r.n_tiers_not_run)}</span>")
    extra = (" " + ", ".join(notes)) if notes else ""
    return (f"<td{cls}>{escape(status_text(status, lang))}</td><td class=num>{r.n_tiers_ok}{extra}"
            "</td>")


