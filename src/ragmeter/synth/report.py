"""The quality report of a generated set (plain JSON) and its console rendering."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.cost.estimate import Estimate
from ragmeter.judges.stats import JudgeStats
from ragmeter.synth.items import Item
from ragmeter.synth.kinds import KINDS

if TYPE_CHECKING:
    from ragmeter.synth.pipeline import Setup

REPORT_VERSION = "synth-report/v1"
WORD_BINS = ((1, 5), (6, 10), (11, 15), (16, 25), (26, 10_000))


def _dist(values: Sequence[int]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "min": None, "p25": None, "median": None, "p75": None, "max": None,
                "mean": None}
    a = np.asarray(values, dtype=float)
    return {"n": len(values), "min": int(a.min()), "p25": float(np.percentile(a, 25)),
            "median": float(np.median(a)), "p75": float(np.percentile(a, 75)),
            "max": int(a.max()), "mean": round(float(a.mean()), 2)}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _reached(items: Sequence[Item], check: str) -> list[Item]:
    return [it for it in items if check in it.checks or it.dropped_by == check]


def build_report(items: Sequence[Item], setup: Setup, *, stats: JudgeStats,
                 estimate: Estimate, resumed: dict[str, int], checked: int,
                 stopped: str | None, wall_s: float) -> dict[str, Any]:
    kept = [it for it in items if it.alive]
    by_kind = {k: 0 for k in KINDS}
    counts: dict[str, dict[str, int]] = {
        "target": {k: int(setup.plan.targets.get(k, 0)) for k in KINDS},
        "planned": dict(by_kind), "generated": dict(by_kind), "kept": dict(by_kind)}
    for it in items:
        counts["planned"][it.kind] += 1
        if "generation" in it.checks:
            counts["generated"][it.kind] += 1
    for it in kept:
        counts["kept"][it.kind] += 1
    rejections: dict[str, dict[str, int]] = {}
    for it in items:
        if it.dropped_by is not None:
            rej = rejections.setdefault(it.dropped_by, {})
            rej[it.reason or "?"] = rej.get(it.reason or "?", 0) + 1
    dedup_seen = _reached(items, "dedup")
    dups = [it for it in dedup_seen if it.dropped_by == "dedup"]
    ans_seen = [it for it in _reached(items, "answerability") if it.reason != "not_checked"]
    ans_pos = [it for it in ans_seen if it.kind != "negative"]
    ans_neg = [it for it in ans_seen if it.kind == "negative"]

    def ok(group: Sequence[Item]) -> int:
        return sum("answerability" in it.checks for it in group)

    gold_docs = {d for it in kept if it.kind != "negative" for d in it.gold_doc_ids(setup.by_id)}
    gold_chunks = {c for it in kept if it.kind != "negative" for c in it.chunk_ids}
    n_docs = len(setup.docs)
    chars = [len(it.question) for it in kept]
    words = [len(it.question.split()) for it in kept]
    hist = {f"{lo}-{hi}" if hi < 10_000 else f"{lo}+": sum(lo <= w <= hi for w in words)
            for lo, hi in WORD_BINS}
    reasons: Counter[str] = Counter(stats.reasons)
    return {
        "report_version": REPORT_VERSION,
        "language": setup.language,
        "n_kept": len(kept), "n_planned": len(items),
        "counts": counts,
        "rejections": rejections,
        "duplicate_rate": _rate(len(dups), len(dedup_seen)),
        "duplicates": {"removed": len(dups), "compared": len(dedup_seen)},
        "answerability_rate": {
            "all": _rate(ok(ans_seen), len(ans_seen)),
            "answerable_kinds": _rate(ok(ans_pos), len(ans_pos)),
            "negatives_unanswered": _rate(ok(ans_neg), len(ans_neg)),
            "checked": len(ans_seen), "judge_calls": checked,
        },
        "coverage": {"documents": _rate(len(gold_docs), n_docs),
                     "documents_with_question": len(gold_docs), "n_documents": n_docs,
                     "chunks": _rate(len(gold_chunks), len(setup.chunks)),
                     "chunks_with_question": len(gold_chunks), "n_chunks": len(setup.chunks)},
        "question_length": {"chars": _dist(chars), "words": _dist(words),
                            "words_histogram": hist},
        "generator_calls": {"replies": stats.replies, "calls": stats.calls,
                            "cached": stats.cached, "tokens_in": stats.tokens_in,
                            "tokens_out": stats.tokens_out, "cost": round(stats.cost, 6),
                            "unscored": dict(reasons), "resumed": dict(resumed)},
        "estimate": estimate.to_dict(),
        "stopped": stopped,
        "wall_s": round(wall_s, 2),
    }


def _fmt_rate(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def render_report(report: dict[str, Any], signature: dict[str, Any], console: Any) -> None:
    """Print the report as rich tables."""
    from rich.table import Table

    if signature.get("demo"):
        console.print("[bold yellow]DEMONSTRATION: generated by the weak offline demo model; "
                      "not a usable test set.[/]")
    t = Table(title=f"synthetic set ({report['n_kept']} kept of {report['n_planned']} planned, "
                    f"language {report['language']})", title_justify="left")
    for col in ("kind", "target", "planned", "generated", "kept"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    c = report["counts"]
    for kind in KINDS:
        if c["planned"].get(kind) or c["target"].get(kind):
            t.add_row(kind, *(str(c[k].get(kind, 0)) for k in ("target", "planned",
                                                                "generated", "kept")))
    console.print(t)
    r = Table(title="removed by filter", title_justify="left")
    r.add_column("filter")
    r.add_column("reason")
    r.add_column("n", justify="right")
    for stage, reasons in report["rejections"].items():
        for reason, n in sorted(reasons.items()):
            r.add_row(stage, reason, str(n))
    if report["rejections"]:
        console.print(r)
    a = report["answerability_rate"]
    cov = report["coverage"]
    ql = report["question_length"]["words"]
    g = report["generator_calls"]
    console.print(
        f"duplicate rate {_fmt_rate(report['duplicate_rate'])} "
        f"({report['duplicates']['removed']}/{report['duplicates']['compared']}); "
        f"answerability {_fmt_rate(a['all'])} (answerable kinds "
        f"{_fmt_rate(a['answerable_kinds'])}, negatives unanswered "
        f"{_fmt_rate(a['negatives_unanswered'])}, {a['checked']} checked)")
    console.print(
        f"coverage: {cov['documents_with_question']}/{cov['n_documents']} documents "
        f"({_fmt_rate(cov['documents'])}), {cov['chunks_with_question']}/{cov['n_chunks']} "
        f"chunks; question words median {ql['median']} (min {ql['min']}, max {ql['max']}); "
        f"histogram {report['question_length']['words_histogram']}")
    cost = f", cost {g['cost']:.4f}" if g["cost"] else ""
    console.print(f"generator calls {g['calls']} (cached {g['cached']}, resumed "
                  f"{sum(g['resumed'].values())}), tokens {g['tokens_in']}+{g['tokens_out']}"
                  f"{cost}; signature: model {signature.get('generator_model')}, prompts "
                  f"{signature.get('prompt_version')}, seed {signature.get('seed')}, corpus "
                  f"{signature.get('corpus_hash')}")
    if report.get("stopped"):
        console.print(f"[bold red]stopped early:[/] {report['stopped']}")


def render_estimate(est: Estimate, console: Any) -> None:
    from rich.table import Table

    t = Table(title="planned generator calls (nothing sent)", title_justify="left")
    for col in ("stage", "calls", "tokens in", "tokens out"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    for stage, b in est.by_prompt.items():
        t.add_row(stage, str(b["calls"]), str(b["tokens_in"]), str(b["tokens_out"]))
    t.add_row("total", str(est.calls), str(est.tokens_in), str(est.tokens_out))
    console.print(t)
    if not est.priced:
        console.print("cost: unknown (the generator config has no price_in/price_out)")
    else:
        console.print(f"cost: about {est.cost:.4f} (prices per 1M tokens: in {est.price_in:g}, "
                      f"out {est.price_out:g}; tokens approximate, ±30%; checks are an upper "
                      "bound)")
