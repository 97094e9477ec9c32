"""Persistent judge cache (stdlib sqlite3) and the stable request hash.

The key covers everything that can change a reply — the cache namespace, the endpoint
identity (normalised base URL without credentials; sorted URLs for a pool), backend kind,
model, messages, schema, temperature, seed, max_tokens, prompt version — and nothing that
does not (retries, timeouts, concurrency, API key). The fake server has a namespace of its
own, so its replies are never served to a real judge. Only successful (scored) replies are
stored, each as soon as it arrives (group commits: a reply is acknowledged only after the
transaction holding it committed, so ``kill -9`` loses no acknowledged reply).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from ragmeter.judges.base import JudgeReply, JudgeRequest

log = logging.getLogger("ragmeter.judges")

CACHE_FORMAT = "2"
TABLE = "replies_v2"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=1024, typed=True)
def _scalar(value: str | int | float | None) -> str:
    """Canonical JSON of a scalar (the judge's settings repeat in every key: made once)."""
    return _canonical(value)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RequestDigest:
    """A request's cache key, its provenance hash and its schema's canonical JSON, from one
    serialisation of its messages and schema (the two hashes are what :func:`cache_key` and
    :func:`request_hash` return).

    The provenance hash is worked out when first read (``own``: the parts of the canonical
    JSON it hashes): a request written to a batch file, or never answered, needs only its
    key."""

    __slots__ = ("_hash", "_own", "key", "schema_json")

    def __init__(self, key: str, hash: str, schema_json: str,
                 own: tuple[str, ...] | None = None) -> None:
        self.key = key
        self.schema_json = schema_json
        self._hash = hash
        self._own = own

    @property
    def hash(self) -> str:
        own = self._own
        if own is not None:   # the hash is set before the parts are let go (threads)
            self._hash = _sha("".join(own))
            self._own = None
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RequestDigest) and (self.key, self.hash, self.schema_json)
                == (other.key, other.hash, other.schema_json))

    def __hash__(self) -> int:
        return hash((self.key, self.schema_json))

    def __repr__(self) -> str:
        return f"RequestDigest(key={self.key!r}, hash={self.hash!r})"


def _request_parts(request: JudgeRequest) -> dict[str, str]:
    return {"messages": _messages_json(request.messages),
            "schema": _schema_json(request.schema),
            "prompt_version": _scalar(request.prompt_version)}


#: the end of a chat turn's canonical JSON, by role
_ROLE_JSON = {r: ',"role":' + encode_basestring(r) + "}" for r in ("system", "user", "assistant")}
#: system prompts' JSON: a judged plan's requests share a few system prompts (as objects)
_SYSTEM_JSON: dict[str, str] = {}


def _messages_json(messages: Any) -> str:
    """The canonical JSON of a request's messages; chat turns of just a role and a text
    written out directly (the same bytes as :func:`_canonical`: ``content`` sorts first)."""
    try:
        parts = []
        for m in messages:
            role, content = m["role"], m["content"]
            if len(m) != 2 or type(role) is not str or type(content) is not str:
                break
            if role == "system":
                text = _SYSTEM_JSON.get(content)
                if text is None:
                    if len(_SYSTEM_JSON) >= 256:
                        _SYSTEM_JSON.clear()
                    text = _SYSTEM_JSON[content] = encode_basestring(content)
            else:
                text = encode_basestring(content)
            end = _ROLE_JSON.get(role)
            parts.append('{"content":' + text + (end if end is not None else ',"role":'
                                                  + encode_basestring(role) + "}"))
        else:
            return "[" + ",".join(parts) + "]"
    except (KeyError, TypeError):
        pass
    return _canonical(list(messages))


#: id(schema) -> (the schema, kept so its id is not reused; its canonical JSON): the judged
#: metrics' requests of one shape share one schema object
_SCHEMA_JSON: dict[int, tuple[Any, str]] = {}


def _schema_json(schema: Any) -> str:
    got = _SCHEMA_JSON.get(id(schema))
    if got is None or got[0] is not schema:
        if len(_SCHEMA_JSON) >= 4096:
            _SCHEMA_JSON.clear()
        got = _SCHEMA_JSON[id(schema)] = (schema, _canonical(schema))
    return got[1]


def digest(request: JudgeRequest, *, backend: str, model: str, temperature: float,
           seed: int | None, max_tokens: int, endpoint: str = "",
           namespace: str = "default", top_p: float | None = None,
           logprobs: bool = False) -> RequestDigest:
    """:func:`cache_key` and :func:`request_hash` of ``request`` at once (see there);
    ``top_p`` enters the key only when set, and ``logprobs`` only when on (a reply kept
    without its token probabilities cannot serve a judge that asks for them), so keys
    without them are unchanged."""
    return digest_and_messages(request, backend=backend, model=model, temperature=temperature,
                               seed=seed, max_tokens=max_tokens, endpoint=endpoint,
                               namespace=namespace, top_p=top_p, logprobs=logprobs)[0]


def digest_and_messages(request: JudgeRequest, *, backend: str, model: str,
                        temperature: float, seed: int | None, max_tokens: int,
                        endpoint: str = "", namespace: str = "default",
                        top_p: float | None = None,
                        logprobs: bool = False) -> tuple[RequestDigest, str]:
    """:func:`digest`, and the canonical JSON of the request's messages it was made from
    (batch files write it instead of serialising the messages again)."""
    parts = _request_parts(request)
    msgs, schema, version = parts["messages"], parts["schema"], parts["prompt_version"]
    # the canonical JSON (sorted keys, no spaces) of the two dicts the keys hash, written
    # out in their keys' order from the parts already serialised
    own = ('{"max_tokens":', _scalar(request.max_tokens), ',"messages":', msgs,
           ',"prompt_version":', version, ',"schema":', schema, ',"temperature":',
           _scalar(request.temperature), "}")
    eff_t = request.temperature if request.temperature is not None else temperature
    eff_m = request.max_tokens if request.max_tokens is not None else max_tokens
    keyed = ('{"backend":' + _scalar(backend) + ',"endpoint":' + _scalar(endpoint)
             + ',"format":' + _scalar(CACHE_FORMAT) + (',"logprobs":1' if logprobs else "")
             + ',"max_tokens":' + _scalar(eff_m) + ',"messages":' + msgs + ',"model":'
             + _scalar(model) + ',"namespace":' + _scalar(namespace) + ',"prompt_version":'
             + version + ',"schema":' + schema + ',"seed":' + _scalar(seed)
             + ',"temperature":' + _scalar(eff_t)
             + (',"top_p":' + _scalar(top_p) if top_p is not None else "") + "}")
    return RequestDigest(_sha(keyed), "", schema, own), msgs


def request_hash(request: JudgeRequest) -> str:
    """Stable hash of what a request asks, independent of which judge answers it."""
    return digest(request, backend="", model="", temperature=0.0, seed=None,
                  max_tokens=0).hash


def cache_key(request: JudgeRequest, *, backend: str, model: str, temperature: float,
              seed: int | None, max_tokens: int, endpoint: str = "",
              namespace: str = "default", top_p: float | None = None,
              logprobs: bool = False) -> str:
    """Cache key of ``request`` answered by ``backend``/``model`` with these sampling settings.

    The key covers the cache format, namespace, endpoint, backend, model, messages, schema,
    prompt version, seed and the effective temperature and max_tokens: the request's own
    ``temperature``/``max_tokens`` win over the judge defaults, exactly as they do when the
    call is made, so equal effective settings give equal keys.
    """
    return digest(request, backend=backend, model=model, temperature=temperature, seed=seed,
                  max_tokens=max_tokens, endpoint=endpoint, namespace=namespace, top_p=top_p,
                  logprobs=logprobs).key


#: a stored reply's JSON text (``json.dumps(obj, ensure_ascii=False)``, one encoder for all)
_REPLY_JSON = json.JSONEncoder(ensure_ascii=False).encode


def reply_to_json(reply: JudgeReply) -> dict[str, Any]:
    return {
        "data": reply.data, "reason": reply.reason, "detail": reply.detail, "raw": reply.raw,
        "model": reply.model, "latency_s": reply.latency_s, "tokens_in": reply.tokens_in,
        "tokens_out": reply.tokens_out, "cost": reply.cost, "attempts": reply.attempts,
        "extra": reply.extra,
    }


def reply_from_json(obj: Mapping[str, Any], cached: bool = False) -> JudgeReply:
    return JudgeReply(
        data=obj.get("data"), reason=obj.get("reason"), detail=obj.get("detail"),
        raw=obj.get("raw"), model=obj.get("model", ""), latency_s=float(obj.get("latency_s", 0)),
        tokens_in=int(obj.get("tokens_in", 0)), tokens_out=int(obj.get("tokens_out", 0)),
        cost=float(obj.get("cost", 0.0)), cached=cached, attempts=int(obj.get("attempts", 1)),
        extra=dict(obj.get("extra") or {}),
    )


class JudgeCache:
    """SQLite table ``replies_v2`` in ``<dir>/judge_cache.sqlite`` (WAL).

    Thread-safe (one connection per thread); the async engine calls it through
    ``asyncio.to_thread`` so the event loop never blocks on disk.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / "judge_cache.sqlite"
        self._local = threading.local()
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._conn() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, "
                         "namespace TEXT NOT NULL, endpoint TEXT NOT NULL, model TEXT NOT NULL, "
                         "reply TEXT NOT NULL, created REAL NOT NULL)")

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a process crash loses no commit
            self._local.conn = conn
        return conn

    def get_many(self, keys: Iterable[str]) -> dict[str, JudgeReply]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, JudgeReply] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for key, text in conn.execute(
                    f"SELECT key, reply FROM {TABLE} WHERE key IN ({marks})", chunk):
                found[key] = reply_from_json(json.loads(text), cached=True)
        return found

    def has_many(self, keys: Iterable[str]) -> set[str]:
        """The ``keys`` that have a stored reply (the replies are not read)."""
        keys = list(dict.fromkeys(keys))
        found: set[str] = set()
        conn = self._conn()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(key for (key,) in conn.execute(
                f"SELECT key FROM {TABLE} WHERE key IN ({marks})", chunk))
        return found

    def put_many(self, items: Iterable[tuple[str, JudgeReply]], *, namespace: str = "default",
                 endpoint: str = "") -> int:
        """Store the scored replies of ``items`` in one transaction; returns how many."""
        rows = []
        for k, r in items:
            if not r.ok:
                continue
            obj = reply_to_json(r)
            obj["extra"] = {x: v for x, v in obj["extra"].items() if x != "messages"}
            rows.append((k, namespace, endpoint, r.model or "",
                         _REPLY_JSON(obj), time.time()))
        if rows:
            rows.sort(key=lambda row: row[0])  # key order (stable): fewer B-tree page splits
            with self._conn() as conn:
                conn.executemany(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?)",
                                 rows)
        return len(rows)

    def __len__(self) -> int:
        return int(self._conn().execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0])

    def info(self) -> dict[str, Any]:
        """Size and contents by namespace, endpoint and model (for ``ragmeter judge cache info``)."""
        conn = self._conn()
        groups = [{"namespace": ns, "endpoint": ep, "model": m, "entries": int(n),
                   "oldest": float(lo), "newest": float(hi)}
                  for ns, ep, m, n, lo, hi in conn.execute(
                      f"SELECT namespace, endpoint, model, COUNT(*), MIN(created), MAX(created) "
                      f"FROM {TABLE} GROUP BY namespace, endpoint, model ORDER BY 1, 2, 3")]
        legacy = 0
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name='replies'").fetchone():
            legacy = int(conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
        size = sum(p.stat().st_size for p in self.directory.glob("judge_cache.sqlite*")
                   if p.is_file())
        return {"path": str(self.path), "bytes": size, "entries": len(self),
                "groups": groups, "legacy_entries": legacy}

    def clear(self, *, namespace: str | None = None, endpoint: str | None = None,
              model: str | None = None) -> int:
        """Delete replies (all, or those matching every given filter); returns how many.
        Clearing everything also drops the table of the older cache format."""
        where, args = [], []
        for col, val in (("namespace", namespace), ("endpoint", endpoint), ("model", model)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = f"DELETE FROM {TABLE}" + (" WHERE " + " AND ".join(where) if where else "")
        with self._conn() as conn:
            n = conn.execute(sql, args).rowcount
            if not where:
                conn.execute("DROP TABLE IF EXISTS replies")
        return int(n)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"


class CacheWriter:
    """Write-through with group commits for one ``aask_many``.

    ``await put(key, reply)`` returns once the transaction holding the reply committed;
    replies that arrive while a commit runs are committed together in the next one.
    """

    def __init__(self, cache: JudgeCache, *, namespace: str, endpoint: str):
        self.cache = cache
        self.namespace = namespace
        self.endpoint = endpoint
        self._pending: list[tuple[str, JudgeReply, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        self.written = 0

    async def put(self, key: str, reply: JudgeReply) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((key, reply, fut))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        await asyncio.shield(fut)

    async def _run(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                self.written += await asyncio.to_thread(
                    self.cache.put_many, [(k, r) for k, r, _ in batch],
                    namespace=self.namespace, endpoint=self.endpoint)
                self.commits += 1
                for _, _, f in batch:
                    if not f.done():
                        f.set_result(None)
            except Exception as exc:  # a full disk must not lose the replies themselves
                log.warning("judge cache write failed: %s", exc)
                for _, _, f in batch:
                    if not f.done():
                        f.set_result(None)

    async def drain(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)
