"""Collect a batch folder's results into the judge cache, without planning again.

Every file under ``results/`` is read line by line (:func:`~.lines.read_results`: OpenAI
Batch output and error files, ``vllm run-batch`` output). A line whose ``custom_id`` is a
request written by a round (``round-NN/index.jsonl``) becomes the reply the online engine makes
of that completion: the same :class:`~ragmeter.judges.exchange.JudgeExchange` reads it
(parsing, schema validation, refusal, truncation), with the request's schema, prompt version
and settings from the index. A scored reply is stored in the judge cache under the
``custom_id`` (the cache key the online run computes); a completion the exchange answers with
another turn (a repair, a larger token budget) is kept in ``turns.jsonl`` for the next round.

The report counts lines read, matched (stored now), already stored, failed (an error line, or
a reply the exchange leaves unscored), malformed, unknown (no round wrote that ``custom_id``),
missing (written, no line came back) and duplicates, and names each request that still needs
an answer (judge, sample, prompt version); ``collect-NN.json`` keeps the full lists, and the
manifest keeps each request's status, so the next ``write`` names why it writes it again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem, UsageError
from ragmeter.judges.base import JudgeReply, JudgeRequest
from ragmeter.judges.batchfiles.lines import Malformed, ResultLine, read_results
from ragmeter.judges.batchfiles.manifest import (
    RESULTS,
    SCHEMAS,
    JudgeIdentity,
    Manifest,
    load_index,
    load_schemas,
    load_turns,
    now_iso,
    save_turns,
    write_json,
)
from ragmeter.judges.batchfiles.rounds import (
    SHOWN,
    conversation,
    describe,
    judge_session,
    stored,
)
from ragmeter.judges.cache import RequestDigest, digest

#: replies stored in the judge cache per transaction
STORE_CHUNK = 2000


@dataclass
class CollectReport:
    """What one ``collect`` read and did (``ok``: every request written has its answer)."""

    folder: str
    files: list[str]
    lines: int
    matched: int
    already: int
    failed: dict[str, str]                  # request named -> reason
    malformed: list[str]                    # file:line: why [request]
    unknown: list[str]
    missing: list[str]
    duplicates: int
    another_turn: list[str]
    pending: int
    warnings: list[str] = field(default_factory=list)
    report_file: str = ""

    #: malformed lines whose request has an answer all the same (a later round's)
    superseded: int = 0
    #: result files settled by an earlier collect and unchanged since (not read again)
    skipped_files: int = 0

    @property
    def ok(self) -> bool:
        """Every request written has its answer (and some line answered one)."""
        return self.pending == 0 and (self.matched > 0 or self.already > 0 or self.lines == 0)

    def summary(self) -> list[str]:
        out = [f"collected {self.folder}: {self.lines} result line(s) read from "
               f"{len(self.files)} file(s): {self.matched} matched (stored in the judge "
               f"cache), {self.already} already stored, {len(self.failed)} failed, "
               f"{len(self.malformed)} malformed, {len(self.unknown)} unknown, "
               f"{len(self.missing)} missing" + (f", {self.duplicates} duplicate(s) ignored"
                                                  if self.duplicates else "")
               + (f", {self.superseded} malformed line(s) answered since"
                  if self.superseded else "")
               + (f"; {self.skipped_files} file(s) collected before and unchanged, not read"
                  if self.skipped_files else "")]
        for title, names in (("failed", [f"{k}: {v}" for k, v in self.failed.items()]),
                             ("malformed", self.malformed),
                             ("missing (written, no result line came back)", self.missing),
                             ("unknown (no round wrote that custom_id)", self.unknown),
                             ("need another turn (a repair or a larger token budget)",
                              self.another_turn)):
            if names:
                out.append(f"  {title}:")
                out += [f"    {n}" for n in names[:SHOWN]]
                if len(names) > SHOWN:
                    out.append(f"    ... {len(names) - SHOWN} more in {self.report_file}")
        out += [f"  warning: {w}" for w in self.warnings]
        if self.pending:
            out.append(f"next: {self.pending} written request(s) still need an answer — "
                       f"--judge-batch write {self.folder} writes them again, with the next "
                       "round's requests made from these results")
        else:
            out.append(f"next: --judge-batch write {self.folder} writes the next round (the "
                       "requests made from these results), or says nothing is left; then run "
                       "without --judge-batch (0 calls)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "files": self.files, "lines": self.lines,
                "matched": self.matched, "already": self.already, "failed": self.failed,
                "malformed": self.malformed, "unknown": self.unknown, "missing": self.missing,
                "duplicates": self.duplicates, "another_turn": self.another_turn,
                "pending": self.pending, "superseded": self.superseded,
                "skipped_files": self.skipped_files,
                "warnings": self.warnings, "ok": self.ok}


@dataclass
class _Read:
    """The result files of a folder, read."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    duplicates: int = 0
    results: dict[str, list[ResultLine]] = field(default_factory=dict)
    malformed: list[Malformed] = field(default_factory=list)
    #: per file read: its stat, the custom_ids of its lines, whether a line had none
    per_file: dict[str, tuple[list[int], list[str], bool]] = field(default_factory=dict)
    #: files settled by an earlier collect and unchanged since: not read again
    skipped: int = 0


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def read_folder(folder: Path, settled: dict[str, list[int]] | None = None) -> _Read:
    """Every result line under ``folder/results`` (a usage error when there is none); files
    in ``settled`` (name -> size, mtime) that did not change are skipped."""
    base = folder / RESULTS
    paths = sorted(p for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")) \
        if base.is_dir() else []
    if not paths:
        raise UsageError("--judge-batch", f"no result files in {base}: put the output and "
                         "error files of every batch there (ragmeter judge batch fetch does), "
                         "then collect again")
    got = _Read()
    for path in paths:
        name = path.relative_to(folder).as_posix()
        stat = _stat(path)
        if (settled or {}).get(name) == stat:
            got.skipped += 1
            continue
        got.files.append(name)
        ids: list[str] = []
        no_id = False
        with path.open("rb") as fh:
            for item in read_results(fh, name):
                got.lines += 1
                if isinstance(item, Malformed):
                    got.malformed.append(item)
                    if item.custom_id:
                        ids.append(item.custom_id)
                    else:
                        no_id = True
                    continue
                ids.append(item.custom_id)
                have = got.results.get(item.custom_id)
                if have is None:
                    got.results[item.custom_id] = [item]
                elif any(h.completion == item.completion and h.error == item.error
                         for h in have):
                    got.duplicates += 1             # the same line twice: read once
                else:
                    have.append(item)   # another turn, or an error then an answer
        got.per_file[name] = (stat, ids, no_id)
    return got


def reply_of(engine: Any, request: JudgeRequest, dig: RequestDigest, lines: list[ResultLine],
             turns: list[Any], session: Any = None) -> tuple[JudgeReply | None, list[Any]]:
    """The reply the online engine makes of a request's result lines, and the turns kept
    (reply None: it needs another turn). Answers that are not kept turns continue the
    conversation in the order read; without one, a failure line is the reply. ``session``:
    the one the judge's exchanges share (default: a new one)."""
    ex, rec, fits = conversation(engine, request, dig, turns, session)
    kept = list(turns) if fits else []
    fresh = [r for r in lines if r.completion is None or r.completion not in kept]
    answers = [r.completion for r in fresh if r.completion is not None]
    rep: JudgeReply | None = None
    for comp in answers:
        ex.payload()
        rec.attempts += 1
        rep = ex.outcome(comp, rec)
        if rep is not None:
            break
        kept.append(comp)
    if rep is None:
        failures = [r for r in fresh if r.completion is None]
        if answers or not failures:
            return None, kept
        line = failures[0]
        err = line.failure
        assert err is not None
        ex.payload()
        rec.attempts += 1
        if err.reason == "schema_unsupported":
            from ragmeter.calls.errors import CallError

            err = CallError("http_4xx", f"{err.detail} (the server rejects structured "
                               "output: set structured_output: false for this judge)",
                               status=err.status)
        rep = ex.failed(err, line.error or err.detail, rec)
    extra = rep.extra
    extra.update(judge=engine.name, cache_key=dig.key, prompt_version=request.prompt_version,
                 batch=True)
    rep.cost *= 1.0 - float(getattr(engine.config, "batch_discount", 0.5))
    return rep, []


def _storable(engine: Any, rep: JudgeReply) -> bool:
    """A reply of the fake server is never stored for a real judge (as online)."""
    return not (rep.extra.get("mock") and not engine.namespace.startswith("mock:"))


def collect(folder: Path, engines: list[Any], manifest: Manifest | None = None, *,
            warnings: list[str] | None = None) -> CollectReport:
    """Read ``folder``'s results into the judge cache of ``engines`` (the command's engine
    judges, by name) and report (see the module doc)."""
    manifest = manifest or Manifest.load(folder)
    if manifest is None:
        raise UsageError("--judge-batch", f"{folder} has no manifest.json: write a round "
                         "first (--judge-batch write DIR)")
    warnings = list(warnings or [])
    index = load_index(folder, manifest)
    schemas = load_schemas(folder)
    turns = load_turns(folder)
    got = read_folder(folder, manifest.settled)
    usable: dict[str, Any] = {}
    for eng in engines:
        have = manifest.judges.get(eng.name)
        if have is None or have.key_fields() == JudgeIdentity.of(eng).key_fields():
            usable.setdefault(eng.name, eng)
    # requests already answered (an earlier collect), looked up by key
    stored_before = stored(((rec["j"], key) for key, rec in index.items()), usable)
    unconfigured = sorted({index[k]["j"] for k in got.results if k in index
                           and index[k]["j"] not in usable})
    for name in unconfigured:
        warnings.append(f"judge {name!r} of the batch folder is not among this command's "
                        "judges (or differs from it): its results were not collected")
    schema_json: dict[str, str] = {}
    sessions: dict[str, Any] = {}   # judge name -> the session its exchanges share
    matched: set[str] = set()
    already: set[str] = set()
    failed: dict[str, str] = {}
    another: set[str] = set()
    pending_store: dict[str, list[tuple[str, JudgeReply]]] = defaultdict(list)
    for key, lines in got.results.items():
        rec = index.get(key)
        if rec is None:
            continue
        if key in stored_before:
            already.add(key)
            continue
        eng = usable.get(rec["j"])
        if eng is None:
            continue
        schema = schemas.get(rec["sh"])
        if schema is None:
            raise DataError(RecordProblem(str(folder / SCHEMAS), None, rec["sh"],
                                          "the schema a round's index names is missing"))
        req = JudgeRequest(messages=(), schema=schema,
                           prompt_version=rec["pv"], sample_id=rec.get("sid") or "",
                           max_tokens=rec.get("mt"), temperature=rec.get("t"))
        sj = schema_json.get(rec["sh"])
        if sj is None:
            sj = schema_json[rec["sh"]] = digest(req, **eng.key_settings()).schema_json
        sess = sessions.get(rec["j"])
        if sess is None:
            sess = sessions[rec["j"]] = judge_session(eng)
        rep, kept = reply_of(eng, req, RequestDigest(key, "", sj), lines, turns.get(key, []),
                             sess)
        if rep is None:
            turns[key] = kept
            another.add(key)
            continue
        turns.pop(key, None)
        if rep.ok and _storable(eng, rep):
            pending_store[rec["j"]].append((key, rep))
            matched.add(key)
            if len(pending_store[rec["j"]]) >= STORE_CHUNK:
                _store(eng, pending_store.pop(rec["j"]))
        else:
            failed[key] = rep.reason or "not stored (a mock reply for a real judge)"
            if rep.detail:
                failed[key] += f": {rep.detail[:200]}"
            _adapt(eng, manifest, lines)
    for name, items in pending_store.items():
        _store(usable[name], items)
    return _report(folder, manifest, index, got, matched, already, failed, another, turns,
                   warnings, stored_before)


def _adapt(engine: Any, manifest: Manifest, lines: list[ResultLine]) -> None:
    """A 400 naming a parameter the model does not take (``max_tokens``, ``seed``): the
    judge's client adapts as it does online, and the next round is written adapted."""
    for line in lines:
        err = line.failure
        if err is None or err.status != 400:
            continue
        known = manifest.adaptations.setdefault(engine.name, [])
        if any(m.adapt(err.detail) for m in engine.members if hasattr(m, "adapt")) \
                and err.detail not in known:
            known.append(err.detail)


def _store(engine: Any, items: list[tuple[str, JudgeReply]]) -> None:
    engine.cache.put_many(items, namespace=engine.namespace, endpoint=engine.endpoint_identity)


def _report(folder: Path, manifest: Manifest, index: dict[str, dict[str, Any]], got: _Read,
            matched: set[str], already: set[str], failed: dict[str, str], another: set[str],
            turns: dict[str, list[Any]], warnings: list[str],
            stored_before: set[str]) -> CollectReport:
    seen = set(got.results) | {m.custom_id for m in got.malformed if m.custom_id}
    missing = sorted(k for k in index if k not in seen and k not in stored_before)
    unknown = sorted(k for k in got.results if k not in index)
    answered = stored_before | matched
    pending = sum(1 for k in index if k not in answered)
    for name, (stat, ids, no_id) in got.per_file.items():
        # a line without custom_id stops mattering once nothing written waits for an answer
        if (not no_id or pending == 0) and all(i in answered or i not in index for i in ids):
            manifest.settled[name] = stat     # nothing left to read in it

    def named(key: str) -> str:
        return describe(key, index.get(key))

    # a malformed line whose request was answered since (a later round) is no problem; one
    # without a custom_id is, while any request written still waits for its answer
    relevant = [m for m in got.malformed if (m.custom_id not in answered if m.custom_id
                                             else pending > 0)]
    malformed = [f"{m.where}: {m.why}" + (f" [{named(m.custom_id)}]" if m.custom_id else "")
                 for m in relevant]
    status: dict[str, str] = {k: "missing" for k in missing}
    status.update({m.custom_id: f"malformed ({m.where}: {m.why})"
                   for m in got.malformed if m.custom_id and m.custom_id not in answered})
    status.update({k: f"failed ({why})" for k, why in failed.items()})
    status.update({k: "needs another turn" for k in another})
    number = len(manifest.collects) + 1
    report_name = f"collect-{number:02d}.json"
    report = CollectReport(
        str(folder), got.files, got.lines, len(matched), len(already),
        {named(k): why for k, why in sorted(failed.items())}, malformed, unknown,
        [named(k) for k in missing], got.duplicates, [named(k) for k in sorted(another)],
        pending, warnings, report_name, len(got.malformed) - len(relevant), got.skipped)
    write_json(folder / report_name, report.to_dict())
    counts = {k: v for k, v in report.to_dict().items()
              if k not in ("failed", "malformed", "unknown", "missing", "another_turn")}
    manifest.collects.append({"at": now_iso(), "rounds": len(manifest.rounds),
                              "report": report_name, **counts,
                              "failed": len(failed), "malformed": len(malformed),
                              "unknown": len(unknown), "missing": len(missing),
                              "status": status})
    save_turns(folder, turns)
    manifest.save(folder)
    return report


__all__ = ["STORE_CHUNK", "CollectReport", "collect", "read_folder", "reply_of"]
