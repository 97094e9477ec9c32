"""The report's sample explorer: one row per sample, worst first, details folded.

Each row shows a sample's question and, per (tier, system), the tier's primary metric as a
coloured cell (unscored cells say so and why); its folded details hold the reference, the
answer, the contexts, every score and the judge's reasons. Shared by the HTML report and the
viewer's run page.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import quote

import numpy as np

from ragmeter.reports import svg
from ragmeter.reports.decision import TierDecision
from ragmeter.reports.i18n import t
from ragmeter.reports.tiers_view import tier_title
from ragmeter.results.records import MetricResult
from ragmeter.results.statistic import is_latency, per_call_name
from ragmeter.results.store import StoredRun

MAX_EXPLORER_SAMPLES = 500
#: rows of the dashboard's run page: each links to its own sample page, so fewer are folded
#: into the page (a run page of 5,000 samples costs 40 % less CPU than with 500 rows)
VIEW_EXPLORER_SAMPLES = 200
REASON_KEYS = ("reason", "reasons", "explanation", "rationale", "reasoning", "verdict",
               "verdicts", "feedback", "comment", "detail")
GRADE_KEYS = ("grade", "label", "judge_label")

#: one score of a sample: tier, system, metric key, value, unscored reason, judge reasons
Score = tuple[str, str, str, float | None, str | None, list[str]]


def fmt_value(x: float | None) -> str:
    """Three significant decimals on the 0–1 scale, fewer for large values (BLEU 21.05)."""
    if x is None or math.isnan(x):
        return "–"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.2f}"


def finite_values(mr: MetricResult) -> list[float]:
    """The scored (non-NaN) per-sample values of a metric."""
    return [float(v) for v in mr.values if not math.isnan(v)]


def reasons_from_details(details: Mapping[str, Any] | None) -> list[str]:
    """The judge's reasons and grades found in a score's details."""
    if not details:
        return []
    out = []
    for key in REASON_KEYS:
        v = details.get(key)
        if isinstance(v, str) and v.strip():
            out.append(v.strip())
        elif isinstance(v, list):
            out.extend(str(x) for x in v[:10] if x not in (None, ""))
    for key in GRADE_KEYS:
        v = details.get(key)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v) != "":
            out.append(f"{key}: {v}")
    return out



def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _heat(v: float | None, hib: bool, unit: bool) -> str:
    if v is None or not unit:
        return ""
    good = v if hib else 1.0 - v
    good = min(1.0, max(0.0, good))
    hue = int(good * 120)  # 0 red → 120 green
    return f' style="background:hsl({hue},70%,88%)"'


@dataclass(frozen=True)
class _Column:
    """One (tier, system) column on the tier's primary metric: its value at each position of
    the explorer's order (NaN: unscored or absent) and whether the sample is in it."""

    tier: str
    system: str
    metric: str
    mr: MetricResult
    values: np.ndarray
    present: np.ndarray
    reasons: Mapping[int, str]   # position → why unscored
    unit: bool  # every value on the 0–1 scale: coloured


class _Positions:
    """Every sample id of a run in the explorer's order — the dataset's first, then any other
    scored item (texts, sessions, log rows) as the metrics meet them — and where each metric's
    samples sit in it (a metric over the dataset in its order: no per-sample lookup)."""

    def __init__(self, run: StoredRun, dataset: Sequence[str]):
        self.order: list[str] = list(dict.fromkeys(dataset))
        self.n_dataset = len(self.order)
        self.pos = {sid: i for i, sid in enumerate(self.order)}
        placed: dict[int, np.ndarray] = {}   # a run's metrics mostly share one id list
        self._at: dict[int, np.ndarray] = {}
        for rec in run.tiers.values():
            for res in rec.results:
                for mr in res.results.values():
                    ids = mr.sample_ids
                    if id(ids) not in placed:
                        placed[id(ids)] = self._place(ids)
                    self._at[id(mr)] = placed[id(ids)]

    def _place(self, ids: Sequence[str]) -> np.ndarray:
        if list(ids) == self.order[:len(ids)]:
            return np.arange(len(ids), dtype=np.intp)
        out = np.empty(len(ids), dtype=np.intp)
        for k, sid in enumerate(ids):
            i = self.pos.get(sid)
            if i is None:
                i = self.pos[sid] = len(self.order)
                self.order.append(sid)
            out[k] = i
        return out

    def at(self, mr: MetricResult) -> np.ndarray:
        """The positions of ``mr``'s samples (one per value)."""
        return self._at[id(mr)]

    def column(self, tier: str, system: str, metric: str, mr: MetricResult) -> _Column:
        n, at = len(self.order), self.at(mr)
        values = np.full(n, np.nan)
        values[at] = mr.values
        present = np.zeros(n, dtype=bool)
        present[at] = True
        scored = mr.values[mr.scored_mask]
        return _Column(tier, system, metric, mr, values, present,
                       {int(at[i]): why for i, why in mr.reasons.items()},
                       bool(scored.size) and bool(np.all((scored >= 0.0) & (scored <= 1.0))))


def _columns(run: StoredRun, decisions: Mapping[str, TierDecision], where: _Positions
             ) -> list[_Column]:
    columns = []
    for tier, dec in decisions.items():
        if dec.primary is None:
            continue
        for res in run.tiers[tier].results:
            mr = res.results.get(dec.primary)
            if mr is not None and mr.aggregate.n + mr.aggregate.n_unscored > 0:
                columns.append(where.column(tier, res.name, dec.primary, mr))
    return columns


class SampleSource:
    """Where the explorer reads the samples' text and the judge's details: a run held in
    memory (the report), or a store read for the shown rows only (the viewer's run page)."""

    def __init__(self, run: StoredRun):
        self.run = run

    def dataset_ids(self) -> list[str]:
        return list(self.run.samples)

    def texts(self, ids: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        return self.run.samples

    #: the folded rows list every score and the judge's reasons (the report); False: they
    #: link to the sample's page for them (the viewer's run page: no judge details read)
    every_score = True

    def details(self, ids: Sequence[str]) -> Mapping[tuple[str, str, str, str], Any] | None:
        """``(tier, system, metric, sample id)`` → details; None: they are in the results."""
        return None


def _scored(run: StoredRun) -> Iterator[tuple[str, str, str, MetricResult]]:
    """Every metric a sample's scores come from, as ``(tier, system, shown name, metric)``
    (a target's latency once per sample: the call's seconds, not each percentile)."""
    for tier, rec in run.tiers.items():
        for res in rec.results:
            latency = is_latency(res)
            for key, mr in res.results.items():
                name = per_call_name(key) if latency else key
                if name is not None:
                    yield tier, res.name, name, mr


def _scores_of(run: StoredRun, where: _Positions, ids: Sequence[str]
               ) -> dict[str, list[Score]]:
    """The scores of the shown samples (a target's latency once per sample: the call's
    seconds, not each percentile)."""
    shown = np.zeros(len(where.order), dtype=bool)
    shown[[where.pos[sid] for sid in ids]] = True
    scores: dict[str, list[Score]] = {sid: [] for sid in ids}
    for tier, system, name, mr in _scored(run):
        at = where.at(mr)
        for i in np.flatnonzero(shown[at]).tolist():
            v = float(mr.values[i])
            det = mr.details[i] if mr.details else None
            scores[where.order[at[i]]].append(
                (tier, system, name, None if v != v else v,
                 mr.reasons.get(i, "unscored") if v != v else None,
                 reasons_from_details(det)))
    return scores


@dataclass(frozen=True)
class _Tally:
    """Per position of the explorer's order: the sample's scores, its unscored ones, and
    whether each tier scored it (counted over every metric, vectorised)."""

    scores: np.ndarray
    unscored: np.ndarray
    tiers: dict[str, np.ndarray]

    @classmethod
    def of(cls, run: StoredRun, where: _Positions) -> _Tally:
        n = len(where.order)
        tally = cls(np.zeros(n, dtype=np.intp), np.zeros(n, dtype=np.intp), {})
        for tier, _, _, mr in _scored(run):
            at = where.at(mr)
            np.add.at(tally.scores, at, 1)
            np.add.at(tally.unscored, at[np.isnan(mr.values)], 1)
            tally.tiers.setdefault(tier, np.zeros(n, dtype=bool))[at] = True
        return tally


def _with_details(scores: Sequence[Score], sid: str,
                  details: Mapping[tuple[str, str, str, str], Any]) -> list[Score]:
    """A sample's scores with the judge's reasons read for it alone."""
    return [(tier, system, key, value, reason,
             reasons_from_details(details.get((tier, system, key, sid))) or js)
            for tier, system, key, value, reason, js in scores]


def _worst_first(where: _Positions, columns: Sequence[_Column]) -> list[int]:
    """The positions of the rows shown (with a value or an unscored mark in a column; every
    sample when there is no column): questions of the dataset first, then other items; within
    each, the lowest mean of the row's 0–1 scores first, rows without one after them (ties in
    the explorer's order; vectorised over the samples)."""
    n = len(where.order)
    total = np.zeros(n)
    count = np.zeros(n)
    kept = np.zeros(n, dtype=bool) if columns else np.ones(n, dtype=bool)
    for col in columns:
        kept |= col.present
        if not col.unit:
            continue
        good = ~np.isnan(col.values)
        total[good] += col.values[good] if col.mr.higher_is_better else 1.0 - col.values[good]
        count += good
    rows = np.flatnonzero(kept)
    mean = np.divide(total[rows], count[rows], out=np.zeros(rows.size), where=count[rows] > 0)
    other = rows >= where.n_dataset
    keys = np.lexsort((mean, count[rows] == 0, other))   # the last key sorts first; stable
    return [int(i) for i in rows[keys]]


def _cells(at: int, columns: Sequence[_Column], lang: str) -> tuple[list[str], set[str]]:
    """The cells of the row at position ``at`` and the tiers that scored its sample."""
    cells, tiers_here = [], set()
    for col in columns:
        tier = escape(col.tier)
        if not col.present[at]:
            cells.append(f'<td class=num data-tier="{tier}"></td>')
            continue
        tiers_here.add(col.tier)
        v = float(col.values[at])
        if math.isnan(v):
            cells.append(f'<td class="num unscored" data-tier="{tier}" '
                         f'title="{escape(str(col.reasons.get(at) or ""))}">'
                         f'{t("unscored", lang)}</td>')
        else:
            heat = _heat(v, col.mr.higher_is_better, col.unit)
            cells.append(f'<td class="num{" heat" if heat else ""}" data-tier="{tier}"'
                         f'{heat}>{fmt_value(v)}</td>')
    return cells, tiers_here


def _row(sid: str, sample: Mapping[str, Any], cells: Sequence[str], tiers_here: set[str],
         scores: Sequence[Score] | int, n_unscored: int, did: str, lang: str,
         sample_href: str | None) -> str:
    """One row and its folded details; ``scores``: the sample's scores, or how many it has
    (listed on its page, linked)."""
    q = str(sample.get("user_input") or "")
    qtype = str(sample.get("type") or "")
    href = escape(sample_href.format(id=quote(sid, safe=""))) if sample_href else ""
    link = f' <a class=drill href="{href}">↗</a>' if sample_href else ""
    if isinstance(scores, int):
        more = (f'<p class=muted><a href="{href}">{escape(t("scores_on_page", lang, n=scores))}'
                "</a></p>" if sample_href else "")
        folded = _sample_details(sample, [], lang, more)
    else:
        folded = _sample_details(sample, scores, lang)
    return (
        f'<tr class="rm-sample" data-id="{escape(sid)}" data-type="{escape(qtype)}" '
        f'data-tiers="{escape(" ".join(sorted(tiers_here)))}" data-unscored="{n_unscored}" '
        f'data-detail="{did}"><td class=q><details><summary><code>{escape(sid)}</code> '
        f"{escape(_clip(q, 160))}"
        + (f' <span class="qtype">{escape(qtype)}</span>' if qtype else "")
        + f"</summary></details>{link}</td>{''.join(cells)}</tr>"
        f'<tr class="rm-detail" id="{did}" hidden><td colspan="{len(cells) + 1}">'
        f"{folded}</td></tr>")


def _filter_bar(types: Sequence[str], tiers: Sequence[str], lang: str, total: int) -> str:
    type_opts = "".join(f'<option value="{escape(x)}">{escape(x)}</option>' for x in types)
    tier_opts = "".join(f'<option value="{escape(x)}">{escape(tier_title(x, lang))}</option>'
                        for x in tiers)
    placeholder = escape(t("filter_placeholder", lang))
    shown = escape(t("shown", lang, n="{n}", total=total))
    return (
        f'<div class=filterbar><input id="rm-filter" type="search" placeholder="'
        f'{placeholder}" aria-label="{placeholder}">'
        f'<label>{t("qtype", lang)} <select id="rm-type"><option value="">{t("all", lang)}'
        f"</option>{type_opts}</select></label>"
        f'<label>{t("tier", lang)} <select id="rm-tier"><option value="">{t("all", lang)}'
        f"</option>{tier_opts}</select></label>"
        f'<label><input id="rm-unscored" type="checkbox"> {t("only_unscored", lang)}</label>'
        f'<span id="rm-shown" class=muted data-template="{shown}"></span></div>')


def explorer(run: StoredRun, decisions: Mapping[str, TierDecision], lang: str,
             sample_href: str | None = None, source: SampleSource | None = None,
             max_rows: int = MAX_EXPLORER_SAMPLES) -> tuple[str, list[dict[str, Any]]]:
    """The pivot: one row per sample, one column per (tier, system) on the tier's primary
    metric; worst rows first; details (contexts, answer, every score, judge reasons) folded.

    ``sample_href`` (a format string with ``{id}``) links each row to a drill-down page;
    ``source``: where the shown rows' text and details are read (default: the run itself);
    ``max_rows``: the worst rows shown (the rest counted in a note)."""
    source = source or SampleSource(run)
    where = _Positions(run, source.dataset_ids())
    columns = _columns(run, decisions, where)
    rows_at = _worst_first(where, columns)
    hidden = len(where.order) - len(rows_at)  # no value nor unscored mark in any column
    total = len(rows_at)
    rows_at = rows_at[:max_rows]
    order = [where.order[i] for i in rows_at]
    texts = source.texts(order)
    all_scores: dict[str, list[Score]] = {}
    tally = None
    if source.every_score:
        details = source.details(order)
        all_scores = _scores_of(run, where, order)
        if details is not None:
            all_scores = {sid: _with_details(sc, sid, details) for sid, sc in all_scores.items()}
    else:
        tally = _Tally.of(run, where)
    types = sorted({str(texts.get(s, {}).get("type")) for s in order
                    if texts.get(s, {}).get("type")})
    head = "".join(
        f'<th class=num data-tier="{escape(c.tier)}" title="{escape(c.tier)} · '
        f'{escape(c.system)} · {escape(c.metric)}">{escape(svg.short(c.system, 16))}'
        f"<div class=muted>{escape(c.metric)}</div></th>" for c in columns)
    rows: list[str] = []
    data: list[dict[str, Any]] = []
    tiers_seen: set[str] = set()
    for at, sid in zip(rows_at, order, strict=True):
        sample = texts.get(sid, {})
        cells, tiers_here = _cells(at, columns, lang)
        if tally is None:
            listed = all_scores.get(sid, [])
            n_scores, n_unscored = len(listed), sum(1 for s in listed if s[3] is None)
            tiers_here |= {s[0] for s in listed}
        else:
            n_scores, n_unscored = int(tally.scores[at]), int(tally.unscored[at])
            tiers_here |= {tier for tier, mask in tally.tiers.items() if mask[at]}
        tiers_seen |= tiers_here
        rows.append(_row(sid, sample, cells, tiers_here,
                         listed if tally is None else n_scores, n_unscored,
                         f"rm-d{len(rows)}", lang, sample_href))
        data.append({"id": sid, "question": str(sample.get("user_input") or ""),
                     "type": str(sample.get("type") or ""), "n_scores": n_scores,
                     "n_unscored": n_unscored})
    note = (f"<p class=muted>{t('truncated', lang, n=max_rows, total=total)}</p>"
            if total > max_rows else "")
    if hidden:
        note += f"<p class=muted id=rm-hidden>{t('explorer_hidden', lang, n=hidden)}</p>"
    html = (
        f"<section id=explorer><h2>{t('explorer', lang)}</h2><p class=intro>"
        f"{t('explorer_intro', lang)}</p>{note}"
        + _filter_bar(types, [x for x in run.tiers if x in tiers_seen], lang, len(order))
        + f'<table id="rm-samples"><thead><tr><th>{t("question", lang)}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>")
    return html, data


def _sample_details(sample: Mapping[str, Any], scores: Sequence[Score], lang: str,
                    more: str = "") -> str:
    """A row's folded details; ``more``: HTML after them (a link to the sample's page)."""
    parts = []
    ref = str(sample.get("reference") or "")
    if ref:
        parts.append(f"<p><b>{t('reference', lang)}:</b> {escape(_clip(ref, 1200))}</p>")
    answer = str(sample.get("response") or "")
    if answer:
        parts.append(f"<p><b>{t('answer', lang)}:</b> {escape(_clip(answer, 2000))}</p>")
    ctxs = [str(c) for c in sample.get("retrieved_contexts") or []]
    if ctxs:
        parts.append(f"<p><b>{t('contexts', lang)}:</b></p><ol>"
                     + "".join(f"<li>{escape(_clip(c, 500))}</li>" for c in ctxs[:3]) + "</ol>")
    gold = sample.get("gold_doc_ids") or sample.get("gold_chunk_ids")
    if gold:
        parts.append(f"<p class=muted>{t('gold', lang)}: "
                     f"{escape(', '.join(map(str, gold)))}</p>")
    for key, v in sample.items():
        if key.startswith("retrieved:") and isinstance(v, Mapping):
            ids = [str(i) for i in v.get("ids") or []][:3]
            texts = [*(v.get("contexts") or []), *[None] * len(ids)]
            parts.append(
                f"<p><b>{escape(key.split(':', 1)[1])}</b> ({t('hits', lang, n=len(v.get('ids') or []))}):</p><ol>"
                + "".join(f"<li><code>{escape(i)}</code> "
                          + (escape(_clip(str(c), 160)) if c else "") + "</li>"
                          for i, c in zip(ids, texts, strict=False)) + "</ol>")
    if scores:
        groups: dict[str, list[str]] = {}
        for tier, system, key, value, reason, _ in scores:
            where = f"{tier} · {system}"
            cell = (f"<code>{escape(key)}</code>=" + (
                fmt_value(value) if value is not None else
                f'<span class=bad-text>{t("unscored", lang)}</span> ({escape(str(reason))})'))
            groups.setdefault(where, []).append(cell)
        parts.append(f"<p><b>{t('scores', lang)}:</b></p><ul class=scores>"
                     + "".join(f"<li><span class=muted>{escape(w)}</span>: {', '.join(c)}</li>"
                               for w, c in groups.items()) + "</ul>")
    judge = [(key, j) for _, _, key, _, _, js in scores for j in js]
    if judge:
        parts.append(f"<p><b>{t('judge_reasons', lang)}:</b></p><ul class=judge>"
                     + "".join(f"<li><code>{escape(k)}</code>: {escape(_clip(j, 1000))}</li>"
                               for k, j in judge) + "</ul>")
    return "<div class=detail>" + "".join(parts) + more + "</div>"

