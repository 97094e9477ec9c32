"""Self-contained HTML reports: one file per run or per comparison, no external URL.

CSS and JavaScript are inlined from ``reports/assets``; charts are inline SVG from
:mod:`ragmeter.reports.svg`. All user text goes through :func:`html.escape`; the JSON data
block is made safe inside ``<script>`` by :func:`json_for_script` (``<``, ``>``, ``&`` and the
JS line separators as ``\\uXXXX``), so a question such as ``<script>alert(1)</script>`` is
shown, never executed. The page's script marks each drawn chart with ``data-rendered`` and
the ``<body>`` with ``data-rendered="true"`` once it has run (the browser test relies on it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter._version import __version__
from ragmeter.metrics.registry import split_metric_key
from ragmeter.reports import svg
from ragmeter.reports.bands import BANDS, classify, find_band, from_demo_judge
from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.results.store import StoredRun
from ragmeter.tiers.registry import judged_tier_names

MAX_EXPLORER_SAMPLES = 2000
REASON_KEYS = ("reason", "reasons", "explanation", "rationale", "reasoning", "verdict",
               "verdicts", "feedback", "comment", "detail")
GRADE_KEYS = ("grade", "label", "judge_label")


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


DEMO_BADGE = ('<span class="band mid" title="from the weak offline demonstration judge: shows how '
              'ragmeter works, not a measurement">demo judge</span>')


def _band_badge(metric: str, value: float | None, tier: str | None, demo: bool = False) -> str:
    if demo and find_band(metric, tier) is not None:
        return DEMO_BADGE
    band = classify(metric, value, tier)
    if band is None:
        return ""
    b = find_band(metric, tier)
    cls = {"excellent": "ok", "good": "mid", "needs attention": "bad"}[band]
    tip = f"{b.label}: {b.describe()}" if b else ""
    return f'<span class="band {cls}" title="{escape(tip)}">{escape(band)}</span>'


def _parse_key(key: str) -> tuple[str, int | None, str]:
    return split_metric_key(key.replace(" ", ""))


def is_demo(run: StoredRun) -> list[str]:
    """Names of demo judges behind this run's numbers (empty when none)."""
    names = list(run.meta.get("demo_judges") or [])
    for rec in run.tiers.values():
        for res in rec.results:
            if res.meta.get("demo") or res.meta.get("demo_judge"):
                names.append(str(res.meta.get("judge") or res.name))
            for mr in res.results.values():
                sig = mr.signature.as_dict()
                if sig.get("demo") == "yes" or sig.get("judge_demo") == "yes":
                    names.append(sig.get("judge") or res.name)
    return sorted(set(names))


def _reasons_from_details(details: Mapping[str, Any] | None) -> list[str]:
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


# --------------------------------------------------------------------------- charts
def _retrieval_charts(tier: str, results: Sequence[EvalResult]) -> list[str]:
    hit: dict[str, dict[int, float | None]] = {}
    doc: dict[str, dict[int, float | None]] = {}
    ks: set[int] = set()
    for res in results:
        for key, mr in res.results.items():
            name, k, params = _parse_key(key)
            if k is None or name not in ("hit_rate", "hit", "doc_hit"):
                continue
            is_doc = name == "doc_hit" or "level=doc" in params
            if params and not is_doc:
                continue
            (doc if is_doc else hit).setdefault(res.name, {})[k] = mr.aggregate.mean
            ks.add(k)
    charts: list[str] = []
    if not ks:
        return charts
    klist = sorted(ks)
    cats, series = [], {res.name: [] for res in results}  # type: ignore[var-annotated]
    for k in klist:
        for label, table in ((f"hit@{k}", hit), (f"doc_hit@{k}", doc)):
            if any(k in table.get(r.name, {}) for r in results):
                cats.append(label)
                for r in results:
                    series[r.name].append(table.get(r.name, {}).get(k))
    if cats:
        charts.append(svg.bar_chart(cats, series, f"{tier}: hit@k / doc_hit@k per retriever",
                                    ymax=1.0))
    if len(klist) > 1:
        lines: dict[str, list[float | None]] = {}
        for r in results:
            if r.name in hit:
                lines[f"{r.name} hit"] = [hit[r.name].get(k) for k in klist]
            if r.name in doc:
                lines[f"{r.name} doc_hit"] = [doc[r.name].get(k) for k in klist]
        if lines:
            charts.append(svg.line_chart(klist, lines, f"{tier}: hit@k against k", ymax=1.0))
    return charts


def _values(mr: MetricResult) -> list[float]:
    return [float(v) for v in mr.values if not math.isnan(v)]


def _family(key: str) -> str | None:
    try:
        from ragmeter.metrics.registry import parse_metric

        return parse_metric(key).spec.family
    except Exception:
        return None


def _box_charts(tier: str, results: Sequence[EvalResult]) -> list[str]:
    """Box plots of per-sample values: context precision/recall; judge scores; other answer
    metrics (on a 0–1 scale, and separately the metrics on another scale such as BLEU)."""
    charts = []
    ctx_groups: dict[str, list[float]] = {}
    judge_groups: dict[str, list[float]] = {}
    other: dict[str, list[float]] = {}
    wide: dict[str, list[float]] = {}
    multi = len(results) > 1
    for res in results:
        for key, mr in res.results.items():
            name, _, _ = _parse_key(key)
            label = f"{res.name}: {key}" if multi else key
            vals = _values(mr)
            if not vals:
                continue
            if name in ("context_precision", "context_recall"):
                ctx_groups[label] = vals
            elif tier not in judged_tier_names():
                continue
            elif max(vals) > 1.0 or min(vals) < 0.0:
                wide[label] = vals
            elif _family(key) == "judged" or tier == "judge_quality":
                judge_groups[label] = vals
            else:
                other[label] = vals
    if ctx_groups:
        charts.append(svg.box_plot(ctx_groups, f"{tier}: context precision / recall",
                                   ymax=1.0))
    if judge_groups:
        charts.append(svg.box_plot(judge_groups, f"{tier}: judge scores per sample", ymax=1.0))
    if other:
        charts.append(svg.box_plot(other, f"{tier}: answer metrics per sample", ymax=1.0))
    if wide:
        lo = min(min(v) for v in wide.values())
        charts.append(svg.box_plot(wide, f"{tier}: metrics on other scales",
                                   ymin=min(0.0, lo)))
    return charts


def _consistency_chart(tier: str, results: Sequence[EvalResult]) -> list[str]:
    cats: list[str] = []
    for res in results:
        for key in res.results:
            if any(w in key for w in ("consistency", "agreement", "kappa", "alpha")) \
                    and key not in cats:
                cats.append(key)
    if not cats:
        return []
    series = {r.name: [r.results[c].aggregate.mean if c in r.results else None for c in cats]
              for r in results}
    errors = {r.name: [(r.results[c].aggregate.ci_low, r.results[c].aggregate.ci_high)
                       if c in r.results else (None, None) for c in cats] for r in results}
    return [svg.bar_chart(cats, series, f"{tier}: judge consistency", errors=errors)]


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


def tier_charts(tier: str, results: Sequence[EvalResult]) -> list[str]:
    """Every chart whose data exists for this tier."""
    charts = _retrieval_charts(tier, results)
    charts += _box_charts(tier, results)
    charts += _consistency_chart(tier, results)
    for res in results:
        cm = confusion_of(res)
        if cm is not None:
            matrix, labels = cm
            charts.append(svg.heatmap(matrix, labels, labels,
                                      f"{tier}: confusion matrix of {res.name}"))
    return charts


# --------------------------------------------------------------------------- sections
def _metric_table(tier: str, res: EvalResult, demo_names: Sequence[str] = ()) -> str:
    rows = []
    for key, mr in res.results.items():
        a = mr.aggregate
        ci = "–" if a.ci_low is None else f"[{_f(a.ci_low)}, {_f(a.ci_high)}]"
        reasons = ", ".join(f"{escape(str(r))}: {n}" for r, n in
                            sorted(a.unscored_by_reason.items()))
        counts = ", ".join(f"{escape(str(c))}={v}" for c, v in sorted(mr.counts.items()))
        direction = "" if mr.higher_is_better else ' <span class="muted">(lower is better)</span>'
        rows.append(
            f"<tr><td><code>{escape(key)}</code>{direction}</td><td class=num>{_f(a.mean)}</td>"
            f"<td class=num>{ci}</td><td class=num>{a.n}</td><td class=num>{a.n_unscored}</td>"
            f"<td>{reasons}</td><td>{_band_badge(key, a.mean, tier, from_demo_judge(demo_names, mr.signature.as_dict()))}</td><td>{counts}</td>"
            f'<td class="sig"><details><summary>show</summary><code>'
            f"{escape(str(mr.signature))}</code></details></td></tr>")
    return ("<table class=metrics><thead><tr><th>metric</th><th>mean</th><th>95% CI</th>"
            "<th>n</th><th>n_unscored</th><th>unscored reasons</th><th>band</th>"
            "<th>counts</th><th>signature</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def _summary(run: StoredRun) -> str:
    rows = []
    demo_names = is_demo(run)
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                mean = mr.aggregate.mean
                badge = _band_badge(key, mean, tier,
                                    from_demo_judge(demo_names, mr.signature.as_dict()))
                if badge:
                    a = mr.aggregate
                    rows.append(f"<tr><td>{escape(tier)}</td><td>{escape(res.name)}</td>"
                                f"<td><code>{escape(key)}</code></td><td class=num>{_f(mean)}"
                                f"</td><td class=num>[{_f(a.ci_low)}, {_f(a.ci_high)}]</td>"
                                f"<td>{badge}</td></tr>")
    legend = "".join(f"<li><b>{escape(b.label)}</b>: {escape(b.describe())}</li>" for b in BANDS)
    table = ("<p class=muted>No metric of this run has a threshold band.</p>" if not rows else
             "<table><thead><tr><th>tier</th><th>result</th><th>metric</th><th>mean</th>"
             "<th>95% CI</th><th>band</th></tr></thead><tbody>" + "".join(rows)
             + "</tbody></table>")
    return (f"<section id=summary><h2>Summary</h2>{table}<details><summary>Threshold bands"
            f"</summary><ul>{legend}</ul></details></section>")


def _tier_status(run: StoredRun) -> str:
    items = []
    for tier, rec in run.tiers.items():
        cls = {"ok": "ok", "not_run": "mid", "error": "bad"}.get(rec.status, "mid")
        stats = rec.stats or {}
        extra = ""
        if stats.get("llm_calls") or stats.get("cached_calls"):
            extra = (f" · {stats.get('llm_calls', 0)} LLM calls (+{stats.get('cached_calls', 0)}"
                     f" cached), {stats.get('tokens_in', 0) + stats.get('tokens_out', 0)} "
                     f"tokens, ${stats.get('cost', 0):.4f}, {stats.get('errors', 0)} errors")
        reason = f" — {escape(rec.reason)}" if rec.reason else ""
        items.append(f'<li><span class="band {cls}">{escape(rec.status)}</span> '
                     f"<b>{escape(tier)}</b>{reason}{escape(extra)}</li>")
    not_run = [t for t, r in run.tiers.items() if r.status != "ok"]
    head = (f"<p>{len(not_run)} tier(s) not run or failed; each with its reason.</p>"
            if not_run else "")
    return f"<section id=tiers><h2>Tiers</h2>{head}<ul class=tiers>{''.join(items)}</ul></section>"


def _explorer(run: StoredRun) -> tuple[str, list[dict[str, Any]]]:
    order: list[str] = list(run.samples)
    scores: dict[str, list[dict[str, Any]]] = {}
    seen = set(order)
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                for s in mr.records():
                    if s.sample_id not in seen:
                        seen.add(s.sample_id)
                        order.append(s.sample_id)
                    scores.setdefault(s.sample_id, []).append({
                        "where": f"{tier}/{res.name}" if len(rec.results) > 1 else tier,
                        "metric": key, "value": s.value, "reason": s.reason,
                        "judge": _reasons_from_details(s.details)})
    truncated = len(order) > MAX_EXPLORER_SAMPLES
    order = order[:MAX_EXPLORER_SAMPLES]
    rows, data = [], []
    for sid in order:
        sample = run.samples.get(sid, {})
        q = str(sample.get("user_input") or "")
        ctxs = [str(c) for c in sample.get("retrieved_contexts") or []]
        answer = str(sample.get("response") or "")
        ref = str(sample.get("reference") or "")
        sc = scores.get(sid, [])
        unscored = [s for s in sc if s["value"] is None]
        score_html = "".join(
            f'<li class="{"unscored" if s["value"] is None else ""}"><span class=muted>'
            f'{escape(s["where"])}</span> <code>{escape(s["metric"])}</code> = '
            + (f"<b>{_f(s['value'], 3)}</b>" if s["value"] is not None else
               f'<b class=bad-text>unscored</b> ({escape(str(s["reason"]))})')
            + "</li>" for s in sc)
        judge_html = "".join(f"<li><code>{escape(s['metric'])}</code>: {escape(j)}</li>"
                             for s in sc for j in s["judge"])
        ctx_html = "".join(f"<li>{escape(c)}</li>" for c in ctxs)
        found = {k.split(":", 1)[1]: v for k, v in sample.items()
                 if k.startswith("retrieved:") and isinstance(v, Mapping)}
        found_html = "".join(
            f"<details><summary>{escape(name)}: {len(v.get('ids') or [])} hit(s)</summary><ol>"
            + "".join(f"<li><code>{escape(str(i))}</code>"
                      + (f" {escape(str(c))}" if c else "") + "</li>"
                      for i, c in zip(v.get("ids") or [],
                                      [*(v.get("contexts") or []),
                                       *[None] * len(v.get("ids") or [])], strict=False))
            + "</ol></details>" for name, v in found.items())
        gold = sample.get("gold_doc_ids") or sample.get("gold_chunk_ids")
        gold_html = (f'<div class=muted>gold: {escape(", ".join(map(str, gold)))}</div>'
                     if gold else "")
        rows.append(
            f'<tr class="rm-sample" data-unscored="{len(unscored)}" data-id="{escape(sid)}">'
            f"<td><code>{escape(sid)}</code></td><td class=q>{escape(q)}"
            + (f'<div class=muted>reference: {escape(ref)}</div>' if ref else "")
            + "</td><td>"
            + (f"<details><summary>{len(ctxs)} context(s)</summary><ol>{ctx_html}</ol>"
               "</details>" if ctxs else "")
            + found_html + gold_html
            + ("" if ctxs or found_html or gold_html else '<span class=muted>–</span>')
            + f"</td><td>{escape(answer) or '<span class=muted>–</span>'}</td>"
            f"<td><ul class=scores>{score_html}</ul></td>"
            f"<td><ul class=judge>{judge_html}</ul></td></tr>")
        data.append({"id": sid, "question": q, "n_scores": len(sc), "n_unscored": len(unscored)})
    note = (f"<p class=muted>Showing the first {MAX_EXPLORER_SAMPLES} samples.</p>"
            if truncated else "")
    html = (
        "<section id=explorer><h2>Per-sample explorer</h2>" + note
        + '<div class=filterbar><input id="rm-filter" type="search" placeholder="Filter: '
        'text, id, metric, reason…" aria-label="filter samples"> <label><input '
        'id="rm-unscored" type="checkbox"> only samples with unscored values</label> '
        '<span id="rm-shown" class=muted></span></div>'
        '<table id="rm-samples"><thead><tr><th>id</th><th>question</th><th>contexts</th>'
        "<th>answer</th><th>scores</th><th>judge reasons</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table></section>")
    return html, data


def _page(title: str, body: str, data: Mapping[str, Any]) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{_asset('report.css')}</style></head>"
        f"<body>{body}"
        f'<script type="application/json" id="rm-data">{json_for_script(_clean(data))}</script>'
        f"<script>{_asset('report.js')}</script></body></html>\n")


def render_run_html(run: StoredRun) -> str:
    """The HTML report of one run (a string; see :func:`write_run_html`)."""
    demo = is_demo(run)
    parts = [f"<header><h1>{escape(run.name)}</h1><p class=meta>run <code>{escape(run.id)}"
             f"</code> · {escape(run.created_at)} · status {escape(run.status)}"
             f" · git <code>{escape(run.git_commit or '–')}</code> · ragmeter "
             f"{escape(__version__)}</p></header>"]
    if demo:
        parts.append('<div class="banner demo" id="demo-banner"><b>Demo judge.</b> Some numbers '
                     "in this report come from the weak offline demonstration judge ("
                     + escape(", ".join(demo)) + "). They show how ragmeter works; they are "
                     "not a measurement of your system.</div>")
    parts.append(_summary(run))
    parts.append(_tier_status(run))
    for tier, rec in run.tiers.items():
        if rec.status != "ok" or not rec.results:
            continue
        section = [f'<section class=tier id="tier-{escape(tier)}"><h2>{escape(tier)}</h2>']
        charts = tier_charts(tier, rec.results)
        if charts:
            section.append("<div class=charts>" + "".join(
                f"<figure>{c}</figure>" for c in charts) + "</div>")
        for res in rec.results:
            section.append(f"<h3>{escape(res.name)}</h3>{_metric_table(tier, res, is_demo(run))}")
        section.append("</section>")
        parts.append("".join(section))
    explorer, sample_data = _explorer(run)
    parts.append(explorer)
    from ragmeter.secrets import mask_secrets

    cfg = json.dumps(mask_secrets(run.config), ensure_ascii=False, indent=2, default=str)
    parts.append(f"<section id=signature><h2>Signature</h2><p><code>{escape(run.signature)}"
                 f"</code></p><details><summary>Config (secrets masked)</summary><pre>"
                 f"{escape(cfg)}</pre></details></section>")
    data = {"kind": "run", "run_id": run.id, "name": run.name, "demo": demo,
            "tiers": {t: {"status": r.status, "reason": r.reason} for t, r in run.tiers.items()},
            "samples": sample_data}
    return _page(f"ragmeter · {run.name} · {run.id}", "".join(parts), data)


def write_run_html(run: StoredRun, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_run_html(run), encoding="utf-8")
    return out


def render_comparison_html(a: Any, b: Any, rows: Iterable[Any]) -> str:
    """HTML of ``ragmeter compare`` (``a``/``b`` are :class:`~ragmeter.runner.sources.Source`)."""
    rows = list(rows)
    body_rows = []
    diffs: dict[str, list[float | None]] = {"B − A": []}
    errs: dict[str, list[tuple[float | None, float | None]]] = {"B − A": []}
    cats = []
    for r in rows:
        c = r.comparison
        cls = {"regression": "regression", "improvement": "improvement"}.get(r.verdict, "")
        body_rows.append(
            f'<tr class="{cls}"><td>{escape(r.result)}</td><td><code>{escape(c.metric)}</code>'
            f"</td><td class=num>{_f(c.mean_a)}</td><td class=num>{_f(c.mean_b)}</td>"
            f"<td class=num>{c.diff:+.4f}</td><td class=num>[{c.ci_low:+.4f}, {c.ci_high:+.4f}]"
            f"</td><td class=num>{c.p_value:.4f}</td><td class=num>{c.n}</td>"
            f"<td>{escape(r.verdict)}</td></tr>")
        cats.append(f"{r.result}:{c.metric}" if len({x.result for x in rows}) > 1 else c.metric)
        diffs["B − A"].append(None if math.isnan(c.diff) else c.diff)
        errs["B − A"].append((c.ci_low, c.ci_high))
    n_reg = sum(r.verdict == "regression" for r in rows)
    method = rows[0].comparison.method if rows else "-"
    body = (f"<header><h1>Comparison</h1><p class=meta>A = <code>{escape(a.label)}</code> "
            f"({escape(a.run.name)}) · B = <code>{escape(b.label)}</code> ({escape(b.run.name)})"
            f" · paired {escape(method)} test on the samples both scored</p></header>")
    demo = sorted(set(is_demo(a.run)) | set(is_demo(b.run)))
    if demo:
        body += ('<div class="banner demo" id="demo-banner"><b>Demo judge.</b> Numbers come '
                 f"partly from the demonstration judge ({escape(', '.join(demo))}).</div>")
    body += (f'<p class="{"bad-text" if n_reg else ""}">{n_reg} significant regression(s).</p>'
             "<table class=compare><thead><tr><th>result</th><th>metric</th><th>A</th><th>B</th>"
             "<th>B − A</th><th>95% CI of diff</th><th>p</th><th>n</th><th>verdict</th></tr>"
             "</thead><tbody>" + "".join(body_rows) + "</tbody></table>")
    finite = [abs(v) for v in diffs["B − A"] if v is not None]
    if cats and finite:
        top = max(max(finite), 0.05)
        body += ("<div class=charts><figure>" + _diff_chart(cats, diffs["B − A"], errs["B − A"],
                                                            top) + "</figure></div>")
    body += (f"<section id=signature><h2>Signatures</h2><p>A: <code>{escape(a.run.signature)}"
             f"</code></p><p>B: <code>{escape(b.run.signature)}</code></p></section>")
    data = {"kind": "comparison", "a": a.label, "b": b.label, "regressions": n_reg,
            "samples": []}
    return _page(f"ragmeter · compare {a.label} vs {b.label}", body, data)


def _diff_chart(cats: list[str], diffs: list[float | None],
                errs: list[tuple[float | None, float | None]], top: float) -> str:
    """Horizontal-free simple chart: differences drawn as bars around zero."""
    width = max(420, 60 + 60 * len(cats) + 40)
    height = 280
    x0, y0, h = 50.0, 30.0, 200.0
    w = width - x0 - 20
    parts = svg._open("diff", width, height, "B − A per metric (95% CI)")
    svg._y_axis(parts, x0, y0, h, w, -top, top)

    def py(v: float) -> float:
        return y0 + h - h * (max(-top, min(top, v)) + top) / (2 * top)

    slot = w / max(1, len(cats))
    for i, (cat, d, (lo, hi)) in enumerate(zip(cats, diffs, errs, strict=True)):
        cx = x0 + slot * i + slot / 2
        if d is not None:
            color = "#55A868" if d >= 0 else "#C44E52"
            y_top, y_bot = sorted((py(d), py(0.0)))
            parts.append(f'<rect class="rm-bar" x="{cx - 12:.1f}" y="{y_top:.1f}" width="24" '
                         f'height="{max(1.0, y_bot - y_top):.1f}" fill="{color}"><title>'
                         f"{escape(cat)}: {d:+.4f}</title></rect>")
            if lo is not None and hi is not None and not (math.isnan(lo) or math.isnan(hi)):
                parts.append(f'<line x1="{cx:.1f}" y1="{py(lo):.1f}" x2="{cx:.1f}" '
                             f'y2="{py(hi):.1f}" stroke="#222"/>')
        parts.append(f'<text x="{cx:.1f}" y="{y0 + h + 14:.1f}" text-anchor="middle" '
                     f'transform="rotate(15 {cx:.1f} {y0 + h + 14:.1f})">{escape(cat)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def write_comparison_html(a: Any, b: Any, rows: Iterable[Any], path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_comparison_html(a, b, rows), encoding="utf-8")
    return out
