"""Cost control for every model call: estimate before a run, stop at a budget.

* :mod:`ragmeter.cost.tokens` — token counts without a tokenizer, minimal valid replies;
* :mod:`ragmeter.cost.pricing` — :class:`Price`: per 1M tokens in / out, and a batch API's
  discount;
* :mod:`ragmeter.cost.estimate` — ``--estimate``: stand-in judges that count and send nothing
  (calls, tokens, price, batch price, rounds of dependent calls);
* :mod:`ragmeter.cost.budget` — ``--max-cost`` / ``--max-calls``: one budget, the judge
  engine's send gate, so every request sent is counted.

The package sits on the judges' floor and imports nothing above it: the command-line side
(printing, exit codes) lives in ``ragmeter.cli.cost_options``, the benchmark runner's side
(``run --estimate``, a stop recorded on the stored run) in ``ragmeter.runner.costing``.
"""

from ragmeter.cost.budget import (
    Budget,
    BudgetExhausted,
    BudgetJudge,
    BudgetRefused,
    PricedGate,
    active_budget,
    budget_scope,
    budgeted,
    gated_engines,
    gating,
)
from ragmeter.cost.estimate import (
    LATENCY_MODEL,
    Estimate,
    EstimatingJudge,
    PlannedCall,
    estimate_requests,
    estimate_scope,
    planned_judge,
    summarise,
)
from ragmeter.cost.pricing import DEFAULT_BATCH_DISCOUNT, Price
from ragmeter.cost.tokens import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    count_tokens,
    minimal_instance,
    money,
    request_tokens,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_BATCH_DISCOUNT",
    "LATENCY_MODEL",
    "MESSAGE_OVERHEAD",
    "Budget",
    "BudgetExhausted",
    "BudgetJudge",
    "BudgetRefused",
    "Estimate",
    "EstimatingJudge",
    "PlannedCall",
    "Price",
    "PricedGate",
    "active_budget",
    "budget_scope",
    "budgeted",
    "count_tokens",
    "estimate_requests",
    "estimate_scope",
    "gated_engines",
    "gating",
    "minimal_instance",
    "money",
    "planned_judge",
    "request_tokens",
    "summarise",
]
