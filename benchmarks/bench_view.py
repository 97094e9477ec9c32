"""``ragmeter view`` at scale: every page's p50/p95 at concurrency 10 on a large store.

Builds (once, cached by its parameters) a SQLite store of ``--runs`` runs × ``--samples``
samples — two benchmark names, tags, a retrieval tier (two metrics) and a judged generation tier
(claims with verdicts in every sample's details), a judge card on a few runs and one corrupt
run — with bulk inserts, then starts ``ragmeter view`` on it from ``--src`` (a checkout's
``src`` folder, so the same script measures an older version) and requests every page
``--requests`` times, ``--concurrency`` at once. Prints one table: page, cold (first request),
p50, p95, max, errors; and the server's peak memory (VmHWM).

    python benchmarks/bench_view.py --runs 200 --samples 5000
    python benchmarks/bench_view.py --src /path/to/old/src --requests 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAMES = ("support-bot", "support-bot", "support-bot", "legal-qa")
TAGS = (("nightly",), ("nightly", "bm25"), ("release",), ())


def _signature(metric: str, seed: int) -> str:
    return f"metric:{metric}|data:bench|seed:{seed}"


def _run_id(i: int) -> str:
    return f"2026{(i // 28) % 12 + 1:02d}{i % 28 + 1:02d}-{i % 24:02d}0000-{i:06x}"


def _card(judge: str, kappa: float) -> dict[str, Any]:
    """A real judge card (as stored with a run's judge_trust tier)."""
    from ragmeter.judge_trust.card import JudgeCard, MetricCard
    from ragmeter.stats.resampling import Estimate

    stats = {"kappa": Estimate(kappa, kappa - 0.1, kappa + 0.1, 200),
             "accuracy": Estimate(0.8, 0.75, 0.85, 200)}
    mc = MetricCard("faithfulness", "binary", 200, stats, "cohen", 0.5, 0.7, 0.68)
    return JudgeCard(judge, f"{judge}-model", ("gen.verify/v1",), "0" * 64,
                     {"faithfulness": mc}).to_dict()


def build(path: Path, runs: int, samples: int, seed: int = 7) -> None:
    """Create the store at ``path`` with bulk inserts (one transaction per table chunk)."""
    sys.path.insert(0, str(HERE.parent / "src"))
    from ragmeter.results.store import ResultStore

    store = ResultStore(path)  # the schema
    store.engine.dispose()
    store._write_engine.dispose()
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    questions = [f"How do I reset password number {i} on device {i % 97}?"
                 for i in range(samples)]
    sample_rows = []
    for i in range(samples):
        sample_rows.append(json.dumps({
            "user_input": questions[i], "reference": f"Hold the button for {i % 9 + 1} s.",
            "response": f"Press and hold reset for {i % 9 + 1} seconds.",
            "retrieved_contexts": [f"Manual p.{i % 50}: hold reset {i % 9 + 1} s.",
                                   f"FAQ {i % 13}: passwords"]}, ensure_ascii=False))
    for r in range(runs):
        rid = _run_id(r)
        name = NAMES[r % len(NAMES)]
        created = f"2026-{(r // 28) % 12 + 1:02d}-{r % 28 + 1:02d}T{r % 24:02d}:00:00+00:00"
        meta = {"tags": list(TAGS[r % len(TAGS)])}
        config = "{not json" if r == 3 else json.dumps({"name": name})
        con.execute("INSERT INTO rm_runs VALUES (?,?,?,?,?,?,?,?)",
                    (rid, created, name, "", config, f"{r:040x}", "complete", json.dumps(meta)))
        tiers = [("retrieval", 0), ("generation", 1)]
        if r % 40 == 0:
            tiers.append(("judge_trust", 2))
        con.executemany("INSERT INTO rm_tiers VALUES (?,?,?,?,?,?)",
                        [(rid, t, p, "ok", None, "{}") for t, p in tiers])
        shift = 0.002 * r
        metrics = [("retrieval", "bm25", "hit_rate@5", True), ("retrieval", "bm25", "ndcg@10",
                                                                True),
                   ("generation", "judge-main", "faithfulness", True)]
        value_rows = []
        for pos, (tier, system, metric, hib) in enumerate(metrics):
            vals = []
            for i in range(samples):
                if tier == "retrieval":
                    v = 1.0 if rng.random() < 0.6 + shift else 0.0
                    if metric == "ndcg@10":
                        v = min(1.0, rng.random() * 0.9 + shift)
                    value_rows.append((rid, tier, system, metric, i, f"q{i}", v, None, None))
                else:
                    verdicts = [1, 1 if rng.random() < 0.7 + shift else 0]
                    v = sum(verdicts) / 2
                    details = json.dumps({
                        "answer_claims": ["Hold reset.", f"Wait {i % 9 + 1} seconds."],
                        "verdicts": {"answer_in_context": verdicts},
                        "verdict_reasons": {"answer": ["stated in the manual",
                                                       "the manual says so" if verdicts[1]
                                                       else "not in any context"]}})
                    value_rows.append((rid, tier, system, metric, i, f"q{i}", v, None,
                                       "{broken" if r == 5 and i == 0 else details))
                vals.append(v)
            mean = sum(vals) / len(vals)
            con.execute("INSERT INTO rm_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (rid, tier, system, metric, pos, 0, json.dumps({"tier": tier}),
                         _signature(metric, 42), hib, 42, 1000, "{}", mean, mean - 0.01,
                         mean + 0.01, samples, 0))
        if r % 40 == 0:
            card = {"judge_card": _card(f"judge-{r}", 0.5 + r / 1000)}
            con.execute("INSERT INTO rm_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (rid, "judge_trust", f"judge_card:judge-{r}", "human_label", 0, 0,
                         json.dumps(card), _signature("human_label", 42), True, 42, 1000, "{}",
                         None, None, None, 0, 0))
        con.executemany("INSERT INTO rm_values VALUES (?,?,?,?,?,?,?,?,?)", value_rows)
        con.executemany("INSERT INTO rm_samples VALUES (?,?,?,?)",
                        [(rid, f"q{i}", i, d) for i, d in enumerate(sample_rows)])
        con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode=DELETE")  # a read-only reader needs no -shm file
    con.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def _measure(base: str, path: str, n: int, concurrency: int, timeout: float
                   ) -> dict[str, Any]:
    import aiohttp

    times: list[float] = []
    errors: dict[str, int] = {}
    sem = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as http:
        async def one() -> None:
            async with sem:
                t0 = time.perf_counter()
                try:
                    async with http.get(base + path) as resp:
                        await resp.read()
                        if resp.status >= 500:
                            errors[str(resp.status)] = errors.get(str(resp.status), 0) + 1
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                times.append(time.perf_counter() - t0)

        await one()  # cold: the first request alone
        cold = times[0]
        await asyncio.gather(*(one() for _ in range(n - 1)))
    ts = sorted(times)
    return {"page": path, "cold": cold, "p50": statistics.median(ts),
            "p95": ts[min(len(ts) - 1, round(0.95 * (len(ts) - 1)))], "max": ts[-1],
            "errors": errors}


def pages(runs: int, samples: int, new: bool) -> list[str]:
    last, prev = _run_id(runs - 1), _run_id(runs - 2)
    out = ["/", "/?tag=nightly", "/history", "/compare", f"/diff?a={prev}&b={last}", "/judges",
           f"/run/{last}", f"/run/{last}/sample/q{samples // 2}", f"/run/{_run_id(3)}"]
    if new:
        out += ["/?page=2", f"/side?run={prev}&run={last}&sample=q{samples // 2}",
                "/api/live", "/?col=x"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--requests", type=int, default=30, help="requests per page")
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=120.0, help="per request, seconds")
    ap.add_argument("--src", default=str(HERE.parent / "src"),
                    help="the ragmeter source folder whose viewer is measured")
    ap.add_argument("--old", action="store_true", help="only the pages an older viewer has")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ragmeter-bench-view"))
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"store-{args.runs}x{args.samples}.sqlite"
    done = db.with_suffix(".built")
    if not done.exists():
        t0 = time.perf_counter()
        for p in folder.glob(db.name + "*"):
            p.unlink()
        build(db, args.runs, args.samples)
        done.write_text("ok")
        print(f"built {db} ({db.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": args.src}
    server = subprocess.Popen(
        [sys.executable, "-c", "import sys; from ragmeter.view import serve; "
         "serve(sys.argv[1], port=int(sys.argv[2]))", str(db), str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=(folder / "server.log").open("wb"))
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if server.poll() is not None:
                raise SystemExit("the viewer did not start:\n"
                                 + (folder / "server.log").read_text(errors="replace"))
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        rows = []
        for path in pages(args.runs, args.samples, not args.old):
            r = asyncio.run(_measure(base, path, args.requests, args.concurrency, args.timeout))
            rows.append(r)
            print(f"{r['page'][:60]:60} cold {r['cold']:7.3f}  p50 {r['p50']:7.3f}  "
                  f"p95 {r['p95']:7.3f}  max {r['max']:7.3f}  errors {r['errors'] or '-'}",
                  flush=True)
        print(f"server peak memory (VmHWM): {_peak_rss_mb(server.pid) or 0:.0f} MB")
    finally:
        server.kill()
        server.wait(timeout=10)
    print("\n| page | cold s | p50 s | p95 s | max s | 5xx/timeouts |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| `{r['page'][:50]}` | {r['cold']:.3f} | {r['p50']:.3f} | {r['p95']:.3f} | "
              f"{r['max']:.3f} | {sum(r['errors'].values()) or ''} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
