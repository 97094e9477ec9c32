"""How unsure the judge was about each sample: what active selection of items to label reads.

Three signals, each on 0–1 (1 = the judge could as well have said the opposite), read from a
stored run's per-sample values and details:

* ``logprobs`` — the probability ``p`` of the least certain verdict token of the sample's
  judge replies (a judge configured with ``logprobs: true`` on a server that returns them):
  ``2·(1 − p)``, capped at 1 (a coin flip is 1, a sure token 0);
* ``jury`` — a jury's vote: 1 when its members tied on some check, 0.75 when they split,
  0 when they agreed;
* ``margin`` — the judge's value itself: ``1 − |v − threshold| / max distance`` (a grade at
  the good/bad cut is 1, one at the far end of the scale 0).

A sample's uncertainty is the largest of the signals it has; which signals were used is
counted, so a selection says what it ranked by. The scores feed
:func:`ragmeter.stats.selection.select` (``active``), which keeps every item's inclusion
probability above a uniform floor: any item can still be drawn, and the estimate stays
unbiased whatever the scores are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ragmeter.stats.selection import uncertainty_from_margin

SIGNALS = ("logprobs", "jury", "margin")


def token_uncertainty(details: Mapping[str, Any] | None) -> float | None:
    """From the smallest ``token_prob`` of the sample's judge calls (``None``: none kept)."""
    probs = [float(c["token_prob"]) for c in (details or {}).get("calls") or ()
             if isinstance(c, Mapping) and isinstance(c.get("token_prob"), (int, float))
             and math.isfinite(float(c["token_prob"]))]
    if not probs:
        return None
    return min(1.0, max(0.0, 2.0 * (1.0 - min(probs))))


def jury_uncertainty(details: Mapping[str, Any] | None) -> float | None:
    """From a jury's ties and splits (``None``: no jury voted on this sample)."""
    jury = (details or {}).get("jury")
    if not isinstance(jury, Mapping) or not jury.get("members"):
        return None
    if any(jury.get("ties") or {}):
        return 1.0
    if any(jury.get("splits") or {}):
        return 0.75
    return 0.0


def judge_uncertainty(values: Mapping[str, float], details: Mapping[str, Mapping[str, Any]],
                      threshold: float = 0.5) -> tuple[dict[str, float], dict[str, int]]:
    """Per sample id of ``values`` (its judge value on 0–1): the uncertainty score, and how
    many samples each signal decided (``logprobs`` / ``jury`` / ``margin``)."""
    scores: dict[str, float] = {}
    used = dict.fromkeys(SIGNALS, 0)
    for sid, v in values.items():
        d = details.get(sid)
        got = {"logprobs": token_uncertainty(d), "jury": jury_uncertainty(d),
               "margin": float(uncertainty_from_margin([float(v)], threshold)[0])}
        best = max((k for k in SIGNALS if got[k] is not None),
                   key=lambda k: (got[k], -SIGNALS.index(k)))
        scores[sid] = float(got[best])  # type: ignore[arg-type]
        used[best] += 1
    return scores, used


__all__ = ["SIGNALS", "judge_uncertainty", "jury_uncertainty", "token_uncertainty"]
