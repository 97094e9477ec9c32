"""Compare retrievers (bm25 / dense / hybrid) on one evalset at several k.

Each retriever indexes the chunks once and searches once at ``max(ks)``; every metric at every
k is computed from that single ranking by :func:`ragmeter.retrieval.evaluate.evaluate_retrieval`.
The table gives the mean and a 95% bootstrap CI per (retriever, metric); the best retriever per
metric is marked, and every other retriever is tested against it with a paired randomization
test (``compare_metric``): ``†`` marks a significant difference (p < 0.05). Chunking parameters
and each retriever's signature fields go into the result meta and the metric signatures.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult, compare_metric
from ragmeter.retrieval.base import Chunk, Embedder, Retriever
from ragmeter.retrieval.chunking import ChunkingParams, doc_of_chunk
from ragmeter.retrieval.run import retrieve_samples
from ragmeter.stats import PairedComparison

DEFAULT_KS = (5, 10, 20)
DEFAULT_METRICS = ("hit_rate@{k}", "hit_rate@{k}(level=doc)", "precision@{k}", "recall@{k}",
                   "ndcg@{k}", "mrr@{kmax}")
SIG_MARK = "†"


@dataclass
class RetrieverComparison:
    """Per-retriever :class:`EvalResult` plus the cross-retriever table and tests."""

    results: dict[str, EvalResult]
    metrics: list[str]
    ks: tuple[int, ...]
    best: dict[str, str] = field(default_factory=dict)
    tests: dict[str, dict[str, PairedComparison]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def retrievers(self) -> list[str]:
        return list(self.results)

    def cell(self, retriever: str, metric: str) -> tuple[float | None, float | None, float | None]:
        """``(mean, ci_low, ci_high)`` of one metric for one retriever."""
        res = self.results[retriever]
        if metric not in res:
            return (None, None, None)
        a = res[metric].aggregate
        return (a.mean, a.ci_low, a.ci_high)

    def to_rows(self) -> list[dict[str, Any]]:
        """Long format: one row per (retriever, metric) with CI, n, best flag and test vs best."""
        rows = []
        for name, res in self.results.items():
            for metric in self.metrics:
                if metric not in res:
                    continue
                r = res[metric]
                a = r.aggregate
                test = self.tests.get(metric, {}).get(name)
                rows.append({
                    "retriever": name, "metric": metric, "mean": a.mean, "ci_low": a.ci_low,
                    "ci_high": a.ci_high, "n": a.n, "n_unscored": a.n_unscored,
                    "best": self.best.get(metric) == name,
                    "diff_vs_best": test.diff if test else None,
                    "p_vs_best": test.p_value if test else None,
                    "significant_vs_best": bool(test and test.significant),
                    "signature": str(r.signature),
                })
        return rows

    def _mark(self, name: str, metric: str) -> str:
        test = self.tests.get(metric, {}).get(name)
        return SIG_MARK if test is not None and test.significant else ""

    def is_best(self, name: str, metric: str) -> bool:
        """True for the best retriever of ``metric`` and any retriever tied with it."""
        top = self.best.get(metric)
        if top is None:
            return False
        return self.cell(name, metric)[0] == self.cell(top, metric)[0]

    def _text(self, name: str, metric: str, digits: int, ci: bool, bold: tuple[str, str],
              ci_wrap: tuple[str, str] = ("", "")) -> str:
        mean, lo, hi = self.cell(name, metric)
        if mean is None:
            return "–"
        text = f"{mean:.{digits}f}"
        if self.is_best(name, metric):
            text = f"{bold[0]}{text}{bold[1]}"
        text += self._mark(name, metric)
        if ci and lo is not None and hi is not None:
            text += f"{ci_wrap[0]} [{lo:.{digits}f}, {hi:.{digits}f}]{ci_wrap[1]}"
        return text

    def to_markdown(self, *, ci: bool = True, digits: int = 3) -> str:
        """One row per metric@k, one column per retriever; best in bold, † = significantly
        different from the best (paired test)."""
        names = list(self.results)
        lines = ["| metric | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for metric in self.metrics:
            cells = [self._text(n, metric, digits, ci, ("**", "**")) for n in names]
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
        n = self.meta.get("n_samples")
        notes = [f"Mean [95% bootstrap CI]{f' over {n} questions' if n else ''} (negative "
                 "questions are excluded from ranking metrics; per-metric n in the CSV); "
                 f"**bold** = best per metric; {SIG_MARK} = differs from the best, paired "
                 "randomization test p < 0.05."]
        chunking = self.meta.get("chunking")
        if chunking:
            notes.append("Chunking: " + ", ".join(f"{k}={v}" for k, v in chunking.items()) + ".")
        notes.extend(self.warnings())
        timings = self.meta.get("timings") or {}
        if timings:
            parts = []
            for name, t in timings.items():
                qps = t.get("qps")
                parts.append(f"{name} index {t['index_s']:.2f}s"
                             + (f", {qps:.0f} q/s" if qps else ""))
            notes.append("Timing (embedding cache hits included): " + "; ".join(parts) + ".")
        return "\n".join(lines) + "\n\n" + "\n\n".join(notes) + "\n"

    def warnings(self) -> list[str]:
        """Gold ids that the index does not contain (e.g. the evalset was made with other
        chunking parameters): metrics at that level cannot reach them."""
        out = []
        gone = self.meta.get("gold_not_in_index") or {}
        for level, key in (("chunk", "chunk_ids"), ("doc", "doc_ids")):
            ids = gone.get(key) or []
            if ids:
                shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
                out.append(f"Warning: {len(ids)} gold {level} id(s) are not in the index "
                           f"({shown}); {level}-level metrics cannot find them — check that the "
                           "evalset was built with the same corpus and chunking parameters.")
        return out

    def to_csv(self) -> str:
        rows = self.to_rows()
        buf = io.StringIO()
        if rows:
            writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return buf.getvalue()

    def to_dict(self, per_sample: bool = False) -> dict[str, Any]:
        return {
            "ks": list(self.ks), "metrics": self.metrics, "best": self.best, "meta": self.meta,
            "tests": {m: {n: t.to_dict() for n, t in d.items()} for m, d in self.tests.items()},
            "rows": self.to_rows(),
            "results": {n: r.to_dict(per_sample) for n, r in self.results.items()},
        }

    def to_json(self, per_sample: bool = False) -> str:
        from ragmeter.results.jsonout import dumps

        return dumps(self.to_dict(per_sample))

    def rich_table(self, *, digits: int = 3) -> Any:
        """A :class:`rich.table.Table`: rows = metric@k, columns = retrievers (mean, CI)."""
        from rich.table import Table

        table = Table(title=f"Retriever comparison (k = {', '.join(map(str, self.ks))}); "
                            f"{SIG_MARK} = differs from best (p < 0.05)")
        table.add_column("metric", style="bold")
        for name in self.results:
            table.add_column(name, justify="right")
        for metric in self.metrics:
            table.add_row(metric, *[self._text(n, metric, digits, True,
                                               ("[bold green]", "[/bold green]"),
                                               ("\n[dim]", "[/dim]"))
                                    for n in self.results])
        return table

    def chart_series(self, template: str) -> dict[str, dict[int, tuple[Any, Any, Any]]]:
        """``{retriever: {k: (mean, lo, hi)}}`` for a metric template such as ``hit_rate@{k}``."""
        from ragmeter.metrics.registry import parse_metric

        out: dict[str, dict[int, tuple[Any, Any, Any]]] = {}
        for name in self.results:
            out[name] = {k: self.cell(name, str(parse_metric(template.format(k=k))))
                         for k in self.ks}
        return out

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write ``comparison.md``, ``comparison.csv`` and ``comparison.json`` (the charts are
        the reports' :func:`~ragmeter.reports.charts.retriever_charts`)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = []
        for fname, text in (("comparison.md", self.to_markdown()),
                            ("comparison.csv", self.to_csv()),
                            ("comparison.json", self.to_json(per_sample=True))):
            path = out / fname
            path.write_text(text, encoding="utf-8")
            files.append(path)
        return files


def expand_metrics(templates: Sequence[str], ks: Sequence[int]) -> list[str]:
    """Expand ``{k}`` (every k) and ``{kmax}`` templates to canonical metric names, in order."""
    from ragmeter.metrics.registry import parse_metric

    out: list[str] = []
    kmax = max(ks)
    for template in templates:
        variants = ([template.format(k=k, kmax=kmax) for k in ks] if "{k}" in template
                    else [template.format(kmax=kmax)])
        for v in variants:
            name = str(parse_metric(v))
            if name not in out:
                out.append(name)
    return out


def _build(names: Sequence[str], *, embedder: Embedder | str | None, language: str,
           chunking: ChunkingParams | None) -> dict[str, Retriever]:
    """Build named retrievers; hybrids share the BM25 and dense children (indexed once)."""
    from ragmeter.retrieval.retrievers import BM25Retriever, DenseRetriever, make_retriever

    lex: BM25Retriever | None = None
    sem: DenseRetriever | None = None
    built: dict[str, Retriever] = {}
    for raw in names:
        name = raw.strip().lower()
        if name in built:
            continue
        if name in ("bm25", "hybrid", "hybrid-rrf", "hybrid-minmax") and lex is None:
            lex = BM25Retriever(language=language, chunking=chunking)
        if name in ("dense", "hybrid", "hybrid-rrf", "hybrid-minmax") and sem is None:
            sem = DenseRetriever(embedder, chunking=chunking)
        if name == "bm25":
            built[name] = lex  # type: ignore[assignment]
        elif name == "dense":
            built[name] = sem  # type: ignore[assignment]
        else:
            built[name] = make_retriever(name, bm25=lex, dense=sem, chunking=chunking,
                                         language=language)
    return built


def compare_retrievers(
    retrievers: Mapping[str, Retriever] | Sequence[str],
    samples: Sequence[Sample],
    chunks: Sequence[Chunk],
    ks: Sequence[int] = DEFAULT_KS,
    seed: int = 42,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    chunking: ChunkingParams | None = None,
    embedder: Embedder | str | None = None,
    language: str = "auto",
    n_resamples: int = 10000,
    dataset_hash: str | None = None,
) -> RetrieverComparison:
    """Index, search once at ``max(ks)``, evaluate every metric at every k, test vs the best.

    ``retrievers`` is a ``{name: Retriever}`` mapping or names for :func:`make_retriever`
    (``bm25``, ``dense``, ``hybrid``, ``hybrid-rrf``, ``hybrid-minmax``; ``embedder`` and
    ``language`` apply to those). ``metrics`` are templates expanded by :func:`expand_metrics`.
    """
    from ragmeter.data.hashing import dataset_hash as _hash
    from ragmeter.data.hashing import gold_hash
    from ragmeter.retrieval.evaluate import evaluate_retrieval

    ks_t = tuple(sorted({int(k) for k in ks}))
    if not ks_t or ks_t[0] <= 0:
        raise ConfigError("ks", f"need positive cutoffs, got {list(ks)}")
    if not samples:
        raise ConfigError("samples", "no samples to evaluate")
    if not chunks:
        raise ConfigError("chunks", "no chunks to index")
    if isinstance(retrievers, Mapping):
        built = dict(retrievers)
    else:
        built = _build(list(retrievers), embedder=embedder, language=language, chunking=chunking)
    if not built:
        raise ConfigError("retrievers", "no retrievers to compare")
    metric_names = expand_metrics(metrics, ks_t)
    kmax = ks_t[-1]
    data_hash = dataset_hash or gold_hash(samples)
    corpus_hash = _hash([c.chunk_id, c.text] for c in chunks)
    chunk_sig = chunking.signature_fields() if chunking else {}
    queries = [s.user_input or "" for s in samples]

    results: dict[str, EvalResult] = {}
    signatures: dict[str, dict[str, Any]] = {}
    timings: dict[str, dict[str, float | None]] = {}
    for name, retriever in built.items():
        if chunking is not None and hasattr(retriever, "chunking") and not retriever.chunking:
            retriever.chunking = chunking
        t0 = time.perf_counter()
        retriever.index(chunks)
        t_index = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = retriever.search(queries, kmax)
        t_search = time.perf_counter() - t0
        filled = retrieve_samples(retriever, samples, kmax, chunks=chunks, hits=hits)
        sig = {**retriever.signature_fields(), **chunk_sig, "corpus": corpus_hash,
               "depth": kmax}
        signatures[name] = sig
        timings[name] = {"index_s": t_index, "search_s": t_search,
                         "qps": len(queries) / t_search if t_search > 0 else None}
        res = evaluate_retrieval(filled, metrics=metric_names, seed=seed, name=name,
                                 doc_of=doc_of_chunk, dataset_hash=data_hash,
                                 extra_signature=sig)
        res.meta.update({"retriever_signature": sig, "timing": timings[name]})
        results[name] = res

    best, tests = _best_and_tests(results, metric_names, n_resamples, seed)
    meta = {
        "gold_not_in_index": _gold_not_in_index(samples, chunks),
        "n_samples": len(samples), "n_chunks": len(chunks), "ks": list(ks_t), "seed": seed,
        "n_resamples": n_resamples, "dataset_hash": data_hash, "corpus_hash": corpus_hash,
        "chunking": chunk_sig, "signatures": signatures, "timings": timings,
        "test": "paired randomization (sign-flip), two-sided, vs best per metric",
        "n_docs": len({c.doc_id for c in chunks}),
    }
    return RetrieverComparison(results=results, metrics=metric_names, ks=ks_t, best=best,
                               tests=tests, meta=meta)


def _best_and_tests(results: Mapping[str, EvalResult], metric_names: Sequence[str],
                    n_resamples: int, seed: int
                    ) -> tuple[dict[str, str], dict[str, dict[str, PairedComparison]]]:
    """Per metric: the best retriever, and the paired test of every other one against it."""
    from ragmeter.metrics.registry import parse_metric

    best: dict[str, str] = {}
    tests: dict[str, dict[str, PairedComparison]] = {}
    for metric in metric_names:
        scored = [(n, r[metric]) for n, r in results.items()
                  if metric in r and r[metric].aggregate.mean is not None]
        if not scored:
            continue
        higher = parse_metric(metric).spec.higher_is_better
        sign = 1.0 if higher else -1.0
        top_name, top = max(scored, key=lambda item: sign * float(item[1].aggregate.mean or 0.0))
        best[metric] = top_name
        tests[metric] = {n: compare_metric(top, r, n_resamples=n_resamples, seed=seed)
                         for n, r in scored if n != top_name}
    return best, tests


def _gold_not_in_index(samples: Sequence[Sample], chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """Gold chunk and document ids that no indexed chunk carries."""
    chunk_ids = {c.chunk_id for c in chunks}
    doc_ids = {c.doc_id for c in chunks}
    missing_chunks = sorted({g for s in samples for g in (s.gold_chunk_ids or [])
                             if g not in chunk_ids})
    missing_docs = sorted({g for s in samples for g in (s.gold_doc_ids or [])
                           if g not in doc_ids})
    return {"chunk_ids": missing_chunks, "doc_ids": missing_docs}
