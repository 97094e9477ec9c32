"""Markdown summaries for pull requests: one run, or a comparison of two runs.

User text is escaped for Markdown tables (``|``, newlines, and HTML ``<``/``>`` that GitHub
would render) — a metric or system name cannot break the table or inject HTML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter.reports.bands import classify, from_demo_judge
from ragmeter.reports.decision import TierDecision
from ragmeter.reports.i18n import check_lang, join_names, status_text, t
from ragmeter.reports.tiers_view import tier_title
from ragmeter.results.store import StoredRun

BAND_ICON = {"excellent": "🟢 excellent", "good": "🟡 good", "needs attention": "🔴 needs attention"}


def _slice_sections(dec: Any) -> list[str]:
    """Per-slice rows of the primary metric (and the per-slice tests), when results were
    sliced."""
    from ragmeter.reports.slices import decision_slices, slices_markdown

    out: list[str] = []
    for tb in decision_slices(dec):
        out += [f"_{md_escape(tb.system)}_", "", slices_markdown(tb), ""]
    return out


_MD_PUNCT = re.compile(r"([\\`*_\[\]!~|#])")
_AUTOLINK = re.compile(r"(?i)(://|www\.|@)")


def md_escape(text: object) -> str:
    """Text shown as itself in Markdown (and a GitHub table cell): no link, image, emphasis,
    autolink, HTML or cell break can come out of a name, a question or a message."""
    s = str(text).replace("\r", " ").replace("\n", " ")
    s = _MD_PUNCT.sub(r"\\\1", s)
    s = _AUTOLINK.sub(lambda m: "\\" + m[1] if m[1][0] in ":@" else m[1][:3] + "\\.", s)
    return s.replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: object) -> str:
    """``text`` as an inline code span: a backtick fence longer than any run inside it, and
    ``|`` escaped as a GitHub table requires even there."""
    s = str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _f(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.4f}"


def run_markdown(run: StoredRun, gate_rows: Sequence[Any] | None = None,
                 lang: str | None = None) -> str:
    """A PR-sized summary that leads with the decision: per tier a verdict and a table of
    systems × key metrics (mean, 95% CI, best in bold, † significant gap to the best); then
    tiers not run, gate results, every metric, and the signature."""
    from ragmeter.reports.html import run_lang, tier_decisions
    from ragmeter.reports.judge_card import card_markdown
    from ragmeter.reports.judge_labels import is_demo, is_mock

    lang = check_lang(lang) if lang else run_lang(run)
    lines = [f"## ragmeter: {md_escape(run.name)}", "",
             f"{t('run', lang)} {md_code(run.id)} · {md_escape(run.created_at)} · "
             f"{t('status', lang)}: {md_escape(status_text(run.status, lang))} · git "
             f"{md_code((run.git_commit or '–')[:12])}", ""]
    demo = is_demo(run)
    if demo:
        lines += [f"> ⚠️ {md_escape(t('demo_banner', lang, names=', '.join(demo)))}", ""]
    mock = is_mock(run)
    if mock:
        lines += [f"> ⚠️ {md_escape(t('mock_banner', lang, names=', '.join(mock)))}", ""]
    lines += _decisions_md(tier_decisions(run, lang), lang)
    not_ok = [(x, r) for x, r in run.tiers.items() if r.status != "ok"]
    if not_ok:
        lines += [f"**{t('tiers_not_run_md', lang)}**", ""]
        lines += [f"- {md_code(x)} ({md_escape(t('st_' + r.status, lang))}): "
                  f"{md_escape(r.reason or '')}" for x, r in not_ok]
        lines.append("")
    if gate_rows:
        lines += _gate_md(gate_rows, lang)
    lines += card_markdown(run, lang)
    lines += _all_metrics_md(run, demo, lang)
    lines += [f"<sub>{t('signature', lang).lower()}: {md_code(run.signature)}</sub>", ""]
    return "\n".join(lines)


def _decisions_md(decisions: Mapping[str, TierDecision], lang: str) -> list[str]:
    """Per tier: the verdict and the systems × key metrics table; the test note after them."""
    lines = [f"### {t('decision', lang)}", ""]
    if not decisions:
        lines += [t("no_results", lang), ""]
    n_res = seed = None
    for tier, dec in decisions.items():
        lines += [f"**{md_escape(tier_title(tier, lang))}** ({md_code(tier)}): "
                  f"{md_escape(dec.verdict(lang))}", ""]
        if dec.systems:
            lines += _decision_rows(dec, lang)
        lines += _slice_sections(dec)
        if dec.latency is not None and dec.latency.systems:
            lines += [f"_{md_escape(t('latency_block', lang))}_", ""]
            lines += _decision_rows(dec.latency, lang, block=True, front=dec.front)
            if dec.front:
                lines += [md_escape(t("pareto_note", lang, dims=join_names(
                    list(dec.front_dims), lang))), ""]
        n_res, seed = dec.n_resamples, dec.seed
    if n_res is not None:
        lines += [md_escape(t("test_note", lang, method=t("method_randomization", lang),
                              n=n_res, seed=seed)), ""]
    return lines


def _decision_rows(dec: TierDecision, lang: str, block: bool = False,
                   front: Sequence[str] | None = None) -> list[str]:
    """The systems × metrics table of a decision (``block``: the latency block, each column
    with its unit and direction)."""
    from ragmeter.results.statistic import UNITS

    def head(m: str) -> str:
        if not block:
            return md_code(m)
        lower = any(not dec.cells[(s, m)].higher_is_better for s in dec.systems)
        unit = UNITS.get(m)
        return (f"{md_code(m)} ({t('unit_' + unit, lang) + ', ' if unit else ''}"
                f"{t('lower_better' if lower else 'higher_better', lang)})")
    lines = ["| " + t("system", lang) + " | " + " | ".join(head(m) for m in dec.metrics)
             + " |", "|---|" + "---:|" * len(dec.metrics)]
    multi = sum(1 for s in dec.systems
                if any(dec.cells[(s, m)].scored for m in dec.metrics)) > 1
    on_front = set(front if front is not None else dec.front)
    for s in dec.systems:
        cells = [_decision_cell(dec.cells[(s, m)], multi, lang, m) for m in dec.metrics]
        mark = " ◆" if s in on_front else ""
        lines.append(f"| {md_escape(s)}{mark} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _decision_cell(c: Any, multi: bool, lang: str, metric: str = "") -> str:
    from ragmeter.results.statistic import COST_METRICS

    cost = metric in COST_METRICS
    unknown = f" ({t('cost_unknown', lang)}: {c.n_unscored})" if cost else ""
    if not c.scored:
        return f"_{t('no_scored', lang)}_{unknown}"
    if cost:   # a cost is small: its significant digits, not three decimals
        v = f"{c.mean:.4g}"
        ci = "" if c.ci_low is None else f" [{c.ci_low:.4g}, {c.ci_high:.4g}]"
    else:
        v = f"{c.mean:.3f}" if abs(c.mean or 0) < 10 else f"{c.mean:.2f}"
        ci = "" if c.ci_low is None else f" [{c.ci_low:.3f}, {c.ci_high:.3f}]"
    if c.best and multi:
        v = f"**{v}**"
    if c.significant:
        v += " †"
    elif not c.paired:
        v += " ∅"
    card = ""
    if c.card is not None:  # a judged metric: ◆ backed by a judge card, ◇ advisory
        card = (f" ◆ [{c.card.ci_low:.3f}, {c.card.ci_high:.3f}]" if c.card.backed
                else " ◇")
    return f"{v}{ci} n={c.n}{unknown}{card}"


def _gate_md(gate_rows: Sequence[Any], lang: str) -> list[str]:
    failed = [r for r in gate_rows if not r.passed]
    verdict = f"❌ {t('gate_failed', lang)}" if failed else f"✅ {t('gate_passed', lang)}"
    lines = [f"**{t('gate', lang)}: {verdict}** ("
             f"{t('checks_passed', lang, ok=len(gate_rows) - len(failed), n=len(gate_rows))})",
             ""]
    lines += [f"| {t('result', lang)} | {t('metric', lang)} | {t('value', lang)} | "
              f"{t('threshold', lang)} | {t('verdict', lang)} | {t('message', lang)} |",
              "|---|---|---:|---|---|---|"]
    lines += [f"| {md_escape(r.target)} | {md_code(r.metric)}{_backing_md(r, lang)} | "
              f"{_f(r.value)} | {md_escape(r.threshold)} | {'✅' if r.passed else '❌'} "
              f"{t('check_pass' if r.passed else 'check_fail', lang)} | "
              f"{md_escape(r.message)} |" for r in gate_rows]
    lines.append("")
    return lines


def _backing_md(r: Any, lang: str) -> str:
    """After a judged gate's metric: ◆ card-backed or ◇ advisory."""
    backing = getattr(r, "backing", "")
    if backing == "card":
        return f" ◆ {t('gate_card', lang)}"
    if backing in ("advisory", "card required"):
        return f" ◇ {t('gate_advisory', lang)}"
    return ""


def _all_metrics_md(run: StoredRun, demo: Sequence[str], lang: str) -> list[str]:
    """Every metric of the run, folded: mean, CI, counts and threshold band."""
    rows = []
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                a = mr.aggregate
                band = (None if from_demo_judge(demo, mr.signature.as_dict())
                        else classify(key, a.mean, tier))
                if a.n == 0:
                    mean, ci = f"_{t('no_scored', lang)}_", "–"
                else:
                    mean = _f(a.mean)
                    ci = "–" if a.ci_low is None else f"[{_f(a.ci_low)}, {_f(a.ci_high)}]"
                icon = BAND_ICON.get(band or "", "")
                if band:
                    icon = icon.split(" ", 1)[0] + " " + t(band, lang)
                rows.append(f"| {md_escape(tier)} | {md_escape(res.name)} | {md_code(key)} | "
                            f"{mean} | {ci} | {a.n} | {a.n_unscored} | {icon} |")
    if not rows:
        return []
    return ["<details><summary>" + md_escape(t("all_metrics", lang, system=run.name))
            + "</summary>", "",
            f"| {t('tier', lang)} | {t('result', lang)} | {t('metric', lang)} | "
            f"{t('mean', lang)} | {t('ci95', lang)} | n | {t('n_unscored', lang)} | "
            f"{t('band', lang)} |",
            "|---|---|---|---:|---|---:|---:|---|", *rows, "", "</details>", ""]


def comparison_markdown(a: Any, b: Any, rows: Iterable[Any], lang: str = "en") -> str:
    order = {"regression": 0, "improvement": 1}
    rows = sorted(rows, key=lambda r: (order.get(r.verdict, 2), r.comparison.p_value))
    n_reg = sum(r.verdict == "regression" for r in rows)
    method = rows[0].comparison.method if rows else "randomization"
    lines = [f"## ragmeter compare: {md_code(b.label)} vs {md_code(a.label)}", "",
             f"{'🔴' if n_reg else '✅'} {t('regressions', lang, n=n_reg)} "
             f"({t('cmp_meta', lang, method=method)}, B − A)", "",
             f"| {t('result', lang)} | {t('metric', lang)} | A | B | B − A | {t('diff_ci', lang)}"
             f" | p | n | {t('verdict', lang)} |",
             "|---|---|---:|---:|---:|---|---:|---:|---|"]
    timing = [r for r in rows if getattr(r, "block", "") == "latency"]
    for part in ([r for r in rows if r not in timing], timing):
        if part is timing and timing:
            lines += ["", f"**{md_escape(t('latency_block', lang))}** "
                      f"({md_escape(timing[0].comparison.method)})", "",
                      lines[4], lines[5]]
        for r in part:
            c = r.comparison
            v = t("v_" + r.verdict, lang)
            mark = {"regression": f"🔴 **{v}**", "improvement": f"🟢 {v}"}.get(r.verdict, v)
            lines.append(f"| {md_escape(r.result)} | {md_code(c.metric)} | {_f(c.mean_a)} | "
                         f"{_f(c.mean_b)} | {c.diff:+.4f} | [{c.ci_low:+.4f}, "
                         f"{c.ci_high:+.4f}] | {c.p_value:.4f} | {c.n} | {mark} |")
    lines.append("")
    return "\n".join(lines)
