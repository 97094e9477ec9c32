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

``--only limiter``: the same requests at C=16 three times, one run each: fault-free; 20 %
random HTTP 429 (``Retry-After: 1``); 5 % calls that hang past the timeout (``--timeout``).
Printed: each wall, ``429 wall / fault-free wall`` (target ≤ 1.5) and ``(hang wall -
fault-free wall) / timeout`` (target ≤ 1.5), and the engine's decisions.

``--only pool``: ``--pool-requests`` requests at C=16 per endpoint against one fake server
that answers 429 above 8 in flight, then against pools of ``--pool-servers`` such servers
(default 2). Printed: the throughput ratios (target ≥ 1.8 with two).

``--only judged``: the full judged metric set (≤ 4 calls per sample) on ``--judged-samples``
synthetic samples, fault-free and with ``--fault-rate`` mixed faults (429, 500, hang,
invalid JSON, truncated). Printed: walls, ratio (target ≤ 3), lost samples (must be 0).

``--only cpu``: client CPU per request and per judged sample at 0 ms server latency for
``--cpu-n`` requests (default 1,000 and 5,000; the judged set on ``N / 8`` samples, one per
judged metric), beside a
bare aiohttp loop posting the same requests in the same run (ratio printed; best of
``--repeats``). Target: ≤ 0.35 ms per request, flat from 1,000 to 5,000.

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
    # backend "mock": the fake server's replies are cached in its own namespace only
    cfg = JudgeConfig(name="bench", backend="mock", base_url=base_url, model="mock",
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
                   "batch_walls_s": [round(st1.wall_s, 3), round(st2.wall_s, 3)],
                   "decisions": dict(getattr(st1, "decisions", {}))}
            runs.append(run)
            print(f"cap {server_cap}, C={concurrency}: {wall:.2f} s (ratio {wall / bound:.2f}); "
                  f"429s {run['http_429']}; retries {run['retries']}; cuts {run['cuts']}; "
                  f"batches {run['batch_walls_s']}; scored {run['scored']}/{n}; lost {lost}; "
                  f"decisions (batch 1) {run['decisions']}")
            assert lost == 0
        med = statistics.median(r["wall_s"] for r in runs)
        out["cap_scenario"] = {"server_cap": server_cap, "concurrency": concurrency,
                               "requests": n, "batches": [first, n - first],
                               "bound_s": round(bound, 3), "median_wall_s": round(med, 3),
                               "ratio": round(med / bound, 3), "runs": runs}
        print(f"cap scenario: median {med:.2f} s, bound {bound:.2f} s, ratio {med / bound:.2f}")
    finally:
        srv.close()


def _faulty(kinds: tuple[str, ...], rate: float, **extra: Any) -> dict[str, Any]:
    return dict(fault_rate=rate, fault_kinds=kinds, **extra)


def _timed(base_url: str, reqs: list[JudgeRequest], *, concurrency: int = 16,
           timeout_s: float = 30.0, backend: str = "openai") -> tuple[float, Any, list]:
    cfg = JudgeConfig(name="bench", backend=backend, base_url=base_url, model="mock",
                      api_key_env=None, max_concurrency=concurrency, timeout_s=timeout_s,
                      no_cache=True)  # the default RetryPolicy, as a user gets it
    judge = make_judge(cfg)
    t0 = time.perf_counter()
    replies = judge.ask_many(reqs)
    return time.perf_counter() - t0, judge.last_stats, replies  # type: ignore[attr-defined]


def limiter(args: argparse.Namespace, reqs: list[JudgeRequest], out: dict[str, Any]) -> None:
    """Fault-free vs 20 % random 429s vs 5 % hung calls, same requests, C=16."""
    n = len(reqs)
    res: dict[str, Any] = {"requests": n, "timeout_s": args.timeout, "concurrency": 16}
    scenarios = [
        ("fault_free", {}),
        ("random_429", _faulty(("429",), 0.2, retry_after_s=1.0)),
        ("hang", _faulty(("timeout",), 0.05, hang_s=10 * args.timeout)),
    ]
    for name, extra in scenarios:
        srv = Server(args.latency_ms, seed=7, **extra)
        try:
            wall, st, replies = _timed(srv.base_url, reqs, timeout_s=args.timeout)
            s = srv.stats()
        finally:
            srv.close()
        lost = n - sum(1 for r in replies if r.ok or r.reason in UNSCORED_REASONS)
        res[name] = {"wall_s": round(wall, 3), "scored": st.scored, "lost": lost,
                     "server_requests": s["requests"], "injected": s["faults"],
                     "peak_in_flight": st.peak_in_flight,
                     "decisions": dict(getattr(st, 'decisions', {})), "unscored": dict(st.reasons)}
        print(f"{name:10s}: {wall:6.2f} s; scored {st.scored}/{n}; lost {lost}; injected "
              f"{s['faults']}; decisions {dict(getattr(st, 'decisions', {}))}")
    base = res["fault_free"]["wall_s"]
    r429 = res["random_429"]["wall_s"] / base
    hang = (res["hang"]["wall_s"] - base) / args.timeout
    res["ratio_429"] = round(r429, 3)
    res["hang_extra_in_timeouts"] = round(hang, 3)
    out["limiter"] = res
    print(f"20 % random 429: {r429:.2f}x the fault-free wall (target <= 1.5)")
    print(f"5 % hung calls: fault-free + {hang:.2f} x timeout (target <= 1.5)")


def pool(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Throughput of one 8-slot server vs pools of several (``--pool-servers``, default 2)."""
    reqs = make_requests(args.pool_requests // 4, 4)
    n = len(reqs)
    kw = dict(max_concurrency=8, reject_over_cap=True, retry_after_s=1.0)
    most = max(args.pool_servers)
    servers = [Server(args.latency_ms, seed=i, **kw) for i in range(most)]
    walls: dict[int, float] = {}
    per: dict[int, list[dict[str, Any]]] = {}
    try:
        walls[1], _, rep1 = _timed(servers[0].base_url, reqs)
        assert all(r.ok for r in rep1)
        for k in args.pool_servers:
            for srv in servers:
                srv.reset()
            cfg = JudgeConfig(name="bench", backend="openai",
                              base_url=tuple(srv.base_url for srv in servers[:k]),
                              model="mock", api_key_env=None, max_concurrency=16,
                              timeout_s=30.0, no_cache=True)
            judge = make_judge(cfg)
            t0 = time.perf_counter()
            rep = judge.ask_many(reqs)
            walls[k] = time.perf_counter() - t0
            assert all(r.ok for r in rep)
            per[k] = [srv.stats() for srv in servers[:k]]
    finally:
        for srv in servers:
            srv.close()
    wall1, wall2 = walls[1], walls[args.pool_servers[0]]
    ratio = wall1 / wall2
    out["pool"] = {"requests": n, "one_server_wall_s": round(wall1, 3),
                   "pool_wall_s": {str(k): round(walls[k], 3) for k in args.pool_servers},
                   "throughput_ratio": {str(k): round(wall1 / walls[k], 3)
                                        for k in args.pool_servers},
                   "per_server_ok": {str(k): [p["ok"] for p in per[k]] for k in per}}
    for k in args.pool_servers:
        print(f"pool: one server {wall1:.2f} s ({n / wall1:.1f}/s), {k} servers "
              f"{walls[k]:.2f} s ({n / walls[k]:.1f}/s; ok per server "
              f"{[p['ok'] for p in per[k]]}); throughput {wall1 / walls[k]:.2f}x"
              + (" (target >= 1.8)" if k == 2 else f" (ideal {k}x)"))
    print(f"pool: throughput {ratio:.2f}x with {args.pool_servers[0]} servers")


def _judged_reply(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """Content of the fake judge for the judged metric prompts (valid ids and lengths)."""
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    here = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "generation"
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    from fake_judge import make_script  # the tests' scripted judge

    global _SCRIPT
    if _SCRIPT is None:
        _SCRIPT = make_script()
    return _SCRIPT(SimpleNamespace(schema=schema or {}, messages=body["messages"]))


_SCRIPT: Any = None


def judged(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """The full judged set on N samples: fault-free vs mixed faults."""
    from ragmeter.data.sample import Sample
    from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation

    n = args.judged_samples
    samples = [Sample(id=f"s{i}", user_input=f"Where is city {i}?",
                      response=f"City {i} is in country {i % 7}. It is large.",
                      reference=f"City {i} is in country {i % 7}.",
                      retrieved_contexts=[f"City {i} is in country {i % 7}. [rel=2] [useful]",
                                          f"Cats purr {i}."]) for i in range(n)]
    res: dict[str, Any] = {"samples": n, "timeout_s": args.timeout}
    mixed = ("429", "500", "timeout", "invalid_json", "truncated")
    for name, extra in (("fault_free", {}),
                        ("mixed", _faulty(mixed, args.fault_rate, retry_after_s=1.0,
                                          hang_s=10 * args.timeout))):
        srv = Server(args.latency_ms, seed=3, reply_fn=_judged_reply, **extra)
        try:
            cfg = JudgeConfig(name="bench", backend="openai", base_url=srv.base_url,
                              model="mock", api_key_env=None, timeout_s=args.timeout,
                              no_cache=True)
            judge = make_judge(cfg)
            t0 = time.perf_counter()
            result = evaluate_generation(samples, list(JUDGED_DEFAULT), judge=judge)
            wall = time.perf_counter() - t0
            s = srv.stats()
        finally:
            srv.close()
        st = judge.stats  # type: ignore[attr-defined]
        lost = max((n - len(set(m.sample_ids)) for m in result), default=n)
        scored = {m.metric: int(sum(1 for v in m.values if v == v)) for m in result}
        res[name] = {"wall_s": round(wall, 3), "lost": lost, "server_requests": s["requests"],
                     "injected": s["faults"], "scored_per_metric": scored,
                     "decisions": dict(getattr(st, 'decisions', {}))}
        print(f"judged {name:10s}: {wall:6.2f} s; {s['requests']} requests; lost {lost}; "
              f"injected {s['faults']}; decisions {dict(getattr(st, 'decisions', {}))}")
    ratio = res["mixed"]["wall_s"] / res["fault_free"]["wall_s"]
    res["ratio"] = round(ratio, 3)
    out["judged"] = res
    print(f"judged set, N={n}, {args.fault_rate:.0%} mixed faults: {ratio:.2f}x the "
          f"fault-free wall (target <= 3), lost {res['mixed']['lost']}")


def _bare_bodies(reqs: list[JudgeRequest]) -> list[dict[str, Any]]:
    return [{"model": "mock", "messages": list(r.messages), "temperature": 0.0,
             "max_tokens": 512, "seed": 0,
             "response_format": {"type": "json_schema", "json_schema": {
                 "name": "judge_reply", "strict": False, "schema": r.schema}}}
            for r in reqs]


def _bare_loop(base_url: str, reqs: list[JudgeRequest], concurrency: int) -> float:
    """Client CPU seconds of a bare aiohttp loop posting the same requests (no engine)."""
    import asyncio

    import aiohttp

    url = base_url + "/chat/completions"

    async def main() -> None:
        sem = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=2 * concurrency + 4)) as session:
            async def one(body: dict[str, Any]) -> None:
                async with sem, session.post(url, json=body) as resp:
                    payload = json.loads(await resp.read())
                    json.loads(payload["choices"][0]["message"]["content"])

            await asyncio.gather(*(one(b) for b in _bare_bodies(reqs)))

    cpu0 = time.process_time()
    asyncio.run(main())
    return time.process_time() - cpu0


def _judged_samples(n: int) -> list[Any]:
    from ragmeter.data.sample import Sample

    return [Sample(id=f"s{i}", user_input=f"Where is city {i}?",
                   response=f"City {i} is in country {i % 7}. It is large.",
                   reference=f"City {i} is in country {i % 7}.",
                   retrieved_contexts=[f"City {i} is in country {i % 7}. [rel=2] [useful]",
                                       f"Cats purr {i}."]) for i in range(n)]


def cpu(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Client CPU per request and per judged sample at 0 ms server latency, beside a bare
    aiohttp loop posting the same requests in the same run."""
    from ragmeter.generation.evaluate import JUDGED_DEFAULT, evaluate_generation

    c = args.concurrency[0]
    res: dict[str, Any] = {"concurrency": c}
    srv = Server(0.0)
    jsrv = Server(0.0, seed=3, reply_fn=_judged_reply)
    try:
        for n in args.cpu_n:
            reqs = make_requests(n // args.calls + 1, args.calls)[:n]
            bare = min(_bare_loop(srv.base_url, reqs, c) for _ in range(args.repeats))
            engine = []
            for _ in range(args.repeats):
                cpu0 = time.process_time()
                _, st, replies = run_once(srv.base_url, reqs, c)
                engine.append(time.process_time() - cpu0)
                assert all(r.ok for r in replies), st.summary()
            eng = min(engine)
            n_samples = max(1, n // len(JUDGED_DEFAULT))
            samples = _judged_samples(n_samples)
            cfg = JudgeConfig(name="bench", backend="openai", base_url=jsrv.base_url,
                              model="mock", api_key_env=None, max_concurrency=c,
                              no_cache=True)
            per_sample = []
            calls = 0
            for _ in range(args.repeats):
                judge = make_judge(cfg)
                jsrv.reset()
                cpu0 = time.process_time()
                evaluate_generation(samples, list(JUDGED_DEFAULT), judge=judge)
                per_sample.append(time.process_time() - cpu0)
                calls = jsrv.stats()["requests"]
            smp = min(per_sample)
            row = {"requests": n, "bare_ms_per_request": round(1000 * bare / n, 4),
                   "engine_ms_per_request": round(1000 * eng / n, 4),
                   "ratio_to_bare": round(eng / bare, 3),
                   "judged_samples": n_samples, "judged_requests": calls,
                   "engine_ms_per_sample": round(1000 * smp / n_samples, 4),
                   "engine_ms_per_judged_request": round(1000 * smp / max(1, calls), 4)}
            res[f"n{n}"] = row
            print(f"cpu N={n:5d}: engine {row['engine_ms_per_request']:.3f} ms/request, bare "
                  f"aiohttp {row['bare_ms_per_request']:.3f} ms/request, ratio "
                  f"{row['ratio_to_bare']:.2f}x; judged set {n_samples} samples "
                  f"({calls} requests): {row['engine_ms_per_sample']:.3f} ms/sample, "
                  f"{row['engine_ms_per_judged_request']:.3f} ms/request")
    finally:
        srv.close()
        jsrv.close()
    out["cpu"] = res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--only", nargs="+", default=["all"],
                    choices=["all", "speed", "faults", "cap", "limiter", "pool", "judged",
                             "cpu"])
    ap.add_argument("--timeout", type=float, default=3.0,
                    help="per-call timeout of the limiter and judged scenarios (seconds)")
    ap.add_argument("--pool-requests", type=int, default=400)
    ap.add_argument("--pool-servers", type=int, nargs="+", default=[2],
                    help="pool sizes compared with one server (--only pool)")
    ap.add_argument("--judged-samples", type=int, default=500)
    ap.add_argument("--cap-scenario", action="store_true",
                    help="also 200 requests at C=16 against a 429-above-8-in-flight server")
    ap.add_argument("--cpu-n", type=int, nargs="+", default=[1000, 5000],
                    help="request counts of the client CPU scenario")
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
    only = set(args.only)
    if only & {"all", "speed"}:
        speed(args, reqs, out)
    if only & {"all", "faults"}:
        faults(args, reqs, out)
    if "cap" in only or args.cap_scenario:
        cap_scenario(args, out)
    if "limiter" in only:
        limiter(args, reqs, out)
    if "pool" in only:
        pool(args, out)
    if "judged" in only:
        judged(args, out)
    if "cpu" in only:
        cpu(args, out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
