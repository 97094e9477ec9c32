"""Judging through batch files: the plan written as OpenAI Batch JSONL, round by round, and
the results (OpenAI Batch output and error files, ``vllm run-batch`` output) collected into the
judge cache, so the ordinary run finishes with 0 network calls.

* :mod:`.lines` — the request lines written (split under a provider's limits) and the result
  lines read, whatever tool wrote them;
* :mod:`.manifest` — the batch folder's manifest (judges, prompt versions, rounds, collects);
* :mod:`.rounds` — :func:`batch_scope` (``write`` / ``collect``) and the judge that stands in
  for every engine judge built inside it: ``write`` plans the command and writes its pending
  requests as the next round;
* :mod:`.collect` — the result files read into the judge cache (no planning: the rounds'
  index says what each ``custom_id`` asked);
* :mod:`.service` — an OpenAI-compatible Batch API (files + batches): submit, status, fetch.

From Python::

    with batch_scope("write", "batches/") as session:
        evaluate_generation(samples, judge=make_judge(cfg))
    print("\\n".join(session.report.lines()))
    # ... the batch API answers; its files go to batches/results/ ...
    with batch_scope("collect", "batches/") as session:
        make_judge(cfg)                    # the judges whose results are collected
    print("\\n".join(session.report.summary()))
"""

from __future__ import annotations

from ragmeter.judges.batchfiles.collect import CollectReport, collect
from ragmeter.judges.batchfiles.lines import OPENAI_LIMITS, Limits
from ragmeter.judges.batchfiles.rounds import (
    PENDING,
    BatchJudge,
    BatchSession,
    WriteReport,
    batch_scope,
    batched,
)

__all__ = ["OPENAI_LIMITS", "PENDING", "BatchJudge", "BatchSession", "CollectReport", "Limits",
           "WriteReport", "batch_scope", "batched", "collect"]
