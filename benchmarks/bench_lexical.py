"""Time ragmeter's ROUGE against rouge-score on the same pairs, and check identical values.

    python benchmarks/bench_lexical.py [--pairs 10000] [--repeats 3] [--seed 0]

Pairs are synthetic English answers (20–80 words from a 2,000-word Zipf-like vocabulary, the
hypothesis a noisy copy of the reference, like a RAG answer vs its gold answer). Both sides
compute ROUGE-1, ROUGE-2 and ROUGE-L (P, R, F); ragmeter runs with ``tokenizer=rouge_score``
so the tokens are the same and values must be identical. Reported: median wall time of
``--repeats`` runs each, speed-up, max |difference|.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import numpy as np


def make_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" if i % 7 else f"term{i}" for i in range(2000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    hyps, refs = [], []
    for _ in range(n):
        ref = rng.choices(vocab, weights, k=rng.randint(20, 80))
        hyp = [w for w in ref if rng.random() > 0.25]
        for _ in range(rng.randint(0, 15)):
            hyp.insert(rng.randint(0, len(hyp)), rng.choices(vocab, weights)[0])
        refs.append(" ".join(ref).capitalize() + ".")
        hyps.append(" ".join(hyp) + ".")
    return hyps, refs


def run_rouge_score(hyps: list[str], refs: list[str]) -> dict[str, np.ndarray]:
    from rouge_score import rouge_scorer

    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    out = [sc.score(r, h) for h, r in zip(hyps, refs, strict=True)]
    return {f"{k}.{a}": np.array([getattr(o[k], a) for o in out])
            for k in ("rouge1", "rouge2", "rougeL") for a in ("precision", "recall", "fmeasure")}


def run_ours(hyps: list[str], refs: list[str], tokenizer: str) -> dict[str, np.ndarray]:
    from ragmeter.metrics.lexical import rouge_batch

    res = rouge_batch(hyps, refs, tokenizer=tokenizer)
    return {f"{k}.{a}": getattr(res[k], a)
            for k in ("rouge1", "rouge2", "rougeL") for a in ("precision", "recall", "fmeasure")}


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    hyps, refs = make_pairs(args.pairs, args.seed)
    t_ref, t_compat, t_uni = [], [], []
    ref_vals = ours_vals = None
    for _ in range(args.repeats):
        dt, ref_vals = timed(run_rouge_score, hyps, refs)
        t_ref.append(dt)
        dt, ours_vals = timed(run_ours, hyps, refs, "rouge_score")
        t_compat.append(dt)
        dt, _ = timed(run_ours, hyps, refs, "unicode")
        t_uni.append(dt)
    assert ref_vals is not None and ours_vals is not None
    maxdiff = max(float(np.abs(ref_vals[k] - ours_vals[k]).max()) for k in ref_vals)
    identical = all(np.array_equal(ref_vals[k], ours_vals[k]) for k in ref_vals)
    med = statistics.median
    report = {
        "pairs": args.pairs, "repeats": args.repeats,
        "rouge_score_s": round(med(t_ref), 3), "ragmeter_compat_s": round(med(t_compat), 3),
        "ragmeter_unicode_s": round(med(t_uni), 3),
        "speedup_compat": round(med(t_ref) / med(t_compat), 1),
        "speedup_unicode": round(med(t_ref) / med(t_uni), 1),
        "identical_values": identical, "max_abs_diff": maxdiff,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
