"""The diff of two runs: per-sample regressions and improvements, each next to the paired test
of its metric (:mod:`ragmeter.runner.comparing`), then every metric's paired test."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import numpy as np

from ragmeter.reports import svg
from ragmeter.reports.comparison import comparison_body
from ragmeter.reports.html import _fmt_value
from ragmeter.reports.i18n import t
from ragmeter.results.store import RunRow, StoredRun
from ragmeter.view.links import href, run_href, sample_href

#: per-sample rows shown in each direction
CHANGES_SHOWN = 100


def sample_changes(a: StoredRun, b: StoredRun, limit: int = CHANGES_SHOWN
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-sample changes B − A on every shared tier/system/metric, signed in the metric's
    direction: regressions (worst first) and improvements (best first); only samples both
    runs scored. A target's latency is not a per-sample quality: its percentiles are compared
    once, in the latency block, never sample by sample. Vectorised per metric: only the
    ``limit`` largest changes of each metric become rows (ties at the cut by sample id)."""
    from ragmeter.results.statistic import is_latency
    from ragmeter.runner.comparing import pair_results

    # candidates as tuples (sort key, then insertion order for equal keys, then the row)
    worse: list[tuple[Any, ...]] = []
    better: list[tuple[Any, ...]] = []
    shared, seq = _SharedIds(), itertools.count()
    for key, ra, rb in pair_results(a.results(), b.results()):
        if is_latency(ra):
            continue
        for metric, ma in ra.results.items():
            mb = rb.results.get(metric)
            if mb is None:
                continue
            ids, x, y = _aligned(ma, mb, shared)
            sign = 1.0 if ma.higher_is_better else -1.0
            with np.errstate(invalid="ignore"):
                change = (y - x) * sign
            keep = ~np.isnan(change) & (x != y)
            for rows, chosen, toward in ((worse, keep & (change < 0), 1.0),
                                         (better, keep & (change > 0), -1.0)):
                at = np.flatnonzero(chosen)
                if at.size > limit:  # the limit largest |change|; ties by sample id
                    size = np.abs(change[at])
                    cut = np.partition(size, at.size - limit)[at.size - limit]
                    above = at[size > cut]
                    ties = at[size == cut]
                    order = np.argsort(shared.array(ids)[ties], kind="stable")
                    at = np.concatenate([above, ties[order[:limit - above.size]]])
                rows.extend((toward * float(change[i]), ids[i], next(seq), key, metric,
                             float(x[i]), float(y[i]), float(change[i])) for i in at.tolist())
    worse.sort()
    better.sort()
    return ([_row(c) for c in worse[:limit]], [_row(c) for c in better[:limit]])


def _row(c: tuple[Any, ...]) -> dict[str, Any]:
    return {"result": c[3], "metric": c[4], "sample": c[1], "a": c[5], "b": c[6],
            "change": c[7]}


class _SharedIds:
    """What a diff learns once per sample-id list (a run's metrics share one): whether its ids
    are distinct, and the ids as an array (to order ties)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[list[str], bool, np.ndarray | None]] = {}

    def _entry(self, ids: list[str]) -> tuple[list[str], bool, np.ndarray | None]:
        got = self._seen.get(id(ids))
        if got is None or got[0] is not ids:
            got = self._seen[id(ids)] = (ids, len(set(ids)) == len(ids), None)
        return got

    def distinct(self, ids: list[str]) -> bool:
        return self._entry(ids)[1]

    def array(self, ids: list[str]) -> np.ndarray:
        kept, distinct, arr = self._entry(ids)
        if arr is None:
            arr = np.asarray(ids, dtype=object)
            self._seen[id(ids)] = (kept, distinct, arr)
        return arr


def _aligned(ma: Any, mb: Any, shared: _SharedIds) -> tuple[list[str], np.ndarray, np.ndarray]:
    """A's sample ids (each once, its last value, as :meth:`MetricResult.by_id` reads them)
    with A's and B's values (NaN where B lacks the sample)."""
    if ma.sample_ids == mb.sample_ids and shared.distinct(ma.sample_ids):
        return ma.sample_ids, ma.values, mb.values
    va, vb = ma.by_id(), mb.by_id()
    ids = list(va)
    x = np.array([np.nan if v is None else v for v in va.values()], dtype=np.float64)
    y = np.array([np.nan if (v := vb.get(s)) is None else v for s in ids], dtype=np.float64)
    return ids, x, y


def sample_regressions(a: StoredRun, b: StoredRun, limit: int = CHANGES_SHOWN
                       ) -> list[dict[str, Any]]:
    """The regressions of :func:`sample_changes`."""
    return sample_changes(a, b, limit)[0]


def _test_cell(row: Any, lang: str) -> str:
    """The paired test of one metric: Δ of means with CI, p, method."""
    if row is None:
        return "<td></td>"
    c = row.comparison
    if c.n == 0:
        return f"<td class=muted>{escape(t('v_no overlap', lang))}</td>"
    cls = "delta-bad" if c.regression else ("delta-good" if c.significant else "muted")
    return (f'<td class="{cls}" title="{escape(c.method)}, {c.n_resamples} resamples, seed '
            f'{c.seed}">Δ {c.diff:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}] · p={c.p_value:.3g}'
            f" · {escape(t('v_' + row.verdict, lang))}</td>")


def changes_table(rows: Sequence[Mapping[str, Any]], a: StoredRun, b: StoredRun,
                  tests: Mapping[tuple[str, str], Any], lang: str, kind: str,
                  texts: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """One table of per-sample changes (``kind``: regression | improvement); ``texts``: the
    samples' stored text (default: the runs')."""
    texts = texts if texts is not None else {**a.samples, **b.samples}
    trs = []
    for r in rows:
        q = str(texts.get(r["sample"], {}).get("user_input") or "")
        side = href("/side", run=[a.id, b.id], sample=r["sample"], lang=lang)
        cls = "delta-bad" if kind == "regression" else "delta-good"
        trs.append(f'<tr class=sample-{kind} data-sample="{escape(r["sample"])}">'
                   f'<td><a href="{escape(sample_href(b.id, r["sample"], lang))}"><code>'
                   f'{escape(r["sample"])}</code></a> <a href="{escape(side)}" class=side-link>'
                   f'{t("v_side_short", lang)}</a></td>'
                   f"<td>{escape(svg.short(q, 90))}</td><td>{escape(r['result'])}</td>"
                   f"<td><code>{escape(r['metric'])}</code></td><td class=num>"
                   f"{_fmt_value(r['a'])}</td><td class=num>{_fmt_value(r['b'])}</td>"
                   f'<td class="num {cls}">{r["change"]:+.3f}</td>'
                   + _test_cell(tests.get((r["result"], r["metric"])), lang) + "</tr>")
    return (f"<table id=sample-{kind}s><thead><tr><th>id</th>"
            f"<th>{t('question', lang)}</th><th>{t('result', lang)}</th>"
            f"<th>{t('metric', lang)}</th><th class=num>A</th><th class=num>B</th>"
            f"<th class=num>{t('v_delta', lang)}</th><th>{t('v_paired_test', lang)}</th>"
            f"</tr></thead><tbody>{''.join(trs)}</tbody></table>")


def diff_page(a: StoredRun | None, b: StoredRun | None, rows: Sequence[Any],
              changes: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
              all_rows: Sequence[RunRow], lang: str,
              texts: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The diff page; ``texts``: the shown samples' stored text (default: the runs')."""
    if texts is None and a is not None and b is not None:
        texts = {**a.samples, **b.samples}
    def select(name: str, chosen: str | None) -> str:
        return (f"<select name={name} id=diff-{name}>" + "".join(
            f'<option value="{escape(r.id)}"{" selected" if r.id == chosen else ""}>'
            f"{escape(r.id)} · {escape(r.name)}</option>" for r in all_rows) + "</select>")

    form = (f'<form class=filters method=get action="/diff"><label>{t("v_a", lang)}'
            f'{select("a", a.id if a else None)}</label><label>{t("v_b", lang)}'
            f'{select("b", b.id if b else None)}</label><input type=hidden name=lang '
            f'value="{lang}"><button>{t("v_show", lang)}</button></form>')
    parts = [f"<h1>{t('v_diff', lang)}</h1>", form]
    if a is None or b is None:
        return "".join([*parts, f"<p class=note>{t('v_pick_two', lang)}</p>"])
    parts.append(f'<p class=meta>A = <a href="{escape(run_href(a.id, lang))}"><code>'
                 f"{escape(a.id)}</code></a> ({escape(a.name)}) · B = <a href=\""
                 f'{escape(run_href(b.id, lang))}"><code>{escape(b.id)}</code></a> '
                 f"({escape(b.name)}) · <a href=\"{escape(href('/side', run=[a.id, b.id], lang=lang))}"
                 f'">{t("v_side", lang)}</a></p>')

    class _Src:
        def __init__(self, run: StoredRun) -> None:
            self.run, self.label = run, run.id

    tests = {(r.result, r.comparison.metric): r for r in rows}
    worse, better = changes
    for kind, shown, title, empty in (
            ("regression", worse, "v_sample_regressions", "v_no_sample_regressions"),
            ("improvement", better, "v_sample_improvements", "v_no_sample_improvements")):
        parts.append(f"<h2>{t(title, lang)}</h2>")
        parts.append(changes_table(shown, a, b, tests, lang, kind, texts) if shown
                     else f"<p class=note>{t(empty, lang)}</p>")
    parts.append(f"<h2>{t('comparison', lang)}</h2>")
    parts.append(comparison_body(_Src(a), _Src(b), rows, lang))
    return "".join(parts)
