"""The cost of a generation run before anything is sent: an upper bound of its calls.

Token counts come from the project's one estimate (:func:`ragmeter.cost.count_tokens`);
prices from the generator's config (``price_in`` / ``price_out`` per 1M tokens); the result is
the same :class:`ragmeter.cost.Estimate` as every ``--estimate``. While the run goes, the
command's one :class:`ragmeter.cost.Budget` counts what is really sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragmeter.cost import count_tokens
from ragmeter.cost.estimate import Estimate, estimate_of
from ragmeter.judges.base import JudgeRequest
from ragmeter.synth.filters import FilterSettings
from ragmeter.synth.prompts import CHECKS

if TYPE_CHECKING:
    from ragmeter.synth.pipeline import Setup

#: output tokens assumed per call in estimates
EXPECTED_OUT = {"generate": 150, "generate_conversational": 300, "check": 60}


def approx_tokens(text: str) -> int:
    """Estimated tokens of ``text``: the project's one token estimate
    (:func:`ragmeter.cost.count_tokens`, calibrated on measured usage), at least 1."""
    return max(1, count_tokens(text))


def _messages_tokens(req: JudgeRequest) -> int:
    return sum(approx_tokens(m.get("content", "")) for m in req.messages)


def plan_estimate(setup: Setup, filters: FilterSettings, *, config: Any | None = None,
                  check_config: Any | None = None, skip: set[str] | None = None) -> Estimate:
    """Upper bound of calls/tokens as the project's one :class:`~ragmeter.cost.Estimate`:
    every slot generated and every item checked, by stage in ``by_prompt`` (``generate``,
    ``check``).

    ``config`` is the generator's JudgeConfig (prices, concurrency), ``check_config`` the
    checker's when it is another model; ``skip`` holds generation keys already finished (a
    resumed run does not ask them again).
    """
    skip = skip or set()
    gen_calls = gen_in = gen_out = 0
    chk_calls = chk_in = chk_out = 0
    chk_prompt = approx_tokens(CHECKS["supported"].system.get(setup.language, ""))
    for (key, req), slot in zip(setup.requests, setup.plan.slots, strict=True):
        if key not in skip:
            gen_calls += 1
            gen_in += _messages_tokens(req)
            gen_out += EXPECTED_OUT["generate_conversational" if slot.kind == "conversational"
                                    else "generate"]
        if filters.answerability:
            chk_calls += 1
            texts = ([setup.by_id[c].text for c in slot.chunk_ids] if slot.chunk_ids else
                     # negatives are checked against the retriever's top chunks
                     [setup.by_id[c].text for c in list(setup.by_id)[:filters.negative_k]])
            chk_in += (chk_prompt + 120
                       + sum(approx_tokens(t) for t in texts))
            chk_out += EXPECTED_OUT["check"]
    gen = estimate_of(gen_calls, gen_in, gen_out, config=config)
    chk = estimate_of(chk_calls, chk_in, chk_out,
                      config=check_config if check_config is not None else config)
    return estimate_of(
        gen_calls + chk_calls, gen_in + chk_in, gen_out + chk_out, config=config,
        cost=gen.cost + chk.cost,
        by_prompt={"generate": {"calls": gen_calls, "tokens_in": gen_in, "tokens_out": gen_out},
                   "check": {"calls": chk_calls, "tokens_in": chk_in, "tokens_out": chk_out}},
        method="ragmeter.cost.count_tokens (characters per token, calibrated); checks are "
               "an upper bound")


__all__ = ["EXPECTED_OUT", "approx_tokens", "plan_estimate"]
