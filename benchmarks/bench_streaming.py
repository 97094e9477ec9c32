"""Benchmark: streaming and bounded memory of ``ragmeter score retrieval`` on large files.

Two scenarios, each tool run in its own process under ``/usr/bin/time -v`` (wall time and peak
RSS as the kernel reports them; medians over ``--repeat`` runs):

1. **TREC file → metrics**: a generated run of ``--queries`` queries × ``--depth`` documents
   (10,000,000 lines by default) and its qrels, evaluated by ``ragmeter score retrieval --qrels --run
   --ties trec`` and by the trec_eval C binary (``-q``, same measures). Per-query values are
   compared to 4 decimals. trec_eval is built from the source in ``--trec-eval-src`` (default:
   ``../shared/bench/trec_eval`` next to the repository, or ``$TREC_EVAL_SRC``) with ``make`` in
   a temporary directory; without a C compiler or the source the comparison is skipped with a
   message. Targets: ragmeter ≥ 3× faster than trec_eval, peak RSS ≤ trec_eval's.
2. **Evalset → metrics**: generated evalset files of ``--evalset-lines`` lines (100k, 300k, 1M by
   default; 10 retrieved ids, 2 gold documents per question) through ``ragmeter score retrieval
   --evalset ... --out result.json --csv per_query.csv`` with five metrics (each with its
   bootstrap CI; every per-query record written, as users write them). Targets: peak RSS under 2 GiB at 1M lines, and linear time (seconds per 100k
   lines roughly constant).

    python benchmarks/bench_streaming.py                       # full sizes (several minutes)
    python benchmarks/bench_streaming.py --queries 10000 --evalset-lines 10000,30000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MEASURES = {"ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "recall@10": "recall_10",
            "precision@10": "P_10", "map": "map"}
EVALSET_METRICS = "hit_rate@1,mrr,recall@10,ndcg@10,map"
TREC_ARGS = ["-m", "ndcg_cut.10", "-m", "recip_rank", "-m", "recall.10", "-m", "P.10",
             "-m", "map"]


def write_trec(folder: Path, n_queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """A run of ``n_queries`` × ``depth`` lines (grouped by query) and qrels (~5 judged each)."""
    rng = np.random.default_rng(seed)
    run, qrels = folder / "run.txt", folder / "qrels.txt"
    with run.open("w") as fr, qrels.open("w") as fq:
        step = 5000
        for a in range(0, n_queries, step):
            b = min(n_queries, a + step)
            docs = rng.integers(0, 1_000_000, size=(b - a, depth))
            scores = rng.random((b - a, depth)) * 100
            lines = []
            qlines = []
            for i in range(b - a):
                q = a + i
                row = docs[i]
                seen: set[int] = set()
                for rank, (d, s) in enumerate(zip(row.tolist(), scores[i].tolist(), strict=False), start=1):
                    if d in seen:
                        d = 2_000_000 + rank
                    seen.add(d)
                    # 3 decimals: ties happen (resolved by doc id, as trec_eval does) but
                    # distinct scores stay distinct in single precision too
                    lines.append(f"q{q} Q0 d{d} {rank} {s:.3f} bench\n")
                picks = {f"d{row[p]}": int(rng.integers(0, 3))
                         for p in rng.integers(0, depth, size=4).tolist()}
                picks[f"x{q}"] = 1  # a relevant document never retrieved
                qlines.extend(f"q{q} 0 {d} {g}\n" for d, g in picks.items())
            fr.write("".join(lines))
            fq.write("".join(qlines))
    return qrels, run


def write_evalset(path: Path, n: int, seed: int = 0) -> None:
    """``n`` evalset lines: id, question, 2 gold docs, 10 retrieved chunk ids with scores."""
    rng = np.random.default_rng(seed)
    with path.open("w") as fh:
        step = 10000
        for a in range(0, n, step):
            b = min(n, a + step)
            docs = rng.integers(0, 50_000, size=(b - a, 10)).tolist()
            out = []
            for i in range(b - a):
                ret = [f"doc{d}#{j}" for j, d in enumerate(docs[i])]
                gold = [f"doc{docs[i][int(rng.integers(0, 10))]}", f"doc{int(rng.integers(0, 50_000))}"]
                out.append(json.dumps({
                    "id": f"q{a + i}", "question": f"What is item {a + i} about?",
                    "gold_doc_ids": gold, "gold_chunk_ids": [f"{gold[0]}#0"], "type": "fact",
                    "retrieved_ids": ret,
                    "retrieved_scores": sorted(rng.random(10).round(4).tolist(), reverse=True),
                }) + "\n")
            fh.write("".join(out))


def timed(cmd: list[str], out_path: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run under ``/usr/bin/time -v``: (wall seconds, peak RSS MiB, stdout)."""
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert wall and rss
    parts = [float(x) for x in wall.group(1).split(":")]
    seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    if out_path is not None:
        out_path.write_text(proc.stdout)
    return seconds, int(rss.group(1)) / 1024, proc.stdout


def build_trec_eval(src: Path, work: Path) -> Path | None:
    if not (src / "Makefile").is_file():
        print(f"trec_eval: SKIPPED (no source at {src}; set --trec-eval-src or TREC_EVAL_SRC)")
        return None
    if shutil.which("make") is None or (shutil.which("cc") is None and shutil.which("gcc") is None):
        print("trec_eval: SKIPPED (no make / C compiler on this machine)")
        return None
    dest = work / "trec_eval_src"
    shutil.copytree(src, dest)
    proc = subprocess.run(["make"], cwd=dest, capture_output=True, text=True)
    binary = dest / "trec_eval"
    if proc.returncode != 0 or not binary.is_file():
        print(f"trec_eval: SKIPPED (make failed: {proc.stderr[-500:]})")
        return None
    return binary


def ragmeter_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragmeter", "score", "retrieval", *args]


def env_with_src() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("COLUMNS", "200")
    return env


def parse_trec_eval(text: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "all":  # measure, query, value
            out.setdefault(parts[1], {})[parts[0]] = float(parts[2])
    return out


def compare(csv_path: Path, ref: dict[str, dict[str, float]]) -> tuple[int, int]:
    import csv

    n = bad = 0
    with csv_path.open() as fh:
        for row in csv.DictReader(fh):
            q = row["query"]
            for ours, theirs in MEASURES.items():
                if q not in ref or theirs not in ref[q] or row.get(ours, "") == "":
                    continue
                n += 1
                if round(float(row[ours]), 4) != round(ref[q][theirs], 4) and \
                        abs(float(row[ours]) - ref[q][theirs]) > 6e-5:
                    bad += 1
    return n, bad


def trec_scenario(args: argparse.Namespace, work: Path) -> None:
    print(f"== TREC file -> metrics: {args.queries:,} queries x {args.depth} "
          f"({args.queries * args.depth:,} run lines)")
    qrels, run = write_trec(work, args.queries, args.depth)
    print(f"   run file {run.stat().st_size / 2**20:.0f} MiB, qrels "
          f"{qrels.stat().st_size / 2**20:.1f} MiB")
    env = env_with_src()
    csv_path = work / "per_query.csv"
    metrics = ",".join(MEASURES)
    ours = [timed(ragmeter_cmd("--qrels", str(qrels), "--run", str(run), "--ties", "trec",
                               "--metrics", metrics, "--csv", str(csv_path)), env=env)
            for _ in range(args.repeat)]
    r_wall = statistics.median(t for t, _, _ in ours)
    r_rss = statistics.median(m for _, m, _ in ours)
    print(f"   ragmeter:  {r_wall:7.2f} s  peak RSS {r_rss:7.0f} MiB")
    src = Path(args.trec_eval_src or os.environ.get("TREC_EVAL_SRC")
               or ROOT.parent / "shared" / "bench" / "trec_eval")
    binary = build_trec_eval(src, work)
    if binary is None:
        return
    ref_out = work / "trec_eval.txt"
    theirs = [timed([str(binary), "-q", *TREC_ARGS, str(qrels), str(run)], ref_out)
              for _ in range(args.repeat)]
    t_wall = statistics.median(t for t, _, _ in theirs)
    t_rss = statistics.median(m for _, m, _ in theirs)
    print(f"   trec_eval: {t_wall:7.2f} s  peak RSS {t_rss:7.0f} MiB")
    n, bad = compare(csv_path, parse_trec_eval(ref_out.read_text()))
    print(f"   speed: ragmeter is {t_wall / r_wall:.2f}x trec_eval (target >= 3x); memory: "
          f"{r_rss / t_rss:.2f}x trec_eval's peak (target <= 1x)")
    print(f"   values: {n - bad:,} of {n:,} per-query values equal to 4 decimals")


def evalset_scenario(args: argparse.Namespace, work: Path) -> None:
    sizes = [int(x) for x in args.evalset_lines.split(",") if x]
    print("== evalset -> ragmeter score retrieval --evalset")
    env = env_with_src()
    rows = []
    for n in sizes:
        path = work / f"evalset_{n}.jsonl"
        write_evalset(path, n)
        out, per_query = work / "result.json", work / "per_query.csv"
        # with --out and --csv: the per-query records are written, as users write them
        res = [timed(ragmeter_cmd("--evalset", str(path), "--metrics", EVALSET_METRICS,
                                  "--out", str(out), "--csv", str(per_query)), env=env)
               for _ in range(args.repeat)]
        out.unlink()
        per_query.unlink()
        wall = statistics.median(t for t, _, _ in res)
        rss = statistics.median(m for _, m, _ in res)
        rows.append((n, wall, rss))
        print(f"   {n:>9,} lines ({path.stat().st_size / 2**20:6.0f} MiB): {wall:7.2f} s  "
              f"peak RSS {rss:6.0f} MiB  ({wall / n * 1e5:.2f} s per 100k lines)")
        path.unlink()
    n, wall, rss = rows[-1]
    print(f"   largest: peak RSS {rss / 1024:.2f} GiB (target < 2 GiB at 1M lines)")
    if len(rows) > 1:
        per = [w / k for k, w, _ in rows]
        print(f"   linearity: time per line, largest / smallest = {per[-1] / per[0]:.2f} "
              "(1.0 = linear)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--evalset-lines", default="100000,300000,1000000")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--trec-eval-src", default=None)
    ap.add_argument("--skip-trec", action="store_true")
    ap.add_argument("--skip-evalset", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rm-bench-stream-") as tmp:
        work = Path(tmp)
        if not args.skip_trec:
            trec_scenario(args, work)
        if not args.skip_evalset:
            evalset_scenario(args, work)


if __name__ == "__main__":
    main()
