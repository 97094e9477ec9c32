"""Per-sample tables of a result: question, answer, contexts, value and reason of every sample
(:meth:`EvalResult.to_pandas`, the three worst samples of a failed gate)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter.errors import MissingExtraError
from ragmeter.results.target_calls import target_calls

#: keys of a sample's details that hold the judge's reason, in order of preference
REASON_KEYS = ("reason", "explanation", "rationale", "reasoning", "feedback", "detail")


def sample_text(sample: Any, target: str | None = None) -> dict[str, Any]:
    """Question, answer and contexts of a :class:`~ragmeter.data.sample.Sample` or a dict.

    For a result of a target (``target``: its name), what that target was scored on: its
    answer, the contexts it returned (ids with "text not returned" when it returned ids
    alone) and the call's latency, labelled with the target's name — not the dataset's
    recorded answer. A retrieval sample without an answer gives its first retrieved ids and
    its gold."""
    def get(key: str) -> Any:
        return sample.get(key) if isinstance(sample, Mapping) else getattr(sample, key, None)
    out = {"question": get("user_input"), "answer": get("response"),
           "contexts": list(get("retrieved_contexts") or []) or None,
           "reference": get("reference")}
    calls = target_calls(sample, target) if target else []
    if calls:
        call = next((c for c in calls if c.entry == "answer"), None) or next(
            (c for c in calls if c.answer is not None), calls[0])
        out.update({"answer": call.answer, "contexts": call.context_lines() or None,
                    "target": call.target, "latency_s": call.latency_s})
        if call.error:
            out["target_error"] = call.error
    ids = get("retrieved_ids")
    if out["answer"] is None and ids is not None:
        gold = list(get("gold_chunk_ids") or []) or list(get("gold_doc_ids") or [])
        out["retrieved"] = [str(x) for x in ids][:5]
        out["gold"] = [str(x) for x in gold][:5]
    return out


def reason_of(reason: str | None, details: Mapping[str, Any] | None) -> str | None:
    """Why a sample is unscored, else the judge's own words: its reason, or the reasons it gave
    for the claims it did not find supported."""
    if reason:
        return reason
    if not details:
        return None
    for key in REASON_KEYS:
        v = details.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip()
    verdicts = details.get("verdicts") or {}
    reasons = details.get("verdict_reasons") or {}
    out = []
    for key, side in (("answer_claims", "answer"), ("reference_claims", "reference")):
        claims = details.get(key) or []
        why = reasons.get(side) or []
        checks = [v for k, v in verdicts.items() if k.startswith(side)]
        for i, claim in enumerate(claims):
            failed = any(isinstance(c, list) and i < len(c) and c[i] == 0 for c in checks)
            if failed:
                text = why[i] if i < len(why) and why[i] else "not supported"
                out.append(f"{claim}: {text}")
    return "; ".join(out) or None


def target_of(name: str) -> str:
    """The target a result belongs to: its name without ``:latency`` and the like."""
    return name.split(":", 1)[0]


def long_rows(results: Mapping[str, Any], samples: Mapping[str, Any],
              target: str | None = None) -> list[dict[str, Any]]:
    """One row per (sample, metric) of ``results`` (metric key → MetricResult); ``target``:
    the result's target (its calls are what each row shows)."""
    rows = []
    for key, mr in results.items():
        for s in mr.records():
            text = sample_text(samples.get(s.sample_id, {}), target)
            value = None if s.value is None or (isinstance(s.value, float)
                                                and math.isnan(s.value)) else s.value
            rows.append({"sample_id": s.sample_id, **text, "metric": key, "value": value,
                         "reason": reason_of(s.reason, s.details)})
    return rows


def result_frame(result: Any, shape: str = "wide", samples: Iterable[Any] | None = None
                 ) -> Any:
    """The DataFrame of :meth:`EvalResult.to_pandas`."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError("pandas", "pandas", "DataFrame export") from exc
    if shape not in ("wide", "long"):
        from ragmeter.errors import ConfigError

        raise ConfigError("shape", f"unknown shape {shape!r}", ["wide", "long"])
    by_id = dict(result.samples)
    for s in samples or []:
        by_id[str(getattr(s, "id", None) or s.get("id"))] = s
    rows = long_rows(result.results, by_id, target_of(result.name))
    text_cols = ["sample_id", "question", "answer", "contexts", "reference"]
    if any("target" in r for r in rows):   # a target's result: whose answer, how fast
        text_cols += ["target", "latency_s"]
    if shape == "long":
        return pd.DataFrame(rows, columns=[*text_cols, "metric", "value", "reason"])
    wide: dict[str, dict[str, Any]] = {}
    for r in rows:
        row = wide.setdefault(r["sample_id"], {k: r.get(k) for k in text_cols})
        row[r["metric"]] = r["value"]
        row[f"{r['metric']}:reason"] = r["reason"]
    return pd.DataFrame(list(wide.values()))


def worst_samples(result: Any, metric: str, n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` worst samples of one metric (in its direction), unscored ones after the
    scored, each with question, answer and reason."""
    mr = result.results[metric]
    rows = long_rows({metric: mr}, result.samples, target_of(result.name))
    sign = 1.0 if mr.higher_is_better else -1.0
    scored = sorted((r for r in rows if r["value"] is not None),
                    key=lambda r: (sign * r["value"], r["sample_id"]))
    unscored = [r for r in rows if r["value"] is None]
    return (scored + unscored)[:n]
