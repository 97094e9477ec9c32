"""Calls to endpoints: one request layer under the LLM judge, targets and embedders.

A caller supplies ``send`` and an exchange per request (:mod:`ragmeter.calls.seam`); the
machinery gives it bounded adaptive concurrency (:mod:`~ragmeter.calls.limiter`), an
endpoint pool (:mod:`~ragmeter.calls.pool`), retries with a run-wide budget
(:mod:`~ragmeter.calls.retry`), a circuit breaker (:mod:`~ragmeter.calls.breaker`), hedging
and a send gate (:mod:`~ragmeter.calls.dispatch`), deduplication and a cache round trip
(:mod:`~ragmeter.calls.scheduler`), one failure type (:class:`CallError`), one record of what
calls did (:class:`CallRecord`), HTTP sessions and error maps (:mod:`~ragmeter.calls.http`)
and the sync bridge (:func:`run_sync`). docs/calls.md shows a new caller.

Floor 0 of the layering: imports nothing of ragmeter but ``errors`` and ``secrets``.
"""

from __future__ import annotations

from ragmeter.calls import http
from ragmeter.calls.errors import CALL_REASONS, CallError
from ragmeter.calls.record import CallRecord
from ragmeter.calls.retry import RetryPolicy
from ragmeter.calls.scheduler import Hooks, PlainExchange, RequestRunner
from ragmeter.calls.seam import BatchHooks, Exchange, Gate, Send
from ragmeter.calls.sync import run_sync

__all__ = ["CALL_REASONS", "BatchHooks", "CallError", "CallRecord", "Exchange", "Gate", "Hooks",
           "PlainExchange", "RequestRunner", "RetryPolicy", "Send", "http", "run_sync"]
