"""The recorded replies of targets (stdlib sqlite3), keyed by target identity + request.

Every final reply of a live run is stored, so ``--replay`` re-scores a run without calling the
target and gets the same values, and ``--resume`` asks the target only what it has not
answered yet. What is stored is masked (:func:`masked`): every secret value wherever it
appears — the raw reply, the answer, contexts, ids, metadata keys and values, a header's
value, an error's detail — so a target that echoes its key back leaves no trace of it. It is
strict JSON: a number that is not finite (``NaN`` in a reply) is stored as ``null`` (a score
read back as NaN, so a replay scores the same). The file is ``targets.sqlite`` in the cache directory
(``$RAGMETER_CACHE_DIR``, else ``~/.cache/ragmeter``) unless a path is given.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ragmeter.paths import default_cache_dir
from ragmeter.secrets import mask
from ragmeter.targets.base import TargetReply


def default_path() -> Path:
    return default_cache_dir() / "targets.sqlite"


class ReplyStore:
    """``get(key)`` / ``put(key, target, reply)``; safe to use from several threads."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            # a commit reaches the WAL file without an fsync: it survives kill -9 (the OS
            # keeps the page), only a power cut may lose the last replies; ~0.05 ms, not ~5
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, "
                             "target TEXT NOT NULL, reply TEXT NOT NULL, at REAL NOT NULL)")
            self._db.commit()

    def get(self, key: str) -> TargetReply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?",
                                   (key,)).fetchone()
        if row is None:
            return None
        rep = TargetReply.from_dict(json.loads(row[0]))
        if rep.scores is not None:   # a NaN score was stored as null
            rep.scores = [math.nan if x is None else x for x in rep.scores]
        rep.recorded = True
        return rep

    def put(self, key: str, target: str, reply: TargetReply, *,
            is_masked: bool = False) -> None:
        """Store ``reply`` (masked now unless ``is_masked`` says :func:`masked` ran)."""
        d = _strict((reply if is_masked else masked(reply)).to_dict())
        d.pop("recorded", None)
        text = json.dumps(d, ensure_ascii=False, allow_nan=False)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?)",
                             (key, target, text, time.time()))
            self._db.commit()

    def count(self, target: str | None = None) -> int:
        with self._lock:
            if target is None:
                return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM replies WHERE target = ?",
                                        (target,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


#: the reply's fields that hold what the target said (every string in them is masked)
_TEXT_FIELDS = ("answer", "contexts", "context_ids", "doc_ids", "metadata", "raw", "detail",
                "version")


def masked(reply: TargetReply) -> TargetReply:
    """The reply (in place) with every secret value masked wherever it appears: its raw
    text, answer, contexts, ids, metadata (keys and values), version and error detail —
    what is stored and shown."""
    for name in _TEXT_FIELDS:
        value = getattr(reply, name)
        if value:
            setattr(reply, name, _mask_all(value))
    return reply


def _mask_all(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {_mask_all(k): _mask_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask_all(v) for v in value]
    return value


def _strict(value: Any) -> Any:
    """``value`` with every number that is not finite (NaN, infinities) as None: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


__all__ = ["ReplyStore", "default_path", "masked"]
