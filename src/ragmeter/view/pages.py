"""HTML pages of ``ragmeter view``: plain functions from store data to strings.

Every user-supplied string (run names, tags, system and metric names, questions, answers,
query parameters echoed back) goes through :func:`html.escape`; the pages load nothing from the
network (CSS and the report script are inlined, charts are inline SVG).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from ragmeter.reports import svg
from ragmeter.reports.decision import TierDecision, decide
from ragmeter.reports.html import (
    _asset,
    _fmt_value,
    decision_charts,
    decision_table,
    json_for_script,
    latency_block,
    render_run_body,
)
from ragmeter.reports.i18n import t
from ragmeter.reports.slices import decision_slices_html
from ragmeter.reports.tiers_view import tier_title
from ragmeter.results.records import EvalResult
from ragmeter.results.store import RunRow, StoredRun
from ragmeter.view.diff import diff_page, sample_changes, sample_regressions
from ragmeter.view.history import headline, history_page, metric_choices
from ragmeter.view.links import href, run_href
from ragmeter.view.registry import PAGE_SIZE, default_columns, filter_runs, registry_page
from ragmeter.view.side import calls_html, reasoning_html, shown_scores
from ragmeter.view.table import nav_entries

__all__ = ["CSP", "CSP_HEADER", "JUDGES_RUNS", "PAGE_SIZE", "broken_note", "compare_page",
           "default_columns", "diff_page", "error_body", "filter_runs", "headline", "history_page",
           "href", "judges_page", "layout", "metric_choices", "registry_page", "run_href",
           "run_page", "sample_changes", "sample_page", "sample_regressions"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'")
CSP_HEADER = CSP + "; frame-ancestors 'none'"  # frame-ancestors only works as a header

#: how many of the latest runs the judges page reads for their cards
JUDGES_RUNS = 50


def layout(title: str, body: str, *, lang: str, active: str, store: str | None,
           note: str = "",
           data: Mapping[str, Any] | None = None, path: str = "/",
           query: Mapping[str, str] | None = None) -> str:
    """The frame of every page: navigation (from the page table), language switch, store line,
    inlined assets. ``active`` names the page whose navigation entry is highlighted."""
    nav = "".join(
        f'<a href="{escape(href(p.route, lang=lang))}"'
        f'{" class=active" if p.name == active else ""}>{escape(p.title_in(lang))}</a>'
        for p in nav_entries())
    other = "en" if lang == "ru" else "ru"
    q = {k: v for k, v in (query or {}).items() if k != "lang"}
    switch = f'<a href="{escape(href(path, **q, lang=other))}" id=lang-switch>{other.upper()}</a>'
    store_line = (f'<span class=store>{t("v_store", lang)}: <code>{escape(store)}</code> · '
                  f'{t("v_readonly", lang)}{" · " + escape(note) if note else ""}</span>'
                  if store is not None else  # an exported page: no local path
                  f'<span class=store>{t("v_exported", lang)}</span>')
    payload = json_for_script(dict(data or {"kind": "view", "samples": []}))
    return (
        f"<!DOCTYPE html>\n<html lang={lang}><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{escape(title)} · ragmeter</title><style>{_asset('report.css')}</style></head>"
        f"<body><nav class=top><b>ragmeter view</b>{nav}{switch}{store_line}</nav>{body}"
        f'<script type="application/json" id="rm-data">{payload}</script>'
        f"<script>{_asset('report.js')}</script><script>{_asset('view.js')}</script>"
        "</body></html>\n")


def error_body(message: str, lang: str, heading: str = "v_not_found") -> str:
    return f"<h1>{t(heading, lang)}</h1><p class=error>{escape(message)}</p>"


def broken_note(broken: Sequence[Exception], lang: str) -> str:
    """One line per run that could not be read (the page shows the others)."""
    return "".join(f"<p class=error data-corrupt>{escape(t('v_corrupt', lang))}: "
                   f"{escape(str(exc))}</p>" for exc in broken)


# ------------------------------------------------------------------------- run / sample
def run_page(run: StoredRun, lang: str, *, source: Any = None, compare: Any = None,
             static: bool = False) -> tuple[str, dict[str, Any]]:
    """The run's report; ``source``: where the explorer reads its shown rows' text and
    details, ``compare``: the decisions' paired test (both from the viewer's store reads);
    ``static``: an exported page (local paths of the config shortened)."""
    sample_href = f"/run/{quote(run.id, safe='')}/sample/{{id}}?lang={lang}"
    from ragmeter.reports.explorer import VIEW_EXPLORER_SAMPLES

    body, data, _ = render_run_body(run, lang, sample_href=sample_href, source=source,
                                    compare=compare, hide_paths=static,
                                    explorer_rows=VIEW_EXPLORER_SAMPLES)
    return body, data


def sample_page(row: RunRow, sample_id: str, sample: Mapping[str, Any],
                scores: Sequence[tuple[str, str, str, Any, Any, Any]], lang: str) -> str:
    """One sample of one run, read alone: question, reference, each target's answer,
    contexts and latency (or the dataset's answer and contexts), and every score."""
    rows = []
    for tier, system, key, value, reason, details in shown_scores(scores):
        shown = (_fmt_value(value) if value is not None else
                 f'<span class=bad-text>{t("unscored", lang)}</span>')
        readable = reasoning_html(details, lang)  # claims with verdicts
        detail = ""
        if details:
            detail = (f"<details><summary>{t('v_raw_details', lang)}</summary><pre>"
                      + escape(json.dumps(dict(details), ensure_ascii=False, indent=1,
                                          default=str)[:20000])
                      + "</pre></details>")
        rows.append(
            f"<tr><td>{escape(tier_title(tier, lang))}</td><td>{escape(system)}"
            f"</td><td><code>{escape(key)}</code></td><td class=num>{shown}</td>"
            f"<td>{escape(str(reason or ''))}</td><td>{readable}{detail}</td></tr>")
    parts = [f"<h1>{t('v_sample', lang)} <code>{escape(sample_id)}</code></h1>",
             f'<p><a href="{escape(run_href(row.id, lang))}">← {t("v_back_run", lang)} '
             f"<code>{escape(row.id)}</code></a> {escape(row.name)}</p>"]
    q = str(sample.get("user_input") or "")
    if q:
        parts.append(f"<h2>{t('question', lang).capitalize()}</h2><p class=question>"
                     f"{escape(q)}</p>")
    if sample.get("reference"):
        parts.append(f"<h3>{t('reference', lang).capitalize()}</h3><p>"
                     f"{escape(str(sample['reference']))}</p>")
    calls = calls_html(sample, lang)
    if calls:
        parts.append(f"<section id=target-calls>{calls}</section>")
        if sample.get("response"):
            parts.append(f"<details><summary>{t('v_dataset_answer', lang)}</summary><p>"
                         f"{escape(str(sample['response']))}</p></details>")
    elif sample.get("response"):
        parts.append(f"<h3>{t('answer', lang).capitalize()}</h3><p>"
                     f"{escape(str(sample['response']))}</p>")
    parts.append(f"<h2>{t('scores', lang).capitalize()}</h2><table id=sample-scores><thead><tr>"
                 f"<th>{t('tier', lang)}</th><th>{t('system', lang)}</th>"
                 f"<th>{t('metric', lang)}</th><th class=num>{t('value', lang)}</th>"
                 f"<th>{t('unscored_reasons', lang)}</th><th>{t('judge_reasons', lang)}</th>"
                 f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    ctxs = [str(c) for c in sample.get("retrieved_contexts") or []]
    if ctxs and not calls:
        parts.append(f"<details open><summary>{t('contexts', lang)} ({len(ctxs)})</summary><ol>"
                     + "".join(f"<li>{escape(c)}</li>" for c in ctxs) + "</ol></details>")
    for key, v in sample.items():
        if key.startswith("retrieved:") and isinstance(v, Mapping):
            ids = [str(i) for i in v.get("ids") or []]
            texts = [*(v.get("contexts") or []), *[None] * len(ids)]
            parts.append(f"<details><summary>{escape(key.split(':', 1)[1])}: "
                         f"{t('hits', lang, n=len(ids))}</summary><ol>" + "".join(
                             f"<li><code>{escape(i)}</code> {escape(str(c)) if c else ''}</li>"
                             for i, c in zip(ids, texts, strict=False)) + "</ol></details>")
    return "".join(parts)


# ------------------------------------------------------------------------- tier comparison
def run_label(run: StoredRun) -> str:
    """Run label: name, date, time, the id's random tail and the tags
    (``support-bot 11-23 01:25 #23168f [nightly]``)."""
    tags = _run_tags(run)
    tag_text = f" [{', '.join(tags)}]" if tags else ""
    return f"{run.name} {run.created_at[5:16].replace('T', ' ')} #{run.id[-6:]}{tag_text}"


def _run_tags(run: StoredRun) -> tuple[str, ...]:
    out: list[str] = []
    for src in (run.meta, run.config):
        raw = src.get("tags") if isinstance(src, Mapping) else None
        if isinstance(raw, str):
            raw = [x.strip() for x in raw.split(",")]
        if isinstance(raw, (list, tuple)):
            out += [str(x) for x in raw if str(x).strip() and str(x) not in out]
    return tuple(out)


def labelled_systems(runs: Sequence[StoredRun], tier: str) -> list[tuple[str, EvalResult]]:
    out: list[tuple[str, EvalResult]] = []
    for run in runs:
        rec = run.tiers.get(tier)
        if rec is None or rec.status != "ok":
            continue
        for res in rec.results:
            out.append((f"{run_label(run)} · {res.name}", res))
    return out


def compare_page(runs: Sequence[StoredRun], tiers: Sequence[str], tier: str,
                 all_rows: Sequence[RunRow], chosen: Sequence[str], lang: str,
                 compare: Any = None) -> str:
    opts = "".join(f'<option value="{escape(x)}"{" selected" if x == tier else ""}>'
                   f"{escape(tier_title(x, lang))}</option>" for x in tiers)
    run_opts = "".join(
        f'<option value="{escape(r.id)}"{" selected" if r.id in chosen else ""}>'
        f"{escape(r.id)} · {escape(r.name)}</option>" for r in all_rows)
    form = (f'<form class=filters method=get action="/compare"><label>{t("tier", lang)}'
            f'<select name=tier id=tier>{opts}</select></label><label>{t("v_runs_label", lang)}'
            f'<select name=run multiple size=4>{run_opts}</select></label><input type=hidden '
            f'name=lang value="{lang}"><button>{t("v_show", lang)}</button></form>')
    parts = [f"<h1>{t('v_compare', lang)}</h1>", form,
             f"<p class=intro>{t('v_compare_intro', lang)}</p>"]
    systems = labelled_systems(runs, tier)
    if not systems:
        return "".join([*parts, f"<p class=note>{t('v_no_runs', lang)}</p>"])
    dec: TierDecision = decide(tier, systems, lang=lang, compare=compare)
    by_system = svg.system_colors(res.name for _, res in systems)
    colors = {label: by_system[res.name] for label, res in systems}  # one colour per system
    parts.append(f"<h2>{escape(tier_title(tier, lang))}</h2><p class=verdict>"
                 f"{escape(dec.verdict(lang))}</p>")
    if dec.systems:
        parts.append(decision_table(dec, lang, results=dict(systems)))
    parts.append(decision_slices_html(dec))
    parts.append(latency_block(dec, lang, results=dict(systems)))
    parts.append(f'<p class="muted test-note">{escape(t("test_note", lang, method=t("method_randomization", lang), n=dec.n_resamples, seed=dec.seed))}</p>')
    charts = decision_charts(dec, [x for x in systems if x[0] in dec.systems], colors, lang)
    parts.append("<div class=charts>" + "".join(f"<figure>{c}</figure>" for c in charts)
                 + "</div>")
    return "".join(parts)


def judges_page(runs: Sequence[StoredRun], lang: str, stat: str = "kappa") -> str:
    """Judge cards of several runs side by side (ranked per metric), then each card in full."""
    from ragmeter.judge_trust.runs import stored_cards
    from ragmeter.reports.judge_card import card_html, judges_table

    full = "".join(f'<h3><a href="{escape(run_href(r.id, lang))}">{escape(r.name)} · '
                   f"<code>{escape(r.id)}</code></a></h3>"
                   + "".join(card_html(c, p, lang) for c, p in stored_cards(r)) for r in runs)
    return (f"<h1>{escape(t('judges', lang))}</h1>"
            + judges_table(runs, lang, stat, run_link=lambda rid: run_href(rid, lang))
            + (f"<section id=judge-card><h2>{escape(t('jc_title', lang))}</h2>{full}</section>"
               if runs else ""))
