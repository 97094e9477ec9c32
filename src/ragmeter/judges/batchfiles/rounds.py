"""Judging through batch files, round by round: :func:`batch_scope` and the judge that stands
in for every engine judge built inside it.

A command runs its ordinary plan inside ``batch_scope("write", DIR)``; :func:`batched`
(applied by ``make_judge`` to every judge it builds) puts a :class:`BatchJudge` in front of
each engine judge. That judge sends nothing. For each request of the plan it computes the cache
key (the one the online engine computes), and:

* a reply in the judge cache is the reply, so round 2's requests are made from round 1's
  collected replies exactly as the online planner makes them;
* anything else is *pending*: its request line is written to the round's files with the body
  the online client posts (:meth:`OpenAIBackend.chat_body` of the same exchange payload), and
  the plan gets an unscored ``batch_pending`` reply, so the calls that need it wait for the
  next round.

Beside the files, ``round-NN/index.jsonl`` records what collect needs to turn a result into a
reply without planning again (the judge, prompt version, schema and the request's own token
and temperature settings, per ``custom_id``); the schemas are in ``schemas.json``.

``batch_scope("collect", DIR)`` collects instead (:mod:`.collect`): the judges built inside are
the ones whose results are read into the judge cache; no plan needs to run.

A completion that the online engine answers with another turn — a repair after an unusable
reply, a retry with a larger token budget after a truncated one — is kept in ``turns.jsonl``
by collect; the next round writes that turn's request (the same ``custom_id``), made by
replaying the kept turns through the same exchange.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Literal

from ragmeter._version import __version__
from ragmeter.bulk import fewer_collections
from ragmeter.calls.record import CallRecord
from ragmeter.data.hashing import dataset_hash
from ragmeter.errors import ConfigError, DataError, RecordProblem, UsageError
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.batchfiles.lines import OPENAI_LIMITS, Limits, SplitWriter, body_json
from ragmeter.judges.batchfiles.manifest import (
    RESULTS,
    JudgeIdentity,
    Manifest,
    Round,
    load_index,
    load_schemas,
    load_turns,
    now_iso,
    save_schemas,
)
from ragmeter.judges.cache import RequestDigest, digest_and_messages
from ragmeter.judges.exchange import Session
from ragmeter.judges.wrappers import WRAPPERS, JudgeWrapper

Mode = Literal["write", "collect"]
MODES: tuple[str, ...] = ("write", "collect")
#: the unscored reason of a request whose result has not been collected yet
PENDING = "batch_pending"
#: names shown per list in printed reports (all of them are in the report files)
SHOWN = 10

_SESSION: ContextVar[BatchSession | None] = ContextVar("ragmeter_batch_session", default=None)


def schema_ref(schema_json: str) -> str:
    """The short name of a schema in ``schemas.json`` (from its canonical JSON)."""
    return hashlib.sha256(schema_json.encode("utf-8")).hexdigest()[:16]


def judge_session(engine: Any) -> Session:
    """A session for the exchanges of ``engine``'s requests (as online: one per batch)."""
    return Session(engine._schema_ok, Counter())


def conversation(engine: Any, request: JudgeRequest, dig: RequestDigest,
                 turns: Sequence[Any], session: Session | None = None
                 ) -> tuple[Any, Any, bool]:
    """The online exchange of ``request`` with the kept ``turns`` replayed: ``(exchange,
    call record, fits)``; ``fits`` is False (and a fresh exchange returned) when a kept turn
    would have ended the conversation, so the turns no longer belong to this request.
    ``session``: the one its judge's exchanges share (default: a new one)."""
    def fresh() -> tuple[Any, Any]:
        return (engine.exchange(request, dig, session or judge_session(engine)),
                CallRecord())

    ex, rec = fresh()
    for comp in turns:
        ex.payload()
        rec.attempts += 1
        if ex.outcome(comp, rec) is not None:
            ex, rec = fresh()
            return ex, rec, False
    return ex, rec, True


#: stand-ins of the request's messages and schema in a body, replaced by their JSON
_MESSAGES = "\x00ragmeter-batch:messages\x00"
_SCHEMA = "\x00ragmeter-batch:schema\x00"
_MESSAGES_JSON = json.dumps([_MESSAGES])
_SCHEMA_JSON = json.dumps(_SCHEMA)


def _json(value: Any) -> str:
    """The JSON of a scalar of an index line (a string, a number or null), made directly."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return encode_basestring(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value)


@dataclass
class _JudgeState:
    identity: JudgeIdentity
    stem: str
    writer: SplitWriter | None = None

    @property
    def name_json(self) -> str:
        return _json(self.identity.name)


@dataclass
class PlanRound:
    """One plan asked while a round is written (:meth:`BatchSession.planning`)."""

    key: str
    #: call kinds all of whose requests an earlier round of this plan had answered
    answered: frozenset[str]
    #: of those, the kinds not asked again (no call of the plan that is asked needs them)
    skipped: frozenset[str]
    #: requests made per call kind, and of them those without an answer yet
    made: Counter[str] = field(default_factory=Counter)
    pending: Counter[str] = field(default_factory=Counter)
    #: requests of an ``answered`` kind found without an answer (the plan is not the one
    #: recorded under its key: it must be asked whole)
    surprises: int = 0


@dataclass
class WriteReport:
    """What one ``write`` did (``round`` None: nothing was left to write)."""

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
                out.append(f"    ... {len(self.rewritten) - SHOWN} more in "
                           f"round-{self.round:02d}/written-again.txt")
        out.append("next: run these files through the batch API (ragmeter judge batch submit "
                   f"{self.folder}, or vllm run-batch), put the output and error files in "
                   f"{self.folder}/{RESULTS}/, then --judge-batch collect {self.folder}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "round": self.round, "requests": self.requests,
                "files": self.files, "answered": self.answered, "rewritten": self.rewritten,
                "by_prompt": self.by_prompt}


class BatchJudge:
    """Stands in for an engine judge inside :func:`batch_scope` (see the module doc); every
    other attribute is the engine judge's."""

    #: asked phase by phase (:func:`~ragmeter.judges.llm_judge.ask_chained`), round by round
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
        self.engines: dict[str, Any] = {}
        self.judges: dict[tuple[str, Any], _JudgeState] = {}
        self.turns: dict[str, list[Any]] = {}
        self.schemas: dict[str, Any] = {}
        self.answered: set[str] = set()
        self.written: set[str] = set()
        self.versions: set[str] = set()
        self.by_prompt: Counter[str] = Counter()
        self.earlier: dict[str, dict[str, Any]] = {}
        self.last_status: dict[str, str] = {}
        self.warnings: list[str] = []
        self.report: Any = None
        self._index: list[bytes] = []
        #: (judge member, token budget, temperature, seed) -> (the member; the JSON text of
        #: its chat body with the messages and schema stand-ins)
        self._bodies: dict[tuple[int, Any], tuple[Any, str]] = {}
        #: id(engine judge) -> (the judge; the session its requests' first turns are made in)
        self._sessions: dict[int, tuple[Any, Session]] = {}
        #: the configs of the judges built (part of every plan key)
        self._configs: set[str] = set()
        #: the plan being asked, and per plan key the requests not made again
        self._plan: PlanRound | None = None
        self._skipped: dict[str, int] = {}
        #: plan key -> call kind -> (judge, custom_id) of the earlier rounds' requests
        self._by_plan: dict[str, dict[str, list[tuple[str, str]]]] | None = None

    # -- opening ------------------------------------------------------------------------------
    def open(self) -> None:
        check_folder(self.folder)
        found = Manifest.load(self.folder)
        if self.mode == "collect":
            if found is None:
                raise UsageError("--judge-batch", f"{self.folder} has no manifest.json: write "
                                 "a round first (--judge-batch write DIR)")
            self.manifest = found
            return
        if found is not None:
            self.manifest = found
            last = found.last_round()
            if last is not None and not any(int(c.get("rounds", 0)) >= last.number
                                            for c in found.collects):
                raise UsageError("--judge-batch", f"round {last.number} of {self.folder} "
                                 f"(written {last.written_at}) has not been collected: "
                                 f"collect its results first (--judge-batch collect "
                                 f"{self.folder}); writing now would pay for its requests "
                                 "twice")
            self.round_no = (last.number + 1) if last is not None else 1
            self.earlier = load_index(self.folder, found)
            if found.collects:
                self.last_status = dict(found.collects[-1].get("status") or {})
        self.turns = load_turns(self.folder)
        self.schemas = load_schemas(self.folder)
        self.manifest.command = self.command or self.manifest.command
        self.manifest.limits = {"max_lines": self.limits.max_lines,
                                "max_bytes": self.limits.max_bytes}

    # -- the judge ----------------------------------------------------------------------------
    def judge(self, engine: Any, config: Any = None) -> BatchJudge:
        member = engine.members[0] if getattr(engine, "members", None) else None
        if member is None or not hasattr(member, "chat_body"):
            backend = getattr(config, "backend", None) or type(engine).__name__
            raise ConfigError("backend", f"judge {engine.name!r} (backend {backend!r}) cannot "
                              "be judged through batch files: they carry OpenAI-compatible "
                              "chat requests (backend openai or mock)")
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
        for detail in self.manifest.adaptations.get(ident.name, ()):
            for m in engine.members:   # what the endpoint rejected before, as online
                m.adapt(detail)
        self.engines.setdefault(ident.name, engine)
        self._configs.add(repr(config) if config is not None else repr(ident))
        return BatchJudge(engine, self)

    # -- plans --------------------------------------------------------------------------------
    def plan_key(self, parts: Any) -> str:
        """The key of a plan made from ``parts`` (what the planner makes its requests from:
        the samples, their languages and questions, the metrics), this ragmeter's version and
        the configs of the judges built: plans with one key make the same requests."""
        return dataset_hash([__version__, sorted(self._configs), parts], short=False)[:32]

    def answered_kinds(self, key: str) -> frozenset[str]:
        """The call kinds of an earlier round's plan with this key whose every request is
        answered now (in its judge's cache); none when no earlier round made this plan."""
        kinds = self.manifest.plans.get(key) if self.mode == "write" else None
        if not kinds:
            return frozenset()
        if self._by_plan is None:
            self._by_plan = defaultdict(lambda: defaultdict(list))
            for k, rec in self.earlier.items():
                if rec.get("pf"):
                    self._by_plan[rec["pf"]][rec.get("kd") or ""].append((rec["j"], k))
        written = self._by_plan.get(key, {})
        out = set()
        for kind in kinds:
            requests = written.get(kind, [])
            if len(stored(requests, self.engines)) == len({k for _, k in requests}):
                out.add(kind)
        return frozenset(out)

    @contextlib.contextmanager
    def planning(self, key: str, answered: frozenset[str], skipped: frozenset[str],
                 after: dict[str, tuple[str, ...]]) -> Iterator[PlanRound]:
        """Ask a plan with this key (its requests are indexed under it); ``skipped``: the
        kinds it does not ask again (their count, from the earlier round, is kept);
        ``after``: each call kind's prerequisites. A kind is recorded only when all of its
        requests could be made: none of its prerequisites' requests was left unanswered."""
        plan = self._plan = PlanRound(key, answered, skipped)
        try:
            yield plan
        finally:
            self._plan = None
        earlier = self.manifest.plans.get(key, {})
        counts = {k: n for k, n in earlier.items() if k in plan.skipped}
        counts.update((k, n) for k, n in plan.made.items()
                      if not any(plan.pending[a] for a in after.get(k, ())))
        self.manifest.plans[key] = counts
        self._skipped[key] = sum(n for k, n in earlier.items() if k in plan.skipped)

    def _state(self, engine: Any) -> _JudgeState:
        """The files of ``engine``'s judge (one set per judge identity, whichever object)."""
        ident = JudgeIdentity.of(engine)
        key = (ident.name, tuple(sorted(ident.key_fields().items())))
        st = self.judges.get(key)
        if st is None:
            stems = {s.stem for s in self.judges.values()}
            base = "".join(c if c.isalnum() or c in "-_." else "_" for c in ident.name) or "judge"
            stem, n = base, 2
            while stem in stems:
                stem, n = f"{base}-{n}", n + 1
            st = self.judges[key] = _JudgeState(ident, stem)
        return st

    def answer(self, engine: Any, requests: list[JudgeRequest]) -> list[JudgeReply]:
        """Replies to ``requests`` of ``engine`` (see the module doc)."""
        settings = engine.key_settings()
        made = [digest_and_messages(r, **settings) for r in requests]
        hits = engine.cache.get_many([d.key for d, _ in made]) if made else {}
        st = self._state(engine)
        plan = self._plan
        out: list[JudgeReply] = []
        for req, (dig, messages_json) in zip(requests, made, strict=True):
            key = dig.key
            self.versions.add(req.prompt_version)
            hit = hits.get(key)
            if plan is not None:
                plan.made[req.kind] += 1
            if hit is not None:
                self.answered.add(key)
                out.append(engine.decorate(replace(hit, cached=True, extra=dict(hit.extra)),
                                           req, dig))
                continue
            if plan is not None:
                plan.pending[req.kind] += 1
                plan.surprises += req.kind in plan.answered
            if self.mode == "write" and key not in self.written:
                self._write(engine, st, req, dig, messages_json)
            out.append(JudgeReply(data=None, reason=PENDING, attempts=0,
                                  detail="waiting for its batch result (--judge-batch)"))
        return out

    def _write(self, engine: Any, st: _JudgeState, req: JudgeRequest, dig: RequestDigest,
               messages_json: str) -> None:
        key = dig.key
        turns = self.turns.get(key)
        if turns:
            ex, _rec, fits = conversation(engine, req, dig, turns)
            if not fits:
                self.turns.pop(key, None)
        else:   # a first turn: what the exchange sends, with the session its judge has now
            sess = self._sessions.get(id(engine))
            if sess is None or sess[0] is not engine:
                sess = self._sessions[id(engine)] = (engine, judge_session(engine))
            ex = engine.exchange(req, dig, sess[1])
        payload = ex.payload()
        messages, schema = payload["messages"], payload["schema"]
        parts: dict[str, str] = {}
        if len(messages) == len(req.messages) and all(
                a is b for a, b in zip(messages, req.messages, strict=True)):
            # the request's own messages and schema: their JSON is the cache key's
            payload["messages"], parts[_MESSAGES_JSON] = [_MESSAGES], messages_json
            if schema is req.schema:
                payload["schema"], parts[_SCHEMA_JSON] = _SCHEMA, dig.schema_json
        member = engine.members[0]
        if len(parts) == 2:  # only stand-ins and settings: one body text per judge and settings
            settings = (payload["max_tokens"], payload["temperature"], payload["seed"])
            made = self._bodies.get((id(member), settings))
            if made is None or made[0] is not member:
                made = self._bodies[(id(member), settings)] = (
                    member, body_json(member.chat_body(**payload)))
            body: dict[str, Any] | str = made[1]
        else:
            body = member.chat_body(**payload)
        if st.writer is None:
            st.writer = SplitWriter(self.folder / f"round-{self.round_no:02d}", st.stem,
                                    st.identity.name, self.folder, self.limits)
        st.writer.write(key, body, parts)
        ref = schema_ref(dig.schema_json)
        if ref not in self.schemas:
            self.schemas[ref] = req.schema
        plan = (f',"pf":"{self._plan.key}","kd":{_json(req.kind)}'
                if self._plan is not None else "")
        self._index.append((
            f'{{"k":"{key}","j":{st.name_json},"pv":{_json(req.prompt_version)},"sh":"{ref}",'
            f'"mt":{_json(req.max_tokens)},"t":{_json(req.temperature)},'
            f'"sid":{_json(req.sample_id)}{plan}}}\n').encode())
        self.written.add(key)
        self.by_prompt[req.prompt_version] += 1

    # -- closing ------------------------------------------------------------------------------
    def close(self, ok: bool) -> None:
        """Record what the session did (on success) and make its report."""
        if self.mode == "write":
            self._close_write(ok)
        elif ok:
            from ragmeter.judges.batchfiles.collect import collect

            self.report = collect(self.folder, list(self.engines.values()), self.manifest,
                                  warnings=self.warnings)

    def _close_write(self, ok: bool) -> None:
        files = [f for s in self.judges.values() if s.writer is not None
                 for f in s.writer.close()]
        round_dir = self.folder / f"round-{self.round_no:02d}"
        if not ok:
            if files:
                shutil.rmtree(round_dir, ignore_errors=True)
            return
        self.manifest.prompt_versions = sorted(set(self.manifest.prompt_versions)
                                               | self.versions)
        answered = len(self.answered) + sum(self._skipped.values())
        self.folder.mkdir(parents=True, exist_ok=True)
        if not files:
            self.manifest.save(self.folder)
            self.report = WriteReport(str(self.folder), None, 0, [], answered)
            return
        (round_dir / "index.jsonl").write_bytes(b"".join(self._index))
        save_schemas(self.folder, self.schemas)
        again = sorted(k for k in self.written if k in self.earlier)
        named = [self._named(k) for k in again]
        if named:
            (round_dir / "written-again.txt").write_text("\n".join(named) + "\n",
                                                         encoding="utf-8")
        by_judge: Counter[str] = Counter()
        for f in files:
            by_judge[f.judge] += f.lines
        self.manifest.rounds.append(Round(self.round_no, now_iso(), files, len(self.written),
                                          dict(by_judge), dict(self.by_prompt), len(again),
                                          answered))
        self.manifest.save(self.folder)
        self.report = WriteReport(str(self.folder), self.round_no, len(self.written),
                                  [f.to_dict() for f in files], answered, named,
                                  dict(self.by_prompt))

    def _named(self, key: str) -> str:
        rec = self.earlier.get(key)
        text = describe(key, rec)
        why = self.last_status.get(key)
        return f"{text}: {why}" if why else text


def stored(requests: Iterable[tuple[str, str]], engines: Mapping[str, Any]) -> set[str]:
    """Of ``requests`` (judge name, ``custom_id``), the ids whose reply is in that judge's
    cache (looked up by key, the replies not read); a judge not in ``engines`` has none."""
    by_judge: dict[str, list[str]] = defaultdict(list)
    for judge, key in requests:
        by_judge[judge].append(key)
    out: set[str] = set()
    for judge, keys in by_judge.items():
        engine = engines.get(judge)
        if engine is not None:
            out.update(engine.cache.has_many(keys))
    return out


def describe(key: str, rec: dict[str, Any] | None) -> str:
    """A request named for people: its ``custom_id``, judge, sample and prompt version."""
    if not rec:
        return key
    return f"{key} ({rec.get('j')}, sample {rec.get('sid') or '?'}, {rec.get('pv')})"


def current() -> BatchSession | None:
    """The batch session of the running command, if any."""
    return _SESSION.get()


def writing() -> bool:
    """Whether a round is being written: the command's plan is all the work (the judged
    metrics score nothing and need no embedding)."""
    session = _SESSION.get()
    return session is not None and session.mode == "write"


def batched(judge: Any, config: Any = None) -> Any:
    """``judge`` itself, or inside :func:`batch_scope` a :class:`BatchJudge` in front of it
    (``make_judge`` applies it to every judge it builds)."""
    session = _SESSION.get()
    if session is None or judge is None:
        return judge
    return session.judge(judge, config)


# inside pseudonymisation (order 10), so the files carry pseudonymised text; the budget (20)
# sees a written round as sending nothing
WRAPPERS.register("batch_files", JudgeWrapper(order=5, wrap=batched))


@contextlib.contextmanager
def batch_scope(mode: Mode, folder: str | Path, *, limits: Limits = OPENAI_LIMITS,
                command: str = "") -> Iterator[BatchSession]:
    """Write the plan of a command to a batch folder (``write``), or collect the folder's
    results for the judges built inside (``collect``); see the module doc.
    ``session.report`` says what happened once the block ended without an error."""
    session = BatchSession(mode, Path(folder), limits=limits, command=command)
    session.open()
    token = _SESSION.set(session)
    ok = False
    with fewer_collections():   # a round plans, writes or reads every request at once
        try:
            yield session
            ok = True
        finally:
            _SESSION.reset(token)
            session.close(ok)


def check_folder(folder: Path) -> None:
    """A batch folder path that is a file is an input error (named)."""
    if folder.exists() and not folder.is_dir():
        raise DataError(RecordProblem(str(folder), None, None, "is a file, not a folder"))


__all__ = ["MODES", "PENDING", "BatchJudge", "BatchSession", "PlanRound", "WriteReport",
           "batch_scope", "batched", "check_folder", "conversation", "current", "describe",
           "judge_session", "schema_ref", "stored", "writing"]
