"""``ragmeter serve example``: the reference RAG service (demo knowledge base) on 127.0.0.1."""

from __future__ import annotations

import typer

from ragmeter.cli.lazy import group
from ragmeter.errors import UsageError


def serve_example_command(
    port: int = typer.Option(8790, "--port", help="Port on 127.0.0.1 (0 = any free port)."),
    latency_s: float = typer.Option(0.0, "--latency-s", help="Delay before every reply "
                                    "(before the first token when streaming)."),
    fault_rate: float = typer.Option(0.0, "--fault-rate", help="Share of requests answered "
                                     "429 or 500 (0..1), seeded."),
    faults: str = typer.Option("429,500", "--faults", help="Comma list of fault kinds for "
                               "--fault-rate: 429, 500."),
    retry_after_s: float = typer.Option(0.0, "--retry-after-s", help="Retry-After of 429s."),
    malformed_rate: float = typer.Option(0.0, "--malformed-rate", help="Share of replies that "
                                         "are not JSON or lack the answer field (0..1)."),
    retriever: str = typer.Option("auto", "--retriever", help="auto (BM25 when installed), "
                                  "bm25 or overlap."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fault draws."),
    memory: bool = typer.Option(False, "--memory", help="A conversation memory per "
                                "session_id: a follow-up is retrieved with the question asked "
                                "before it."),
    cache: bool = typer.Option(False, "--cache", help="Answer repeated questions from a cache "
                               "(\"cache\": {\"hit\": true}, no --latency-s)."),
    source_text: bool = typer.Option(True, "--source-text/--no-source-text", help="Whether "
                                     "the chat endpoint's sources carry their text."),
) -> None:
    """Serve the demo knowledge base as a RAG system until Ctrl+C, to try targets on.

    Endpoints: POST /answer, /retrieve, /generate (JSON) and /v1/chat/completions
    (OpenAI-compatible, streamed). See docs/targets.md.

    Examples:

      ragmeter serve example --port 8790
    """
    from ragmeter.targets.example_service import ExampleService, ServiceConfig, wait_until_stopped

    kinds = tuple(k.strip() for k in faults.split(",") if k.strip())
    bad = [k for k in kinds if k not in ("429", "500")]
    if bad:
        raise UsageError("--faults", f"unknown fault kind {bad[0]!r}", ["429", "500"])
    for name, value in (("--fault-rate", fault_rate), ("--malformed-rate", malformed_rate)):
        if not 0.0 <= value <= 1.0:
            raise UsageError(name, f"must be between 0 and 1, got {value}")
    if not 0 <= port <= 65535:
        raise UsageError("--port", f"must be 0..65535, got {port}")
    if retriever not in ("auto", "bm25", "overlap"):
        raise UsageError("--retriever", f"unknown retriever {retriever!r}",
                         ["auto", "bm25", "overlap"])
    cfg = ServiceConfig(latency_s=latency_s, fault_rate=fault_rate, fault_kinds=kinds or ("500",),
                        retry_after_s=retry_after_s, malformed_rate=malformed_rate, seed=seed,
                        retriever=retriever, memory=memory, cache=cache,
                        source_text=source_text)
    service = ExampleService(cfg, port=port).start()
    typer.echo(f"example RAG service on {service.url}  (POST /answer, /retrieve, /generate, "
               "/v1/chat/completions; Ctrl+C stops)", err=True)
    wait_until_stopped(service)


def register(app: typer.Typer) -> None:
    group(app, "serve").command("example")(serve_example_command)
