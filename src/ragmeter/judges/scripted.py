"""Judges for tests and offline replays: :class:`ScriptedJudge` and :class:`RecordedJudge`.

``ScriptedJudge`` answers from a Python callable but runs the full engine (parsing, repair,
retries, concurrency, cache), so metric tests exercise the real path. ``RecordedJudge``
replays replies stored in a JSON/JSONL file keyed by :func:`request_hash`, and records
missing ones when given a real judge.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragmeter.calls.retry import RetryPolicy
from ragmeter.calls.sync import run_sync
from ragmeter.errors import ConfigError, DataError, RecordProblem
from ragmeter.judges.backend import BackendBase, Completion
from ragmeter.judges.base import Judge, JudgeReply, JudgeRequest
from ragmeter.judges.cache import RequestDigest, reply_from_json, reply_to_json, request_hash
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.exchange import JudgeExchange, Session
from ragmeter.judges.llm_judge import EngineJudge
from ragmeter.judges.stats import JudgeStats

ScriptResult = str | dict | list | Completion
Script = Callable[[JudgeRequest], ScriptResult | Awaitable[ScriptResult]]


class ScriptedBackend(BackendBase):
    """Calls ``fn(request)`` (sync or async); a dict/list reply is serialised to JSON text.

    ``request`` is the :class:`~ragmeter.judges.base.JudgeRequest` being asked, as it is sent:
    its messages (a repair call's carry the extended messages), the schema sent (``{}`` when
    the schema went into the prompt), its ``metric``, call ``kind`` and ``sample_id``, the
    effective ``max_tokens`` and ``temperature``. Raise
    :class:`~ragmeter.calls.errors.CallError` from ``fn`` to simulate faults.
    """

    kind = "scripted"
    supports_schema = True

    def __init__(self, fn: Script, model: str = "scripted", latency_s: float = 0.0):
        self.fn = fn
        self.model = model
        self.latency_s = latency_s
        self.calls = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.seen: list[JudgeRequest] = []
        self._lock = threading.Lock()

    async def aclose(self) -> None:
        return None

    async def complete(self, messages: Sequence[dict[str, str]], schema: dict[str, Any] | None,
                       *, max_tokens: int, temperature: float, seed: int | None,
                       request: JudgeRequest | None = None) -> Completion:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            req = (JudgeRequest(messages=(), schema={}, prompt_version="scripted")
                   if request is None else request)
            req = replace(req, messages=tuple(dict(m) for m in messages), schema=schema or {},
                          max_tokens=max_tokens, temperature=temperature)
            self.seen.append(req)
            out = self.fn(req)
            if inspect.isawaitable(out):
                out = await out
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(out, Completion):
            return out
        text = json.dumps(out, ensure_ascii=False) if isinstance(out, (dict, list)) else str(out)
        return Completion(text=text, tokens_in=sum(len(m.get("content", "")) for m in messages)
                          // 4, tokens_out=len(text) // 4)


class ScriptedJudge(EngineJudge):
    """A judge whose "model" is ``fn``. Caching is off unless ``config`` turns it on."""

    def __init__(self, fn: Script, *, name: str = "scripted", model: str = "scripted",
                 demo: bool = False, latency_s: float = 0.0, config: JudgeConfig | None = None,
                 **kwargs: Any):
        cfg = config or JudgeConfig(name=name, backend="scripted", model=model, no_cache=True,
                                    api_key_env=None,
                                    retry=RetryPolicy(initial=0.001, max=0.01, max_retries=2))
        super().__init__(cfg, ScriptedBackend(fn, model=model, latency_s=latency_s), demo=demo,
                         **kwargs)

    def exchange(self, req: JudgeRequest, dig: RequestDigest, session: Session) -> JudgeExchange:
        return _ScriptedExchange(req, self.config, self.model, session, dig.schema_json,
                                 self.name)

    @property
    def scripted(self) -> ScriptedBackend:
        backend = self.backend
        assert isinstance(backend, ScriptedBackend)
        return backend


class _ScriptedExchange(JudgeExchange):
    """A judge exchange that hands the script the request itself (its metric, call kind and
    sample), not only the messages a model would get."""

    def payload(self) -> dict[str, Any]:
        return {**super().payload(), "request": self.sent()}


class RecordedJudge:
    """Replays replies from ``path`` (JSON list or JSONL of ``{"request_hash", "reply"}``).

    With ``record_with`` (a real judge) requests missing from the file are asked and appended.
    Without it a missing request is unscored (``backend_error``) with the hash in ``detail``,
    or raises :class:`ConfigError` when ``strict``.
    """

    def __init__(self, path: str | Path, *, record_with: Judge | None = None,
                 name: str = "recorded", strict: bool = False):
        self.path = Path(path)
        self.name = name
        self.inner = record_with
        self.model = record_with.model if record_with is not None else "recorded"
        self.demo = bool(getattr(record_with, "demo", False))
        self.strict = strict
        self.stats = JudgeStats()
        self.last_stats = JudgeStats()
        self._store: dict[str, dict[str, Any]] = self._load()
        if self._store and self.model == "recorded":
            first = next(iter(self._store.values()))
            self.model = str(first.get("model") or "recorded")

    def __repr__(self) -> str:
        return f"RecordedJudge(path={str(self.path)!r}, entries={len(self._store)})"

    def __len__(self) -> int:
        return len(self._store)

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            if self.inner is None:
                raise ConfigError("record_path", f"recording {self.path} does not exist; "
                                  "record it first with RecordedJudge(path, record_with=judge)")
            return {}
        text = self.path.read_text(encoding="utf-8")
        entries: list[tuple[int, Any]] = []
        stripped = text.lstrip()
        if stripped.startswith("["):
            try:
                entries = list(enumerate(json.loads(text), 1))
            except ValueError as exc:
                raise DataError(RecordProblem(str(self.path), None, None, f"bad JSON: {exc}")
                                ) from None
        else:
            problems = []
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    entries.append((n, json.loads(line)))
                except ValueError as exc:
                    problems.append(RecordProblem(str(self.path), n, None, f"bad JSON: {exc}"))
            if problems:
                raise DataError(problems)
        store: dict[str, dict[str, Any]] = {}
        problems = []
        for n, e in entries:
            if not isinstance(e, dict) or "request_hash" not in e or "reply" not in e:
                problems.append(RecordProblem(str(self.path), n, "request_hash",
                                              "each entry needs 'request_hash' and 'reply'"))
                continue
            store[str(e["request_hash"])] = dict(e["reply"])
        if problems:
            raise DataError(problems)
        return store

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return list(run_sync(lambda: self.aask_many(requests)))

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        hashes = [request_hash(r) for r in requests]
        missing = [i for i, h in enumerate(hashes) if h not in self._store]
        if missing and self.inner is not None:
            new = await self.inner.aask_many([requests[i] for i in missing])
            lines = []
            for i, rep in zip(missing, new, strict=False):
                obj = reply_to_json(rep)
                obj["extra"] = {k: v for k, v in obj["extra"].items() if k != "messages"}
                self._store[hashes[i]] = obj
                lines.append(json.dumps({"request_hash": hashes[i], "metric": requests[i].metric,
                                         "reply": obj}, ensure_ascii=False))
            await asyncio.to_thread(self._append, lines)
            missing = []
        out: list[JudgeReply] = []
        for h, req in zip(hashes, requests, strict=False):
            if h in self._store:
                rep = reply_from_json(self._store[h], cached=True)
                rep.extra = {**rep.extra, "replayed": True, "request_hash": h,
                             "judge": self.name}
                out.append(rep)
            elif self.strict:
                raise ConfigError("record_path", f"no recorded reply for request {h[:12]} "
                                  f"(metric {req.metric!r}) in {self.path}; re-record it")
            else:
                out.append(JudgeReply(data=None, reason="backend_error",
                                      detail=f"no recorded reply for request {h[:12]} in "
                                             f"{self.path.name}; re-record with record_with=",
                                      model=self.model, attempts=0,
                                      extra={"request_hash": h, "judge": self.name}))
        self.last_stats = JudgeStats.from_replies(out)
        self.stats.merge(self.last_stats)
        return [replace(r) for r in out]

    def _append(self, lines: list[str]) -> None:
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        is_json_list = self.path.exists() and self.path.read_text(
            encoding="utf-8").lstrip().startswith("[")
        if is_json_list:
            data = [{"request_hash": h, "reply": r} for h, r in self._store.items()]
            self.path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
            return
        with self.path.open("a", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
