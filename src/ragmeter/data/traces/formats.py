"""The trace layouts: one declaration each in the format table (see
:mod:`ragmeter.data.formats`). Their records are spans, not samples: each declaration's
``convert`` assembles the spans of a file into one sample per request (:mod:`.spans`)."""

from __future__ import annotations

from ragmeter.data.formats import Format, declare_format
from ragmeter.data.traces.langfuse import read_langfuse
from ragmeter.data.traces.mlflow import read_mlflow
from ragmeter.data.traces.otlp import read_otlp
from ragmeter.data.traces.phoenix import read_phoenix
from ragmeter.data.traces.spans import convert_with

_NOTE = ("one sample per request (trace): question, answer, retrieved ids/texts/scores; "
         "metadata: trace_id, latency_ms, model, hops (each retrieval span), session_id, turn, "
         "history")

declare_format(Format(
    "otlp", "OpenTelemetry traces as OTLP JSON (GenAI semantic conventions)",
    requires=("resourceSpans",), priority=5, convert=convert_with(read_otlp),
    columns=("resourceSpans",),
    note=_NOTE + "; gen_ai.input/output.messages or the older gen_ai.prompt/completion events, "
                 "gen_ai.retrieval.documents or retrieval.documents.N.document.*, "
                 "gen_ai.request.model, gen_ai.conversation.id / session.id"))
declare_format(Format(
    "langfuse", "a Langfuse export of traces and observations (JSON or CSV)", priority=6,
    detect=lambda keys: ("traceId" in keys and ("startTime" in keys or "type" in keys))
    or "observations" in keys or ("sessionId" in keys and "input" in keys),
    convert=convert_with(read_langfuse),
    columns=("id", "traceId", "type", "input", "output", "sessionId", "observations"),
    note=_NOTE + "; GENERATION observations are model calls, RETRIEVER ones retrievals"))
declare_format(Format(
    "phoenix", "an Arize Phoenix span export (JSON records or Parquet)", priority=7,
    detect=lambda keys: "context.span_id" in keys or ("span_kind" in keys and "context" in keys),
    convert=convert_with(read_phoenix),
    columns=("context.trace_id", "span_kind", "attributes.input.value",
             "attributes.retrieval.documents", "attributes.session.id"),
    note=_NOTE + "; OpenInference attributes"))
declare_format(Format(
    "mlflow", "MLflow trace exports (Trace.to_dict / to_json)", priority=8,
    requires=("info", "data"), convert=convert_with(read_mlflow), columns=("info", "data"),
    note=_NOTE + "; RETRIEVER spans' outputs are the documents"))
