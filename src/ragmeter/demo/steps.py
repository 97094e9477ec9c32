"""The demo's steps beyond the benchmark config: answer behaviours on recorded answers, and the
shipped reference RAG service measured as a target (a live system over HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BEHAVIOUR_METRICS = ("answer_rate", "over_refusal", "unsupported_answer", "citation_precision",
                     "citation_recall", "fabricated_citation", "legal_ref_exact_match",
                     "legal_ref_unsupported")


def behaviours(data: Path, out: Path, *, seed: int = 42) -> list[Path]:
    """Refusals, citations and legal references on ``data`` (cited answers, conversation turns,
    refusals: ``data/behaviours.jsonl``) — no judge call; a JSON and a Markdown table."""
    from ragmeter.data.loaders import load_samples
    from ragmeter.generation.evaluate import evaluate_generation
    from ragmeter.metrics.refusal import abstention_summary
    from ragmeter.results.jsonout import dumps

    samples = load_samples(data).samples
    res = evaluate_generation(samples, list(BEHAVIOUR_METRICS), seed=seed, name="behaviours")
    out.mkdir(parents=True, exist_ok=True)
    f1 = abstention_summary(samples, seed=seed)["f1"]
    lines = ["# Answer behaviours (recorded answers, no judge call)", "",
             f"{len(samples)} samples: cited answers, conversation turns "
             f"({sum(1 for s in samples if s.history)} with history), refusals and legal "
             "references.", "", "| metric | mean | 95% CI | n | unscored |", "|---|---|---|---|---|"]
    for m in res:
        a = m.aggregate
        mean = "–" if a.mean is None else f"{a.mean:.3f}"
        ci = "–" if a.ci_low is None else f"[{a.ci_low:.3f}, {a.ci_high:.3f}]"
        lines.append(f"| `{m.metric}` | {mean} | {ci} | {a.n} | {a.n_unscored} |")
    if f1.value is not None:
        lines.append(f"| abstention F1 | {f1.value:.3f} | [{f1.ci_low:.3f}, {f1.ci_high:.3f}] "
                     f"| {f1.n} | |")
    md, js = out / "behaviours.md", out / "behaviours.json"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    js.write_text(dumps(res.to_dict()), encoding="utf-8")
    return [md, js]


def target_config(url: str, data: Path, out: Path, *, limit: int | None) -> Any:
    """A benchmark on the reference service as the target: Tier 1 through its ``retrieve``
    entry, Tier 2 through ``generate`` on the gold contexts, Tier 3 through ``answer``."""
    from ragmeter.runner.config import parse_config

    return parse_config({
        "name": "ragmeter-demo-target", "seed": 42, "k": [1, 5], "limit": limit or 30,
        "store": f"sqlite:///{(out / 'results.sqlite').resolve()}",
        "run_dir": str((out / "runs").resolve()),
        "datasets": [{"name": "evalset", "path": str(data / "evalset.jsonl"),
                      "format": "evalset"}],
        # the gold chunks' texts for Tier 2 (the evalset has chunk ids, not the texts)
        "corpus": {"path": str(data / "corpus.jsonl")},
        "target": {"kind": "http", "name": "example-service", "url": url + "/answer",
                   "version_header": "X-RAG-Version",
                   "entries": {"retrieve": {"url": url + "/retrieve"},
                               "generate": {"url": url + "/generate"}}},
        "tiers": [{"name": "retrieval", "metrics": ["hit_rate@1", "hit_rate@5", "mrr"]},
                  {"name": "generation", "metrics": ["rouge_l", "bleu"]},
                  {"name": "e2e", "metrics": ["rouge_l", "id_context_recall@5", "answer_rate",
                                              "over_refusal", "unsupported_answer"]}],
    }, base_dir=data)


def measure_target(data: Path, out: Path, *, limit: int | None, hook: Any = None) -> Any:
    """Start the reference RAG service on a free loopback port, measure it as a target
    (stored as the run ``ragmeter-demo-target``), stop it; returns the stored run."""
    from ragmeter.runner.engine import run_benchmark
    from ragmeter.targets.example_service import ExampleService, ServiceConfig

    with ExampleService(ServiceConfig()) as srv:
        return run_benchmark(target_config(srv.url, data, out, limit=limit), hook=hook)


__all__ = ["BEHAVIOUR_METRICS", "behaviours", "measure_target", "target_config"]
