"""Targets: ragmeter calls the user's own RAG system and measures it.

A target is declared once (``target:`` in a benchmark config, ``--target`` on the command
line, ``target=`` in :func:`ragmeter.evaluate`) and reached over HTTP JSON (``http``), an
OpenAI-compatible streaming chat endpoint (``openai``), a Python function (``python``) or a
program speaking JSON on stdin/stdout (``command``). Its entry points are ``answer``
(question -> answer + contexts), ``retrieve`` (question -> ranked ids) and ``generate``
(question + given contexts -> answer). See docs/targets.md.

Floor 2, beside ``generation``: calls go through the call machinery's concurrency, retry and
circuit-breaker mechanisms (:mod:`ragmeter.calls`, driven by :mod:`ragmeter.targets.calls`);
a failed call raises :class:`~ragmeter.calls.errors.CallError`.
"""

from __future__ import annotations

from ragmeter.targets.base import (
    ENTRIES,
    KINDS,
    TargetReply,
    TargetRequest,
    TargetSignature,
)
from ragmeter.targets.config import TargetConfig, load_target, parse_target
from ragmeter.targets.session import TargetSession, TargetUnreachableError, make_target

__all__ = ["ENTRIES", "KINDS", "TargetConfig", "TargetReply",
           "TargetRequest", "TargetSession", "TargetSignature", "TargetUnreachableError",
           "load_target", "make_target", "parse_target"]
