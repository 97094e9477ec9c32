"""Ask a judge about the judge benchmark's items and keep its value per item.

Usage: PYTHONPATH=src python benchmarks/judge_values.py OUT.json [--judge demo|tiny|lexical]
       [--prompts binary|full] [--limit N]

``demo`` / ``tiny``: a bundled local LLM judge (extras ``local-judge`` / ``tiny-judge``).
``lexical``: a judge without a model, in seconds — per task the share of the content words
(stemmed, stop words out, numbers kept) that the text it is checked against also has:
faithfulness and the production gate: the answer's words found in the context; answer
relevance: the question's words found in the answer; context relevance: the question's words
found in the context; factual correctness: the F1 of the answer's and the reference's words.
A weak judge on purpose (it cannot read negation or inference); its value lies on 0–1 and
its distance from 0.5 is its confidence.

Writes ``{"judge", "model", "prompts", "items": {id: {"task", "lang", "label", "judge"}}}``:
the human label and the judge's value on the metric's 0–1 scale (``null`` when the reply was
unscored) for the benchmark's items of its five base tasks (352 items). The prompt variant:
``binary`` (yes/no questions, what ragmeter uses with small local judges) or ``full`` (the
metrics' own graded prompts). ``benchmarks/ppi_coverage.py --replay`` reads such files; the
two variants of one judge are a jury of two whose disagreement is an item's uncertainty.
"""

from __future__ import annotations

import argparse
import json
import math
import time

from ragmeter.judge_trust.bench import BenchItem, load_bench, run_bench
from ragmeter.judges.gguf import load_demo_judge
from ragmeter.text import Analyzer

BASE_TASKS = ("faithfulness", "answer_relevance", "context_relevance", "factual_correctness",
              "production_gate")


def _share(words: set[str], other: set[str]) -> float:
    return len(words & other) / len(words) if words else 1.0


def lexical_value(item: BenchItem, analyzer: Analyzer) -> float:
    """The lexical judge's value of one item (module doc)."""
    def words(text: str | None) -> set[str]:
        return set(analyzer.tokens(text or ""))

    q, a, c, r = (words(x) for x in (item.question, item.answer, item.context, item.reference))
    if item.task in ("faithfulness", "production_gate"):
        return _share(a, c)
    if item.task == "answer_relevance":
        return _share(q, a)
    if item.task == "context_relevance":
        return _share(q, c)
    p, rec = _share(a, r), _share(r, a)
    return 2 * p * rec / (p + rec) if p + rec else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--judge", choices=["demo", "tiny", "lexical"], default="demo")
    ap.add_argument("--prompts", choices=["binary", "full"], default="binary")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    if args.judge == "lexical":
        lexical(args.out, args.limit)
        return
    judge = load_demo_judge(tiny=args.judge == "tiny")
    if judge is None:
        raise SystemExit(f"the {args.judge} judge is not installed")
    items = [i for i in load_bench(lang="all", limit=args.limit) if i.task in BASE_TASKS]
    t0 = time.perf_counter()
    run = run_bench(judge, items, binary=args.prompts == "binary")
    wall = time.perf_counter() - t0
    out = {"judge": args.judge, "model": str(getattr(judge, "model", "")),
           "prompts": args.prompts, "wall_s": round(wall, 1), "items": {}}
    for k, it in enumerate(items):
        v = float(run.values[0, k])
        out["items"][it.id] = {"task": it.task, "lang": it.lang, "kind": it.kind,
                               "label": it.label_value,
                               "judge": None if math.isnan(v) else v}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, ensure_ascii=False, indent=1, sort_keys=True)
    print(f"{len(items)} items in {wall:.0f} s -> {args.out}")


def lexical(out_path: str, limit: int) -> None:
    analyzer = Analyzer("auto", stopwords=True)
    items = [i for i in load_bench(lang="all", limit=limit) if i.task in BASE_TASKS]
    out = {"judge": "lexical", "model": "content-word overlap (Analyzer auto, stop words out)",
           "prompts": "-", "items": {}}
    for it in items:
        out["items"][it.id] = {"task": it.task, "lang": it.lang, "kind": it.kind,
                               "label": it.label_value,
                               "judge": round(lexical_value(it, analyzer), 6)}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, ensure_ascii=False, indent=1, sort_keys=True)
    print(f"{len(items)} items -> {out_path}")


if __name__ == "__main__":
    main()
