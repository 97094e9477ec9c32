"""Batch files at scale: writing and collecting judge requests, beside the online run's client.

    python benchmarks/bench_batch.py [--requests 100000] [--plan one-round default]
                                     [--repeat 3] [--no-online] [--concurrency 64]

Data: synthetic samples made here (own data: a question, an answer, two contexts and a
reference per sample, Russian and English alternating). Two plans of ``--requests`` judge
requests each:

* ``one-round``: answer_relevance + context_relevance, 2 calls per sample, no dependent call:
  one ``write`` and one ``collect`` of all requests;
* ``default``: the default judged set, 4 calls per sample in 2 rounds (claims, contexts and
  answer; then the claims' verification): ``write``, ``collect``, ``write``, ``collect``.

Every phase runs in its own process (spawned), so its CPU seconds (user + system) and peak RSS
are its own: ``write`` (the command's plan with the batch judge, files written), the provider
(the fake server's offline ``vllm run-batch``-shaped runner: not the client's work, shown for
scale), ``collect`` (result lines into the judge cache), the ordinary run from the cache (must
make 0 calls), and the online run of the same plan against the fake server in another process
(the client's CPU and RSS only); ``ragmeter score generation --out`` over the cache as a user runs
it (a subprocess: per-sample records streamed batch by batch). The values of the ordinary run
after the batch cycle are
compared with the online run's (they must be identical). Targets: writing + collecting ≤ 30 s
CPU and ≤ 500 MB peak RSS at 100,000 requests. Report CPU seconds and RSS: wall time on a
shared machine is not a figure. CPU seconds of one cycle vary too (by a fifth between runs of
the same code on a shared machine): the batch cycle runs ``--repeat`` times, each from an
empty folder and cache, and the figure is the median (peak RSS: the largest).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PLANS = {"one-round": ("answer_relevance", "context_relevance"), "default": None}
CALLS_PER_SAMPLE = {"one-round": 2, "default": 4}

_WORDS_EN = ("pension", "office", "contract", "tax", "certificate", "deadline", "rule",
             "payment", "form", "branch")
_WORDS_RU = ("пенсия", "офис", "договор", "налог", "справка", "срок", "правило", "выплата",
             "заявление", "отделение")


def make_samples(n: int) -> list[Any]:
    from ragmeter.data.sample import Sample

    out = []
    for i in range(n):
        words = _WORDS_RU if i % 2 else _WORDS_EN
        w = [words[(i * 7 + k) % len(words)] for k in range(6)]
        out.append(Sample(
            id=f"s{i}", user_input=f"{w[0]} {w[1]} {i}: {w[2]}?",
            response=f"{w[0]} {w[1]} {w[2]} {i}. {w[3]} {w[4]}.",
            retrieved_contexts=[f"{w[0]} {w[1]} {w[2]} {w[3]} {i}.", f"{w[4]} {w[5]} {i}."],
            reference=f"{w[0]} {w[2]} {i}. {w[5]}."))
    return out


def _metrics(plan: str) -> list[str]:
    from ragmeter.generation.evaluate import JUDGED_DEFAULT

    return list(PLANS[plan] or JUDGED_DEFAULT)


def _config(cache: str, base_url: str = "http://127.0.0.1:9/v1", concurrency: int = 64) -> Any:
    from ragmeter.judges import JudgeConfig, RetryPolicy

    return JudgeConfig(name="bench", backend="mock", base_url=base_url, model="mock",
                       api_key_env=None, cache_dir=cache, max_concurrency=concurrency,
                       retry=RetryPolicy(initial=0.2, max=2.0, max_retries=3))


def _results_json(result: Any) -> str:
    return json.dumps({k: v.to_dict() for k, v in result.results.items()}, sort_keys=True,
                      default=str)


def _phase(name: str, args: dict[str, Any], conn: Any) -> None:
    """One phase in this (child) process; sends its CPU seconds, peak RSS and details."""
    os.environ["OMP_NUM_THREADS"] = "1"
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.judges import make_judge
    from ragmeter.judges.batchfiles import batch_scope

    info: dict[str, Any] = {}
    samples = make_samples(args["samples"]) if name in ("write", "final", "online") else []
    cpu0 = time.process_time()
    folder = Path(args.get("folder", "."))
    if name == "write":
        from ragmeter.cli.batch_files import WRITE_BATCH

        big = len(samples) > WRITE_BATCH     # planned in slices, as `--judge-batch write` does
        with batch_scope("write", folder) as s:
            evaluate_generation(samples, _metrics(args["plan"]),
                                judge=make_judge(_config(args["cache"])),
                                batch_size=WRITE_BATCH if big else None,
                                on_batch=(lambda r: None) if big else None)
        rep = s.report
        info = {"requests": rep.requests, "files": len(rep.files), "round": rep.round}
    elif name == "provider":
        from ragmeter.judges.mock_batches import run_batch_file
        from ragmeter.judges.mock_server import MockConfig

        manifest = json.loads((folder / "manifest.json").read_text())
        files = manifest["rounds"][-1]["files"]
        (folder / "results").mkdir(exist_ok=True)
        n = 0
        for f in files:
            out = folder / "results" / (Path(f["path"]).stem + f".r{args['round']}.out.jsonl")
            n += run_batch_file(folder / f["path"], out, MockConfig())["requests"]
        info = {"requests": n}
    elif name == "collect":
        with batch_scope("collect", folder) as s:
            make_judge(_config(args["cache"]))
        rep = s.report
        info = {"lines": rep.lines, "matched": rep.matched, "ok": rep.ok}
    elif name == "warm":
        from ragmeter.judges import ScriptedJudge

        evaluate_generation(make_samples(4), ["answer_correctness"],
                            judge=ScriptedJudge(lambda req: {}))
    elif name in ("final", "online"):
        judge = make_judge(_config(args["cache"], args.get("url", "http://127.0.0.1:9/v1"),
                                   args.get("concurrency", 64)))
        result = evaluate_generation(samples, _metrics(args["plan"]), judge=judge)
        st = judge.stats   # type: ignore[attr-defined]
        info = {"calls": st.calls, "cached": st.cached,
                "unscored": sum(r.aggregate.n_unscored for r in result.results.values())}
        Path(args["values"]).write_text(_results_json(result), encoding="utf-8")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    conn.send({"cpu_s": time.process_time() - cpu0, "rss_mib": ru.ru_maxrss / 1024, **info})


def run_phase(name: str, **args: Any) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    t0 = time.perf_counter()
    proc = ctx.Process(target=_phase, args=(name, args, child))
    proc.start()
    child.close()
    try:
        got = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"phase {name} failed (exit code {proc.exitcode})") from None
    proc.join()
    got["wall_s"] = time.perf_counter() - t0
    return dict(got)


def _line(label: str, r: dict[str, Any], extra: str = "") -> str:
    return (f"   {label:<22} cpu {r['cpu_s']:7.2f} s   peak RSS {r['rss_mib']:6.0f} MiB"
            + (f"   {extra}" if extra else ""))


def cli_out_run(plan: str, samples: int, base: Path) -> dict[str, Any]:
    """``ragmeter score generation --out`` over the batch cycle's cache, as a user runs it: per-sample
    records appended batch by batch; its CPU seconds and peak RSS (the whole process)."""
    import subprocess

    path = base / "samples.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for smp in make_samples(samples):
            fh.write(json.dumps({"id": smp.id, "user_input": smp.user_input,
                                 "response": smp.response, "reference": smp.reference,
                                 "retrieved_contexts": smp.retrieved_contexts},
                                ensure_ascii=False) + "\n")
    out = base / "scored.json"
    env = {**os.environ, "RAGMETER_CACHE_DIR": str(base / "cache"), "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "ragmeter", "score", "generation", "-s", str(path), "-m",
           ",".join(_metrics(plan)), "--judge-backend", "mock", "--judge-url",
           "http://127.0.0.1:9/v1", "--judge-model", "mock", "--judge-key-env", "",
           "--out", str(out), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    assert status == 0, err[-2000:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    unscored = sum(r["aggregate"]["n_unscored"] for r in doc["results"].values())
    records = sum(1 for _ in out.with_name(out.stem + ".samples.jsonl").open())
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024,
            "unscored": unscored, "records": records}


def bench_plan(plan: str, requests: int, online: bool, concurrency: int,
               cli_out: bool = True, final: bool = True, repeat: int = 1) -> dict[str, Any]:
    samples = requests // CALLS_PER_SAMPLE[plan]
    rounds = 1 if plan == "one-round" else 2
    print(f"== plan {plan}: {samples:,} samples x {CALLS_PER_SAMPLE[plan]} calls = "
          f"{samples * CALLS_PER_SAMPLE[plan]:,} requests in {rounds} round(s)", flush=True)
    out: dict[str, Any] = {"plan": plan, "samples": samples, "phases": []}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        base = Path(tmp)
        common = {"samples": samples, "plan": plan, "folder": str(base / "b"),
                  "cache": str(base / "cache")}
        cycles: list[tuple[float, float]] = []
        for rep in range(1, repeat + 1):
            if repeat > 1:
                print(f"   -- batch cycle {rep} of {repeat}", flush=True)
                shutil.rmtree(base / "b", ignore_errors=True)
                shutil.rmtree(base / "cache", ignore_errors=True)
            cpu = 0.0
            rss = 0.0
            for rnd in range(1, rounds + 1):
                w = run_phase("write", **common)
                print(_line(f"write round {rnd}", w, f"{w['requests']:,} requests, "
                                                     f"{w['files']} file(s)"), flush=True)
                p = run_phase("provider", round=rnd, **common)
                print(_line(f"(provider, mock) {rnd}", p, "not the client's work"), flush=True)
                c = run_phase("collect", **common)
                print(_line(f"collect round {rnd}", c, f"{c['matched']:,} stored"), flush=True)
                assert c["ok"], c
                cpu += w["cpu_s"] + c["cpu_s"]
                rss = max(rss, w["rss_mib"], c["rss_mib"])
                out["phases"] += [{"phase": f"write{rnd}", "cycle": rep, **w},
                                  {"phase": f"collect{rnd}", "cycle": rep, **c}]
            print(f"   batch client total     cpu {cpu:7.2f} s   peak RSS {rss:6.0f} MiB   "
                  f"(target <= 30 s, <= 500 MB at 100,000 requests)", flush=True)
            cycles.append((cpu, rss))
        cpu = statistics.median(c for c, _ in cycles)
        rss = max(r for _, r in cycles)
        if repeat > 1:
            print(f"   batch client, median of {repeat} cycles: cpu {cpu:7.2f} s (all: "
                  f"{', '.join(f'{c:.2f}' for c, _ in cycles)})   peak RSS {rss:6.0f} MiB",
                  flush=True)
        out.update(batch_cpu_s=cpu, batch_rss_mib=rss, cycles_cpu_s=[c for c, _ in cycles])
        if not final:
            return out
        f = run_phase("final", values=str(base / "final.json"), **common)
        print(_line("run from the cache", f, f"{f['calls']} calls, {f['cached']:,} cached, "
                                             f"{f['unscored']} unscored"), flush=True)
        out["final"] = f
        if cli_out:
            g = cli_out_run(plan, samples, base)
            print(_line("generation --out (CLI)", g, f"{g['records']:,} records streamed, "
                                                     f"{g['unscored']} unscored"), flush=True)
            out["cli_out"] = g
        if online:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from bench_judge import Server

            srv = Server(0.0)
            try:
                o = run_phase("online", values=str(base / "online.json"), url=srv.base_url,
                              concurrency=concurrency, **{**common,
                                                          "cache": str(base / "cache-online")})
            finally:
                srv.close()
            print(_line("online run (client)", o, f"{o['calls']:,} calls at concurrency "
                                                  f"{concurrency}, wall {o['wall_s']:.0f} s"),
                  flush=True)
            same = (base / "final.json").read_text() == (base / "online.json").read_text()
            print(f"   values: the batch cycle's run and the online run are "
                  f"{'identical' if same else 'DIFFERENT'}", flush=True)
            out.update(online=o, identical=same)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--plan", nargs="+", choices=list(PLANS), default=list(PLANS))
    ap.add_argument("--no-online", action="store_true")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3,
                    help="batch cycles (write, provider, collect) per plan; the median CPU is "
                         "the figure (default 3: CPU seconds on a shared machine vary)")
    ap.add_argument("--no-final", action="store_true",
                    help="stop after the batch cycle (no run from the cache, no online run)")
    ap.add_argument("--no-cli-out", action="store_true",
                    help="skip the `ragmeter score generation --out` run from the cache")
    ap.add_argument("--json", type=Path, help="Also write the figures here.")
    args = ap.parse_args()
    print(f"# bench_batch.py {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPU(s), load "
          f"average {os.getloadavg()[0]:.1f}; CPU seconds and peak RSS per phase process",
          flush=True)
    run_phase("warm")   # the embedder of answer_correctness loads (and caches) its model once
    got = [bench_plan(p, args.requests, not args.no_online, args.concurrency,
                      not args.no_cli_out, not args.no_final, args.repeat) for p in args.plan]
    if args.json:
        args.json.write_text(json.dumps(got, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
