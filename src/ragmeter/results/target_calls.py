"""A target's calls as a sample keeps them: what was scored, not the dataset's recorded answer.

A run on the user's own system (``target:`` / ``targets:``) stores with each sample one record
per target and entry, under ``target:<name>:<entry>``: the target's answer, the contexts it
returned (``None`` when its reply held ids only), their ids, the call's latency and time to
first token, and the error of a failed call. Samples scored in memory carry the same in their
metadata (``target_call``, ``target_error``) with the answer and contexts filled in. The pages,
DataFrames and gate messages read both through :func:`target_calls`, each labelled with the
target's name, so an A/B of two targets shows each target's own answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PREFIX = "target:"
#: shown in place of a context's text when the target returned its id alone
TEXT_NOT_RETURNED = "text not returned"


@dataclass(frozen=True)
class TargetCall:
    """One target call of one sample, as shown."""

    target: str
    entry: str
    answer: str | None
    contexts: list[str] | None
    ids: list[str]
    latency_s: float | None
    ttft_s: float | None
    error: str | None

    def context_lines(self) -> list[str]:
        """The contexts as shown: their texts (with the id when there is one), else each id
        with "text not returned"."""
        if self.contexts:
            return [f"[{self.ids[i]}] {c}" if i < len(self.ids) else c
                    for i, c in enumerate(self.contexts)]
        return [f"[{x}] ({TEXT_NOT_RETURNED})" for x in self.ids]


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def target_calls(sample: Any, target: str | None = None) -> list[TargetCall]:
    """The target calls kept with a stored sample (a dict) or a scored :class:`Sample`;
    ``target``: only that target's."""
    out: list[TargetCall] = []
    if isinstance(sample, Mapping):
        for key, rec in sample.items():
            if not (isinstance(key, str) and key.startswith(PREFIX) and isinstance(rec, Mapping)):
                continue
            name, _, entry = key[len(PREFIX):].rpartition(":")
            if not name or (target is not None and name != target):
                continue
            ctxs = rec.get("contexts")
            out.append(TargetCall(
                name, entry, None if rec.get("answer") is None else str(rec["answer"]),
                [str(c) for c in ctxs] if isinstance(ctxs, list) else None,
                [str(x) for x in rec.get("ids") or []], _float(rec.get("latency_s")),
                _float(rec.get("ttft_s")),
                None if not rec.get("error") else str(rec["error"])))
        return out
    meta = getattr(sample, "metadata", None) or {}
    call = meta.get("target_call")
    if not isinstance(call, Mapping):
        return []
    name = str(meta.get("target_name") or target or "target")
    if target is not None and name != target:
        return []
    ctxs = getattr(sample, "retrieved_contexts", None)
    return [TargetCall(name, str(meta.get("target_entry") or ""),
                       getattr(sample, "response", None),
                       [str(c) for c in ctxs] if ctxs else None,
                       [str(x) for x in getattr(sample, "retrieved_ids", None) or []],
                       _float(call.get("latency_s")), _float(call.get("ttft_s")),
                       None if not meta.get("target_error") else str(meta["target_error"]))]


__all__ = ["PREFIX", "TEXT_NOT_RETURNED", "TargetCall", "target_calls"]
