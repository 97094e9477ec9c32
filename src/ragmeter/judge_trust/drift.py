"""Judge drift: re-run a fixed subset of the judge benchmark and test, item by item, whether
the judge agrees with the labels less often than when its card was made.

The thing to run when a provider may have silently updated a model. The subset (≈ 50 items)
is fixed by the card's seed among the items whose correctness the card stores; the same items
are asked again and the paired outcomes are compared by an exact one-sided McNemar test:
among the items whose correctness changed, are there more losses (right then, wrong now)
than chance allows? An item unscored now counts as wrong now (a judge that stopped answering
has drifted too); an item unscored on the card is left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.judge_trust.bench import BenchItem, run_bench
from ragmeter.judge_trust.card import JudgeCard

DEFAULT_N = 50


@dataclass(frozen=True)
class DriftResult:
    judge: str
    card_judge: str
    card_signature: str
    n: int
    accuracy_then: float
    accuracy_now: float
    lost: int          # right on the card, wrong now
    gained: int        # wrong on the card, right now
    unscored_now: int
    p_value: float
    alpha: float
    item_ids: tuple[str, ...]

    @property
    def drifted(self) -> bool:
        """Agreement dropped significantly (one-sided exact McNemar, p < alpha)."""
        return self.lost > self.gained and self.p_value < self.alpha

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "item_ids": list(self.item_ids), "drifted": self.drifted}


def mcnemar_drop(lost: int, gained: int) -> float:
    """One-sided exact McNemar p-value of "more losses than gains": P(X ≥ lost),
    X ~ Binomial(lost + gained, 1/2); 1.0 when nothing changed."""
    n = lost + gained
    if n == 0:
        return 1.0
    return float(sps.binom.sf(lost - 1, n, 0.5))


def load_card(path: str | Path, judge: str | None = None) -> JudgeCard:
    """A card from a JSON file: one card, or ``{"cards": [...]}`` (``judge`` picks one)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(RecordProblem(str(p), None, None, "file not found")) from None
    except json.JSONDecodeError as exc:
        raise DataError(RecordProblem(str(p), exc.lineno, None, f"invalid JSON: {exc.msg}")
                        ) from None
    cards = data.get("cards") if isinstance(data, dict) and "cards" in data else [data]
    if not isinstance(cards, list) or not all(isinstance(c, dict) and "metrics" in c
                                              for c in cards):
        raise DataError(RecordProblem(str(p), None, "cards", "not a judge card file (from "
                                      "`ragmeter judge bench --out`)"))
    if judge is not None and len(cards) > 1:
        cards = [c for c in cards if c.get("judge") == judge] or cards
    if len(cards) != 1:
        names = ", ".join(str(c.get("judge")) for c in cards)
        raise ConfigError("--against", f"{p} holds several cards ({names}); keep one")
    return JudgeCard.from_dict(cards[0])


def drift_subset(card: JudgeCard, items: Sequence[BenchItem], n: int = DEFAULT_N
                 ) -> tuple[list[BenchItem], dict[str, int]]:
    """The fixed subset: ``n`` items (by the card's seed) among those scored on the card
    and present in ``items``, with their correctness on the card."""
    then: dict[str, int] = {}
    for mc in card.metrics.values():
        then.update({k: v for k, v in mc.correct.items() if v is not None})
    if not then:
        raise ConfigError("--against", "the card stores no per-item correctness (made before "
                          "drift checks existed): re-run `ragmeter judge bench --out`")
    by_id = {it.id: it for it in items}
    ids = sorted(i for i in then if i in by_id)
    if not ids:
        raise ConfigError("--items", "none of the card's items is in the benchmark file")
    rng = np.random.default_rng(card.seed)
    pick = sorted(rng.choice(len(ids), size=min(n, len(ids)), replace=False))
    chosen = [by_id[ids[i]] for i in pick]
    return chosen, {it.id: then[it.id] for it in chosen}


def drift_check(judge: Any, card: JudgeCard, items: Sequence[BenchItem], *,
                n: int = DEFAULT_N, alpha: float = 0.05,
                binary: bool | None = None) -> DriftResult:
    """Ask ``judge`` the card's fixed subset again and test for a drop in agreement."""
    chosen, then = drift_subset(card, items, n)
    if binary is None:
        binary = card.meta.get("prompt_variant") == "binary" if card.meta else None
    run = run_bench(judge, chosen, seed=card.seed, n_boot=10, binary=binary)
    now: dict[str, float] = {}
    for task in {it.task for it in chosen}:
        ids, c = run.correct(task)
        now.update(zip(ids, c, strict=True))
    pairs = [(then[i], 0 if np.isnan(now.get(i, np.nan)) else int(now[i])) for i in then]
    lost = sum(1 for a, b in pairs if a == 1 and b == 0)
    gained = sum(1 for a, b in pairs if a == 0 and b == 1)
    unscored = sum(1 for i in then if np.isnan(now.get(i, np.nan)))
    return DriftResult(str(getattr(judge, "name", "judge")), card.judge, card.signature,
                       len(pairs), float(np.mean([a for a, _ in pairs])),
                       float(np.mean([b for _, b in pairs])), lost, gained, unscored,
                       mcnemar_drop(lost, gained), alpha, tuple(then))




__all__ = ["DEFAULT_N", "DriftResult", "drift_check", "drift_subset", "load_card",
           "mcnemar_drop"]
