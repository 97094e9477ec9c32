"""``--estimate`` / ``--max-cost`` / ``--max-calls``: the one way a command gets them.

Every command that can call a model declares the three options (``common.EstimateOpt``,
``common.MaxCostOpt``, ``common.MaxCallsOpt``) and runs its work through :func:`run_costed`:

* ``--estimate``: the work runs inside :func:`ragmeter.cost.estimate_scope`, so every judge
  it builds is a planning stand-in; the estimate is printed and nothing is sent or stored
  (a command with a planner of its own passes it as ``plan``);
* ``--max-cost`` / ``--max-calls``: the work runs inside :func:`ragmeter.cost.budget_scope`
  with one :class:`~ragmeter.cost.Budget`, so every judge it builds sends through it; a stop
  is printed (after the command's own ``on_stop``) and exits with code 3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ragmeter.cost import (
    Budget,
    BudgetExhausted,
    Estimate,
    budget_scope,
    estimate_scope,
    money,
    summarise,
)

T = TypeVar("T")
Echo = Callable[[str], Any]


@dataclass(frozen=True)
class CostOptions:
    """The three cost options as a command received them."""

    estimate: bool = False
    max_cost: float | None = None
    max_calls: int | None = None

    def budget(self) -> Budget:
        """The command's one budget (validated: a bad limit is a usage error)."""
        return Budget(self.max_cost, self.max_calls)


def print_estimates(estimates: Sequence[Estimate], echo: Echo = print) -> None:
    """Print every estimate and a total."""
    if not estimates:
        echo("no judge calls planned")
        return
    for e in estimates:
        for line in e.lines():
            echo(line)
    if len(estimates) > 1:
        rounds = max(e.rounds for e in estimates)
        echo(f"total: {sum(e.calls for e in estimates)} calls, ~"
             f"{sum(e.tokens_in for e in estimates):,} in / ~"
             f"{sum(e.tokens_out for e in estimates):,} out tokens, ~"
             f"{money(sum(e.cost for e in estimates))} (batch ~"
             f"{money(sum(e.batch_cost for e in estimates))})"
             + (f", {rounds} round(s)" if rounds else ""))


def _console_echo() -> Echo:
    from ragmeter.cli import common

    console = common.human_console()
    return lambda text: console.print(text, highlight=False, markup=False)


def run_costed(work: Callable[[], T], options: CostOptions, *, title: str = "",
               plan: Callable[[], object] | None = None,
               on_stop: Callable[[BudgetExhausted], None] | None = None,
               echo: Echo | None = None) -> T | None:
    """Run ``work()`` under the command's cost options; ``None`` under ``--estimate``.

    ``plan`` replaces the stand-in run under ``--estimate`` for a command that plans (and
    prints) in its own way. A budget stop is printed, then ``on_stop`` records or explains
    it; the command exits with code 3 (the judge cache keeps what was paid for).
    """
    import typer

    say = echo or _console_echo()
    budget = options.budget()
    if options.estimate:
        if plan is not None:
            plan()
            return None
        with estimate_scope() as planned:
            work()
        if title:
            say(title)
        print_estimates([summarise(j) for j in planned], say)
        return None
    try:
        with budget_scope(budget):
            return work()
    except BudgetExhausted as stop:
        say(stop.message())
        if on_stop is not None:
            on_stop(stop)
        raise typer.Exit(3) from None


__all__ = ["CostOptions", "print_estimates", "run_costed"]
