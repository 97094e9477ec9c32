"""Ask a bundled local judge about the judge benchmark's items and keep its value per item.

Usage: PYTHONPATH=src python benchmarks/judge_values.py OUT.json [--judge demo|tiny]
       [--prompts binary|full] [--limit N]

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

from ragmeter.judge_trust.bench import load_bench, run_bench
from ragmeter.judges.gguf import load_demo_judge

BASE_TASKS = ("faithfulness", "answer_relevance", "context_relevance", "factual_correctness",
              "production_gate")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--judge", choices=["demo", "tiny"], default="demo")
    ap.add_argument("--prompts", choices=["binary", "full"], default="binary")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
