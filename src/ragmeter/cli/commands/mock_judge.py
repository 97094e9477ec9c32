"""``ragmeter serve mock-judge``: a fake OpenAI-compatible judge server to dry-run a config."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragmeter.cli.lazy import group
from ragmeter.errors import UsageError

_FAULTS_HELP = "Comma list of fault kinds for --fault-rate: 429,500,timeout,invalid_json,truncated," \
               "schema_error,refusal."


def mock_judge_command(
    port: int = typer.Option(8765, "--port", help="Port on 127.0.0.1 (0 = any free port)."),
    latency_ms: float = typer.Option(200.0, "--latency-ms", help="Latency of every reply."),
    jitter_ms: float = typer.Option(0.0, "--jitter-ms", help="Extra random latency, up to this."),
    fault_rate: float = typer.Option(0.0, "--fault-rate", help="Share of requests that fail "
                                     "(0..1), seeded."),
    faults: str = typer.Option("429,500,timeout,invalid_json,truncated", "--faults",
                               help=_FAULTS_HELP),
    max_concurrency: int = typer.Option(0, "--max-concurrency", help="In-flight cap "
                                        "(0 = none); above it requests queue."),
    reject_over_cap: bool = typer.Option(False, "--reject-over-cap",
                                         help="Answer HTTP 429 above the cap instead of queueing."),
    retry_after_s: float = typer.Option(1.0, "--retry-after-s", help="Retry-After of 429s."),
    hang_s: float = typer.Option(30.0, "--hang-s", help="How long a 'timeout' fault hangs."),
    no_response_format: bool = typer.Option(False, "--no-response-format",
                                            help="Reject response_format like servers "
                                                 "without structured output."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fault draws."),
    run_batch: Optional[Path] = typer.Option(  # noqa: B008, UP045 - typer
        None, "--run-batch", help="Offline: answer every line of this OpenAI Batch input "
        "file (e.g. a round of --judge-batch write) and write vllm run-batch's output shape "
        "to --output, then exit."),
    output: Optional[Path] = typer.Option(  # noqa: B008, UP045 - typer
        None, "--output", help="Output file of --run-batch."),
) -> None:
    """Serve a fake OpenAI-compatible judge until Ctrl+C; GET /stats shows counters.

    Point a judge config at it with base_url http://127.0.0.1:PORT/v1 (any API key).

    It also serves an OpenAI-compatible Batch API (POST /v1/files, POST /v1/batches, GET
    /v1/batches/{id}, GET /v1/files/{id}/content): `ragmeter judge batch submit --url` works
    against it.

    Examples:

      ragmeter serve mock-judge --port 8766 --latency-ms 0

      ragmeter serve mock-judge --run-batch batches/round-01/judge.001.jsonl --output out.jsonl --latency-ms 0
    """
    from ragmeter.judges.mock_server import FAULT_KINDS, MockConfig, serve_forever

    kinds = tuple(k.strip() for k in faults.split(",") if k.strip())
    bad = [k for k in kinds if k not in FAULT_KINDS]
    if bad:
        raise UsageError("--faults", f"unknown fault kind {bad[0]!r}", list(FAULT_KINDS))
    if not 0.0 <= fault_rate <= 1.0:
        raise UsageError("--fault-rate", f"must be between 0 and 1, got {fault_rate}")
    if not 0 <= port <= 65535:
        raise UsageError("--port", f"must be 0..65535, got {port}")
    cfg = MockConfig(latency_ms=latency_ms, jitter_ms=jitter_ms, fault_rate=fault_rate,
                     fault_kinds=kinds or ("500",), max_concurrency=max_concurrency or None,
                     reject_over_cap=reject_over_cap, retry_after_s=retry_after_s, hang_s=hang_s,
                     supports_response_format=not no_response_format, seed=seed)

    if (run_batch is None) != (output is None):
        raise UsageError("--run-batch" if run_batch is None else "--output",
                         "--run-batch and --output go together")
    if run_batch is not None and output is not None:
        from ragmeter.judges.mock_batches import run_batch_file

        if not run_batch.is_file():
            raise UsageError("--run-batch", f"no such file: {run_batch}")
        counts = run_batch_file(run_batch, output, cfg)
        typer.echo(f"{counts['requests']} requests answered ({counts['ok']} ok, "
                   f"{counts['failed']} failed) into {output}", err=True)
        return

    def ready(srv: object) -> None:
        base = getattr(srv, "base_url", "")
        typer.echo(f"mock judge listening on {base}  (stats: {base[:-3]}/stats; Ctrl+C stops)",
                   err=True)

    serve_forever(cfg, port=port, on_ready=ready)


def register(app: typer.Typer) -> None:
    group(app, "serve").command("mock-judge")(mock_judge_command)
