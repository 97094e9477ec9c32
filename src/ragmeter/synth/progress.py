"""The progress file of a generation run: every finished model reply, one JSON line each.

Line 1 is a header with the run's settings hash; every other line is one reply keyed by
stage, item key and the request's hash. A reply is written (and flushed to the operating
system) the moment it arrives, so a crash or ``kill -9`` loses only the calls in flight, and
``--resume`` re-asks none of the finished ones. Replies that failed for a transient reason
(timeouts, rate limits, server or connection errors) are asked again on resume.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.judges.base import JudgeReply
from ragmeter.judges.cache import reply_from_json, reply_to_json

FORMAT_VERSION = 1
TRANSIENT = frozenset({"timeout", "rate_limited", "http_5xx", "connection_error",
                       "backend_error"})


class ProgressLog:
    """Append-only log of replies; ``get(stage, key, request_hash)`` finds a finished one."""

    def __init__(self, path: str | Path, header: dict[str, Any], *, resume: bool,
                 overwrite: bool = False):
        self.path = Path(path)
        self.header = {"kind": "header", "format": FORMAT_VERSION, **header}
        self._done: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self.reused = 0
        self.torn_lines = 0
        self._lock = threading.Lock()
        if self.path.exists() and not overwrite:
            if not resume:
                raise ConfigError("resume", f"progress file {self.path} exists from an earlier "
                                  "run; pass --resume to continue it, or --fresh to start over")
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.header, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
        self._fh = self.path.open("a", encoding="utf-8")

    def _load(self) -> None:
        text = self.path.read_text(encoding="utf-8")
        src = str(self.path)
        if text and not text.endswith("\n"):
            # a line torn by a crash mid-write: drop it (its call is asked again)
            text = text[:text.rfind("\n") + 1]
            self.path.write_text(text, encoding="utf-8")
            self.torn_lines += 1
        lines = text.splitlines()
        if not lines:
            raise DataError(RecordProblem(src, 1, None, "empty progress file (no header)"))
        try:
            head = json.loads(lines[0])
        except ValueError:
            raise DataError(RecordProblem(src, 1, None, "the header is not JSON")) from None
        if not isinstance(head, dict) or head.get("kind") != "header":
            raise DataError(RecordProblem(src, 1, "kind", "the first line must be the header"))
        if head.get("settings_hash") != self.header.get("settings_hash"):
            raise ConfigError("resume", f"{self.path} belongs to a run with other settings "
                              f"(corpus, generator, seed, mix, n or prompts differ: "
                              f"{head.get('settings_hash')} vs "
                              f"{self.header.get('settings_hash')}); use another --progress "
                              "file or --fresh")
        for n, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                key = (str(rec["stage"]), str(rec["key"]))
                self._done[key] = (str(rec["request_hash"]), dict(rec["reply"]))
            except (ValueError, KeyError, TypeError):
                raise DataError(RecordProblem(src, n, None, "not a progress record")) from None

    def get(self, stage: str, key: str, request_hash: str) -> JudgeReply | None:
        """The finished reply of this call, or ``None`` (never asked, changed, or transient)."""
        got = self._done.get((stage, key))
        if got is None or got[0] != request_hash:
            return None
        rep = reply_from_json(got[1], cached=True)
        if not rep.ok and rep.reason in TRANSIENT:
            return None
        rep.extra = {**rep.extra, "resumed": True}
        self.reused += 1
        return rep

    def put(self, stage: str, key: str, request_hash: str, reply: JudgeReply) -> None:
        obj = reply_to_json(reply)
        obj["extra"] = {k: v for k, v in obj["extra"].items() if k != "messages"}
        line = json.dumps({"kind": "reply", "stage": stage, "key": key,
                           "request_hash": request_hash, "reply": obj}, ensure_ascii=False)
        with self._lock:
            self._done[(stage, key)] = (request_hash, obj)
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()
