"""The LLM judge: backends, the judge exchange, cache, parsing, prompts and the fake server
(its calls run on :mod:`ragmeter.calls`).

Build a judge with :func:`make_judge` from a :class:`JudgeConfig`; ask it with
``judge.ask_many(requests)`` or ``await judge.aask_many(requests)``. Replies are scored
(``reply.data``) or unscored with a reason — never a silent 0.

A judge's calls run on :mod:`ragmeter.calls`; the two names of it a judge's user meets are
named here too: :class:`RetryPolicy` (``JudgeConfig.retry``) and :class:`CallError` (what a
backend raises).
"""

from __future__ import annotations

from ragmeter.calls.errors import CallError
from ragmeter.calls.retry import RetryPolicy
from ragmeter.judges.backend import Completion
from ragmeter.judges.base import UNSCORED_REASONS, Judge, JudgeReply, JudgeRequest
from ragmeter.judges.cache import JudgeCache, cache_key, request_hash
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.factory import make_judge
from ragmeter.judges.llm_judge import TEXT_SCHEMA, EngineJudge
from ragmeter.judges.multi import (
    MultiJudge,
    aggregate_scores,
    agreement,
    krippendorff_alpha,
    pairwise_agreement,
)
from ragmeter.judges.parsing import extract_json, parse_reply, validate
from ragmeter.judges.prompts import (
    PromptTemplate,
    detect_language,
    fence,
    get_prompt,
    neutralise,
    register_prompt,
)
from ragmeter.judges.scripted import RecordedJudge, ScriptedJudge
from ragmeter.judges.stats import JudgeStats, ProgressInfo, rich_progress

__all__ = [
    "TEXT_SCHEMA",
    "UNSCORED_REASONS",
    "CallError",
    "Completion",
    "EngineJudge",
    "Judge",
    "JudgeCache",
    "JudgeConfig",
    "JudgeReply",
    "JudgeRequest",
    "JudgeStats",
    "MultiJudge",
    "ProgressInfo",
    "PromptTemplate",
    "RecordedJudge",
    "RetryPolicy",
    "ScriptedJudge",
    "aggregate_scores",
    "agreement",
    "cache_key",
    "demo_judge_status",
    "detect_language",
    "extract_json",
    "fence",
    "get_prompt",
    "krippendorff_alpha",
    "load_demo_judge",
    "make_judge",
    "neutralise",
    "pairwise_agreement",
    "parse_reply",
    "register_prompt",
    "request_hash",
    "rich_progress",
    "validate",
]


def __getattr__(name: str) -> object:
    # GGUF helpers live in a module that stays cheap to import, but keep them lazy anyway.
    if name in ("load_demo_judge", "demo_judge_status"):
        from ragmeter.judges import gguf

        return getattr(gguf, name)
    raise AttributeError(name)
