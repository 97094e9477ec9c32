"""Cost metrics: what an answer of the measured system costs and what judging a sample costs,
from the token usage the calls reported, at the prices (per 1M input / output tokens) set on
the target or the judge config. A call that reported no usage is unscored
(``usage_unknown``), never 0; the unknown count is shown beside the figure. Computed by
:mod:`ragmeter.cost.pricing`."""

from __future__ import annotations

from ragmeter.metrics.registry import MetricSpec, register

register(MetricSpec(
    name="cost_per_answer", family="cost", higher_is_better=False, value_range=None,
    doc="per target call (tokens_in × price_in + tokens_out × price_out) / 10^6, the "
        "target's reported usage at the target's price_in / price_out; mean over the calls "
        "that reported usage, bootstrap CI; calls without usage counted as unknown",
))
register(MetricSpec(
    name="judge_cost_per_sample", family="cost", higher_is_better=False, value_range=None,
    doc="per sample Σ over its judge calls (follow-ups included; a cached reply at the usage "
        "recorded when it was made) of (tokens_in × price_in + tokens_out × price_out) / "
        "10^6 at the judge's prices; mean over samples, bootstrap CI; a sample with a call "
        "without usage counted as unknown",
))
