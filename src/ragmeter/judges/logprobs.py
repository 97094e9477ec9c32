"""The judge's own certainty from token log-probabilities (OpenAI-compatible ``logprobs``).

A judge reply is JSON whose decisions are a few short tokens — ``"yes"``/``"no"``, a grade
``0``/``1``/``2``, ``"supported"`` … — among structural tokens the model is sure of. The
probability the model gave the token it chose, at each such *verdict token*, says how sure it
was of that decision; the reply's certainty is the smallest of them (its least certain
verdict). Tokens of free text (a reason) are not verdicts and are not read. A reply without
any verdict token has no certainty (``None``): the selection of items to label then falls
back to other signals (a jury's split, a grade near the threshold).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: the values a judge's verdict takes, as the tokens that carry them (lower case, bare)
VERDICT_TOKENS = frozenset({
    "yes", "no", "да", "нет", "true", "false", "0", "1", "2",
    "supported", "contradicted", "neutral", "partial", "partly",
})

_BARE = re.compile(r"^[\s\"'`:,\[\]{}]*(.*?)[\s\"'`:,\[\]{}]*$", re.DOTALL)
_TOKENS = re.compile(r"\w+|[^\w\s]+|\s+")


def bare(token: str) -> str:
    """A token without surrounding quotes, spaces and JSON punctuation, lower case."""
    m = _BARE.match(token)
    return (m.group(1) if m else token).lower()


def verdict_probability(content: Iterable[Mapping[str, Any]] | None) -> float | None:
    """The smallest probability among the reply's verdict tokens (``content``: the
    ``choices[0].logprobs.content`` list of an OpenAI-compatible reply), or ``None`` when no
    token is a verdict or the list is missing or malformed."""
    if not content:
        return None
    low: float | None = None
    try:
        for entry in content:
            if bare(str(entry.get("token", ""))) not in VERDICT_TOKENS:
                continue
            lp = float(entry["logprob"])
            if not math.isfinite(lp) and lp != -math.inf:
                return None
            p = min(1.0, max(0.0, math.exp(lp)))
            low = p if low is None else min(low, p)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return low


def split_tokens(text: str) -> list[str]:
    """Text cut into word, punctuation and space runs (what the fake server returns as
    tokens; a real tokenizer's cuts differ, verdict words stay whole in both)."""
    return _TOKENS.findall(text)


__all__ = ["VERDICT_TOKENS", "bare", "split_tokens", "verdict_probability"]
