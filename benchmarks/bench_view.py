"""``ragmeter view`` as users meet it: cold, warm, varied and mixed requests on a large store.

Builds (once, cached by its parameters) a store of ``--runs`` runs × ``--samples`` samples —
two benchmark names, tags, a retrieval tier (two metrics, one system) and a judged generation
tier (claims with verdicts in every sample's details), a judge card on every 40th run, one run
with a corrupt config and one with a corrupt details row — in SQLite (``--db sqlite``), in
PostgreSQL (``--db pg``, ``--pg-url`` or ``$RAGMETER_TEST_PG_URL``; its own schema) or both
(``--db both``: the phases side by side). Then starts ``ragmeter view`` on it from ``--src`` (a
checkout's ``src`` folder, so the same script measures an older version) and measures, per page
type (runs, filtered runs, history, compare, diff, side by side, judges, run, sample, live):

* **cold**: the first request of each type right after the server started, then again right
  after a store change (a small run saved through the public API);
* **warm**: one URL per type requested ``--requests`` times (what a page cache serves);
* **varied**: ``--requests`` distinct URLs per type (random runs, samples, pairs, run sets);
* **mixed**: ``--mixed`` requests of random types with random URLs (requests/s).

Each phase: p50 / p95 / max seconds, the server's CPU seconds per page (the server process and
any worker processes it started: load-independent, unlike the wall times on a busy machine),
errors (5xx and timeouts), and the peak memory (VmHWM; summed over worker processes).
Everything runs at ``--concurrency`` requests in flight.

    python benchmarks/bench_view.py                         # 200 × 5,000, SQLite, concurrency 10
    python benchmarks/bench_view.py --db both --json out.json
    python benchmarks/bench_view.py --quick                 # 20 × 500, a minute
    python benchmarks/bench_view.py --src /path/to/old/src --runs 40   # an older viewer
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from view_store import (  # noqa: E402 (the benchmarks folder is not a package)
    CORRUPT,
    NAMES,
    _card,  # noqa: F401 (the judges-page test builds its card with it)
    _run_id,
    _tiny_run,
    build,
    build_pg,
    pg_url_with_schema,
)

PAGE_TYPES = ("runs", "runs_filtered", "history", "compare", "diff", "side", "judges", "run",
              "sample", "live")
STATS = ("kappa", "accuracy", "alpha", "spearman", "f1", "tpr", "tnr")


# --------------------------------------------------------------------------- the server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree(pid: int) -> list[int]:
    """``pid`` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(stat[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


class Server:
    """``ragmeter view`` in its own process; its CPU time and peak memory (with workers)."""

    def __init__(self, store_url: str, src: str, log: Path):
        self.port = _free_port()
        env = {**os.environ, "PYTHONPATH": src}
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from ragmeter.view import serve; "
             "serve(sys.argv[1], port=int(sys.argv[2]))", store_url, str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
        self.base = f"http://127.0.0.1:{self.port}"
        self._dead_cpu = 0.0   # CPU of worker processes that exited (seen while they lived)
        self._seen: dict[int, float] = {}
        self.hwm: dict[int, float] = {}
        for _ in range(1200):
            if self.proc.poll() is not None:
                raise SystemExit("the viewer did not start:\n" + log.read_text(errors="replace"))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("the viewer did not answer within 120 s")

    def cpu(self) -> float:
        """CPU seconds (user + system) of the server and its workers so far."""
        tick = os.sysconf("SC_CLK_TCK")
        now: dict[int, float] = {}
        for p in _tree(self.proc.pid):
            try:
                with open(f"/proc/{p}/stat", "rb") as fh:
                    f = fh.read().rsplit(b")", 1)[1].split()
                now[p] = (int(f[11]) + int(f[12])) / tick
            except OSError:
                continue
            self._peak(p)
        for p, v in self._seen.items():
            if p not in now:
                self._dead_cpu += v
        self._seen = now
        return self._dead_cpu + sum(now.values())

    def _peak(self, pid: int) -> None:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.hwm[pid] = max(self.hwm.get(pid, 0.0), int(line.split()[1]) / 1024)
        except OSError:
            pass

    def peak_mb(self) -> tuple[float, float]:
        """Peak memory (MB): the server process alone, and with its workers (summed)."""
        self.cpu()
        main = self.hwm.get(self.proc.pid, 0.0)
        return main, sum(self.hwm.values())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


# --------------------------------------------------------------------------- the URLs
class Urls:
    """Random URLs of each page type over the bench store."""

    def __init__(self, runs: int, samples: int, seed: int):
        self.rng = random.Random(seed)
        self.runs, self.samples = runs, samples
        self.ids = [_run_id(i) for i in range(runs) if i not in CORRUPT]
        self.by_name: dict[str, list[str]] = {}
        for i in range(runs):
            if i not in CORRUPT:
                self.by_name.setdefault(NAMES[i % len(NAMES)], []).append(_run_id(i))
        self.carded = [_run_id(i) for i in range(0, runs, 40) if i not in CORRUPT]

    def _run(self) -> str:
        return self.rng.choice(self.ids)

    def _pair(self) -> tuple[str, str]:
        name = self.rng.choice(sorted(self.by_name))
        pool = self.by_name[name] if len(self.by_name[name]) >= 2 else self.ids
        a, b = self.rng.sample(pool, 2)
        return a, b

    def _sample(self) -> str:
        return f"q{self.rng.randrange(self.samples)}"

    def make(self, kind: str) -> str:
        r = self.rng
        if kind == "runs":
            pages = max(1, -(-self.runs // 50))
            return f"/?page={r.randint(1, pages)}" if pages > 1 and r.random() < 0.7 else "/"
        if kind == "runs_filtered":
            tag = r.choice(["nightly", "bm25", "release"])
            return f"/?tag={tag}&name={r.choice(['support', 'legal'])}"
        if kind == "history":
            name = r.choice(sorted(self.by_name))
            metric = r.choice(["retrieval|bm25|hit_rate@5", "retrieval|bm25|ndcg@10",
                               "generation|judge-main|faithfulness"])
            return f"/history?bench={quote(name)}&metric={quote(metric, safe='')}"
        if kind == "compare":
            name = r.choice(sorted(self.by_name))
            chosen = r.sample(self.by_name[name], min(len(self.by_name[name]), r.randint(2, 5)))
            tier = r.choice(["retrieval", "generation"])
            return "/compare?" + "&".join(f"run={x}" for x in chosen) + f"&tier={tier}"
        if kind == "diff":
            a, b = self._pair()
            return f"/diff?a={a}&b={b}"
        if kind == "side":
            a, b = self._pair()
            return f"/side?run={a}&run={b}&sample={self._sample()}"
        if kind == "judges":
            return f"/judges?stat={r.choice(STATS)}"
        if kind == "run":
            return f"/run/{self._run()}"
        if kind == "sample":
            return f"/run/{self._run()}/sample/{self._sample()}"
        if kind == "live":
            return "/api/live"
        raise ValueError(kind)

    def distinct(self, kind: str, n: int) -> list[str]:
        out: list[str] = []
        for _ in range(n * 50):
            u = self.make(kind)
            if u not in out or kind in ("live", "runs_filtered", "judges", "runs"):
                out.append(u)
            if len(out) >= n:
                break
        return out


# --------------------------------------------------------------------------- measuring
async def _fetch_all(base: str, urls: Sequence[str], concurrency: int, timeout: float
                     ) -> tuple[list[float], dict[str, int], float]:
    """Every URL once, ``concurrency`` at a time: the times, the errors, the wall time."""
    import aiohttp

    times: list[float] = []
    errors: dict[str, int] = {}
    queue = list(urls)[::-1]
    t_all = time.perf_counter()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as http:
        async def worker() -> None:
            while queue:
                path = queue.pop()
                t0 = time.perf_counter()
                try:
                    async with http.get(base + path) as resp:
                        await resp.read()
                        if resp.status >= 500:
                            errors[str(resp.status)] = errors.get(str(resp.status), 0) + 1
                except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                times.append(time.perf_counter() - t0)

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return times, errors, time.perf_counter() - t_all


def _pct(ts: Sequence[float], q: float) -> float:
    s = sorted(ts)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else float("nan")


def measure(server: Server, urls: Sequence[str], concurrency: int, timeout: float
            ) -> dict[str, Any]:
    cpu0 = server.cpu()
    times, errors, wall = asyncio.run(_fetch_all(server.base, urls, concurrency, timeout))
    cpu = server.cpu() - cpu0
    return {"n": len(times), "p50": statistics.median(times) if times else float("nan"),
            "p95": _pct(times, 0.95), "max": max(times) if times else float("nan"),
            "cpu_per_page": cpu / max(1, len(times)), "rps": len(times) / wall if wall else 0,
            "errors": errors, "wall": wall}


def run_phases(store_url: str, args: argparse.Namespace, label: str,
               change: Callable[[str], None], log: Callable[[str], None]) -> dict[str, Any]:
    """Every phase against one store; returns the figures."""
    folder = Path(args.dir)
    server = Server(store_url, args.src, folder / f"server-{label}.log")
    out: dict[str, Any] = {"store": label, "cold": {}, "cold_after_change": {}, "warm": {},
                           "varied": {}}
    urls = Urls(args.runs, args.samples, args.seed)
    kinds = [k for k in PAGE_TYPES if k not in args.skip]
    try:
        for phase in ("cold", "cold_after_change"):
            if phase == "cold_after_change":
                change(label)
            for kind in kinds:
                r = measure(server, [urls.make(kind)], 1, args.timeout)
                out[phase][kind] = r
                log(f"[{label}] {phase:17} {kind:14} {r['p50']:7.3f} s  cpu "
                    f"{r['cpu_per_page']:6.3f} s  {r['errors'] or ''}")
        for kind in kinds:
            fixed = urls.make(kind)
            r = measure(server, [fixed] * args.requests, args.concurrency, args.timeout)
            out["warm"][kind] = r
            log(f"[{label}] warm   {kind:14} p50 {r['p50']:7.3f}  p95 {r['p95']:7.3f}  max "
                f"{r['max']:7.3f}  cpu/page {r['cpu_per_page']:6.3f}  {r['errors'] or ''}")
        for kind in kinds:
            r = measure(server, urls.distinct(kind, args.requests), args.concurrency,
                        args.timeout)
            out["varied"][kind] = r
            log(f"[{label}] varied {kind:14} p50 {r['p50']:7.3f}  p95 {r['p95']:7.3f}  max "
                f"{r['max']:7.3f}  cpu/page {r['cpu_per_page']:6.3f}  {r['errors'] or ''}")
        mixed = [urls.make(urls.rng.choice(kinds)) for _ in range(args.mixed)]
        r = measure(server, mixed, args.concurrency, args.timeout)
        out["mixed"] = r
        log(f"[{label}] mixed  {len(mixed)} requests: {r['rps']:.2f} req/s  p50 {r['p50']:.3f}  "
            f"p95 {r['p95']:.3f}  max {r['max']:.3f}  cpu/page {r['cpu_per_page']:.3f}  "
            f"{r['errors'] or ''}")
        out["peak_mb"], out["peak_mb_with_workers"] = server.peak_mb()
        log(f"[{label}] peak memory: server {out['peak_mb']:.0f} MB, with workers "
            f"{out['peak_mb_with_workers']:.0f} MB")
    finally:
        server.stop()
    return out


# --------------------------------------------------------------------------- report
TARGETS = {"varied_p95": 1.0, "mixed_rps": 10.0, "mixed_p95": 1.0, "cold": 2.0, "peak_mb": 400}


def table(results: Sequence[dict[str, Any]]) -> str:
    """One Markdown table: per page type and phase, each store's figures side by side."""
    heads = " | ".join(f"{r['store']} p50 / p95 / max s (CPU-s/page)" for r in results)
    lines = [f"| page | phase | {heads} |", "|---|---|" + "---|" * len(results)]
    kinds = [k for k in PAGE_TYPES if any(k in r["varied"] for r in results)]

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return "–"
        err = f" **{sum(r['errors'].values())} errors**" if r["errors"] else ""
        if r["n"] == 1:
            return f"{r['p50']:.3f} ({r['cpu_per_page']:.3f}){err}"
        return (f"{r['p50']:.3f} / {r['p95']:.3f} / {r['max']:.3f} "
                f"({r['cpu_per_page']:.3f}){err}")
    for kind in kinds:
        for phase in ("cold", "cold_after_change", "warm", "varied"):
            lines.append(f"| {kind} | {phase} | "
                         + " | ".join(cell(r[phase].get(kind)) for r in results) + " |")
    lines.append("| **mixed** | req/s, p50 / p95 / max | " + " | ".join(
        f"{r['mixed']['rps']:.2f} req/s, {cell(r['mixed'])}" for r in results) + " |")
    lines.append("| **peak memory** | server (with workers) | " + " | ".join(
        f"{r['peak_mb']:.0f} MB ({r['peak_mb_with_workers']:.0f} MB)" for r in results) + " |")
    return "\n".join(lines)


def verdicts(r: dict[str, Any]) -> list[str]:
    """The targets (varied p95 ≤ 1 s per page, mixed ≥ 10 req/s with p95 ≤ 1 s, cold ≤ 2 s,
    peak memory ≤ 400 MB) met or missed."""
    out = []
    worst = max(r["varied"].items(), key=lambda kv: kv[1]["p95"])
    out.append(f"varied p95 ≤ {TARGETS['varied_p95']} s every page: "
               f"{'met' if worst[1]['p95'] <= TARGETS['varied_p95'] else 'MISSED'} "
               f"(worst {worst[0]} {worst[1]['p95']:.3f} s)")
    m = r["mixed"]
    ok = m["rps"] >= TARGETS["mixed_rps"] and m["p95"] <= TARGETS["mixed_p95"]
    out.append(f"mixed ≥ {TARGETS['mixed_rps']:.0f} req/s with p95 ≤ {TARGETS['mixed_p95']} s: "
               f"{'met' if ok else 'MISSED'} ({m['rps']:.2f} req/s, p95 {m['p95']:.3f} s)")
    cold = max((x for ph in ("cold", "cold_after_change") for x in r[ph].items()),
               key=lambda kv: kv[1]["max"])
    out.append(f"cold ≤ {TARGETS['cold']} s every page: "
               f"{'met' if cold[1]['max'] <= TARGETS['cold'] else 'MISSED'} "
               f"(worst {cold[0]} {cold[1]['max']:.3f} s)")
    peak = r["peak_mb_with_workers"]
    out.append(f"peak memory ≤ {TARGETS['peak_mb']} MB: "
               f"{'met' if peak <= TARGETS['peak_mb'] else 'MISSED'} ({peak:.0f} MB)")
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--requests", type=int, default=30,
                    help="requests per page type in the warm and varied phases")
    ap.add_argument("--mixed", type=int, default=300, help="requests of the mixed phase")
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=300.0, help="per request, seconds")
    ap.add_argument("--db", choices=("sqlite", "pg", "both"), default="sqlite")
    ap.add_argument("--pg-url", default=os.environ.get("RAGMETER_TEST_PG_URL", ""),
                    help="PostgreSQL URL (a schema of its own is created in it)")
    ap.add_argument("--seed", type=int, default=11, help="seed of the random URLs")
    ap.add_argument("--skip", nargs="*", default=[], choices=PAGE_TYPES,
                    help="page types not measured")
    ap.add_argument("--quick", action="store_true",
                    help="20 runs × 500 samples, 10 requests a phase, 60 mixed")
    ap.add_argument("--src", default=str(HERE.parent / "src"),
                    help="the ragmeter source folder whose viewer is measured")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ragmeter-bench-view"))
    ap.add_argument("--json", default="", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.samples, args.requests, args.mixed = 20, 500, 10, 60
    return args


def _log(line: str) -> None:
    print(line, flush=True)


def _saver(url: str) -> Callable[[str], None]:
    """The store change of the cold phase: a small run saved through the public API."""
    def change(tag: str) -> None:
        from ragmeter.results.store import ResultStore

        s = ResultStore(url)
        s.save_run(_tiny_run(tag))
        s.close()
    return change


#: what a built store's marker file says; a store built by an older script (another text) is
#: built again, so every run in it is written as ragmeter writes runs now
BUILD_FORMAT = "2: runs keep their samples' order in their row"


def _built(marker: Path) -> bool:
    return marker.exists() and marker.read_text() == BUILD_FORMAT


def sqlite_store(args: argparse.Namespace, folder: Path) -> str:
    """The SQLite store (built once per size), copied so the cold phase may change it."""
    db = folder / f"store-{args.runs}x{args.samples}.sqlite"
    done = db.with_suffix(".built")
    if not _built(done):
        t0 = time.perf_counter()
        for p in folder.glob(db.name + "*"):
            p.unlink()
        build(db, args.runs, args.samples)
        done.write_text(BUILD_FORMAT)
        _log(f"built {db} ({db.stat().st_size / 1e6:.0f} MB) in "
             f"{time.perf_counter() - t0:.0f} s")
    work = folder / f"work-{args.runs}x{args.samples}.sqlite"  # changed by the cold phase
    for p in folder.glob(work.name + "*"):
        p.unlink()
    work.write_bytes(db.read_bytes())
    return f"sqlite:///{work}"


def pg_store(args: argparse.Namespace, folder: Path) -> str:
    """The PostgreSQL store in its own schema (built once per size; an earlier change
    removed)."""
    if not args.pg_url:
        raise SystemExit("--db pg needs --pg-url (or $RAGMETER_TEST_PG_URL)")
    schema = f"bench_view_{args.runs}x{args.samples}"
    marker = folder / f"{schema}.pg-built"
    url = pg_url_with_schema(args.pg_url, schema)
    if not _built(marker):
        t0 = time.perf_counter()
        url = build_pg(args.pg_url, schema, args.runs, args.samples)
        marker.write_text(BUILD_FORMAT)
        _log(f"built PostgreSQL schema {schema} in {time.perf_counter() - t0:.0f} s")
        return url
    from ragmeter.results.store import ResultStore

    s = ResultStore(url)
    if s.has_run("zz-change-PostgreSQL"):
        s.delete_run("zz-change-PostgreSQL")
    s.close()
    return url


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    # the store is built and changed by the measured version's own code (its schema, its
    # writer), so an older version is measured on a store it wrote itself
    sys.path.insert(0, str(Path(args.src).resolve()))
    print(f"bench_view: {args.runs} runs × {args.samples} samples, concurrency "
          f"{args.concurrency}, viewer from {args.src}, {os.cpu_count()} CPUs", flush=True)
    results = []
    if args.db in ("sqlite", "both"):
        url = sqlite_store(args, folder)
        results.append(run_phases(url, args, "SQLite", _saver(url), _log))
    if args.db in ("pg", "both"):
        url = pg_store(args, folder)
        results.append(run_phases(url, args, "PostgreSQL", _saver(url), _log))
    print()
    print(table(results))
    print()
    for r in results:
        for line in verdicts(r):
            print(f"{r['store']}: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": {k: v for k, v in vars(args).items()},
                                               "cpus": os.cpu_count(), "results": results},
                                              indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
