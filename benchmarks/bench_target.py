"""Target-call benchmark: ragmeter calling a user's RAG service, against a bare client loop.

    python benchmarks/bench_target.py [--overhead-n 500] [--calls 1000] [--latency-ms 200]
                                      [--concurrency 16] [--fault-rate 0.2] [--ttft-ms 100]

A minimal JSON service runs in a *separate process* on 127.0.0.1 (so it does not share the
client's GIL): ``POST /answer`` replies a fixed answer with three contexts after
``latency_ms`` (per request, from the URL), answering 429 (``Retry-After``) to a seeded share
of requests; ``POST /v1/chat/completions`` streams an answer whose first token comes after
``ttft_ms``. Printed, in one run:

1. client overhead per call at zero latency, one call at a time: ragmeter's ``http`` target
   (request template, response mapping, recorded replies, latency capture) minus a bare
   aiohttp loop posting the same request in the same run (median of repeats; target ≤ 2 ms);
2. ``--calls`` calls at ``--latency-ms`` and ``--concurrency``: wall / (calls × latency ÷
   concurrency) (target ≤ 1.10), beside a bare aiohttp client with a semaphore (what the
   machine itself allows);
3. the same with ``--fault-rate`` random 429s: wall / fault-free wall (target ≤ 1.5), no
   sample lost;
4. the ``openai`` target's time to first token against the injected ``--ttft-ms``: median
   |TTFT − delay| (target ≤ 5 ms);
5. ``ragmeter run`` (the CLI, in its own process: an ``e2e`` tier scoring ``rouge_l`` on an
   ``http`` target, the default batch size and ``max_concurrency``) on ``--run-n`` questions
   at ``--run-latency-ms``, against a bare aiohttp client sending the same calls with the
   same concurrency, interleaved ``--run-repeats`` times: medians of the wall times, the
   tier's own wall (its first batch started -> its last batch saved, from the run's
   ``progress.jsonl``) and CPU seconds (target: the tier ≤ 1.10× the bare client). On a
   machine shared with other work the walls are inflated by waiting for a CPU; the CPU
   seconds are not.

``--only-run`` prints line 5 alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

REPLY = {"answer": "Плата за общежитие — 950 рублей в месяц.",
         "contexts": ["Плата составляет 950 рублей.", "Оплата до 10-го числа.", "Общежитие 3."],
         "context_ids": ["dorm-payment#0", "dorm-payment#1", "dorms#2"]}


def _serve(port: int, ready: Any) -> None:
    from aiohttp import web

    rng = random.Random(7)

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        latency = float(request.query.get("latency_ms", 0)) / 1000.0
        if rng.random() < float(request.query.get("fault", 0)):
            return web.json_response({"error": "busy"}, status=429,
                                     headers={"Retry-After": request.query.get("ra", "0.2")})
        if latency:
            await asyncio.sleep(latency)
        return web.json_response(REPLY)

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        delay = float(request.query.get("ttft_ms", 0)) / 1000.0
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await asyncio.sleep(delay)
        for i, word in enumerate(REPLY["answer"].split(" ")):
            chunk = {"choices": [{"index": 0, "delta": {"content": (" " if i else "") + word}}]}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/answer", answer)
    app.router.add_post("/v1/chat/completions", chat)
    ready.set()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session(cfg: dict[str, Any], store: Path) -> Any:
    from ragmeter.targets import TargetSession

    return TargetSession(cfg, store=store)


def _samples(n: int, tag: str) -> list[Any]:
    from ragmeter.data.sample import Sample

    return [Sample(f"{tag}{i}", f"Сколько стоит общежитие? ({tag} {i})") for i in range(n)]


async def _bare(url: str, n: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        t0 = time.perf_counter()
        for i in range(n):
            async with s.post(url, json={"question": f"q {i}", "k": 5}) as r:
                json.loads(await r.read())
        return time.perf_counter() - t0


async def _bare_loaded(url: str, calls: int, conc: int) -> float:
    """The same calls with a bare aiohttp client and a semaphore: the machine's own bound."""
    import aiohttp

    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def one(i: int) -> None:
            async with sem, s.post(url, json={"question": f"q {i}"}) as r:
                await r.read()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return time.perf_counter() - t0


def overhead(base: str, n: int, repeats: int, store: Path) -> tuple[float, float]:
    """(bare ms per call, ragmeter ms per call), medians of ``repeats``."""
    url = base + "/answer?latency_ms=0"
    bare, ours = [], []
    for r in range(repeats):
        bare.append(asyncio.run(_bare(url, n)) / n * 1000)
        s = _session({"kind": "http", "url": url, "max_concurrency": 1,
                      "request": {"question": "{question}", "k": "{k}"},
                      "response": {"answer": "answer", "contexts": "contexts",
                                   "context_ids": "context_ids"}}, store)
        t0 = time.perf_counter()
        out = s.answer(_samples(n, f"o{r}-"), k=5)
        ours.append((time.perf_counter() - t0) / n * 1000)
        assert all(x.response for x in out)
    return statistics.median(bare), statistics.median(ours)


def loaded(base: str, calls: int, latency_ms: float, conc: int, fault: float,
           store: Path, tag: str) -> tuple[float, Any, Any]:
    s = _session({"kind": "http", "url": f"{base}/answer?latency_ms={latency_ms}&fault={fault}",
                  "max_concurrency": conc, "max_retries": 10, "retry_initial_s": 0.2}, store)
    t0 = time.perf_counter()
    out = s.answer(_samples(calls, tag))
    return time.perf_counter() - t0, out, s.caller.counts


async def _bare_ttft(url: str, n: int) -> list[float]:
    """Time to the first streamed data line with a bare aiohttp client (same server, same
    run): what the machine itself adds to the injected delay."""
    import aiohttp

    out = []
    async with aiohttp.ClientSession() as s:
        for i in range(n):
            t0 = time.perf_counter()
            async with s.post(url, json={"model": "m", "stream": True, "messages": [
                    {"role": "user", "content": f"q {i}"}]}) as r:
                async for line in r.content:
                    if line.startswith(b"data:"):
                        out.append((time.perf_counter() - t0) * 1000)
                        break
                await r.read()
    return out


def ttft(base: str, delay_ms: float, n: int, store: Path) -> list[float]:
    s = _session({"kind": "openai", "url": f"{base}/v1/chat/completions?ttft_ms={delay_ms}",
                  "max_concurrency": 1}, store)
    out = s.answer(_samples(n, "t"))
    return [x.metadata["target_call"]["ttft_s"] * 1000 for x in out]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_config(base: str, n: int, latency_ms: float, tmp: Path) -> Path:
    """An evalset of ``n`` questions of our own and a benchmark config asking the service
    through an ``http`` target (default batch size and concurrency)."""
    evalset = tmp / "evalset.jsonl"
    with evalset.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"q{i}", "question": f"Сколько стоит общежитие? ({i})",
                                "reference": "Плата за общежитие — 950 рублей в месяц.",
                                "gold_doc_ids": ["dorm-payment"]}, ensure_ascii=False) + "\n")
    cfg = tmp / "bench.yaml"
    cfg.write_text(json.dumps({
        "name": "bench-target", "datasets": [{"path": str(evalset), "format": "evalset"}],
        "run_dir": str(tmp / "runs"), "store": str(tmp / "store.sqlite"),
        "target": {"kind": "http", "url": f"{base}/answer?latency_ms={latency_ms:g}"},
        "tiers": [{"name": "e2e", "metrics": ["rouge_l"]}]}), encoding="utf-8")
    return cfg


def _tier_wall(run_dir: Path) -> float:
    """The tier's own wall time: its start -> its last batch saved (``progress.jsonl``)."""
    recs = [json.loads(x) for x in (run_dir / "progress.jsonl").read_text().splitlines()
            if x.strip()]
    start = next(r["at"] for r in recs if r.get("type") == "tier_start")
    return float(max(r["at"] for r in recs if r.get("type") == "batch") - start)


def run_vs_bare(base: str, n: int, latency_ms: float, repeats: int, tmp: Path
                ) -> dict[str, list[float]]:
    """Line 5: ``ragmeter run`` on a target against a bare client, interleaved."""
    cfg = _run_config(base, n, latency_ms, tmp)
    env = {**os.environ, "RAGMETER_CACHE_DIR": str(tmp / "cache"),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent / "src"),
                                          os.environ.get("PYTHONPATH", "")])}
    url = f"{base}/answer?latency_ms={latency_ms:g}"
    got: dict[str, list[float]] = {k: [] for k in ("bare", "bare_cpu", "run", "run_cpu",
                                                   "tier")}
    conc = 16   # the target's default max_concurrency, and the default batch size
    for r in range(repeats):
        c0 = time.process_time()
        got["bare"].append(asyncio.run(_bare_loaded(url, n, conc)))
        got["bare_cpu"].append(time.process_time() - c0)
        run_id = f"bench{r}-{random.Random().randrange(1 << 30):x}"
        c0, t0 = _children_cpu(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ragmeter", "run", str(cfg), "--quiet",
                               "--run-id", run_id], env=env, capture_output=True, text=True)
        got["run"].append(time.perf_counter() - t0)
        got["run_cpu"].append(_children_cpu() - c0)
        if proc.returncode != 0:
            raise SystemExit(f"ragmeter run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        got["tier"].append(_tier_wall(tmp / "runs" / run_id))
    return got


def _print_run(got: dict[str, list[float]], n: int, latency_ms: float, repeats: int) -> None:
    med = {k: statistics.median(v) for k, v in got.items()}
    print(f"5. ragmeter run, e2e tier on an http target, default batch size, {n} calls at "
          f"{latency_ms:g} ms (medians of {repeats}, interleaved): bare aiohttp (concurrency "
          f"16) {med['bare']:.2f} s wall, {med['bare_cpu']:.2f} CPU-s; the tier "
          f"{med['tier']:.2f} s -> {med['tier'] / med['bare']:.2f}x (target <= 1.10); the "
          f"whole command {med['run']:.2f} s wall ({med['run'] / med['bare']:.2f}x, start-up "
          f"and saving included), {med['run_cpu']:.2f} CPU-s; every tier wall "
          f"{', '.join(f'{x:.2f}' for x in got['tier'])}, bare "
          f"{', '.join(f'{x:.2f}' for x in got['bare'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overhead-n", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--ttft-ms", type=float, default=100.0)
    ap.add_argument("--ttft-n", type=int, default=40)
    ap.add_argument("--run-n", type=int, default=500)
    ap.add_argument("--run-latency-ms", type=float, default=100.0)
    ap.add_argument("--run-repeats", type=int, default=3)
    ap.add_argument("--only-run", action="store_true")
    args = ap.parse_args()

    port = _free_port()
    ready = mp.Event()
    proc = mp.Process(target=_serve, args=(port, ready), daemon=True)
    proc.start()
    ready.wait(30)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    tmp = Path(tempfile.mkdtemp(prefix="bench-target-"))
    store = tmp / "replies.sqlite"
    try:
        if args.only_run:
            got = run_vs_bare(base, args.run_n, args.run_latency_ms, args.run_repeats, tmp)
            _print_run(got, args.run_n, args.run_latency_ms, args.run_repeats)
            return
        bare, ours = overhead(base, args.overhead_n, args.repeats, store)
        print(f"1. overhead at 0 ms, one call at a time ({args.overhead_n} calls, median of "
              f"{args.repeats}): bare aiohttp {bare:.3f} ms/call, ragmeter http target "
              f"{ours:.3f} ms/call -> overhead {ours - bare:.3f} ms/call (target <= 2 ms)")
        bound = args.calls * args.latency_ms / 1000 / args.concurrency
        wall, out, _counts = loaded(base, args.calls, args.latency_ms, args.concurrency, 0.0,
                                   store, "l")
        lost = sum(1 for x in out if not x.response)
        bare_wall = asyncio.run(_bare_loaded(f"{base}/answer?latency_ms={args.latency_ms}",
                                             args.calls, args.concurrency))
        print(f"2. {args.calls} calls at {args.latency_ms:g} ms, concurrency "
              f"{args.concurrency}: wall {wall:.2f} s, bound {bound:.2f} s -> ratio "
              f"{wall / bound:.3f} (target <= 1.10); failed {lost}; bare aiohttp with a "
              f"semaphore in the same run: {bare_wall:.2f} s (ratio {bare_wall / bound:.3f})")
        fwall, fout, fcounts = loaded(base, args.calls, args.latency_ms, args.concurrency,
                                      args.fault_rate, store, "f")
        flost = sum(1 for x in fout if not x.response)
        print(f"3. with {args.fault_rate:.0%} random 429s (Retry-After 0.2 s): wall "
              f"{fwall:.2f} s -> {fwall / wall:.3f}x fault-free (target <= 1.5); retries "
              f"{fcounts.retries}; samples without an answer {flost}")
        got = ttft(base, args.ttft_ms, args.ttft_n, store)
        bare_t = asyncio.run(_bare_ttft(f"{base}/v1/chat/completions?ttft_ms={args.ttft_ms}",
                                        args.ttft_n))
        errs = [abs(t - args.ttft_ms) for t in got]
        print(f"4. openai target, first token after {args.ttft_ms:g} ms ({args.ttft_n} calls): "
              f"median TTFT {statistics.median(got):.2f} ms, median |TTFT - delay| "
              f"{statistics.median(errs):.2f} ms (target <= 5 ms); bare aiohttp stream in the "
              f"same run: median {statistics.median(bare_t):.2f} ms -> ragmeter adds "
              f"{statistics.median(got) - statistics.median(bare_t):.2f} ms")
        runs = run_vs_bare(base, args.run_n, args.run_latency_ms, args.run_repeats, tmp)
        _print_run(runs, args.run_n, args.run_latency_ms, args.run_repeats)
    finally:
        proc.terminate()
        proc.join(5)


if __name__ == "__main__":
    main()
