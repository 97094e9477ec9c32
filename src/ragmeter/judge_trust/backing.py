"""Which judged results a judge card backs: a judge earns the right to gate.

A gate on a judged metric (``ragmeter gate``) is *card-backed* when a judge card stored with
the run (``ragmeter judge card RUN --labels FILE``) covers that metric and matches the judge
that produced the values — the same judge, model, served model version (when the server named
one) and prompt versions — and holds a bias-corrected (prediction-powered) estimate for it:
the gate then checks that estimate's 95% bound (lower for a minimum, upper for a maximum).
Otherwise the gate is *advisory*, with the reason no card matched.

A result is judged when its signature names a judge (``judge`` / ``judge_model``); the
results of the ``judge_trust`` tier (human labels, judge − human) are not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ragmeter.judge_trust.card import JudgeCard
from ragmeter.judge_trust.runs import TIER, stored_cards

#: the signature fields that say which judge produced a judged result
JUDGE_FIELDS = ("judge", "judge_model", "judge_version", "prompt", "shots")


@dataclass(frozen=True)
class Backing:
    """What a judge card says about one judged result's metric: ``card`` (backed: the
    corrected estimate and its interval) or ``advisory`` (``reason``: why no card backs it)."""

    status: str
    reason: str
    card: str = ""
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    judge_mean: float | None = None
    n_labelled: int | None = None
    estimator: str | None = None

    @property
    def backed(self) -> bool:
        return self.status == "card"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("status", "reason", "card", "estimate", "ci_low",
                                              "ci_high", "judge_mean", "n_labelled",
                                              "estimator")}


def is_judged(mr: Any) -> bool:
    """Whether a metric result's values come from an LLM judge (its signature names one)."""
    sig = mr.signature
    return bool(sig.get("judge") or sig.get("judge_model"))


def _base(key: str) -> str:
    from ragmeter.metrics.registry import split_metric_key

    return split_metric_key(key)[0].replace("-", "_")


def _prompts(text: str | None) -> set[str]:
    return {p for p in (text or "").split(",") if p and p != "-"}


def mismatch(card: JudgeCard, metric: str, sig: Any) -> str | None:
    """Why ``card`` does not back the result signed ``sig`` for ``metric`` (``None``: it
    does). Compared with the signature of the result the card was made on when the card
    keeps it, else with the card's own judge, model and prompt versions."""
    from ragmeter.results.records import Signature

    made = (card.meta.get("signatures") or {}).get(metric)
    if made:
        was = Signature.parse(made)
        for key in JUDGE_FIELDS:
            a, b = was.get(key), sig.get(key)
            if key == "prompt":
                if _prompts(a) != _prompts(b):
                    return (f"prompt versions differ (card: {a or '-'}; result: {b or '-'})")
            elif (a or None) != (b or None):
                return f"{key.replace('_', ' ')} differs (card: {a or '-'}; result: {b or '-'})"
        return None
    if card.judge != (sig.get("judge") or card.judge):
        return f"judge differs (card: {card.judge}; result: {sig.get('judge')})"
    model = sig.get("judge_model") or sig.get("model") or ""
    if card.model != model:
        return f"judge model differs (card: {card.model or '-'}; result: {model or '-'})"
    if sig.get("judge_version"):
        return (f"the result's model version {sig.get('judge_version')} is not on the card "
                "(make the card again with `ragmeter judge card`)")
    missing = _prompts(sig.get("prompt")) - set(card.prompt_versions)
    if missing:
        return f"prompt versions {', '.join(sorted(missing))} are not on the card"
    return None


def backing(cards: list[tuple[JudgeCard, dict[str, Any]]], system: str, key: str,
            mr: Any) -> Backing | None:
    """The backing of metric ``key`` of result ``system`` (``None``: not judged)."""
    if not is_judged(mr):
        return None
    base = _base(key)
    covering = [(c, ppi, m) for c, ppi in cards for m in (key, base)
                if m in c.metrics and c.meta.get("system") in (None, "", system)]
    if not covering:
        return Backing("advisory", "no judge card of this run covers it; label samples and "
                       "run `ragmeter judge card RUN --labels FILE`")
    why = []
    for card, ppi, metric in covering:
        problem = mismatch(card, metric, mr.signature)
        if problem is not None:
            why.append(problem)
            continue
        est = ppi.get(metric)
        if not est or est.get("ci_low") is None:
            why.append("the matching card has no bias-corrected estimate of it: fewer than 2 "
                       "labels of judged samples")
            continue
        return Backing("card", f"judge card {card.judge} ({card.model})", card.signature,
                       est.get("estimate"), est.get("ci_low"), est.get("ci_high"),
                       est.get("judge_mean"), est.get("n_labelled"), est.get("estimator"))
    return Backing("advisory", "no matching judge card: " + "; ".join(dict.fromkeys(why)))


def run_backing(run: Any) -> Callable[[Any, str], Backing | None]:
    """``lookup(result, key)`` over the cards stored with ``run`` (``result``: one of the
    run's :class:`EvalResult`, ``key``: its metric); ``None`` for a metric that is not judged
    and for the results of the judge-trust tier."""
    cards = stored_cards(run) if getattr(run, "tiers", None) else []
    names = {id(res): res.name for rec in (getattr(run, "tiers", None) or {}).values()
             for res in rec.results if rec.tier != TIER}

    def lookup(result: Any, key: str) -> Backing | None:
        if id(result) not in names:
            return None
        return backing(cards, names[id(result)], key, result.results[key])
    return lookup


def by_key(run: Any) -> Mapping[tuple[str, str], Backing]:
    """Every judged (result label, metric) of ``run`` with its backing — labels as
    :meth:`StoredRun.results` names the results."""
    lookup = run_backing(run)
    out: dict[tuple[str, str], Backing] = {}
    for label, res in run.results().items():
        for key in res.results:
            b = lookup(res, key)
            if b is not None:
                out[(label, key)] = b
    return out


__all__ = ["JUDGE_FIELDS", "Backing", "backing", "by_key", "is_judged", "mismatch",
           "run_backing"]
