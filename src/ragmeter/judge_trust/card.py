"""Judge cards: how well a judge agrees with human labels, per judged metric, signed.

A card compares, item by item, the judge's value (on the metric's 0–1 scale) with the human
label (on the same scale, see :mod:`ragmeter.judge_trust.labels`) and reports, each with a
seeded bootstrap CI over items and its ``n``:

* ``accuracy`` — exact agreement after putting the judge on the labels' scale: binary labels
  compare ``judge ≥ threshold`` with the label; ordinal labels compare ``round(2·judge)`` with
  the grade; continuous labels compare both sides binarised at ``threshold``.
* ``kappa`` — Cohen's κ on those categories (quadratic-weighted for ordinal labels).
* ``spearman`` and ``mae`` — rank correlation and mean absolute error on the 0–1 values.
* ``tpr`` / ``tnr`` — the judge's "good" (``≥ threshold``) against the human's "good".
* ``bias`` — mean judge − mean human: ``lenient`` when its CI is above 0, ``strict`` when
  below, ``none detected`` otherwise.
* ``auc`` and ``separation`` — discrimination: the probability that a human-good item scores
  higher than a human-bad one, and the difference of the judge's means between them.

The card is signed (judge, model, prompt versions, labels hash, threshold, seed) so two cards
of different judges on the same labels are comparable, and :func:`compare_cards` ranks them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.stats import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    Estimate,
    bootstrap_stat,
    cohen_kappa,
    rates,
    roc_auc,
    spearman,
)

STATS = ("accuracy", "kappa", "spearman", "mae", "tpr", "tnr", "bias", "auc", "separation")
CARD_VERSION = "1"


@dataclass
class MetricCard:
    """Agreement of one judge with humans on one metric."""

    metric: str
    scale: str
    n: int
    stats: dict[str, Estimate]
    kappa_kind: str
    threshold: float
    judge_mean: float | None
    human_mean: float | None
    n_labels: int = 0
    n_unscored: int = 0
    unscored_by_reason: dict[str, int] = field(default_factory=dict)
    flaky: dict[str, Any] | None = None
    #: a jury's members, each judged alone on the same items: name -> {"kappa", "accuracy"}
    members: dict[str, dict[str, Estimate]] = field(default_factory=dict)
    #: per labelled item: 1 when the judge agreed with the label on the card's categories,
    #: 0 when not, None when unscored (what a drift check re-tests, item by item)
    correct: dict[str, int | None] = field(default_factory=dict)

    @property
    def bias_direction(self) -> str:
        b = self.stats.get("bias")
        if b is None or b.value is None:
            return "unknown"
        if b.ci_low is not None and b.ci_low > 0:
            return "lenient"
        if b.ci_high is not None and b.ci_high < 0:
            return "strict"
        return "none detected"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "scale": self.scale, "n": self.n,
                "n_labels": self.n_labels, "n_unscored": self.n_unscored,
                "unscored_by_reason": dict(self.unscored_by_reason),
                "kappa_kind": self.kappa_kind, "threshold": self.threshold,
                "judge_mean": self.judge_mean, "human_mean": self.human_mean,
                "bias_direction": self.bias_direction,
                "stats": {k: v.to_dict() for k, v in self.stats.items()},
                **({"flaky": self.flaky} if self.flaky is not None else {}),
                **({"members": {n: {k: e.to_dict() for k, e in st.items()}
                                for n, st in self.members.items()}} if self.members else {}),
                **({"correct": dict(self.correct)} if self.correct else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricCard:
        return cls(d["metric"], d["scale"], int(d["n"]),
                   {k: Estimate(**v) for k, v in d["stats"].items()}, d["kappa_kind"],
                   float(d["threshold"]), d.get("judge_mean"), d.get("human_mean"),
                   int(d.get("n_labels", 0)), int(d.get("n_unscored", 0)),
                   dict(d.get("unscored_by_reason") or {}), d.get("flaky"),
                   {n: {k: Estimate(**e) for k, e in st.items()}
                    for n, st in (d.get("members") or {}).items()},
                   {str(k): (None if v is None else int(v))
                    for k, v in (d.get("correct") or {}).items()})


@dataclass
class JudgeCard:
    """A signed set of :class:`MetricCard` for one judge on one labels file."""

    judge: str
    model: str
    prompt_versions: tuple[str, ...]
    labels_sha256: str
    metrics: dict[str, MetricCard]
    seed: int = DEFAULT_SEED
    n_boot: int = DEFAULT_N_BOOT
    dataset: str = ""
    demo: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        from ragmeter.results.records import Signature

        return str(Signature.make(card=CARD_VERSION, judge=self.judge, model=self.model,
                                  prompt=list(self.prompt_versions) or None,
                                  labels=self.labels_sha256[:16], data=self.dataset or None,
                                  seed=self.seed, boot=self.n_boot))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "judge_card", "version": CARD_VERSION, "signature": self.signature,
                "judge": self.judge, "model": self.model, "demo": self.demo,
                "prompt_versions": list(self.prompt_versions),
                "labels_sha256": self.labels_sha256, "dataset": self.dataset,
                "seed": self.seed, "n_boot": self.n_boot, "meta": dict(self.meta),
                "metrics": {k: v.to_dict() for k, v in self.metrics.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeCard:
        return cls(d["judge"], d["model"], tuple(d.get("prompt_versions") or ()),
                   d["labels_sha256"], {k: MetricCard.from_dict(v)
                                        for k, v in d["metrics"].items()},
                   int(d.get("seed", DEFAULT_SEED)), int(d.get("n_boot", DEFAULT_N_BOOT)),
                   d.get("dataset", ""), bool(d.get("demo", False)), dict(d.get("meta") or {}))

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per metric (value and CI of each statistic) for tables."""
        out = []
        for m in self.metrics.values():
            row: dict[str, Any] = {"judge": self.judge, "metric": m.metric, "scale": m.scale,
                                   "n": m.n, "unscored": m.n_unscored,
                                   "bias_direction": m.bias_direction}
            for k, e in m.stats.items():
                row[k] = e.value
                row[f"{k}_ci"] = (e.ci_low, e.ci_high)
            for name, st in m.members.items():
                row[f"kappa[{name}]"] = st["kappa"].value
                row[f"kappa[{name}]_ci"] = (st["kappa"].ci_low, st["kappa"].ci_high)
            if m.flaky:
                row["flip_rate"] = m.flaky.get("flip_rate")
                row["threshold_cross"] = m.flaky.get("threshold_cross")
            out.append(row)
        return out


def _categories(v: np.ndarray, scale: str, threshold: float) -> np.ndarray:
    if scale == "ordinal":
        return np.clip(np.floor(v * 2.0 + 0.5), 0, 2)
    return (v >= threshold).astype(np.float64)


def item_correctness(judge: Sequence[float | None], human: Sequence[float], *, scale: str,
                     threshold: float = 0.5) -> list[int | None]:
    """Per item: 1 when the judge's category equals the label's (as for ``accuracy``), 0
    when not, ``None`` when the judge left it unscored."""
    out: list[int | None] = []
    for v, y in zip(judge, human, strict=True):
        if v is None or not math.isfinite(float(v)):
            out.append(None)
            continue
        f = _categories(np.asarray([float(v)]), scale, threshold)[0]
        h = _categories(np.asarray([float(y)]), scale, threshold)[0]
        out.append(int(f == h))
    return out


def metric_card(metric: str, judge: Sequence[float | None], human: Sequence[float], *,
                scale: str, threshold: float = 0.5, reasons: Sequence[str | None] | None = None,
                seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_N_BOOT) -> MetricCard:
    """The card of one metric from aligned judge values (``None`` = unscored) and labels.

    Both on 0–1. Unscored judge replies are counted (with reasons) and left out of the
    statistics, never scored as 0.
    """
    if len(judge) != len(human):
        raise ValueError(f"{metric}: {len(judge)} judge values for {len(human)} labels")
    keep = [i for i, v in enumerate(judge) if v is not None and math.isfinite(float(v))]
    unscored: dict[str, int] = {}
    for i, v in enumerate(judge):
        if v is None or not math.isfinite(float(v)):
            why = (reasons[i] if reasons is not None else None) or "unscored"
            unscored[why] = unscored.get(why, 0) + 1
    f = np.asarray([float(judge[i]) for i in keep], dtype=np.float64)  # type: ignore[arg-type]
    y = np.asarray([float(human[i]) for i in keep], dtype=np.float64)
    fc = _categories(f, scale, threshold)
    yc = _categories(y, scale, threshold)
    fpos = f >= threshold
    ypos = y >= threshold
    kind = "quadratic" if scale == "ordinal" else "cohen"
    cats = np.array([0.0, 1.0, 2.0]) if scale == "ordinal" else np.array([0.0, 1.0])

    def kappa(i: np.ndarray) -> float | None:
        return cohen_kappa(fc[i], yc[i], categories=cats,
                           weights="quadratic" if scale == "ordinal" else None)

    def sep(i: np.ndarray) -> float | None:
        g, b = ypos[i], ~ypos[i]
        if not g.any() or not b.any():
            return None
        return float(f[i][g].mean() - f[i][b].mean())

    funcs = {
        "accuracy": lambda i: float((fc[i] == yc[i]).mean()),
        "kappa": kappa,
        "spearman": lambda i: spearman(f[i], y[i]),
        "mae": lambda i: float(np.abs(f[i] - y[i]).mean()),
        "tpr": lambda i: rates(fpos[i], ypos[i])[0],
        "tnr": lambda i: rates(fpos[i], ypos[i])[1],
        "bias": lambda i: float(f[i].mean() - y[i].mean()),
        "auc": lambda i: roc_auc(ypos[i], f[i]),
        "separation": sep,
    }
    n = int(f.size)
    stats = {k: bootstrap_stat(fn, n, seed=seed, n_boot=n_boot) for k, fn in funcs.items()}
    return MetricCard(metric, scale, n, stats, kind, threshold,
                      float(f.mean()) if n else None, float(y.mean()) if n else None,
                      n_labels=len(human), n_unscored=len(judge) - n,
                      unscored_by_reason=unscored)


def card_from_values(judge_values: Mapping[str, Mapping[str, float | None]], labels: Any, *,
                     judge: str, model: str, prompt_versions: Sequence[str] = (),
                     reasons: Mapping[str, Mapping[str, str]] | None = None,
                     system: str | None = None, threshold: float = 0.5, dataset: str = "",
                     demo: bool = False, seed: int = DEFAULT_SEED,
                     n_boot: int = DEFAULT_N_BOOT,
                     members: Mapping[str, Mapping[str, Mapping[str, float | None]]]
                     | None = None) -> JudgeCard:
    """A card from ``metric → sample_id → judge value`` and a :class:`LabelSet`.

    Only metrics with labels get a card entry; labelled samples the judge never saw are
    counted in ``meta["labels_without_judge_value"]``. ``members`` (a jury's members:
    ``name → metric → sample_id → value``) puts each member's κ and accuracy, on the same
    labelled items, beside the jury's.
    """
    metrics: dict[str, MetricCard] = {}
    orphans: dict[str, int] = {}
    for metric in labels.metrics:
        if metric not in judge_values:
            continue
        lab = labels.values(metric, system)
        jv = judge_values[metric]
        ids = [sid for sid in lab if sid in jv]
        missing = len(lab) - len(ids)
        if missing:
            orphans[metric] = missing
        why = (reasons or {}).get(metric, {})
        metrics[metric] = metric_card(metric, [jv[s] for s in ids], [lab[s] for s in ids],
                                      scale=labels.scales[metric], threshold=threshold,
                                      reasons=[why.get(s) for s in ids], seed=seed,
                                      n_boot=n_boot)
        metrics[metric].correct = dict(zip(ids, item_correctness(
            [jv[s] for s in ids], [lab[s] for s in ids], scale=labels.scales[metric],
            threshold=threshold), strict=True))
        for name, mv in (members or {}).items():
            vals = mv.get(metric, {})
            mc = metric_card(metric, [vals.get(s) for s in ids], [lab[s] for s in ids],
                             scale=labels.scales[metric], threshold=threshold, seed=seed,
                             n_boot=n_boot)
            metrics[metric].members[name] = {"kappa": mc.stats["kappa"],
                                             "accuracy": mc.stats["accuracy"]}
    card = JudgeCard(judge, model, tuple(prompt_versions), labels.sha256, metrics, seed, n_boot,
                     dataset, demo)
    unlabelled = sorted(set(judge_values) - set(labels.metrics))
    card.meta["labels_without_judge_value"] = orphans
    card.meta["metrics_without_labels"] = unlabelled
    card.meta["labels_not_judged"] = sorted(set(labels.metrics) - set(judge_values))
    return card


def compare_cards(cards: Sequence[JudgeCard], stat: str = "kappa") -> list[dict[str, Any]]:
    """Judges side by side: per metric, each judge's ``stat`` with CI, ranked best first
    (lowest first for ``mae``; by absolute value for ``bias``); a card that lacks ``stat``
    is listed last with ``missing: True`` (shown as n/a)."""
    if stat not in STATS:
        raise ValueError(f"unknown statistic {stat!r} (known: {', '.join(STATS)})")
    metrics = sorted({m for c in cards for m in c.metrics})
    rows = []
    for metric in metrics:
        entries: list[dict[str, Any]] = []
        for c in cards:
            mc = c.metrics.get(metric)
            if mc is None:
                continue
            e = mc.stats.get(stat)
            if e is None:  # a card without this statistic (an older or other scale): n/a
                entries.append({"metric": metric, "judge": c.judge, "model": c.model,
                                "value": None, "ci_low": None, "ci_high": None, "n": mc.n,
                                "signature": c.signature, "missing": True})
                continue
            entries.append({"metric": metric, "judge": c.judge, "model": c.model,
                            "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                            "n": e.n, "signature": c.signature})

        def key(r: dict[str, Any]) -> float:
            v = r["value"]
            if v is None:
                return math.inf
            if stat == "mae":
                return float(v)
            if stat == "bias":
                return abs(float(v))
            return -float(v)

        for rank, r in enumerate(sorted(entries, key=key), 1):
            rows.append({**r, "rank": rank})
    return rows


__all__ = ["CARD_VERSION", "STATS", "JudgeCard", "MetricCard", "card_from_values",
           "compare_cards", "item_correctness", "metric_card"]
