"""Production traces as evaluation samples: OTLP JSON (GenAI conventions), Langfuse, Phoenix
and MLflow exports, each one declaration in the format table (:mod:`.formats`); the per-hop
scores of a request's retrievals are :mod:`ragmeter.retrieval.hops`'."""

from __future__ import annotations

from ragmeter.data.traces.spans import Doc, Span, assemble

__all__ = ["Doc", "Span", "assemble"]
