"""Markdown summaries for pull requests: one run, or a comparison of two runs.

User text is escaped for Markdown tables (``|``, newlines, and HTML ``<``/``>`` that GitHub
would render) — a metric or system name cannot break the table or inject HTML.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ragmeter.reports.bands import classify, from_demo_judge
from ragmeter.results.store import StoredRun

BAND_ICON = {"excellent": "🟢 excellent", "good": "🟡 good", "needs attention": "🔴 needs attention"}


def md_escape(text: object) -> str:
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return s.replace("<", "&lt;").replace(">", "&gt;").replace("`", "\\`")


def _f(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.4f}"


def run_markdown(run: StoredRun, gate_rows: Sequence[Any] | None = None) -> str:
    """A PR-sized summary: tiers, metrics with 95% CIs and bands, gate results, signature."""
    from ragmeter.reports.html import is_demo

    lines = [f"## ragmeter: {md_escape(run.name)}", "",
             f"Run `{md_escape(run.id)}` · {md_escape(run.created_at)} · status "
             f"{md_escape(run.status)} · git `{md_escape(run.git_commit or '–')}`", ""]
    demo = is_demo(run)
    if demo:
        lines += [f"> ⚠️ **Demo judge** ({md_escape(', '.join(demo))}): these numbers come from "
                  "the weak offline demonstration judge, not a real measurement.", ""]
    not_ok = [(t, r) for t, r in run.tiers.items() if r.status != "ok"]
    if not_ok:
        lines += ["**Tiers not run:**", ""]
        lines += [f"- `{md_escape(t)}` ({md_escape(r.status)}): {md_escape(r.reason or '')}"
                  for t, r in not_ok]
        lines.append("")
    rows = []
    demo_names = demo
    for tier, rec in run.tiers.items():
        for res in rec.results:
            for key, mr in res.results.items():
                a = mr.aggregate
                band = (None if from_demo_judge(demo_names, mr.signature.as_dict())
                        else classify(key, a.mean, tier))
                ci = "–" if a.ci_low is None else f"[{_f(a.ci_low)}, {_f(a.ci_high)}]"
                rows.append(f"| {md_escape(tier)} | {md_escape(res.name)} | `{md_escape(key)}` | "
                            f"{_f(a.mean)} | {ci} | {a.n} | {a.n_unscored} | "
                            f"{BAND_ICON.get(band or '', '')} |")
    if rows:
        lines += ["| tier | result | metric | mean | 95% CI | n | unscored | band |",
                  "|---|---|---|---:|---|---:|---:|---|", *rows, ""]
    if gate_rows:
        failed = [r for r in gate_rows if not r.passed]
        lines += [f"**Quality gate: {'❌ FAILED' if failed else '✅ passed'}** "
                  f"({len(gate_rows) - len(failed)}/{len(gate_rows)} checks passed)", ""]
        lines += ["| result | metric | value | threshold | verdict | message |",
                  "|---|---|---:|---|---|---|"]
        lines += [f"| {md_escape(r.target)} | `{md_escape(r.metric)}` | {_f(r.value)} | "
                  f"{md_escape(r.threshold)} | {'✅' if r.passed else '❌'} {r.verdict} | "
                  f"{md_escape(r.message)} |" for r in gate_rows]
        lines.append("")
    lines += [f"<sub>signature: `{md_escape(run.signature)}`</sub>", ""]
    return "\n".join(lines)


def comparison_markdown(a: Any, b: Any, rows: Iterable[Any]) -> str:
    rows = list(rows)
    n_reg = sum(r.verdict == "regression" for r in rows)
    lines = [f"## ragmeter compare: `{md_escape(b.label)}` vs `{md_escape(a.label)}`", "",
             f"{'🔴' if n_reg else '✅'} {n_reg} significant regression(s) "
             "(paired test on the samples both runs scored, B − A)", "",
             "| result | metric | A | B | B − A | 95% CI | p | n | verdict |",
             "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        c = r.comparison
        mark = {"regression": "🔴 **regression**", "improvement": "🟢 improvement"}.get(
            r.verdict, r.verdict)
        lines.append(f"| {md_escape(r.result)} | `{md_escape(c.metric)}` | {_f(c.mean_a)} | "
                     f"{_f(c.mean_b)} | {c.diff:+.4f} | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] | "
                     f"{c.p_value:.4f} | {c.n} | {mark} |")
    lines.append("")
    return "\n".join(lines)
