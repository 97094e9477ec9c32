"""Per-hop retrieval scores: each retrieval span of one request is a hop
(``metadata["hops"]``, as the trace importers of :mod:`ragmeter.data.traces` record them).

:func:`hop_results` scores Tier 1 metrics on every hop that has gold ids (the request's gold,
the hop's own ranking) with the same code as whole-request retrieval; :func:`first_degraded_hop`
names, per request, the first hop whose primary metric falls below a threshold (default: the
hop found none of the gold documents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.results.records import EvalResult, MetricResult

DEFAULT_HOP_METRICS = ("hit_rate@10(level=doc)", "mrr(level=doc)")


def hops_of(sample: Sample) -> list[dict[str, Any]]:
    """The hops recorded for ``sample`` (empty when the importer saw no retrieval span)."""
    hops = sample.metadata.get("hops")
    return [h for h in hops if isinstance(h, dict)] if isinstance(hops, list) else []


def _has_gold(s: Sample) -> bool:
    return bool(s.gold_doc_ids or s.gold_chunk_ids)


def hop_samples(samples: Sequence[Sample], hop: int) -> list[Sample]:
    """Samples for hop ``hop`` (0-based): the request's gold against that hop's ranking."""
    out = []
    for s in samples:
        hops = hops_of(s)
        if hop >= len(hops) or not _has_gold(s):
            continue
        h = hops[hop]
        ids = [str(i) for i in h.get("ids") or [] if i is not None]
        out.append(Sample(id=s.id, user_input=h.get("query") or s.user_input, retrieved_ids=ids,
                          gold_doc_ids=s.gold_doc_ids, gold_chunk_ids=s.gold_chunk_ids,
                          gold_grades=s.gold_grades, type=s.type))
    return out


@dataclass
class HopReport:
    """Tier 1 results per hop, and the first degraded hop of each request."""

    metrics: tuple[str, ...]
    per_hop: list[EvalResult] = field(default_factory=list)
    first_degraded: dict[str, int | None] = field(default_factory=dict)
    primary: str = ""
    threshold: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": list(self.metrics), "primary": self.primary,
                "threshold": self.threshold,
                "hops": [{"hop": i, "n": len(r.results[next(iter(r.results))].sample_ids)
                          if r.results else 0, "means": r.means()}
                         for i, r in enumerate(self.per_hop)],
                "first_degraded_hop": self.first_degraded}


#: ``evaluate(samples, metrics=..., seed=..., name=...) -> EvalResult``: the retrieval
#: evaluator beside this module (``ragmeter.retrieval.evaluate.evaluate_retrieval``) for
#: :func:`hop_results`; the generation evaluator for :func:`hop_context_relevance` (passed in:
#: retrieval sits below generation)
Evaluate = Callable[..., EvalResult]


def hop_results(samples: Sequence[Sample], evaluate: Evaluate,
                metrics: Sequence[str] = DEFAULT_HOP_METRICS, *,
                threshold: float | None = None, seed: int = 42) -> HopReport:
    """Score ``metrics`` on each hop with ``evaluate`` (``evaluate_retrieval``); the first
    metric decides degradation: a hop is degraded when its value is at most ``threshold``
    (default 0: nothing of the gold was found)."""
    evaluate_retrieval = evaluate
    report = HopReport(tuple(metrics), primary=metrics[0],
                       threshold=0.0 if threshold is None else threshold)
    n_hops = max((len(hops_of(s)) for s in samples if _has_gold(s)), default=0)
    values: dict[str, list[float]] = {s.id: [] for s in samples if hops_of(s) and _has_gold(s)}
    for hop in range(n_hops):
        res = evaluate_retrieval(hop_samples(samples, hop), metrics=list(metrics), seed=seed,
                                 name=f"hop {hop + 1}")
        report.per_hop.append(res)
        first = res.results[next(iter(res.results))]
        for sid, v in zip(first.sample_ids, first.values, strict=True):
            values[sid].append(float(v))
    for sid, vals in values.items():
        bad = [i for i, v in enumerate(vals) if not np.isnan(v) and v <= report.threshold]
        report.first_degraded[sid] = bad[0] if bad else None
    return report


def _rekeyed(result: EvalResult, key_of: dict[str, str]) -> EvalResult:
    """``result`` with sample ids replaced by ``key_of`` (samples without a key dropped)."""
    out = EvalResult(result.name, meta=dict(result.meta))
    for m in result:
        keep = [i for i, sid in enumerate(m.sample_ids) if sid in key_of]
        out.add(MetricResult(m.metric, [key_of[m.sample_ids[i]] for i in keep],
                             m.values[keep], m.signature,
                             reasons={keep.index(i): r for i, r in m.reasons.items()
                                      if i in keep},
                             higher_is_better=m.higher_is_better, seed=m.seed))
    return out


def compare_hops(a: HopReport, a_samples: Sequence[Sample], b: HopReport,
                 b_samples: Sequence[Sample], *, seed: int = 42,
                 n_resamples: int = 10000) -> dict[str, Any]:
    """Two systems' hops on the same questions (paired by normalised question text, since
    their trace ids differ): a paired test per hop and metric, and how often B's first
    degraded hop comes earlier, later or at the same hop as A's."""
    from ragmeter.data.traces.sampling import normalise_question
    from ragmeter.results.records import compare_results

    key_a = {s.id: normalise_question(s.user_input) for s in a_samples if s.user_input}
    key_b = {s.id: normalise_question(s.user_input) for s in b_samples if s.user_input}
    hops = []
    for i in range(min(len(a.per_hop), len(b.per_hop))):
        tests = compare_results(_rekeyed(a.per_hop[i], key_a), _rekeyed(b.per_hop[i], key_b),
                                n_resamples=n_resamples, seed=seed)
        hops.append({"hop": i, "tests": [t.to_dict() for t in tests]})
    first_a = {key_a[k]: v for k, v in a.first_degraded.items() if k in key_a}
    first_b = {key_b[k]: v for k, v in b.first_degraded.items() if k in key_b}
    never = 10**6  # "never degraded" sorts after every hop
    moves = {"earlier": 0, "later": 0, "same": 0}
    for q in sorted(set(first_a) & set(first_b)):
        fa, fb = first_a[q], first_b[q]
        da = never if fa is None else fa
        db = never if fb is None else fb
        moves["same" if da == db else "earlier" if db < da else "later"] += 1
    return {"hops": hops, "first_degraded_hop_of_b": moves}


def hop_context_samples(samples: Sequence[Sample], hop: int) -> list[Sample]:
    """Samples for judging hop ``hop`` without gold: the hop's query (else the question)
    against the hop's retrieved texts."""
    out = []
    for s in samples:
        hops = hops_of(s)
        if hop >= len(hops):
            continue
        texts = [t for t in hops[hop].get("texts") or [] if isinstance(t, str)]
        if texts:
            out.append(Sample(id=s.id, user_input=hops[hop].get("query") or s.user_input,
                              retrieved_contexts=texts))
    return out


def hop_context_relevance(samples: Sequence[Sample], evaluate: Evaluate, judge: Any, *,
                          metric: str = "context_relevance", seed: int = 42
                          ) -> list[EvalResult]:
    """A judged context metric on every hop (no gold needed), one result per hop, with
    ``evaluate`` = ``ragmeter.generation.evaluate.evaluate_generation`` and any judge
    (``make_judge``: pseudonymisation and cost control apply)."""
    n_hops = max((len(hops_of(s)) for s in samples), default=0)
    return [evaluate(hop_context_samples(samples, hop), [metric], judge=judge, seed=seed,
                     name=f"hop {hop + 1}") for hop in range(n_hops)]
