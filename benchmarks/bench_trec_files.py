"""Benchmark: ``ragmeter score retrieval --qrels --run`` against the trec_eval C binary, from files.

Whole processes, run in turn (ragmeter, trec_eval as released, trec_eval with a linear lookup,
then again), the same five measures (``ndcg_cut.10``, ``recip_rank``, ``recall.10``, ``P.10``,
``map``), summary output only, each run under ``/usr/bin/time -v``: wall time, CPU time (user +
system) and peak RSS, medians over ``--repeat`` runs, at ``--queries`` sizes (10k and 100k
queries × 100 documents by default; generated grouped by query, ~5 judged documents per query).

trec_eval is built twice from its source (``--trec-eval-src``, default
``shared/bench/trec_eval`` next to the repository or a folder above it, or ``$TREC_EVAL_SRC``) in a temporary
folder:

* **as released**: its main loop finds each query's results with a linear ``strcmp`` scan from
  the start of the (sorted) results — quadratic in the number of queries; at 100k queries this
  scan is most of its CPU time. Comparing against this binary alone flatters any competitor.
* **linear lookup**: the same source with that one scan resumed from the previous match (both
  lists are sorted by query id with the same comparison, so the next query's results follow);
  a local patch in the temporary build, for measuring only.

Ratios above 1 mean ragmeter is faster. ragmeter's figures include its default output: the
summary table with a 95% bootstrap CI per measure (1000 resamples; trec_eval computes none).
ragmeter runs with its bytecode cached (``PYTHONDONTWRITEBYTECODE`` is dropped and the cache
goes to a temporary ``PYTHONPYCACHEPREFIX``, warmed by one untimed run), as an installed
package would: otherwise every run would compile its sources again. Per-query values of each
size are compared with trec_eval's (``-q``) once, outside the timed runs.

    python benchmarks/bench_trec_files.py                    # 10k and 100k queries, 3 runs
    python benchmarks/bench_trec_files.py --queries 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_streaming import (  # the benchmarks folder is not a package
    MEASURES,
    ROOT,
    TREC_ARGS,
    compare,
    env_with_src,
    parse_trec_eval,
    ragmeter_cmd,
    write_trec,
)

_LOOP = ("        for (j = 0; j < all_results.num_q_results; j++) {\n"
         "            if (0 == strcmp(all_results.results[j].qid,\n"
         "                            all_rel_info.rel_info[i].qid)) {\n"
         "                this_result = &all_results.results[j];\n"
         "                break;\n"
         "            }\n"
         "        }\n")
_LINEAR = ("        for (te_n = 0; te_n < all_results.num_q_results; te_n++) {\n"
           "            j = (te_start + te_n) % all_results.num_q_results;\n"
           "            if (0 == strcmp(all_results.results[j].qid,\n"
           "                            all_rel_info.rel_info[i].qid)) {\n"
           "                this_result = &all_results.results[j];\n"
           "                te_start = j + 1;\n"
           "                break;\n"
           "            }\n"
           "        }\n"
           "        if (this_result == NULL) j = all_results.num_q_results;\n")
_OUTER = "    for (i = 0; i < all_rel_info.num_q_rels; i++) {\n"


def build(src: Path, dest: Path, linear: bool) -> Path:
    shutil.copytree(src, dest)
    for p in dest.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    if linear:
        main = dest / "trec_eval.c"
        text = main.read_text()
        if _LOOP not in text or text.count(_OUTER) != 1:
            raise SystemExit("trec_eval.c does not have the expected lookup loop: cannot patch")
        text = text.replace(_LOOP, _LINEAR).replace(
            _OUTER, "    long te_n, te_start = 0;\n" + _OUTER)
        main.write_text(text)
    proc = subprocess.run(["make"], cwd=dest, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"make failed in {dest}:\n{proc.stderr[-1500:]}")
    return dest / "trec_eval"


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """``(wall s, cpu s, peak RSS MiB, stdout)`` of one run under ``/usr/bin/time -v``."""
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")

    def grab(pattern: str) -> str:
        m = re.search(pattern, proc.stderr)
        assert m, pattern
        return m.group(1)
    parts = [float(x) for x in grab(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)")
             .split(":")]
    wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    cpu = float(grab(r"User time \(seconds\): (\S+)")) + float(grab(r"System time \(seconds\): (\S+)"))
    rss = int(grab(r"Maximum resident set size \(kbytes\): (\d+)")) / 1024
    return wall, cpu, rss, proc.stdout


def interleaved_medians(cmds: dict[str, tuple[list[str], dict[str, str] | None]], repeat: int
                        ) -> dict[str, tuple[float, float, float]]:
    """Median ``(wall, cpu, RSS)`` of each command, the commands run in turn ``repeat`` times
    (A B C A B C …), so that a busy moment of the machine falls on all of them alike."""
    runs: dict[str, list[tuple[float, float, float, str]]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for key, (cmd, env) in cmds.items():
            runs[key].append(timed(cmd, env))
    return {k: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                statistics.median(r[2] for r in rs)) for k, rs in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", default="10000,100000")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trec-eval-src", default=None)
    args = ap.parse_args()
    near = [d / "shared" / "bench" / "trec_eval" for d in ROOT.parents]  # a worktree's too
    src = Path(args.trec_eval_src or os.environ.get("TREC_EVAL_SRC")
               or next((d for d in near if (d / "Makefile").is_file()), near[0]))
    if not (src / "Makefile").is_file():
        raise SystemExit(f"no trec_eval source at {src} (set --trec-eval-src or TREC_EVAL_SRC)")
    env = env_with_src()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    metrics = ",".join(MEASURES)
    with tempfile.TemporaryDirectory(prefix="rm-bench-trec-") as tmp:
        work = Path(tmp)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        binaries = {"released": build(src, work / "released", linear=False),
                    "linear lookup": build(src, work / "linear", linear=True)}
        print("Defect in trec_eval as released: its main loop finds each query's results by a "
              "linear strcmp scan from the start of the run, so the lookup is quadratic in the "
              "number of queries (most of its CPU time at 100k queries). 'linear lookup' = the "
              "same source with that scan resumed from the previous match (temporary build, for "
              "measuring only); compare against it.")
        print(f"{'queries':>8} {'tool':<24} {'wall s':>8} {'cpu s':>8} {'RSS MiB':>8}")
        for n in (int(x) for x in args.queries.split(",") if x):
            folder = work / f"q{n}"
            folder.mkdir()
            qrels, run = write_trec(folder, n, args.depth)
            subprocess.run(ragmeter_cmd("--help"), env=env, check=True,  # warm the bytecode
                           capture_output=True)
            cmds = {"ragmeter": (ragmeter_cmd("--qrels", str(qrels), "--run", str(run), "--ties",
                                              "trec", "--metrics", metrics), env)}
            for label, binary in binaries.items():
                cmds[label] = ([str(binary), *TREC_ARGS, str(qrels), str(run)], None)
            med = interleaved_medians(cmds, args.repeat)
            ours = med["ragmeter"]
            print(f"{n:>8} {'ragmeter':<24} {ours[0]:>8.2f} {ours[1]:>8.2f} {ours[2]:>8.0f}")
            for label in binaries:
                theirs = med[label]
                print(f"{n:>8} {'trec_eval ' + label:<24} {theirs[0]:>8.2f} {theirs[1]:>8.2f} "
                      f"{theirs[2]:>8.0f}   ragmeter faster: wall {theirs[0] / ours[0]:.2f}x, "
                      f"cpu {theirs[1] / ours[1]:.2f}x; memory {ours[2] / theirs[2]:.2f}x "
                      "trec_eval's")
            per_query = folder / "q.csv"
            subprocess.run(ragmeter_cmd("--qrels", str(qrels), "--run", str(run), "--ties",
                                        "trec", "--metrics", metrics, "--csv", str(per_query)),
                           env=env, check=True, capture_output=True)
            ref = subprocess.run([str(binaries["linear lookup"]), "-q", *TREC_ARGS, str(qrels),
                                  str(run)], capture_output=True, text=True, check=True).stdout
            total, bad = compare(per_query, parse_trec_eval(ref))
            print(f"{n:>8} values: {total - bad:,} of {total:,} per-query values equal to "
                  "trec_eval's (4 decimals)")
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
