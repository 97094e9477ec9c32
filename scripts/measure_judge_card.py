"""Measure the judge card of a bundled local judge on the judge benchmark and save it as JSON.

Usage: PYTHONPATH=src python scripts/measure_judge_card.py {tiny|demo} OUT.json [--limit N]
[--lang ru|en|all] [--repeats R]. Same as ``ragmeter judge bench --judge local-demo|tiny``.
"""

from __future__ import annotations

import argparse
import json
import time

from ragmeter.judge_trust.bench import load_bench, run_bench
from ragmeter.judges.gguf import load_demo_judge


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=["tiny", "demo"])
    ap.add_argument("out")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--lang", default="all")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    judge = load_demo_judge(tiny=args.which == "tiny")
    if judge is None:
        raise SystemExit(f"the {args.which} judge is not installed")
    items = load_bench(lang=args.lang, limit=args.limit)
    t0 = time.perf_counter()
    run = run_bench(judge, items, repeats=args.repeats)
    wall = time.perf_counter() - t0
    card = run.card.to_dict()
    card["meta"]["wall_s"] = wall
    card["meta"]["n_items"] = len(items)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(card, fh, ensure_ascii=False, indent=1)
    print(f"{len(items)} items x {args.repeats} in {wall:.0f}s -> {args.out}")


if __name__ == "__main__":
    main()
