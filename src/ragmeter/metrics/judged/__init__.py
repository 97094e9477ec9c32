"""Judged generation metrics as one unit: the rows, the judge calls and the planner.

=================  ===========================================================================
module             what it holds
=================  ===========================================================================
``row.py``         :class:`JudgedMetric` (one metric = one row), :class:`Score`; how a row is
                   computed (:func:`score_sample`, ``compute_judged``)
``rows.py``        the built-in rows (:data:`ROWS`): faithfulness ... e2e_score
``calls.py``       :class:`Question`, :class:`Call`, :func:`register_call`; the registries
                   :data:`QUESTIONS` / :data:`CALLS` and the kit a call is written with
``questions.py``   the built-in questions and their four calls (builders, reply readers)
``prompts.py``     the built-in calls' versioned prompts (Russian and English)
``plan.py``        the planner: asks each sample only the questions its metrics need
                   (:class:`Asking`, :func:`run_plan`)
``state.py``       typed planner state (:class:`SampleJudgement`, :class:`JudgePlan`,
                   :class:`JudgedState`) and the context a judged metric reads
``behaviours.py``  opt-in behaviour metrics with their calls: history_faithfulness,
                   citation_support, judged_refusal
=================  ===========================================================================

A judged metric declared here is scored by ``evaluate_generation`` and graded on the judge
benchmark (``ragmeter judge bench``) with the same calls and readers, with no further edit.
"""

from __future__ import annotations

from ragmeter.metrics.judged import behaviours as _behaviours  # noqa: F401
from ragmeter.metrics.judged import questions as _builtin_calls  # noqa: F401  (registers them)
from ragmeter.metrics.judged.calls import (
    CALLS,
    GRADE,
    QUESTIONS,
    YES_NO,
    Ask,
    Call,
    Question,
    fence,
    fence_many,
    items_by_id,
    make_request,
    register_call,
    yes,
)
from ragmeter.metrics.judged.plan import Asking, calls_of, questions_of, run_plan
from ragmeter.metrics.judged.row import (
    LABEL_SCALES,
    JudgedMetric,
    LabelScale,
    Prepared,
    Score,
    ScoreFn,
    judged_row,
    label_scale_of,
    score_sample,
)
from ragmeter.metrics.judged.rows import (
    JUDGED_DEFAULT,
    PRESETS,
    ROWS,
    answer_correctness_weight,
    answer_correctness_weights,
    average_precision,
    factual_scores,
    fraction,
    verdict_share,
)
from ragmeter.metrics.judged.state import (
    AskedCall,
    JudgedContext,
    JudgedState,
    JudgePlan,
    SampleJudgement,
)

__all__ = [
    "CALLS",
    "GRADE",
    "JUDGED_DEFAULT",
    "LABEL_SCALES",
    "PRESETS",
    "QUESTIONS",
    "ROWS",
    "YES_NO",
    "Ask",
    "AskedCall",
    "Asking",
    "Call",
    "JudgePlan",
    "JudgedContext",
    "JudgedMetric",
    "JudgedState",
    "LabelScale",
    "Prepared",
    "Question",
    "SampleJudgement",
    "Score",
    "ScoreFn",
    "answer_correctness_weight",
    "answer_correctness_weights",
    "average_precision",
    "calls_of",
    "factual_scores",
    "fence",
    "fence_many",
    "fraction",
    "items_by_id",
    "judged_row",
    "label_scale_of",
    "make_request",
    "questions_of",
    "register_call",
    "run_plan",
    "score_sample",
    "verdict_share",
    "yes",
]
