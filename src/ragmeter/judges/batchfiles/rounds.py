"""Judging through batch files, round by round: :func:`batch_scope` and the judge that stands
in for every engine judge built inside it.

A command runs its ordinary plan inside ``batch_scope("write", DIR)`` or
``batch_scope("collect", DIR)``; :func:`batched` (applied by ``make_judge`` to every judge it
builds) puts a :class:`BatchJudge` in front of each engine judge. That judge sends nothing. For
each request of the plan it computes the cache key (the one the online engine computes), and:

* a reply in the judge cache is the reply (so round 2's requests are made from round 1's
  collected replies, exactly as the online planner makes them);
* under ``collect``, a result line whose ``custom_id`` is the key is turned into the reply the
  online engine would have made of the same completion (the same exchange: parsing, schema
  validation, refusal, truncation) and stored in the judge cache;
* anything else is *pending*: under ``write`` its request line is written, with the body the
  online client posts (:meth:`OpenAIBackend.chat_body` of the same payload); the plan gets an
  unscored ``batch_pending`` reply, so the calls that need it wait for the next round.

A completion that the online engine would answer with another turn — a repair after an
unusable reply, a retry with a larger token budget after a truncated one — is kept in
``turns.jsonl``; the next round writes that turn's request (the same ``custom_id``) and
collect continues the conversation from the kept turns. Once every request is answered the
ordinary command finishes from the judge cache with 0 network calls.
"""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ragmeter.errors import ConfigError, DataError, RecordProblem, UsageError
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.batchfiles.lines import (
    OPENAI_LIMITS,
    Limits,
    Malformed,
    ResultLine,
    SplitWriter,
    read_results,
    written_ids,
)
from ragmeter.judges.batchfiles.manifest import (
    RESULTS,
    JudgeIdentity,
    Manifest,
    Round,
    load_turns,
    now_iso,
    save_turns,
    write_json,
)
from ragmeter.judges.cache import RequestDigest

Mode = Literal["write", "collect"]
MODES: tuple[str, ...] = ("write", "collect")
#: the unscored reason of a request whose result has not been collected yet
PENDING = "batch_pending"
#: names shown per list in printed reports (all of them are in the report file)
SHOWN = 10

_SESSION: ContextVar[BatchSession | None] = ContextVar("ragmeter_batch_session", default=None)


@dataclass
class Asked:
    """What is known about one request of the plan (for naming it in reports)."""

    judge: str
    sample_id: str
    prompt_version: str

    def name(self, key: str) -> str:
        return f"{key} ({self.judge}, sample {self.sample_id or '?'}, {self.prompt_version})"


@dataclass
class _JudgeState:
    identity: JudgeIdentity
    stem: str
    writer: SplitWriter | None = None


@dataclass
class WriteReport:
    """What one ``write`` did."""

    folder: str
    round: int | None
    requests: int
    files: list[dict[str, Any]]
    answered: int
    rewritten: list[str] = field(default_factory=list)
    by_prompt: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        if self.round is None:
            return [f"batch folder {self.folder}: nothing left to write — all {self.answered} "
                    "judge requests of this plan are answered; run the command without "
                    "--judge-batch to score them (0 calls)"]
        out = [f"round {self.round}: wrote {self.requests} judge request(s) in "
               f"{len(self.files)} file(s) to {self.folder} ({self.answered} already "
               "answered)"]
        for f in self.files:
            out.append(f"  {f['path']}: {f['lines']} lines, {f['bytes']:,} bytes "
                       f"(judge {f['judge']})")
        if self.by_prompt:
            out.append("  by prompt: " + ", ".join(f"{k} {v}" for k, v in
                                                   sorted(self.by_prompt.items())))
        if self.rewritten:
            out.append(f"  written again (no usable result in an earlier round): "
                       f"{len(self.rewritten)}")
            out += [f"    {n}" for n in self.rewritten[:SHOWN]]
            if len(self.rewritten) > SHOWN:
                out.append(f"    ... {len(self.rewritten) - SHOWN} more in the manifest's "
                           f"round-{self.round:02d}/written-again.txt")
        out.append("next: run these files through the batch API (ragmeter judge batch submit "
                   f"{self.folder}, or vllm run-batch), put the output and error files in "
                   f"{self.folder}/{RESULTS}/, then --judge-batch collect {self.folder}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "round": self.round, "requests": self.requests,
                "files": self.files, "answered": self.answered, "rewritten": self.rewritten,
                "by_prompt": self.by_prompt}


@dataclass
class CollectReport:
    """What one ``collect`` read and did (``ok``: every request written has its answer)."""

    folder: str
    files: list[str]
    lines: int
    matched: int
    already: int
    failed: dict[str, str]                  # key name -> reason
    malformed: list[str]                    # file:line why [custom_id]
    unknown: list[str]
    missing: list[str]
    duplicates: int
    another_turn: list[str]
    pending: int
    warnings: list[str] = field(default_factory=list)
    report_file: str = ""

    @property
    def ok(self) -> bool:
        return not (self.failed or self.malformed or self.missing) and (
            self.matched > 0 or self.already > 0 or self.lines == 0)

    def summary(self) -> list[str]:
        out = [f"collected {self.folder}: {self.lines} result line(s) read from "
               f"{len(self.files)} file(s): {self.matched} matched (stored in the judge "
               f"cache), {self.already} already stored, {len(self.failed)} failed, "
               f"{len(self.malformed)} malformed, {len(self.unknown)} unknown, "
               f"{len(self.missing)} missing" + (f", {self.duplicates} duplicate(s) ignored"
                                                  if self.duplicates else "")]
        for title, names in (("failed", [f"{k}: {v}" for k, v in self.failed.items()]),
                             ("malformed", self.malformed), ("missing (no result line)",
                                                             self.missing),
                             ("unknown (no request of this plan has that custom_id)",
                              self.unknown),
                             ("need another turn (a repair or a larger token budget)",
                              self.another_turn)):
            if names:
                out.append(f"  {title}:")
                out += [f"    {n}" for n in names[:SHOWN]]
                if len(names) > SHOWN:
                    out.append(f"    ... {len(names) - SHOWN} more in {self.report_file}")
        out += [f"  warning: {w}" for w in self.warnings]
        if self.pending:
            out.append(f"next: {self.pending} request(s) still need an answer — "
                       f"--judge-batch write {self.folder} writes them (the failed, malformed "
                       "and missing ones again) as the next round")
        else:
            out.append("next: every judge request of this plan is answered — run the command "
                       "without --judge-batch to score it from the judge cache (0 calls)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "files": self.files, "lines": self.lines,
                "matched": self.matched, "already": self.already, "failed": self.failed,
                "malformed": self.malformed, "unknown": self.unknown, "missing": self.missing,
                "duplicates": self.duplicates, "another_turn": self.another_turn,
                "pending": self.pending, "warnings": self.warnings, "ok": self.ok}


class BatchJudge:
    """Stands in for an engine judge inside :func:`batch_scope` (see the module doc); every
    other attribute is the engine judge's."""

    #: asked phase by phase (:func:`~ragmeter.judges.engine.ask_chained`), round by round
    chains = False

    def __init__(self, engine: Any, session: BatchSession):
        self.engine = engine
        self.session = session
        self.name = engine.name
        self.model = engine.model
        self.demo = engine.demo

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def __repr__(self) -> str:
        return f"BatchJudge({self.engine!r}, {self.session.mode})"

    def ask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return self.session.answer(self.engine, list(requests))

    async def aask_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        return self.ask_many(requests)

    def ask(self, request: JudgeRequest) -> JudgeReply:
        return self.ask_many([request])[0]

    async def aask(self, request: JudgeRequest) -> JudgeReply:
        return self.ask_many([request])[0]

    async def aclose(self) -> None:
        return None


class BatchSession:
    """One ``write`` or ``collect`` over a batch folder (made by :func:`batch_scope`)."""

    def __init__(self, mode: Mode, folder: Path, *, limits: Limits = OPENAI_LIMITS,
                 command: str = ""):
        if mode not in MODES:
            raise UsageError("--judge-batch", f"unknown mode {mode!r}", list(MODES))
        self.mode: Mode = mode
        self.folder = folder
        self.limits = limits
        self.command = command
        self.manifest = Manifest(command=command)
        self.round_no = 1
        self.judges: dict[int, _JudgeState] = {}
        self.turns: dict[str, list[Any]] = {}
        self.results: dict[str, ResultLine] = {}
        self.malformed: list[Malformed] = []
        self.result_files: list[str] = []
        self.lines_read = 0
        self.duplicates = 0
        self.asked: dict[str, Asked] = {}
        self.answered: set[str] = set()          # from the cache (before this session)
        self.stored: set[str] = set()            # matched now and stored
        self.failed: dict[str, str] = {}
        self.pending: set[str] = set()
        self.another_turn: set[str] = set()
        self.written: set[str] = set()
        self.versions: set[str] = set()
        self.by_prompt: Counter[str] = Counter()
        self.earlier: set[str] = set()
        self.last_status: dict[str, str] = {}
        self.warnings: list[str] = []
        self.report: WriteReport | CollectReport | None = None
        self._finals: dict[str, JudgeReply] = {}

    # -- opening ------------------------------------------------------------------------------
    def open(self) -> None:
        check_folder(self.folder)
        found = Manifest.load(self.folder)
        if self.mode == "collect":
            if found is None:
                raise UsageError("--judge-batch", f"{self.folder} has no manifest.json: write "
                                 "a round first (--judge-batch write DIR)")
            self.manifest = found
            self.turns = load_turns(self.folder)
            self._read_results()
            return
        if found is not None:
            self.manifest = found
            last = found.last_round()
            if last is not None and not any(c.get("at", "") >= last.written_at
                                            for c in found.collects):
                raise UsageError("--judge-batch", f"round {last.number} of {self.folder} "
                                 f"(written {last.written_at}) has not been collected: "
                                 f"collect its results first (--judge-batch collect "
                                 f"{self.folder}); writing now would pay for its requests "
                                 "twice")
            self.round_no = (last.number + 1) if last is not None else 1
            for r in found.rounds:
                for f in r.files:
                    path = self.folder / f.path
                    if path.is_file():
                        self.earlier.update(written_ids(path))
            if found.collects:
                self.last_status = dict(found.collects[-1].get("status") or {})
        self.turns = load_turns(self.folder)
        self.manifest.command = self.command or self.manifest.command
        self.manifest.limits = {"max_lines": self.limits.max_lines,
                                "max_bytes": self.limits.max_bytes}

    def _read_results(self) -> None:
        folder = self.folder / RESULTS
        paths = sorted(p for p in folder.rglob("*") if p.is_file()
                       and not p.name.startswith(".")) if folder.is_dir() else []
        if not paths:
            raise UsageError("--judge-batch", f"no result files in {folder}: put the output "
                             "and error files of every batch there (ragmeter judge batch "
                             "fetch does), then collect again")
        for path in paths:
            name = path.relative_to(self.folder).as_posix()
            self.result_files.append(name)
            with path.open("rb") as fh:
                for item in read_results(fh, name):
                    self.lines_read += 1
                    if isinstance(item, Malformed):
                        self.malformed.append(item)
                        continue
                    have = self.results.get(item.custom_id)
                    if have is None:
                        self.results[item.custom_id] = item
                        continue
                    self.duplicates += 1
                    if have.completion is None and item.completion is not None:
                        self.results[item.custom_id] = item   # an answer beats an error

    # -- the judge ----------------------------------------------------------------------------
    def judge(self, engine: Any) -> BatchJudge:
        member = engine.members[0] if getattr(engine, "members", None) else None
        if member is None or not hasattr(member, "chat_body"):
            raise ConfigError("backend", f"judge {engine.name!r} (backend "
                              f"{engine.config.backend!r}) cannot be judged through batch "
                              "files: they carry OpenAI-compatible chat requests (backend "
                              "openai or mock)")
        if engine.cache is None:
            raise ConfigError("no_cache", f"judge {engine.name!r} has the judge cache off; "
                              "batch results reach a run only through the judge cache")
        ident = JudgeIdentity.of(engine)
        have = self.manifest.judges.get(ident.name)
        if have is not None and have.key_fields() != ident.key_fields():
            diff = [k for k, v in ident.key_fields().items() if have.key_fields().get(k) != v]
            msg = (f"judge {ident.name!r} differs from the one the batch folder was written "
                   f"for ({', '.join(diff)}): its requests get other cache keys, so no "
                   "earlier result can answer them")
            if msg not in self.warnings:
                self.warnings.append(msg)
        if self.mode == "write" or have is None:
            self.manifest.judges[ident.name] = ident
        return BatchJudge(engine, self)

    def _state(self, engine: Any) -> _JudgeState:
        st = self.judges.get(id(engine))
        if st is None:
            ident = JudgeIdentity.of(engine)
            stems = {s.stem for s in self.judges.values()}
            base = "".join(c if c.isalnum() or c in "-_." else "_" for c in ident.name) or "judge"
            stem, n = base, 2
            same = [s for s in self.judges.values() if s.identity == ident]
            if same:
                self.judges[id(engine)] = same[0]
                return same[0]
            while stem in stems:
                stem, n = f"{base}-{n}", n + 1
            st = self.judges[id(engine)] = _JudgeState(ident, stem)
        return st

    def answer(self, engine: Any, requests: list[JudgeRequest]) -> list[JudgeReply]:
        """Replies to ``requests`` of ``engine`` (see the module doc)."""
        settings = engine.key_settings()
        digs = [engine.digest_of(r, settings) for r in requests]
        cache = engine.cache
        todo = [d.key for d in digs if d.key not in self._finals]
        hits = cache.get_many(todo) if todo else {}
        st = self._state(engine)
        out: list[JudgeReply] = []
        store: list[tuple[str, JudgeReply]] = []
        for req, dig in zip(requests, digs, strict=True):
            key = dig.key
            self.versions.add(req.prompt_version)
            if key not in self.asked:
                self.asked[key] = Asked(st.identity.name, req.sample_id, req.prompt_version)
            hit = hits.get(key)
            if hit is not None:
                if key not in self.stored:
                    self.answered.add(key)
                self.pending.discard(key)
                out.append(engine.decorate(replace(hit, cached=True, extra=dict(hit.extra)),
                                           req, dig))
                continue
            final = self._finals.get(key)
            if final is not None:
                out.append(replace(final, extra=dict(final.extra)))
                continue
            res = self.results.get(key) if self.mode == "collect" else None
            if res is not None:
                rep = self._from_result(engine, req, dig, res)
                if rep is not None:
                    self._finals[key] = rep
                    if rep.ok and self._storable(engine, rep):
                        store.append((key, rep))
                        self.stored.add(key)
                        self.pending.discard(key)
                    else:
                        self.failed[key] = rep.reason or "not stored"
                        self.pending.add(key)
                    out.append(replace(rep, extra=dict(rep.extra)))
                    continue
            self.pending.add(key)
            if self.mode == "write" and key not in self.written:
                self._write(engine, st, req, dig)
            out.append(JudgeReply(data=None, reason=PENDING, attempts=0,
                                  detail="waiting for its batch result (--judge-batch)"))
        if store:
            cache.put_many(store, namespace=engine.namespace, endpoint=engine.endpoint_identity)
        return out

    @staticmethod
    def _storable(engine: Any, rep: JudgeReply) -> bool:
        """A reply of the fake server is never stored for a real judge (as online)."""
        return not (rep.extra.get("mock") and not engine.namespace.startswith("mock:"))

    def _exchange(self, engine: Any, req: JudgeRequest, dig: RequestDigest,
                  key: str) -> tuple[Any, Any, list[Any]]:
        """The online exchange of ``req`` with its kept turns replayed: ``(exchange, record,
        turns)`` (turns that no longer fit the request are dropped)."""
        from ragmeter.judges.exchange import Session
        from ragmeter.judges.runner import CallRecord

        def fresh() -> tuple[Any, Any]:
            session = Session(engine._schema_ok, Counter(), pooled=False)
            return engine.exchange(req, dig, session), CallRecord()

        ex, rec = fresh()
        turns = self.turns.get(key, [])
        for comp in turns:
            ex.payload()
            rec.attempts += 1
            if ex.outcome(comp, rec) is not None:
                self.turns.pop(key, None)
                ex, rec = fresh()
                return ex, rec, []
        return ex, rec, list(turns)

    def _from_result(self, engine: Any, req: JudgeRequest, dig: RequestDigest,
                     res: ResultLine) -> JudgeReply | None:
        """The reply the online engine makes of this result (None: it needs another turn)."""
        key = dig.key
        ex, rec, turns = self._exchange(engine, req, dig, key)
        if turns and res.completion is not None and res.completion == turns[-1]:
            self.another_turn.add(key)    # the next turn's result has not come back yet
            return None
        ex.payload()
        rec.attempts += 1
        if res.completion is None:
            err = res.failure
            assert err is not None
            reason_err = err if err.reason != "schema_unsupported" else replace_reason(err)
            rep = ex.failed(reason_err, res.error or err.detail, rec)
        else:
            got = ex.outcome(res.completion, rec)
            if got is None:
                self.turns[key] = [*turns, res.completion]
                self.another_turn.add(key)
                return None
            rep = got
        self.turns.pop(key, None)
        rep = engine.decorate(rep, req, dig)
        cfg = engine.config
        rep.cost = rep.cost * (1.0 - float(getattr(cfg, "batch_discount", 0.5)))
        rep.extra["batch"] = True
        return rep

    def _write(self, engine: Any, st: _JudgeState, req: JudgeRequest,
               dig: RequestDigest) -> None:
        key = dig.key
        ex, _rec, _turns = self._exchange(engine, req, dig, key)
        payload = ex.payload()
        body = engine.members[0].chat_body(**payload)
        if st.writer is None:
            st.writer = SplitWriter(self.folder / f"round-{self.round_no:02d}", st.stem,
                                    st.identity.name, self.folder, self.limits)
        st.writer.write(key, body)
        self.written.add(key)
        self.by_prompt[req.prompt_version] += 1

    # -- closing ------------------------------------------------------------------------------
    def close(self, ok: bool) -> None:
        """Record what the session did (on success) and make its report."""
        if self.mode == "write":
            self._close_write(ok)
        elif ok:
            self._close_collect()

    def _close_write(self, ok: bool) -> None:
        states = {id(s): s for s in self.judges.values()}.values()
        files = [f for s in states if s.writer is not None for f in s.writer.close()]
        round_dir = self.folder / f"round-{self.round_no:02d}"
        if not ok:
            if files:
                shutil.rmtree(round_dir, ignore_errors=True)
            return
        self.manifest.prompt_versions = sorted(set(self.manifest.prompt_versions)
                                               | self.versions)
        answered = len(self.answered)
        if not files:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.manifest.save(self.folder)
            self.report = WriteReport(str(self.folder), None, 0, [], answered)
            return
        again = sorted(k for k in self.written if k in self.earlier)
        named = [self._named(k) for k in again]
        if named:
            (round_dir / "written-again.txt").write_text("\n".join(named) + "\n",
                                                         encoding="utf-8")
        by_judge: Counter[str] = Counter()
        for f in files:
            by_judge[f.judge] += f.lines
        rnd = Round(self.round_no, now_iso(), files, len(self.written), dict(by_judge),
                    dict(self.by_prompt), len(again), answered)
        self.manifest.rounds.append(rnd)
        save_turns(self.folder, self.turns)
        self.manifest.save(self.folder)
        self.report = WriteReport(str(self.folder), self.round_no, len(self.written),
                                  [f.to_dict() for f in files], answered, named,
                                  dict(self.by_prompt))

    def _named(self, key: str) -> str:
        asked = self.asked.get(key)
        text = asked.name(key) if asked is not None else key
        why = self.last_status.get(key)
        return f"{text}: {why}" if why else text

    def _close_collect(self) -> None:
        written: set[str] = set()
        for r in self.manifest.rounds:
            for f in r.files:
                path = self.folder / f.path
                if path.is_file():
                    written.update(written_ids(path))
        seen = set(self.results) | {m.custom_id for m in self.malformed if m.custom_id}
        missing = sorted(k for k in self.pending if k in written and k not in seen
                         and k not in self.another_turn)
        unknown = sorted(k for k in self.results if k not in self.asked)
        failed = {self._named(k): why for k, why in sorted(self.failed.items())}
        malformed = [f"{m.where}: {m.why}" + (f" [{self._named(m.custom_id)}]"
                                              if m.custom_id else "")
                     for m in self.malformed]
        status: dict[str, str] = {k: "missing" for k in missing}
        status.update({m.custom_id: f"malformed ({m.where}: {m.why})"
                       for m in self.malformed if m.custom_id})
        status.update({k: f"failed ({why})" for k, why in self.failed.items()})
        status.update({k: "needs another turn" for k in self.another_turn})
        number = len(self.manifest.collects) + 1
        report_name = f"collect-{number:02d}.json"
        self.report = CollectReport(
            str(self.folder), self.result_files, self.lines_read, len(self.stored),
            len(self.answered & set(self.results)), failed, malformed,
            unknown, [self._named(k) for k in missing], self.duplicates,
            [self._named(k) for k in sorted(self.another_turn)], len(self.pending),
            list(self.warnings), report_name)
        write_json(self.folder / report_name, self.report.to_dict())
        summary = {k: v for k, v in self.report.to_dict().items()
                   if k not in ("failed", "malformed", "unknown", "missing", "another_turn")}
        self.manifest.collects.append({"at": now_iso(), "report": report_name,
                                       **summary, "failed": len(failed),
                                       "malformed": len(malformed), "unknown": len(unknown),
                                       "missing": len(missing), "status": status})
        save_turns(self.folder, self.turns)
        self.manifest.save(self.folder)


def replace_reason(err: Any) -> Any:
    """A ``schema_unsupported`` failure as the ``http_4xx`` it is in a batch (the server
    rejected ``response_format``: set ``structured_output: false`` for this judge)."""
    from ragmeter.judges.backend import BackendError

    return BackendError("http_4xx", f"{err.detail} (the server rejects structured output: "
                        "set structured_output: false for this judge)", status=err.status)


def current() -> BatchSession | None:
    """The batch session of the running command, if any."""
    return _SESSION.get()


def batched(judge: Any, config: Any = None) -> Any:
    """``judge`` itself, or inside :func:`batch_scope` a :class:`BatchJudge` in front of it
    (``make_judge`` applies it to every judge it builds)."""
    session = _SESSION.get()
    if session is None or judge is None:
        return judge
    return session.judge(judge)


@contextlib.contextmanager
def batch_scope(mode: Mode, folder: str | Path, *, limits: Limits = OPENAI_LIMITS,
                command: str = "") -> Iterator[BatchSession]:
    """Run a command's plan against a batch folder (see the module doc): every judge built
    inside by ``make_judge`` writes (``write``) or collects (``collect``) instead of calling.
    ``session.report`` says what happened once the block ended without an error."""
    session = BatchSession(mode, Path(folder), limits=limits, command=command)
    session.open()
    token = _SESSION.set(session)
    ok = False
    try:
        yield session
        ok = True
    finally:
        _SESSION.reset(token)
        session.close(ok)


def check_folder(folder: Path) -> None:
    """A batch folder path that is a file is a usage error (named)."""
    if folder.exists() and not folder.is_dir():
        raise DataError(RecordProblem(str(folder), None, None, "is a file, not a folder"))


__all__ = ["MODES", "PENDING", "Asked", "BatchJudge", "BatchSession", "CollectReport",
           "WriteReport", "batch_scope", "batched", "check_folder", "current"]
