"""Judge-engine orchestration benchmark against the fake OpenAI-compatible server.

    python benchmarks/bench_judge.py [--samples 200] [--calls 5] [--latency-ms 200]
                                     [--concurrency 16 64] [--repeats 3] [--fault-rate 0.2]
                                     [--cap-scenario | --only cap]

Work: ``samples × calls`` distinct judge requests (~1.5 KB prompts, a yes/no JSON schema) over
HTTP to the fake server (run in a *separate process*, like a real provider, so it does not
share the client's GIL). Reported per concurrency C: median wall time of ``--repeats`` runs
and the ratio to the bound ``calls × latency / C``; then a cached rerun (must make 0 calls)
and a run with ``--fault-rate`` injected faults (429 with Retry-After, 500, timeout, invalid
JSON, truncated) where no sample may be lost: each is scored or unscored with its reason.

``--cap-scenario`` (or ``--only cap``): 50 samples × 4 calls at C=16, sent as two batches (150,
then 50, like the generation plan) to one judge, against a server that answers HTTP 429
(``Retry-After: 1``) above 8 in flight. Bound ``200 × latency / 8``; reported: median wall,
ratio, 429s, retries, cuts; no sample may be lost.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
import urllib.request
from typing import Any

from ragmeter.judges import JudgeConfig, JudgeRequest, RetryPolicy, make_judge
from ragmeter.judges.base import UNSCORED_REASONS
from ragmeter.judges.prompts import get_prompt


def _serve(conn: Any, latency_ms: float, fault_rate: float, seed: int,
           extra: dict[str, Any]) -> None:
    from ragmeter.judges.mock_server import MockConfig, serve_forever

    kw: dict[str, Any] = dict(latency_ms=latency_ms, fault_rate=fault_rate, hang_s=5.0,
                              retry_after_s=0.5, seed=seed)
    kw.update(extra)
    cfg = MockConfig(**kw)
    serve_forever(cfg, port=0, on_ready=lambda srv: conn.send(srv.port))


class Server:
    """The fake server in a child process."""

    def __init__(self, latency_ms: float, fault_rate: float = 0.0, seed: int = 0,
                 **extra: Any):
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, latency_ms, fault_rate, seed, extra),
                                daemon=True)
        self.proc.start()
        if not parent.poll(30):
            raise RuntimeError("fake server did not start")
        self.port = parent.recv()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url[:-3] + "/stats", timeout=5) as resp:
            return dict(json.loads(resp.read()))

    def reset(self) -> None:
        req = urllib.request.Request(self.base_url[:-3] + "/reset", data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=5):
            pass

    def close(self) -> None:
        self.proc.terminate()
        self.proc.join(5)


def make_requests(samples: int, calls: int) -> list[JudgeRequest]:
    tpl = get_prompt("yes_no")
    filler = ("Москва — столица России, крупнейший по численности населения город страны. "
              "Moscow is the capital of Russia and its largest city. ") * 8
    reqs = []
    for s in range(samples):
        for c in range(calls):
            reqs.append(tpl.request("ru" if c % 2 else "en",
                                    question=f"Does context {c} support claim {c} of sample {s}?",
                                    text=f"[{s}/{c}] {filler}", metric=f"m{c}",
                                    sample_id=str(s)))
    return reqs


def run_once(base_url: str, reqs: list[JudgeRequest], concurrency: int, *,
             cache_dir: str | None = None, timeout_s: float = 30.0) -> tuple[float, Any, list]:
    cfg = JudgeConfig(name="bench", backend="openai", base_url=base_url, model="mock",
                      api_key_env=None, max_concurrency=concurrency, timeout_s=timeout_s,
                      no_cache=cache_dir is None, cache_dir=cache_dir,
                      retry=RetryPolicy(initial=0.5, max=4.0, multiplier=2.0, max_retries=4))
    judge = make_judge(cfg)
    t0 = time.perf_counter()
    replies = judge.ask_many(reqs)
    wall = time.perf_counter() - t0
    return wall, judge.last_stats, replies  # type: ignore[attr-defined]


def speed(args: argparse.Namespace, reqs: list[JudgeRequest], out: dict[str, Any]) -> None:
    """Wall time vs bound at each concurrency (median of repeats), then the cached rerun."""
    n = len(reqs)
    lat = args.latency_ms / 1000.0
    srv = Server(args.latency_ms)
    try:
        for c in args.concurrency:
            walls, peaks, cpus, p95s = [], [], [], []
            for _ in range(args.repeats):
                srv.reset()
                cpu0 = time.process_time()
                wall, st, replies = run_once(srv.base_url, reqs, c)
                cpus.append(time.process_time() - cpu0)
                p95s.append(st.p95_s)
                s = srv.stats()
                assert s["requests"] == n and all(r.ok for r in replies), (s, st.summary())
                walls.append(wall)
                peaks.append(s["peak_in_flight"])
            bound = n * lat / c
            med = statistics.median(walls)
            out["runs"][f"c{c}"] = {"median_wall_s": round(med, 3), "bound_s": round(bound, 3),
                                    "ratio": round(med / bound, 3),
                                    "walls_s": [round(w, 3) for w in walls],
                                    "server_peak_in_flight": max(peaks),
                                    "client_cpu_ms_per_call": round(
                                        1000 * statistics.median(cpus) / n, 3),
                                    "latency_p95_s": round(statistics.median(p95s), 3)}
            print(f"C={c:3d}: median {med:6.2f} s  bound {bound:6.2f} s  ratio "
                  f"{med / bound:5.3f}  (runs {', '.join(f'{w:.2f}' for w in walls)}; "
                  f"server peak in flight {max(peaks)}; client CPU "
                  f"{1000 * statistics.median(cpus) / n:.2f} ms/call; call p95 "
                  f"{statistics.median(p95s):.3f} s)")

        with tempfile.TemporaryDirectory() as cache:
            c = args.concurrency[0]
            srv.reset()
            run_once(srv.base_url, reqs, c, cache_dir=cache)
            first = srv.stats()["requests"]
            srv.reset()
            wall, st, replies = run_once(srv.base_url, reqs, c, cache_dir=cache)
            calls = srv.stats()["requests"]
            assert all(r.cached for r in replies)
            out["cached_rerun"] = {"wall_s": round(wall, 3), "server_requests": calls,
                                   "first_run_requests": first}
            print(f"cached rerun: {wall:.2f} s, {calls} server requests "
                  f"(first run {first})")
    finally:
        srv.close()


def faults(args: argparse.Namespace, reqs: list[JudgeRequest], out: dict[str, Any]) -> None:
    """One run with injected faults: no sample may be lost."""
    n = len(reqs)
    fsrv = Server(args.latency_ms, fault_rate=args.fault_rate, seed=1)
    try:
        c = args.concurrency[0]
        wall, st, replies = run_once(fsrv.base_url, reqs, c, timeout_s=1.0)
        s = fsrv.stats()
        lost = n - len(replies)
        bad = [r for r in replies if not r.ok and r.reason not in UNSCORED_REASONS]
        assert lost == 0 and not bad
        by_retry = sum(1 for r in replies if r.ok and r.extra.get("retries"))
        by_repair = sum(1 for r in replies if r.ok and r.extra.get("repaired"))
        out["faults"] = {"fault_rate": args.fault_rate, "concurrency": c,
                         "wall_s": round(wall, 3), "lost": lost, "scored": st.scored,
                         "recovered_by_retry": by_retry, "recovered_by_repair": by_repair,
                         "unscored": dict(st.reasons), "retries": st.retries,
                         "server_requests": s["requests"], "injected": s["faults"]}
        print(f"faults {args.fault_rate:.0%} at C={c}: {wall:.2f} s; lost {lost}; scored "
              f"{st.scored}/{n} ({by_retry} after retries, {by_repair} after repair); "
              f"unscored {dict(st.reasons)}; {st.retries} retries; injected {s['faults']}")
    finally:
        fsrv.close()


def cap_scenario(args: argparse.Namespace, out: dict[str, Any], server_cap: int = 8,
                 concurrency: int = 16, samples: int = 50, calls: int = 4) -> None:
    """200 requests at C=16 against a server that answers 429 above ``server_cap`` in flight."""
    reqs = make_requests(samples, calls)
    n = len(reqs)
    first = 3 * n // 4
    lat = args.latency_ms / 1000.0
    bound = n * lat / server_cap
    srv = Server(args.latency_ms, max_concurrency=server_cap, reject_over_cap=True,
                 retry_after_s=1.0)
    try:
        runs = []
        for _ in range(args.repeats):
            srv.reset()
            cfg = JudgeConfig(name="bench", backend="openai", base_url=srv.base_url,
                              model="mock", api_key_env=None, max_concurrency=concurrency,
                              timeout_s=30.0, no_cache=True)  # default RetryPolicy
            judge = make_judge(cfg)
            t0 = time.perf_counter()
            replies = judge.ask_many(reqs[:first])
            st1 = judge.last_stats  # type: ignore[attr-defined]
            replies += judge.ask_many(reqs[first:])
            st2 = judge.last_stats  # type: ignore[attr-defined]
            wall = time.perf_counter() - t0
            s = srv.stats()
            lost = n - sum(1 for r in replies if r.ok or r.reason in UNSCORED_REASONS)
            run = {"wall_s": round(wall, 3), "ratio": round(wall / bound, 3),
                   "http_429": s["rejected_over_cap"], "server_requests": s["requests"],
                   "server_peak_in_flight": s["peak_in_flight"], "lost": lost,
                   "scored": sum(r.ok for r in replies),
                   "retries": st1.retries + st2.retries,
                   "cuts": [st1.concurrency_cuts, st2.concurrency_cuts],
                   "batch_walls_s": [round(st1.wall_s, 3), round(st2.wall_s, 3)]}
            runs.append(run)
            print(f"cap {server_cap}, C={concurrency}: {wall:.2f} s (ratio {wall / bound:.2f}); "
                  f"429s {run['http_429']}; retries {run['retries']}; cuts {run['cuts']}; "
                  f"batches {run['batch_walls_s']}; scored {run['scored']}/{n}; lost {lost}")
            assert lost == 0
        med = statistics.median(r["wall_s"] for r in runs)
        out["cap_scenario"] = {"server_cap": server_cap, "concurrency": concurrency,
                               "requests": n, "batches": [first, n - first],
                               "bound_s": round(bound, 3), "median_wall_s": round(med, 3),
                               "ratio": round(med / bound, 3), "runs": runs}
        print(f"cap scenario: median {med:.2f} s, bound {bound:.2f} s, ratio {med / bound:.2f}")
    finally:
        srv.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--only", choices=["all", "speed", "faults", "cap"], default="all")
    ap.add_argument("--cap-scenario", action="store_true",
                    help="also 200 requests at C=16 against a 429-above-8-in-flight server")
    ap.add_argument("--json", default="", help="also write the figures to this file")
    args = ap.parse_args()

    reqs = make_requests(args.samples, args.calls)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(reqs)} requests, latency {args.latency_ms:g} ms, {os.cpu_count()} CPUs, "
          f"load average {load:.1f}")
    n = len(reqs)
    out: dict[str, Any] = {"samples": args.samples, "calls_per_sample": args.calls,
                           "load_average": load,
                           "requests": n, "latency_ms": args.latency_ms, "runs": {}}
    if args.only in ("all", "speed"):
        speed(args, reqs, out)
    if args.only in ("all", "faults"):
        faults(args, reqs, out)
    if args.only == "cap" or args.cap_scenario:
        cap_scenario(args, out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
