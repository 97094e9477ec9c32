"""Side by side: one question across two or more runs — each run's answer, its contexts (gold
ones marked) and its scores with the judge's reasoning: claims with their verdicts, readable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ragmeter.reports.html import _fmt_value, _reasons_from_details
from ragmeter.reports.i18n import t
from ragmeter.results.statistic import LATENCY_METRICS, per_call_name
from ragmeter.results.store import RunRow
from ragmeter.results.target_calls import target_calls
from ragmeter.view.links import href, run_href, sample_href, tags_html

#: claim lists and the verdict checks on them (``details`` of the judged metrics)
CLAIM_SIDES = (("answer_claims", "answer", ("answer_in_context", "answer_in_reference")),
               ("reference_claims", "reference", ("reference_in_answer",
                                                  "reference_in_context")))


@dataclass
class SideColumn:
    """One run's view of the sample; ``target``: one target of the run (its own calls and
    scores), so an A/B of two targets in one run shows as two columns."""

    row: RunRow
    sample: dict[str, Any]
    scores: list[tuple[str, str, str, Any, Any, Any]] = field(default_factory=list)
    error: str | None = None
    target: str | None = None


def of_target(system: str, target: str) -> bool:
    """Whether a result (system) belongs to a target: ``bot``, ``bot:latency``, ``ux:bot``."""
    return system == target or system.startswith(target + ":") or system.endswith(":" + target)


def columns_of(row: RunRow, sample: dict[str, Any],
               scores: list[tuple[str, str, str, Any, Any, Any]]) -> list[SideColumn]:
    """One column per target of the run (each with its own calls and scores), or one column
    for a run without targets."""
    names = list(dict.fromkeys(c.target for c in target_calls(sample)))
    if not names:
        return [SideColumn(row, sample, scores)]
    return [SideColumn(row, sample, [x for x in scores if of_target(x[1], name)], target=name)
            for name in names]


def shown_scores(scores: Sequence[tuple[str, str, str, Any, Any, Any]]
                 ) -> list[tuple[str, str, str, Any, Any, Any]]:
    """A sample's scores as shown: a target's latency once (the call's seconds and time to
    first token), not once per percentile."""
    out = []
    for tier, system, metric, value, reason, details in scores:
        if metric in LATENCY_METRICS:
            name = per_call_name(metric)
            if name is None:
                continue
            metric = name
        out.append((tier, system, metric, value, reason, details))
    return out


def calls_html(sample: Mapping[str, Any], lang: str, target: str | None = None) -> str:
    """Each target call of the sample (or of one target): the target's answer, the contexts
    it returned (ids with "text not returned" when it returned ids alone; gold marked) and
    the call's latency, labelled with the target's name."""
    parts = []
    for call in target_calls(sample, target):
        head = (f'<h4 class=target-name>{escape(t("target", lang))} <b>{escape(call.target)}'
                f"</b> · <code>{escape(call.entry)}</code></h4>")
        timing = " · ".join(x for x in (
            f"{t('latency', lang)} {call.latency_s:.3f} {t('unit_s', lang)}"
            if call.latency_s is not None else "",
            f"ttft {call.ttft_s:.3f} {t('unit_s', lang)}" if call.ttft_s is not None else "")
            if x)
        body = []
        if call.error:
            body.append(f"<p class=error>{escape(call.error)}</p>")
        if call.answer is not None:
            body.append(f"<p class=answer>{escape(call.answer)}</p>")
        if call.contexts or call.ids:
            flags = gold_flags(sample, call.ids, call.contexts or [])
            items = []
            for i, gold in enumerate(flags):
                rid = f"<code>{escape(call.ids[i])}</code> " if i < len(call.ids) else ""
                text = (escape(call.contexts[i]) if call.contexts and i < len(call.contexts)
                        else f'<span class=muted>({escape(t("v_text_not_returned", lang))})'
                             "</span>")
                mark = f"<b class=gold-mark>★ {t('v_gold', lang)}</b> " if gold else ""
                items.append(f"<li{' class=gold' if gold else ''}>{mark}{rid}{text}</li>")
            body.append(f"<h5>{t('contexts', lang)} ({len(flags)}, {t('v_gold', lang)}: "
                        f"{sum(flags)})</h5><ol class=contexts>{''.join(items)}</ol>")
        elif call.answer is not None:
            body.append(f"<p class=muted>{t('v_no_contexts', lang)}</p>")
        if timing:
            body.append(f"<p class=latency>{escape(timing)}</p>")
        parts.append(f'<div class=target-call data-target="{escape(call.target)}" '
                     f'data-entry="{escape(call.entry)}">{head}{"".join(body)}</div>')
    return "".join(parts)


def gold_flags(sample: Mapping[str, Any], ids: Sequence[Any], texts: Sequence[Any]
               ) -> list[bool]:
    """Which retrieved contexts are gold: their id is a gold document/chunk id (or has a
    positive grade), or their text is one of the reference contexts."""
    gold_ids = {str(x) for key in ("gold_doc_ids", "gold_chunk_ids")
                for x in sample.get(key) or []}
    gold_ids |= {str(k) for k, g in (sample.get("gold_grades") or {}).items() if g and g > 0}
    ref_texts = {str(x).strip() for x in sample.get("reference_contexts") or []}
    n = max(len(ids), len(texts))
    out = []
    for i in range(n):
        rid = str(ids[i]) if i < len(ids) and ids[i] is not None else None
        text = str(texts[i]).strip() if i < len(texts) and texts[i] is not None else None
        out.append(bool((rid and rid in gold_ids) or (text and text in ref_texts)))
    return out


def contexts_html(sample: Mapping[str, Any], lang: str) -> str:
    """The retrieved contexts (and each retriever's hits), gold ones marked."""
    lists: list[tuple[str, list[Any], list[Any]]] = []
    if sample.get("retrieved_contexts") or sample.get("retrieved_ids"):
        lists.append(("", list(sample.get("retrieved_ids") or []),
                      list(sample.get("retrieved_contexts") or [])))
    for key, v in sample.items():
        if key.startswith("retrieved:") and isinstance(v, Mapping):
            lists.append((key.split(":", 1)[1], list(v.get("ids") or []),
                          list(v.get("contexts") or [])))
    if not lists:
        return f"<p class=muted>{t('v_no_contexts', lang)}</p>"
    out = []
    for name, ids, texts in lists:
        flags = gold_flags(sample, ids, texts)
        items = []
        for i, gold in enumerate(flags):
            rid = f"<code>{escape(str(ids[i]))}</code> " if i < len(ids) else ""
            text = escape(str(texts[i])) if i < len(texts) and texts[i] else ""
            mark = f"<b class=gold-mark>★ {t('v_gold', lang)}</b> " if gold else ""
            items.append(f"<li{' class=gold' if gold else ''}>{mark}{rid}{text}</li>")
        n_gold = sum(flags)
        title = (f"{escape(name)}: " if name else "") + t("contexts", lang)
        out.append(f"<h4>{title} ({len(flags)}, {t('v_gold', lang)}: {n_gold})</h4>"
                   f"<ol class=contexts>{''.join(items)}</ol>")
    return "".join(out)


def _mark(v: Any, lang: str) -> str:
    if v is None:
        return "<td class=muted>–</td>"
    ok = bool(v)
    return f"<td class={'yes' if ok else 'no'}>{'✓' if ok else '✗'} {t('yes' if ok else 'no', lang)}</td>"


def _at(values: Any, i: int) -> Any:
    return values[i] if isinstance(values, list) and i < len(values) else None


def reasoning_html(details: Mapping[str, Any] | None, lang: str) -> str:
    """The judge's reasoning: each claim with its verdicts and the judge's reason; other
    reasons as a list; anything else stays out of sight."""
    if not details:
        return ""
    parts = []
    verdicts = details.get("verdicts") or {}
    reasons = details.get("verdict_reasons") or {}
    for key, side, checks in CLAIM_SIDES:
        claims = details.get(key)
        if not isinstance(claims, list) or not claims:
            continue
        present = [c for c in checks if c in verdicts]
        head = "".join(f"<th>{escape(t('v_' + c, lang))}</th>" for c in present)
        rows = []
        for i, claim in enumerate(claims):
            cells = "".join(_mark(_at(verdicts.get(c), i), lang) for c in present)
            reason = _at(reasons.get(side), i) or ""
            rows.append(f"<tr><td>{escape(str(claim))}</td>{cells}<td>{escape(str(reason))}"
                        "</td></tr>")
        parts.append(f"<table class=claims><thead><tr><th>{t('v_claims_' + side, lang)}</th>"
                     f"{head}<th>{t('v_judge_reason', lang)}</th></tr></thead><tbody>"
                     f"{''.join(rows)}</tbody></table>")
    if not parts:
        texts = _reasons_from_details(details)
        if texts:
            parts.append("<ul class=judge>" + "".join(f"<li>{escape(x)}</li>" for x in texts)
                         + "</ul>")
    return "".join(parts)


def column_html(col: SideColumn, sample_id: str, lang: str) -> str:
    r = col.row
    who = (f' · {escape(t("target", lang))} <b class=target-name>{escape(col.target)}</b>'
           if col.target else "")
    head = (f'<h3><a href="{escape(run_href(r.id, lang))}">{escape(r.name)}</a>{who} '
            f"{tags_html(r.tags)}<div class=muted><code>{escape(r.id)}</code> · "
            f"{escape(r.created_at[:16].replace('T', ' '))}</div></h3>")
    if col.error:
        return f"<section class=side-col>{head}<p class=error>{escape(col.error)}</p></section>"
    if not col.sample and not col.scores:
        return (f"<section class=side-col>{head}<p class=note>"
                f"{t('v_no_sample_in_run', lang)}</p></section>")
    s = col.sample
    if target_calls(s, col.target):
        answer, contexts = calls_html(s, lang, col.target), ""
    else:
        answer = (f"<h4>{t('answer', lang).capitalize()}</h4><p class=answer>"
                  f"{escape(str(s.get('response') or '–'))}</p>")
        contexts = contexts_html(s, lang)
    scores = []
    for tier, system, metric, value, reason, details in shown_scores(col.scores):
        shown = (_fmt_value(value) if value is not None else
                 f'<span class=bad-text>{t("unscored", lang)}</span>')
        why = reasoning_html(details, lang)
        scores.append(f"<tr><td>{escape(tier)} · {escape(system)}</td><td><code>"
                      f"{escape(metric)}</code></td><td class=num>{shown}</td><td>"
                      f"{escape(str(reason or ''))}{why}</td></tr>")
    table = (f"<table class=side-scores><thead><tr><th>{t('system', lang)}</th>"
             f"<th>{t('metric', lang)}</th><th class=num>{t('value', lang)}</th>"
             f"<th>{t('v_reasoning', lang)}</th></tr></thead><tbody>{''.join(scores)}</tbody>"
             "</table>" if scores else "")
    link = (f'<p><a href="{escape(sample_href(r.id, sample_id, lang))}">'
            f"{t('v_sample', lang)} →</a></p>")
    target = f' data-target="{escape(col.target)}"' if col.target else ""
    return (f'<section class=side-col data-run="{escape(r.id)}"{target}>{head}{answer}'
            f"{contexts}<h4>{t('scores', lang).capitalize()}</h4>{table}{link}"
            "</section>")


def side_page(columns: Sequence[SideColumn], sample_id: str, all_rows: Sequence[RunRow],
              sample_choices: Sequence[str], lang: str) -> str:
    chosen = {c.row.id for c in columns}
    run_opts = "".join(f'<option value="{escape(r.id)}"{" selected" if r.id in chosen else ""}>'
                       f"{escape(r.id)} · {escape(r.name)}</option>" for r in all_rows[:500])
    options = "".join(f'<option value="{escape(x)}">' for x in sample_choices)
    form = (f'<form class=filters method=get action="/side"><label>{t("v_runs_label", lang)}'
            f"<select name=run multiple size=4>{run_opts}</select></label><label>"
            f'{t("v_sample", lang)}<input name=sample list=sample-ids value="{escape(sample_id)}">'
            f"<datalist id=sample-ids>{options}</datalist></label><input type=hidden "
            f'name=lang value="{lang}"><button>{t("v_show", lang)}</button></form>')
    parts = [f"<h1>{t('v_side', lang)}</h1>", form,
             f"<p class=intro>{t('v_side_intro', lang)}</p>"]
    if len(columns) < 2:
        return "".join([*parts, f"<p class=note>{t('v_pick_two_side', lang)}</p>"])
    first = next((c.sample for c in columns if c.sample), {})
    q = str(first.get("user_input") or "")
    parts.append(f"<h2>{t('question', lang).capitalize()} <code>{escape(sample_id)}</code></h2>"
                 f"<p class=question>{escape(q)}</p>")
    if first.get("reference"):
        parts.append(f"<h3>{t('reference', lang).capitalize()}</h3><p>"
                     f"{escape(str(first['reference']))}</p>")
    parts.append("<div class=side>" + "".join(column_html(c, sample_id, lang) for c in columns)
                 + "</div>")
    if columns[0].row.id != columns[1].row.id:
        diff = href("/diff", a=columns[0].row.id, b=columns[1].row.id, lang=lang)
        parts.append(f'<p><a href="{escape(diff)}">{t("v_diff", lang)} →</a></p>')
    return "".join(parts)
