"""Embedder batch throughput: the OpenAI-compatible embedder against the fake server.

    python benchmarks/bench_embedder.py [--texts 1024] [--batch-size 16] [--latency-ms 50]
                                        [--concurrency 1 4 8] [--repeats 3]
                                        [--client-src DIR]

The fake server (``ragmeter.judges.mock_server``, its ``/v1/embeddings`` answering after
``--latency-ms``) runs in a *separate process*, like a real provider. The client embeds
``--texts`` distinct texts (own synthetic data, cache off) in batches of ``--batch-size``
with ``max_concurrency`` = each of ``--concurrency``: printed per concurrency, the median wall
of ``--repeats`` runs, batches per second, the ratio to one-at-a-time, the bound
``batches × latency / concurrency`` and the client's CPU seconds. ``--client-src`` runs the
client from another source tree (an earlier version, whose embedder posts one batch at a
time: it is measured once, as "sequential").
"""

from __future__ import annotations

import argparse
import inspect
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"


def _serve(conn: Any, src: str, latency_ms: float) -> None:
    sys.path.insert(0, src)
    from ragmeter.judges.mock_server import MockConfig, serve_forever

    serve_forever(MockConfig(latency_ms=latency_ms), port=0,
                  on_ready=lambda srv: conn.send(srv.port))


def _texts(n: int) -> list[str]:
    return [f"Вопрос номер {i}: сколько стоит общежитие в корпусе {i % 17}?" for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--client-src", default=str(SRC))
    args = ap.parse_args()
    sys.path.insert(0, args.client_src)
    from ragmeter.retrieval.embedders import OpenAIEmbedder

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, str(SRC), args.latency_ms), daemon=True)
    proc.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("fake server did not start")
        url = f"http://127.0.0.1:{parent.recv()}/v1"
        texts = _texts(args.texts)
        batches = -(-args.texts // args.batch_size)
        concurrent = "max_concurrency" in inspect.signature(OpenAIEmbedder).parameters
        levels = args.concurrency if concurrent else [1]
        print(f"{args.texts} texts, {batches} batches of {args.batch_size}, server latency "
              f"{args.latency_ms:g} ms, client {args.client_src}"
              + ("" if concurrent else " (posts one batch at a time)"))
        warm = OpenAIEmbedder("bench", base_url=url, api_key_env=None, cache=False)
        warm.embed(["warm-up"])           # imports, the first connection
        base = None
        for c in levels:
            walls, cpus = [], []
            for _ in range(args.repeats):
                opts: dict[str, Any] = {"max_concurrency": c} if concurrent else {}
                emb = OpenAIEmbedder("bench", base_url=url, api_key_env=None, cache=False,
                                     batch_size=args.batch_size, **opts)
                t0, c0 = time.perf_counter(), time.process_time()
                out = emb.embed(texts)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
                assert out.shape[0] == len(texts)
            wall = statistics.median(walls)
            base = base or wall
            bound = batches * args.latency_ms / 1000.0 / c
            label = f"max_concurrency {c}" if concurrent else "sequential"
            print(f"{label}: median wall {wall:.2f} s ({batches / wall:.1f} batches/s), "
                  f"{base / wall:.2f}x one at a time; bound {bound:.2f} s (ratio "
                  f"{wall / bound:.2f}); client CPU {statistics.median(cpus):.2f} s")
    finally:
        proc.terminate()
        proc.join(5)


if __name__ == "__main__":
    main()
