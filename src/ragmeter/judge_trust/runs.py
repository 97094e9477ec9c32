"""Judge cards and bias-corrected estimates for a stored run.

:func:`judged_values` reads the per-sample values of judged metrics from a
:class:`~ragmeter.results.store.StoredRun`; :func:`trust_result` turns a card and its PPI
estimates into an :class:`~ragmeter.results.records.EvalResult` (per-sample human labels and
judge − human differences as metric results, the card and the estimates in ``meta``) that
:func:`attach_to_run` stores as the run's ``judge_trust`` tier, so reports and ``ragmeter
view`` read it like any other tier (``meta["judge_card"]`` is :meth:`JudgeCard.to_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ragmeter.judge_trust.card import JudgeCard
from ragmeter.judge_trust.labels import LabelSet
from ragmeter.judge_trust.ppi import MetricPPI

TIER = "judge_trust"


def _base(key: str) -> str:
    from ragmeter.metrics.registry import split_metric_key

    return split_metric_key(key)[0].replace("-", "_")


def judged_values(run: Any, labels: LabelSet, *, system: str | None = None
                  ) -> tuple[dict[str, dict[str, float | None]], dict[str, dict[str, str]],
                             dict[str, str]]:
    """For every labelled metric found in ``run``: sample id → value, sample id → unscored
    reason, and the signature of the result it came from.

    A label's metric matches a result key exactly, else the key's base name
    (``answer_correctness(preset=equal)`` matches ``answer_correctness``). ``system`` picks
    one system's result when a tier holds several.
    """
    values: dict[str, dict[str, float | None]] = {}
    reasons: dict[str, dict[str, str]] = {}
    sigs: dict[str, str] = {}
    for rec in run.tiers.values():
        if rec.tier == TIER:
            continue
        for res in rec.results:
            if system is not None and res.name != system:
                continue
            for key, mr in res.results.items():
                target = key if key in labels.scales else _base(key)
                if target not in labels.scales or target in values:
                    continue
                values[target] = {s.sample_id: s.value for s in mr.records()}
                reasons[target] = {s.sample_id: s.reason or "unscored" for s in mr.records()
                                   if s.value is None}
                sigs[target] = str(mr.signature)
    return values, reasons, sigs


def trust_result(card: JudgeCard, labels: LabelSet,
                 judge_values: Mapping[str, Mapping[str, float | None]],
                 estimates: Mapping[str, MetricPPI], *, system: str | None = None) -> Any:
    """The card as an :class:`EvalResult` of per-sample records plus ``meta``."""
    from ragmeter.results.records import EvalResult, MetricResult, Signature

    res = EvalResult(name=f"judge_card:{card.judge}",
                     meta={"tier": TIER, "judge_card": card.to_dict(),
                           "ppi": {k: v.to_dict() for k, v in estimates.items()},
                           "labels_source": labels.source})
    for metric in card.metrics:
        lab = labels.values(metric, system)
        ids = sorted(lab)
        jv = judge_values.get(metric, {})
        sig = Signature.make(metric=metric, card=card.signature.replace("|", ";"))
        res.add(MetricResult(f"human_label(metric={metric})", ids,
                             np.asarray([lab[s] for s in ids]), sig))
        diff = np.full(len(ids), np.nan)
        why: dict[int, str] = {}
        for i, s in enumerate(ids):
            v = jv.get(s)
            if v is None:
                why[i] = "no_judge_value" if s not in jv else "judge_unscored"
            else:
                diff[i] = float(v) - lab[s]
        res.add(MetricResult(f"judge_minus_human(metric={metric})", ids, diff, sig,
                             reasons=why, higher_is_better=False))
    return res


def attach_to_run(store: Any, run_id: str, result: Any) -> None:
    """Add (or replace) the ``judge_trust`` tier of a stored run with ``result``."""
    from ragmeter.results.store import TierRecord

    run = store.load_run(run_id)
    rec = run.tiers.get(TIER) or TierRecord(TIER)
    rec.results = [r for r in rec.results if r.name != result.name] + [result]
    run.tiers[TIER] = rec
    store.save_run(run)


def stored_cards(run: Any) -> list[tuple[JudgeCard, dict[str, Any]]]:
    """Every judge card stored with ``run`` and the prediction-powered estimates stored beside
    it (``metric → MetricPPI.to_dict()``, empty when none)."""
    rec = run.tiers.get(TIER)
    if rec is None:
        return []
    return [(JudgeCard.from_dict(r.meta["judge_card"]), dict(r.meta.get("ppi") or {}))
            for r in rec.results if "judge_card" in r.meta]


def cards_of_run(run: Any) -> list[JudgeCard]:
    """Every judge card stored with ``run``."""
    return [card for card, _ in stored_cards(run)]


__all__ = ["TIER", "attach_to_run", "cards_of_run", "judged_values", "stored_cards",
           "trust_result"]
