"""The progress file of a generation run: every finished model reply, one JSON line each.

It is the project's one progress log (:class:`ragmeter.journal.Journal`): line 1 is a header
with the run's settings hash, every other line is one reply keyed by stage, item key and the
request's hash, written and flushed the moment it arrives, so a crash or ``kill -9`` loses
only the calls in flight and ``--resume`` re-asks none of the finished ones. Replies that
failed for a transient reason (timeouts, rate limits, server or connection errors) are asked
again on resume.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.journal import Journal
from ragmeter.judges.base import JudgeReply
from ragmeter.judges.cache import reply_from_json, reply_to_json

FORMAT_VERSION = 1
TRANSIENT = frozenset({"timeout", "rate_limited", "http_5xx", "connection_error",
                       "backend_error"})


class ProgressLog:
    """Finished replies by (stage, key); ``get(stage, key, request_hash)`` finds one."""

    def __init__(self, path: str | Path, header: dict[str, Any], *, resume: bool,
                 overwrite: bool = False):
        self.path = Path(path)
        self.header = {"kind": "header", "format": FORMAT_VERSION, **header}
        if self.path.exists() and not overwrite and not resume:
            raise ConfigError("resume", f"progress file {self.path} exists from an earlier "
                              "run; pass --resume to continue it, or --fresh to start over")
        # one flush per reply; the generator's replies come too fast to fsync each
        self._log = Journal(self.path, header=self.header, fresh=overwrite, sync=False)
        self.torn_lines = self._log.torn_lines
        self.reused = 0
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._load()

    def _load(self) -> None:
        src = str(self.path)
        head = self._log.header_record or {}
        if head.get("kind") != "header":
            raise DataError(RecordProblem(src, 1, "kind", "the first line must be the header"))
        if head.get("settings_hash") != self.header.get("settings_hash"):
            raise ConfigError("resume", f"{self.path} belongs to a run with other settings "
                              f"(corpus, generator, seed, mix, n or prompts differ: "
                              f"{head.get('settings_hash')} vs "
                              f"{self.header.get('settings_hash')}); use another --progress "
                              "file or --fresh")
        for n, rec in enumerate(self._log.records, 2):
            try:
                key = (str(rec["stage"]), str(rec["key"]))
                self._done[key] = (str(rec["request_hash"]), dict(rec["reply"]))
            except (KeyError, TypeError, ValueError):
                raise DataError(RecordProblem(src, n, None, "not a progress record")) from None
        self._log.records.clear()  # kept by key above

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
        with self._lock:
            self._done[(stage, key)] = (request_hash, obj)
            self._log.append({"kind": "reply", "stage": stage, "key": key,
                              "request_hash": request_hash, "reply": obj})
            self._log.records.clear()

    def close(self) -> None:
        self._log.close()
