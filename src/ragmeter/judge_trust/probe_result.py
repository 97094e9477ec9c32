"""A bias probe's result: an effect on the judge's 0–1 scale with its CI and test."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ProbeResult:
    """One probe's effect (variant − original, on the judge's 0–1 scale) with its CI."""

    probe: str
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_unscored: int
    p_value: float | None = None
    paired: bool = True
    tasks: tuple[str, ...] = ()
    note: str = ""

    @property
    def biased(self) -> bool:
        """The CI excludes 0 and, for a paired probe, the randomization test agrees
        (p < 0.05): with few changed items a percentile interval can miss 0 while the
        exact test cannot tell the change from chance."""
        excludes = (self.ci_low is not None and self.ci_high is not None
                    and (self.ci_low > 0 or self.ci_high < 0))
        return excludes and (self.p_value is None or self.p_value < 0.05)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tasks": list(self.tasks), "biased": self.biased}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProbeResult:
        keep = {k: v for k, v in d.items() if k != "biased"}
        return cls(**{**keep, "tasks": tuple(keep.get("tasks", ()))})


__all__ = ["ProbeResult"]
