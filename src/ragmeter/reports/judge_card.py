"""Judge cards in the reports: the card stored with a run, as HTML and as Markdown.

A card (:mod:`ragmeter.judge_trust.card`) is stored with a run as its ``judge_trust`` tier
(:mod:`ragmeter.judge_trust.runs`); the HTML report and ``ragmeter view`` show it through
:func:`card_section`, the Markdown summary through :func:`card_markdown`, and the viewer's
judges page compares the cards of several runs with :func:`judges_table`. Per judged metric:
n, accuracy, κ, Spearman ρ, MAE, TPR/TNR, the direction of bias and AUC, each with its 95 %
bootstrap CI; beside the raw judge mean, the bias-corrected (prediction-powered) estimate
when the run holds one. All text comes from :mod:`ragmeter.reports.i18n`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragmeter.judge_trust.card import JudgeCard, MetricCard
from ragmeter.judge_trust.runs import stored_cards
from ragmeter.reports.i18n import t

#: the statistics of a card's table, in order (``bias`` is shown with its direction)
CARD_COLUMNS = ("accuracy", "kappa", "spearman", "mae", "tpr", "tnr", "bias", "auc")


def _f(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f"[{_f(lo)}, {_f(hi)}]"


def _clip_note(p: Mapping[str, Any], lang: str) -> str:
    """'' or the note that the interval was cut to the metric's range."""
    rng = p.get("clipped_to")
    return t("jc_clipped", lang, lo=_f(rng[0], 0), hi=_f(rng[1], 0)) if rng else ""


def _scale(m: MetricCard, lang: str) -> str:
    return t(f"jc_scale_{m.scale}", lang) if m.scale in ("binary", "ordinal", "continuous") \
        else m.scale


def _cell(m: MetricCard, stat: str, lang: str) -> str:
    e = m.stats.get(stat)
    if e is None:
        return "<td class=num>–</td>"
    ci = _ci(e.ci_low, e.ci_high)
    extra = ""
    if stat == "bias":
        extra = f" <span class=bias>{escape(t('jc_bias_' + m.bias_direction.replace(' ', '_'), lang))}</span>"
    elif stat == "kappa":
        extra = f" <span class=muted>({escape(t('jc_kappa_' + m.kappa_kind, lang))})</span>"
    return (f"<td class=num>{_f(e.value)}{extra}"
            + (f"<br><span class=ci>{ci}</span>" if ci else "") + "</td>")


def _estimator_note(p: Mapping[str, Any], lang: str) -> str:
    """``ppi++ · ESS 143``: which estimator made the estimate and its effective labels."""
    ess = p.get("ess")
    word = "эфф. меток" if lang == "ru" else "effective labels"
    return f"{p['estimator']}" + (f" · {ess:.0f} {word}" if isinstance(ess, (int, float))
                                   else "")


def _ppi_rows(card: JudgeCard, ppi: Mapping[str, Any], lang: str) -> str:
    rows = []
    for metric, p in sorted(ppi.items()):
        rows.append(f"<tr><td><code>{escape(metric)}</code></td>"
                    f"<td class=num>{_f(p.get('judge_mean'))}</td>"
                    f"<td class=num><b>{_f(p.get('estimate'))}</b><br><span class=ci>"
                    f"{_ci(p.get('ci_low'), p.get('ci_high'))}</span>"
                    + (f"<br><span class=muted>{escape(_clip_note(p, lang))}</span>"
                       if p.get("clipped_to") else "")
                    + (f"<br><span class=muted>{escape(_estimator_note(p, lang))}</span>"
                       if p.get("estimator") else "") + "</td>"
                    f"<td class=num>{_f(p.get('correction'), 3)}</td>"
                    f"<td class=num>{p.get('n_labelled', '–')} / {p.get('n_all', '–')}</td></tr>")
    if not rows:
        return ""
    return (f"<h4>{escape(t('jc_ppi_title', lang))}</h4><p class=intro>"
            f"{escape(t('jc_ppi_intro', lang))}</p><table class=judge-ppi><thead><tr>"
            f"<th>{t('metric', lang)}</th><th>{escape(t('jc_raw_mean', lang))}</th>"
            f"<th>{escape(t('jc_ppi_estimate', lang))}</th>"
            f"<th>{escape(t('jc_correction', lang))}</th>"
            f"<th>{escape(t('jc_labelled', lang))}</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


#: the per-slice table's words (kept here: only this table uses them)
_SLICE_TEXT = {
    "en": {"title": "Bias-corrected estimates by {by}", "slice": "slice", "n": "n",
           "labels": "labels", "withheld": "withheld",
           "intro": "Per slice: the judge's mean beside the prediction-powered estimate from "
                    "the human labels in the slice, with its 95% CI. Cells with fewer than "
                    "{min_n} judge values or {min_labels} labels are withheld; their n is "
                    "shown."},
    "ru": {"title": "Оценки с поправкой на смещение по {by}", "slice": "срез", "n": "n",
           "labels": "метки", "withheld": "скрыто",
           "intro": "По срезам: среднее судьи рядом с оценкой с поправкой (prediction-powered) "
                    "по человеческим меткам среза, с 95% ДИ. Ячейки, где меньше {min_n} "
                    "оценок судьи или {min_labels} меток, скрыты; их n показано."},
}


def slice_rows(card: JudgeCard) -> list[dict[str, Any]]:
    """The card's per-slice estimates (``ragmeter judge card --by``), as rows."""
    table = card.meta.get("ppi_by_slice") if card.meta else None
    return list(table.get("rows") or []) if isinstance(table, Mapping) else []


def _slice_html(card: JudgeCard, lang: str) -> str:
    rows = slice_rows(card)
    if not rows:
        return ""
    table = card.meta["ppi_by_slice"]
    w = _SLICE_TEXT["ru" if lang == "ru" else "en"]
    body = []
    for r in rows:
        if r.get("withheld"):
            est = raw = f"<span class=muted>{escape(w['withheld'])}</span>"
            corr = "–"
        else:
            raw = _f(r.get("judge_mean"))
            est = (f"<b>{_f(r.get('estimate'))}</b><br><span class=ci>"
                   f"{_ci(r.get('ci_low'), r.get('ci_high'))}</span>")
            corr = _f(r.get("correction"))
        body.append(f"<tr><td><code>{escape(str(r['metric']))}</code></td>"
                    f"<td>{escape(str(r['slice']))}</td><td class=num>{r.get('n', '–')}</td>"
                    f"<td class=num>{r.get('n_labelled', '–')}</td><td class=num>{raw}</td>"
                    f"<td class=num>{est}</td><td class=num>{corr}</td></tr>")
    by = ", ".join(str(b) for b in table.get("by", []))
    intro = w["intro"].format(min_n=table.get("min_n"), min_labels=table.get("min_labels"))
    return (f"<h4>{escape(w['title'].format(by=by))}</h4><p class=intro>{escape(intro)}</p>"
            f"<table class=judge-ppi-slices><thead><tr><th>{t('metric', lang)}</th>"
            f"<th>{escape(w['slice'])}</th><th>n</th><th>{escape(w['labels'])}</th>"
            f"<th>{escape(t('jc_raw_mean', lang))}</th>"
            f"<th>{escape(t('jc_ppi_estimate', lang))}</th>"
            f"<th>{escape(t('jc_correction', lang))}</th></tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


def _slice_markdown(card: JudgeCard, lang: str) -> list[str]:
    from ragmeter.reports.markdown import md_code, md_escape

    rows = slice_rows(card)
    if not rows:
        return []
    table = card.meta["ppi_by_slice"]
    w = _SLICE_TEXT["ru" if lang == "ru" else "en"]
    lines = ["", f"**{md_escape(w['title'].format(by=', '.join(table.get('by', []))))}**", "",
             f"| {t('metric', lang)} | {w['slice']} | n | {w['labels']} | "
             f"{t('jc_raw_mean', lang)} | {t('jc_ppi_estimate', lang)} |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        if r.get("withheld"):
            raw = est = w["withheld"]
        else:
            raw = _f(r.get("judge_mean"))
            est = f"{_f(r.get('estimate'))} {_ci(r.get('ci_low'), r.get('ci_high'))}"
        lines.append(f"| {md_code(str(r['metric']))} | {md_escape(str(r['slice']))} | "
                     f"{r.get('n')} | {r.get('n_labelled')} | {raw} | {est} |")
    return lines


def _probe_rows(card: JudgeCard) -> str:
    """The card's bias probes (``ragmeter judge bench --probes``): effect with its CI."""
    report = card.meta.get("probes") if card.meta else None
    if not report or not report.get("results"):
        return ""
    rows = []
    for r in report["results"]:
        cls = ' class="biased"' if r.get("biased") else ""
        rows.append(f"<tr{cls}><td><code>{escape(str(r['probe']))}</code></td>"
                    f"<td class=num>{_f(r.get('effect'))} {_ci(r.get('ci_low'), r.get('ci_high'))}"
                    f"</td><td class=num>{r.get('n', '')}</td><td class=num>"
                    f"{_f(r.get('p_value'), 4)}</td><td>{'yes' if r.get('biased') else 'no'}"
                    f"</td><td>{escape(str(r.get('note') or ''))}</td></tr>")
    warns = "".join(f"<p class=note>{escape(str(w))}</p>" for w in report.get("warnings", []))
    return ("<h4>bias probes (variant − original, 0–1 scale)</h4><table class=probes><thead>"
            "<tr><th>probe</th><th>effect [95% CI]</th><th>n</th><th>p</th><th>bias?</th>"
            "<th>note</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>" + warns)


def card_html(card: JudgeCard, ppi: Mapping[str, Any], lang: str) -> str:
    """One card: its signature, a table per judged metric and the bias-corrected estimates."""
    head = "".join(f"<th>{escape(t('jc_' + c, lang))}</th>" for c in CARD_COLUMNS)
    rows = []
    for m in card.metrics.values():
        rows.append(f"<tr><td><code>{escape(m.metric)}</code></td><td>{escape(_scale(m, lang))}"
                    f"</td><td class=num>{m.n}"
                    + (f" <span class=muted>(+{m.n_unscored} {escape(t('jc_unscored', lang))})"
                       "</span>" if m.n_unscored else "")
                    + "</td>" + "".join(_cell(m, c, lang) for c in CARD_COLUMNS) + "</tr>")
    demo = (f' <span class="badge demo">{escape(t("jc_demo", lang))}</span>'
            if card.demo else "")
    return (f'<div class=judge-card data-judge="{escape(card.judge)}"><h3>'
            f"{escape(t('jc_judge', lang))}: {escape(card.judge)} · <code>{escape(card.model)}"
            f"</code>{demo}</h3><p class=meta><code>{escape(card.signature)}</code></p>"
            f"<table class=judge-card-table><thead><tr><th>{t('metric', lang)}</th>"
            f"<th>{escape(t('jc_scale', lang))}</th><th>n</th>{head}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + _ppi_rows(card, ppi, lang)
            + _slice_html(card, lang) + _probe_rows(card) + "</div>")


def card_section(run: Any, lang: str) -> str:
    """The report's "Judge card" section ('' when the run holds no card)."""
    cards = stored_cards(run)
    if not cards:
        return ""
    return (f"<section id=judge-card><h2>{escape(t('jc_title', lang))}</h2><p class=intro>"
            f"{escape(t('jc_intro', lang))}</p>"
            + "".join(card_html(c, p, lang) for c, p in cards) + "</section>")


def card_markdown(run: Any, lang: str) -> list[str]:
    """A short Markdown block per card: κ, accuracy, bias direction and the corrected mean."""
    from ragmeter.reports.markdown import md_code, md_escape

    lines: list[str] = []
    for card, ppi in stored_cards(run):
        lines += [f"### {t('jc_title', lang)}: {md_escape(card.judge)} "
                  f"({md_code(card.model)})", "",
                  f"| {t('metric', lang)} | n | {t('jc_accuracy', lang)} | {t('jc_kappa', lang)}"
                  f" | {t('jc_auc', lang)} | {t('jc_bias', lang)} | {t('jc_raw_mean', lang)} | "
                  f"{t('jc_ppi_estimate', lang)} |", "|---|---:|---:|---:|---:|---|---:|---|"]
        for m in card.metrics.values():
            s = m.stats
            p = ppi.get(m.metric) or {}
            corr = (f"{_f(p.get('estimate'))} {_ci(p.get('ci_low'), p.get('ci_high'))}"
                    if p else "–")
            if p.get("clipped_to"):
                corr += f" ({md_escape(_clip_note(p, lang))})"
            raw = _f(p.get("judge_mean")) if p else _f(m.judge_mean)
            lines.append(
                f"| {md_code(m.metric)} | {m.n} | {_f(s['accuracy'].value)} | "
                f"{_f(s['kappa'].value)} | {_f(s['auc'].value)} | "
                f"{md_escape(t('jc_bias_' + m.bias_direction.replace(' ', '_'), lang))} | "
                f"{raw} | {corr} |")
        lines += _slice_markdown(card, lang)
        lines += ["", f"<sub>{md_escape(card.signature)}</sub>", ""]
    return lines


def judges_table(runs: Sequence[Any], lang: str, stat: str = "kappa",
                 run_link: Any = None) -> str:
    """Cards of several runs side by side: per metric, each judge's ``stat`` with CI, ranked
    (the ranking of :func:`ragmeter.judge_trust.card.compare_cards`); a card without
    ``stat`` says n/a. ``run_link(run_id)``: the link of each run id (the viewer's)."""
    from ragmeter.judge_trust.card import compare_cards

    cards: list[JudgeCard] = []
    where: dict[str, str] = {}
    for run in runs:
        for card, _ in stored_cards(run):
            cards.append(card)
            where[card.signature] = run.id
    if not cards:
        return f"<p>{escape(t('jc_none', lang))}</p>"
    rows = compare_cards(cards, stat)

    def value(r: dict[str, Any]) -> str:
        if r.get("missing"):
            return (f'<td class="num nodata" title="{escape(t("jc_no_stat", lang))}">n/a'
                    "</td>")
        return (f"<td class=num>{_f(r['value'])}<br><span class=ci>"
                f"{_ci(r['ci_low'], r['ci_high'])}</span></td>")

    def run_cell(r: dict[str, Any]) -> str:
        rid = where.get(r["signature"], "")
        code = f"<code>{escape(rid)}</code>"
        return f'<a href="{escape(run_link(rid))}">{code}</a>' if run_link and rid else code
    body = "".join(
        f"<tr><td><code>{escape(r['metric'])}</code></td><td class=num>{r['rank']}</td>"
        f"<td>{escape(r['judge'])}</td><td><code>{escape(r['model'])}</code></td>"
        f"{value(r)}<td class=num>{r['n']}</td><td>{run_cell(r)}</td></tr>" for r in rows)
    return (f"<p class=intro>{escape(t('jc_compare_intro', lang, stat=t('jc_' + stat, lang)))}"
            f"</p><table class=judges><thead><tr><th>{t('metric', lang)}</th><th>#</th>"
            f"<th>{escape(t('jc_judge', lang))}</th><th>{escape(t('jc_model', lang))}</th>"
            f"<th>{escape(t('jc_' + stat, lang))}</th><th>n</th><th>{t('run', lang)}</th></tr>"
            f"</thead><tbody>{body}</tbody></table>")


__all__ = ["CARD_COLUMNS", "card_html", "card_markdown", "card_section", "judges_table",
           "slice_rows"]
