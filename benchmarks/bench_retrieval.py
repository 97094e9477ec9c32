"""Benchmark: ragmeter vs pytrec_eval vs ranx on the same dict-of-dicts qrels and run.

Input (all tools): ``qrels = {qid: {docid: grade}}``, ``run = {qid: {docid: score}}``;
N queries × 100 retrieved docs, 3 relevant docs per query (2 of them usually retrieved),
distinct random scores inserted in random order (so every tool has to sort). Metrics:
ndcg@10, mrr (full ranking), recall@10, precision@10, hit_rate@10.

Each tool runs in a fresh subprocess that loads the pickled input, then times ``--repeat``
evaluations end to end (dicts in → per-query values out: ranx's Qrels/Run conversion and
pytrec_eval's evaluator construction included). Each tool is imported and warmed up on a tiny
input first (ranx: numba JIT; ragmeter: metric registry). Memory: the kernel's peak-RSS mark is reset after loading the input (``clear_refs``;
``resource.getrusage`` where that is not allowed), so "peak" is the process peak during
evaluation and "above input" is that peak minus the RSS with the input loaded.
ragmeter's bootstrap CIs are lazy (computed on first access) and timed separately. Wall and CPU
time (``time.process_time``: robust on a loaded machine) are both recorded; speed ratios are given
for both, against the other tools measured in the same run.

    python benchmarks/bench_retrieval.py              # 100k queries
    python benchmarks/bench_retrieval.py --queries 5000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

METRICS = ["ndcg@10", "mrr", "recall@10", "precision@10", "hit_rate@10"]
TREC = {"ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "recall@10": "recall_10",
        "precision@10": "P_10", "hit_rate@10": "success_10"}


def generate(n_queries: int, seed: int = 0, depth: int = 100) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    scores = rng.random((n_queries, depth))
    docs = np.argsort(rng.random((n_queries, 1000)), axis=1)[:, :depth]  # 100 distinct docs
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        row = [f"d{j}" for j in docs[i].tolist()]
        q = f"q{i}"
        run[q] = dict(zip(row, scores[i].tolist(), strict=True))
        rel = [row[int(rng.integers(0, depth))], row[int(rng.integers(0, depth))], f"x{i}"]
        qrels[q] = {d: int(rng.integers(1, 3)) for d in rel}
    return qrels, run


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) so the peak covers evaluation only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def worker(tool: str, data: str, repeat: int, out: str) -> None:
    with open(data, "rb") as fh:
        qrels, run = pickle.load(fh)
    qids = sorted(q for q, d in qrels.items() if any(v > 0 for v in d.values()))
    times: list[float] = []
    cpu: list[float] = []
    extra: dict[str, Any] = {}
    tiny_q, tiny_r = {"a": {"x": 1}}, {"a": {"x": 1.0, "y": 0.5}}
    if tool == "ranx":  # import + numba JIT on a tiny input, before timing and the peak reset
        import warnings

        import ranx
        warnings.simplefilter("ignore")
        ranx.evaluate(ranx.Qrels(tiny_q), ranx.Run(tiny_r), METRICS)
    elif tool == "pytrec_eval":
        import pytrec_eval

        pytrec_eval.RelevanceEvaluator(tiny_q, {"recip_rank"}).evaluate(tiny_r)
    else:  # import + metric registry loading
        from ragmeter.retrieval.evaluate import evaluate_retrieval

        evaluate_retrieval(qrels=tiny_q, run=tiny_r, metrics=METRICS)
    gc.collect()
    base_kb = _status_kb("VmRSS")
    reset = _reset_peak()
    values: dict[str, np.ndarray] = {}
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        if tool == "ragmeter":
            res = evaluate_retrieval(qrels=qrels, run=run, metrics=METRICS, ties="trec")
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            t1 = time.perf_counter()
            stable = evaluate_retrieval(qrels=qrels, run=run, metrics=METRICS, ties="stable")
            extra.setdefault("stable_times", []).append(time.perf_counter() - t1)
            for m in METRICS:
                by = dict(zip(res[m].sample_ids, res[m].values.tolist(), strict=True))
                values[m] = np.array([by[q] for q in qids])
                by = dict(zip(stable[m].sample_ids, stable[m].values.tolist(), strict=True))
                values["stable:" + m] = np.array([by[q] for q in qids])
        elif tool == "pytrec_eval":
            ev = pytrec_eval.RelevanceEvaluator(
                qrels, {"ndcg_cut.10", "recip_rank", "recall.10", "P.10", "success.10"})
            ref = ev.evaluate(run)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            for m, name in TREC.items():
                values[m] = np.array([ref[q][name] for q in qids])
        else:
            rr = ranx.Run(run)
            ranx.evaluate(ranx.Qrels(qrels), rr, METRICS, save_results_in_run=True)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            for m in METRICS:
                values[m] = np.array([rr.scores[m][q] for q in qids])
    peak_kb = _status_kb("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if tool == "ragmeter":  # lazy bootstrap CIs: timed separately, after the memory reading
        t0, c0 = time.perf_counter(), time.process_time()
        for m in METRICS:
            _ = res[m].aggregate
        extra["ci_s"] = time.perf_counter() - t0
        extra["ci_cpu_s"] = time.process_time() - c0
    np.savez(out, **{_key(m): v for m, v in values.items()})  # type: ignore[arg-type]
    print(json.dumps({"tool": tool, "times": times, "cpu": cpu, "peak_mb": peak_kb / 1024,
                      "input_mb": base_kb / 1024, "above_input_mb": (peak_kb - base_kb) / 1024,
                      **extra}))


def _key(metric: str) -> str:
    return metric.replace("@", "_at_").replace(":", "__")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", default="ragmeter,pytrec_eval,ranx")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.repeat, args.out)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_retrieval_"))
    t0 = time.perf_counter()
    qrels, run = generate(args.queries)
    with open(tmp / "data.pkl", "wb") as fh:
        pickle.dump((qrels, run), fh, protocol=pickle.HIGHEST_PROTOCOL)
    del qrels, run
    print(f"input: {args.queries} queries x 100 docs, 3 relevant each, dict-of-dicts "
          f"(generated in {time.perf_counter() - t0:.1f}s); metrics: {', '.join(METRICS)}")
    rows = {}
    for tool in args.tools.split(","):
        out = tmp / f"{tool}.npz"
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", tool, "--data", str(tmp / "data.pkl"),
             "--repeat", str(args.repeat), "--out", str(out)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{tool}: failed\n{proc.stderr[-2000:]}")
            continue
        rows[tool] = json.loads(proc.stdout.strip().splitlines()[-1])
        rows[tool]["values"] = dict(np.load(out))
    print(f"{'tool':<12} {'wall s':>7} {'cpu s':>7} {'wall runs':>20} {'cpu runs':>20} "
          f"{'peak RSS MB':>12} {'above input MB':>15}")
    for tool, r in rows.items():
        runs = ", ".join(f"{t:.2f}" for t in r["times"])
        cpus = ", ".join(f"{t:.2f}" for t in r["cpu"])
        print(f"{tool:<12} {statistics.median(r['times']):>7.3f} {statistics.median(r['cpu']):>7.3f} "
              f"{runs:>20} {cpus:>20} {r['peak_mb']:>12.0f} {r['above_input_mb']:>15.0f}")
    if "ragmeter" in rows:
        me = rows["ragmeter"]
        st = me["stable_times"]
        print(f"ragmeter ties=trec (timed above, compared with trec_eval); ties=stable: median "
              f"{statistics.median(st):.3f}s ({', '.join(f'{t:.2f}' for t in st)}), compared "
              f"with ranx (no exact float64 ties in this input)")
        print(f"ragmeter bootstrap CIs (5 metrics x 1000 resamples, one set of indices, lazy, "
              f"separate): {me['ci_s']:.2f}s wall, {me['ci_cpu_s']:.2f}s cpu")
        for tool, r in rows.items():
            if tool == "ragmeter":
                continue
            prefix = "" if tool == "pytrec_eval" else "stable:"
            mine = statistics.median(me["times"] if tool == "pytrec_eval" else st)
            speed = statistics.median(r["times"]) / mine
            cpu_speed = statistics.median(r["cpu"]) / statistics.median(me["cpu"])
            mem = r["above_input_mb"] / max(me["above_input_mb"], 1e-9)
            worst = max(float(np.max(np.abs(me["values"][_key(prefix + m)] - r["values"][_key(m)])))
                        for m in METRICS)
            print(f"vs {tool}: ragmeter {speed:.1f}x faster (wall), {cpu_speed:.1f}x (cpu, "
                  f"ties=trec); {tool} uses {mem:.1f}x the memory "
                  f"above input; max |diff| over all per-query values = {worst:.2e}"
                  f" ({'identical' if worst <= 1e-12 else 'DIFFERENT'})")


if __name__ == "__main__":
    main()
