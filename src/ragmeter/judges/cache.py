"""Persistent judge cache (stdlib sqlite3) and the stable request hash.

The key covers everything that changes a model's output — backend kind, model, messages,
schema, temperature, seed, max_tokens, prompt version — and nothing that does not (retries,
timeouts, concurrency, base URL, API key). Only successful (scored) replies are stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.judges.base import JudgeReply, JudgeRequest

CACHE_FORMAT = "1"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_hash(request: JudgeRequest) -> str:
    """Stable hash of what a request asks, independent of which judge answers it."""
    payload = {
        "messages": [dict(m) for m in request.messages],
        "schema": request.schema,
        "prompt_version": request.prompt_version,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


def cache_key(request: JudgeRequest, *, backend: str, model: str, temperature: float,
              seed: int | None, max_tokens: int) -> str:
    """Cache key of ``request`` answered by ``backend``/``model`` with these sampling settings.

    The request's own ``temperature``/``max_tokens`` win over the judge defaults, exactly as
    they do when the call is made, so equal effective settings give equal keys.
    """
    payload = {
        "format": CACHE_FORMAT,
        "backend": backend,
        "model": model,
        "messages": [dict(m) for m in request.messages],
        "schema": request.schema,
        "prompt_version": request.prompt_version,
        "temperature": request.temperature if request.temperature is not None else temperature,
        "max_tokens": request.max_tokens if request.max_tokens is not None else max_tokens,
        "seed": seed,
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


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
    """SQLite table ``replies(key, reply_json, created)`` in ``<dir>/judge_cache.sqlite``.

    Thread-safe (one connection per thread); the async engine calls it through
    ``asyncio.to_thread`` in batches so the event loop never blocks on disk.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / "judge_cache.sqlite"
        self._local = threading.local()
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._conn() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, "
                         "reply TEXT NOT NULL, created REAL NOT NULL)")

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
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
                    f"SELECT key, reply FROM replies WHERE key IN ({marks})", chunk):
                found[key] = reply_from_json(json.loads(text), cached=True)
        return found

    def put_many(self, items: Iterable[tuple[str, JudgeReply]]) -> int:
        rows = []
        for k, r in items:
            if not r.ok:
                continue
            obj = reply_to_json(r)
            obj["extra"] = {x: v for x, v in obj["extra"].items() if x != "messages"}
            rows.append((k, json.dumps(obj, ensure_ascii=False), time.time()))
        if rows:
            with self._conn() as conn:
                conn.executemany("INSERT OR REPLACE INTO replies VALUES (?, ?, ?)", rows)
        return len(rows)

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def clear(self) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM replies")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"
