"""What a batch folder holds, in ``manifest.json``: the judges (their identity, as it enters
the cache keys), the prompt versions, every round written (its files, counts, what was written
again) and every collect; beside it ``turns.jsonl``, the replies that need another turn (a
repair after an unusable reply, a larger token budget after a truncated one).

Layout of a batch folder::

    manifest.json
    round-01/<judge>.001.jsonl     the requests of round 1 (OpenAI Batch input lines)
    round-02/<judge>.001.jsonl     made from round 1's results
    results/                       the output and error files (any names), read by collect
    round-NN/index.jsonl           per custom_id: judge, prompt version, schema, sample
    schemas.json                   the reply schemas the index names
    collect-01.json                what each collect read, matched and named
    turns.jsonl
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem
from ragmeter.judges.backend import Completion
from ragmeter.judges.batchfiles.lines import FileEntry

FORMAT = "ragmeter-judge-batch/1"
MANIFEST = "manifest.json"
TURNS = "turns.jsonl"
RESULTS = "results"
SCHEMAS = "schemas.json"
INDEX = "index.jsonl"


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass
class JudgeIdentity:
    """A judge as its cache keys see it (plus where to submit and which key variable)."""

    name: str
    backend: str
    model: str
    endpoint: str
    namespace: str
    temperature: float
    seed: int | None
    max_tokens: int
    top_p: float | None = None
    #: the first base URL without credentials (``judge batch submit``'s default)
    base_url: str = ""
    #: the name of the environment variable that holds the API key (never the key)
    api_key_env: str | None = None

    @classmethod
    def of(cls, engine: Any) -> JudgeIdentity:
        from ragmeter.secrets import split_url_credentials

        s = engine.key_settings()
        cfg = engine.config
        urls = cfg.base_urls()
        envs = cfg.api_key_envs()
        return cls(engine.name, str(s["backend"]), str(s["model"]), str(s["endpoint"]),
                   str(s["namespace"]), float(s["temperature"]), s["seed"],
                   int(s["max_tokens"]), s.get("top_p"),
                   split_url_credentials(urls[0])[0] if urls else "",
                   envs[0] if envs else None)

    def key_fields(self) -> dict[str, Any]:
        """What the cache key covers (a difference means no result can match)."""
        d = asdict(self)
        d.pop("base_url")
        d.pop("api_key_env")
        d.pop("name")
        return d


@dataclass
class Round:
    """One round written: its files and what they hold."""

    number: int
    written_at: str
    files: list[FileEntry]
    requests: int
    by_judge: dict[str, int] = field(default_factory=dict)
    by_prompt: dict[str, int] = field(default_factory=dict)
    #: requests written in an earlier round too (missing, malformed or failed results)
    rewritten: int = 0
    #: requests of the plan already answered (the judge cache) when the round was written
    answered: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["files"] = [f.to_dict() for f in self.files]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Round:
        return cls(int(d["number"]), str(d["written_at"]),
                   [FileEntry.from_dict(f) for f in d.get("files", [])], int(d["requests"]),
                   dict(d.get("by_judge") or {}), dict(d.get("by_prompt") or {}),
                   int(d.get("rewritten", 0)), int(d.get("answered", 0)))


@dataclass
class Manifest:
    """The batch folder's record (see the module doc)."""

    created_at: str = field(default_factory=now_iso)
    command: str = ""
    provider: str = "openai"
    limits: dict[str, int] = field(default_factory=dict)
    judges: dict[str, JudgeIdentity] = field(default_factory=dict)
    prompt_versions: list[str] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    collects: list[dict[str, Any]] = field(default_factory=list)
    #: result files every line of which is settled (answered, or of no request written), by
    #: name: their size and modification time; a later collect reads them again only changed
    settled: dict[str, list[int]] = field(default_factory=dict)
    #: 400 details a judge's client adapted to (``max_completion_tokens``, no ``seed``), by
    #: judge: applied before the next round is written, as the online client adapts
    adaptations: dict[str, list[str]] = field(default_factory=dict)
    #: a plan's key (:meth:`~.rounds.BatchSession.plan_key`: what its requests are made
    #: from) -> the requests it made per call kind, answered or written; a later round whose
    #: plan has the same key need not make again the calls all answered by then
    plans: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "created_at": self.created_at, "command": self.command,
                "provider": self.provider, "limits": self.limits,
                "judges": {n: asdict(j) for n, j in self.judges.items()},
                "prompt_versions": self.prompt_versions,
                "rounds": [r.to_dict() for r in self.rounds], "collects": self.collects,
                "settled": self.settled, "adaptations": self.adaptations,
                "plans": self.plans}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Manifest:
        return cls(str(d.get("created_at", "")), str(d.get("command", "")),
                   str(d.get("provider", "openai")), dict(d.get("limits") or {}),
                   {n: JudgeIdentity(**j) for n, j in (d.get("judges") or {}).items()},
                   list(d.get("prompt_versions") or []),
                   [Round.from_dict(r) for r in d.get("rounds") or []],
                   list(d.get("collects") or []), dict(d.get("settled") or {}),
                   {n: list(v) for n, v in (d.get("adaptations") or {}).items()},
                   {k: {c: int(n) for c, n in v.items()}
                    for k, v in (d.get("plans") or {}).items()})

    @classmethod
    def load(cls, folder: Path) -> Manifest | None:
        """The manifest of ``folder``; None when it has none; a :class:`DataError` naming the
        file when it cannot be read."""
        path = folder / MANIFEST
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} manifest")
            return cls.from_dict(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(RecordProblem(str(path), None, None, str(exc)),
                            hint="a batch folder is written by --judge-batch write") from None

    def save(self, folder: Path) -> None:
        write_json(folder / MANIFEST, self.to_dict())

    def last_round(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as JSON at ``path``, replaced atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _completion_dict(c: Completion) -> dict[str, Any]:
    return {"text": c.text, "finish_reason": c.finish_reason, "tokens_in": c.tokens_in,
            "tokens_out": c.tokens_out, "refusal": c.refusal, "model": c.model,
            "mock": c.mock}


def load_turns(folder: Path) -> dict[str, list[Completion]]:
    """The earlier turns of each request that needs another one (``turns.jsonl``)."""
    path = folder / TURNS
    out: dict[str, list[Completion]] = {}
    if not path.is_file():
        return out
    with path.open(encoding="utf-8") as fh:
        for no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                out[str(d["key"])] = [Completion(**c) for c in d["turns"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(RecordProblem(str(path), no, None, str(exc))) from None
    return out


def save_turns(folder: Path, turns: dict[str, list[Completion]]) -> None:
    path = folder / TURNS
    if not turns:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for key, comps in turns.items():
            fh.write(json.dumps({"key": key, "turns": [_completion_dict(c) for c in comps]},
                                ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def load_index(folder: Path, manifest: Manifest) -> dict[str, dict[str, Any]]:
    """Every request written, by ``custom_id`` (a later round's entry wins): ``j`` judge,
    ``pv`` prompt version, ``sh`` schema, ``mt`` / ``t`` the request's own max_tokens and
    temperature, ``sid`` sample id, ``r`` round."""
    out: dict[str, dict[str, Any]] = {}
    for rnd in manifest.rounds:
        path = folder / f"round-{rnd.number:02d}" / INDEX
        if not path.is_file():
            raise DataError(RecordProblem(str(path), None, None, "missing: the round's index "
                                          "is written with its files"))
        lines = path.read_text(encoding="utf-8").splitlines()
        try:   # the lines as one JSON array: one parse for the whole round
            recs = json.loads("[" + ",".join(lines) + "]")
            for rec in recs:
                rec["r"] = rnd.number
                out[str(rec["k"])] = rec
        except (ValueError, KeyError, TypeError):
            for no, line in enumerate(lines, start=1):   # which line, named
                try:
                    rec = json.loads(line)
                    rec["r"] = rnd.number
                    out[str(rec["k"])] = rec
                except (ValueError, KeyError, TypeError) as exc:
                    raise DataError(RecordProblem(str(path), no, None, str(exc))) from None
    return out


def load_schemas(folder: Path) -> dict[str, Any]:
    path = folder / SCHEMAS
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(RecordProblem(str(path), None, None, str(exc))) from None
    return dict(data)


def save_schemas(folder: Path, schemas: dict[str, Any]) -> None:
    write_json(folder / SCHEMAS, schemas)


__all__ = ["FORMAT", "INDEX", "MANIFEST", "RESULTS", "SCHEMAS", "TURNS", "JudgeIdentity",
           "Manifest", "Round", "load_index", "load_schemas", "load_turns", "now_iso",
           "save_schemas", "save_turns", "write_json"]
