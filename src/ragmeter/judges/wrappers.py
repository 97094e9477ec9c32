"""The wrappers :func:`~ragmeter.judges.factory.make_judge` applies to every judge it builds
from a config, registered by the packages that own them: cost control (``--estimate``'s
planning stand-in, ``--max-cost`` / ``--max-calls``' budget: :mod:`ragmeter.cost`) and
pseudonymisation (:mod:`ragmeter.privacy.judge`); batch files
(:mod:`ragmeter.judges.batchfiles.rounds`: inside ``batch_scope`` a judge writes or collects
batch files instead of calling). Judges import neither package; the
registry loads their modules by name on first use (as the tier registry loads the built-in
tiers), so no judge is ever built without them. A wrapper of your own is one
``WRAPPERS.register(name, JudgeWrapper(...))``.

Cheap to import: the owners import this module, not the judge engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.registry import Registry

if TYPE_CHECKING:
    from ragmeter.judges.config import JudgeConfig


@dataclass(frozen=True)
class JudgeWrapper:
    """What :func:`~ragmeter.judges.factory.make_judge` applies to a judge built from a config.

    ``instead(config)``: a judge to return *instead of* building one (an estimate's planning
    stand-in), or None; ``wrap(judge, config)``: the judge wrapped (or itself, when the
    wrapper is not active). ``order``: wrappers are asked for a stand-in and applied in
    ascending order, so a higher one wraps a lower one (the budget goes outside
    pseudonymisation).
    """

    order: int
    wrap: Callable[[Any, JudgeConfig], Any] | None = None
    instead: Callable[[JudgeConfig], Any] | None = None


#: the wrappers of judges built from a config, by name
WRAPPERS: Registry[JudgeWrapper] = Registry(
    "judge wrapper", modules=("ragmeter.privacy.judge", "ragmeter.cost.estimate",
                              "ragmeter.cost.budget", "ragmeter.judges.batchfiles.rounds"))


__all__ = ["WRAPPERS", "JudgeWrapper"]
