"""Question kinds of a synthetic test set and the user's mix of them.

A *kind* says how a question is generated; the evalset ``type`` stays one of the evalset
format's types (``fact``, ``definition``, ``negative``) so every loader reads the set, and the
kind is kept in ``metadata.synth.kind``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ragmeter.errors import ConfigError

KINDS: tuple[str, ...] = ("fact", "definition", "multi_chunk", "colloquial", "conversational",
                          "negative")

#: kind -> evalset ``type``
EVALSET_TYPE: dict[str, str] = {
    "fact": "fact", "definition": "definition", "multi_chunk": "fact", "colloquial": "fact",
    "conversational": "fact", "negative": "negative",
}

KIND_DOC: dict[str, str] = {
    "fact": "a fact stated in one chunk",
    "definition": "what a term, service or rule named in one chunk is",
    "multi_chunk": "needs two chunks (both gold)",
    "colloquial": "how users really type: abbreviations, slang, no punctuation",
    "conversational": "last turn of a short dialogue that depends on the earlier turns",
    "negative": "plausible for the domain but not answerable from the corpus",
}

DEFAULT_MIX: dict[str, float] = {"fact": 0.30, "definition": 0.15, "multi_chunk": 0.15,
                                 "colloquial": 0.15, "conversational": 0.10, "negative": 0.15}


@dataclass(frozen=True)
class Mix:
    """Relative weights of the kinds (normalised; zero weights are dropped)."""

    weights: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, spec: str | Mapping[str, float] | Mix | None) -> Mix:
        """Parse ``"fact=3,negative=1"`` (weights or shares) or a mapping; ``None`` = default."""
        if isinstance(spec, Mix):
            return spec
        if spec is None:
            raw: dict[str, float] = dict(DEFAULT_MIX)
        elif isinstance(spec, str):
            raw = {}
            for part in spec.split(","):
                if not part.strip():
                    continue
                name, sep, value = part.partition("=")
                name = name.strip()
                if not sep:
                    raise ConfigError("mix", f"expected kind=weight, got {part.strip()!r} "
                                      "(e.g. fact=0.4,negative=0.2)", list(KINDS))
                try:
                    raw[name] = float(value)
                except ValueError:
                    raise ConfigError(f"mix.{name}", f"weight must be a number, got "
                                      f"{value.strip()!r}") from None
        else:
            raw = {str(k): v for k, v in spec.items()}
        out = []
        for name, w in raw.items():
            if name not in KINDS:
                raise ConfigError(f"mix.{name}", "unknown question kind", list(KINDS))
            if isinstance(w, bool) or not isinstance(w, (int, float)) or math.isnan(w) or w < 0:
                raise ConfigError(f"mix.{name}", f"weight must be a number >= 0, got {w!r}")
            if w > 0:
                out.append((name, float(w)))
        total = sum(w for _, w in out)
        if total <= 0:
            raise ConfigError("mix", "needs at least one kind with a weight > 0", list(KINDS))
        order = {k: i for i, k in enumerate(KINDS)}
        out.sort(key=lambda kv: order[kv[0]])
        return cls(tuple((k, w / total) for k, w in out))

    def counts(self, n: int) -> dict[str, int]:
        """Split ``n`` items by the weights (largest remainder; ties in kind order)."""
        if n < 0:
            raise ConfigError("n", f"must be >= 0, got {n}")
        exact = [(k, w * n) for k, w in self.weights]
        base = {k: math.floor(x) for k, x in exact}
        left = n - sum(base.values())
        by_rem = sorted(exact, key=lambda kx: -(kx[1] - math.floor(kx[1])))
        for k, _ in by_rem[:left]:
            base[k] += 1
        return base

    def to_dict(self) -> dict[str, float]:
        return {k: round(w, 6) for k, w in self.weights}

    def __str__(self) -> str:
        return ",".join(f"{k}={w:.3g}" for k, w in self.weights)
