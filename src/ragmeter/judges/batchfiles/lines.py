"""The batch file formats: request lines written, result lines read.

A request line is the OpenAI Batch input shape::

    {"custom_id": "<judge cache key>", "method": "POST", "url": "/v1/chat/completions",
     "body": {...the chat completion body, exactly as posted online...}}

:class:`SplitWriter` writes them into numbered files, a new file before either provider limit
would be passed (:data:`OPENAI_LIMITS`: 50,000 lines and 200 MB per input file).

A result line is read from any of these shapes (:func:`read_results`):

* OpenAI Batch output and error files — ``{"id", "custom_id", "response": {"status_code",
  "request_id", "body"}, "error"}``; a failed request has a non-200 ``status_code`` with the
  error in ``body``, or ``response: null`` with ``error: {"code", "message"}``;
* ``vllm run-batch`` output — the same envelope (``id`` ``vllm-…``); a failed request has
  ``status_code`` 400, ``body: null`` and ``error`` a message string or an error object;
* a ``response`` that is the chat completion itself (no ``status_code``), as some proxies write.

A line that is not JSON, has no ``custom_id``, or has a 200 response whose body is not a chat
completion is *malformed*: it is named (file, line, and the ``custom_id`` when one can be read)
and its request is written again by the next round.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, TextIO

from ragmeter.calls.errors import CallError
from ragmeter.judges.backend import Completion
from ragmeter.judges.openai_http import chat_status_error, read_completion
from ragmeter.secrets import mask

#: the endpoint every request line names
CHAT_URL = "/v1/chat/completions"
#: the header (and result-line marker) of replies made by ``ragmeter serve mock-judge``
MOCK_MARK = "x-ragmeter-mock"


@dataclass(frozen=True)
class Limits:
    """How large one input file of a provider may be."""

    max_lines: int
    max_bytes: int


#: OpenAI Batch: up to 50,000 requests and 200 MB per input file
OPENAI_LIMITS = Limits(50_000, 200 * 1024 * 1024)


def request_line(custom_id: str, body: dict[str, Any] | str,
                 parts: dict[str, str] | None = None) -> bytes:
    """One input line (``custom_id`` first, so a reader can take it without parsing the body).

    ``body``: the chat body, or its JSON text already made (compact, not ASCII-escaped);
    ``parts``: JSON texts already made (a request's canonical messages and schema, from its
    cache key), by the JSON text of the stand-in values the body holds in their place — the
    same JSON values, serialised once."""
    if not isinstance(body, str):
        body = body_json(body)
    text = '{"custom_id":' + encode_basestring(custom_id) + _METHOD_URL + body + "}"
    for mark, value in (parts or {}).items():
        text = text.replace(mark, value, 1)
    return (text + "\n").encode("utf-8")


def body_json(body: dict[str, Any]) -> str:
    """A chat body's JSON text as a line holds it (compact, not ASCII-escaped)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


#: what follows the custom_id in every line, up to the body
_METHOD_URL = ',"method":"POST","url":' + json.dumps(CHAT_URL) + ',"body":'


_ID_PREFIX = b'{"custom_id":"'
_ID_RE = re.compile(r'"custom_id"\s*:\s*"([^"\\]{1,200})"')


def line_custom_id(line: bytes | str) -> str | None:
    """The ``custom_id`` of a line, read without parsing it (a broken line's too, when its
    text still holds one)."""
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "replace")
    if raw.startswith(_ID_PREFIX):
        end = raw.find(b'"', len(_ID_PREFIX))
        if end > 0:
            return raw[len(_ID_PREFIX):end].decode("utf-8", "replace")
    m = _ID_RE.search(raw[:4096].decode("utf-8", "replace"))
    return m.group(1) if m else None


def written_ids(path: Path) -> Iterator[str]:
    """The ``custom_id`` of every line of an input file written by :class:`SplitWriter`."""
    with path.open("rb") as fh:
        for raw in fh:
            cid = line_custom_id(raw)
            if cid is not None:
                yield cid


@dataclass
class FileEntry:
    """One input file written: where, what it holds, and its checksum."""

    path: str                   # relative to the batch folder
    judge: str
    lines: int = 0
    bytes: int = 0
    sha256: str = ""
    #: set by ``judge batch submit`` (the provider's ids) and ``status`` / ``fetch``
    submitted: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "judge": self.judge, "lines": self.lines,
                "bytes": self.bytes, "sha256": self.sha256, "submitted": self.submitted}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileEntry:
        return cls(str(d["path"]), str(d.get("judge", "")), int(d.get("lines", 0)),
                   int(d.get("bytes", 0)), str(d.get("sha256", "")),
                   dict(d.get("submitted") or {}))


class SplitWriter:
    """Request lines of one judge into ``<stem>.001.jsonl``, ``<stem>.002.jsonl``, ...: a new
    file whenever the next line would pass ``limits`` (a line larger than a whole file is a
    :class:`ValueError`: no provider would take it)."""

    def __init__(self, folder: Path, stem: str, judge: str, root: Path,
                 limits: Limits = OPENAI_LIMITS):
        self.folder, self.stem, self.judge, self.root, self.limits = (folder, stem, judge, root,
                                                                      limits)
        self.files: list[FileEntry] = []
        self._fh: Any = None
        self._sha: Any = None

    def write(self, custom_id: str, body: dict[str, Any] | str,
              parts: dict[str, str] | None = None) -> None:
        line = request_line(custom_id, body, parts)
        if len(line) > self.limits.max_bytes:
            raise ValueError(f"request {custom_id} is {len(line):,} bytes, over the "
                             f"{self.limits.max_bytes:,}-byte file limit")
        cur = self.files[-1] if self.files else None
        if (cur is None or cur.lines >= self.limits.max_lines
                or cur.bytes + len(line) > self.limits.max_bytes):
            self._open()
            cur = self.files[-1]
        self._fh.write(line)
        self._sha.update(line)
        cur.lines += 1
        cur.bytes += len(line)

    def _open(self) -> None:
        self._finish()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{self.stem}.{len(self.files) + 1:03d}.jsonl"
        self._fh = path.open("wb")
        self._sha = hashlib.sha256()
        self.files.append(FileEntry(path.relative_to(self.root).as_posix(), self.judge))

    def _finish(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self.files[-1].sha256 = self._sha.hexdigest()
            self._fh = None

    def close(self) -> list[FileEntry]:
        self._finish()
        return self.files


@dataclass(slots=True)
class ResultLine:
    """One usable result line: a completion (``status`` 200) or a failure with its detail."""

    custom_id: str
    where: str                          # file:line
    status: int | None
    completion: Completion | None = None
    error: str | None = None
    #: the error as a judge engine error (reason, retryable, ...) when the request failed
    failure: CallError | None = None


@dataclass(slots=True)
class Malformed:
    """A result line that cannot be used, and why."""

    where: str
    why: str
    custom_id: str | None = None


def _error_text(error: Any, body: Any) -> str:
    for obj in (error, body.get("error") if isinstance(body, dict) else None, body):
        if isinstance(obj, str) and obj:
            return obj
        if isinstance(obj, dict):
            nested = obj.get("error")
            inner: dict[str, Any] = nested if isinstance(nested, dict) else obj
            msg = inner.get("message") or inner.get("code")
            if msg:
                code = inner.get("code")
                return f"{code}: {msg}" if code and code != msg else str(msg)
    return "no error detail"


def parse_result(obj: Any, where: str, model: str) -> ResultLine | Malformed:
    """One decoded result line (any shape of the module doc)."""
    if not isinstance(obj, dict):
        return Malformed(where, "not a JSON object")
    cid = obj.get("custom_id")
    if not isinstance(cid, str) or not cid:
        return Malformed(where, "no custom_id")
    resp = obj.get("response")
    error = obj.get("error")
    if isinstance(resp, dict) and "status_code" not in resp and "choices" in resp:
        resp = {"status_code": 200, "body": resp}       # the completion itself
    if not isinstance(resp, dict):
        if error is None:
            return Malformed(where, "neither a response nor an error", cid)
        text = mask(_error_text(error, None))
        return ResultLine(cid, where, None, error=text,
                          failure=CallError("backend_error", text))
    status = resp.get("status_code")
    if isinstance(status, bool) or not isinstance(status, int):
        return Malformed(where, "response.status_code is not an integer", cid)
    body = resp.get("body")
    headers = resp.get("headers")
    headers = headers if isinstance(headers, dict) else {}
    mock = any(str(k).lower() == MOCK_MARK and str(v) == "1" for k, v in headers.items())
    if status != 200:
        text = _error_text(error, body)
        err = chat_status_error(status, text, schema_sent=True)
        return ResultLine(cid, where, status, error=mask(f"HTTP {status}: {text}")[:300],
                          failure=err)
    if error not in (None, "", {}):
        text = mask(_error_text(error, body))
        return ResultLine(cid, where, status, error=text,
                          failure=CallError("backend_error", text))
    if not isinstance(body, dict):
        return Malformed(where, "a 200 response without a body", cid)
    try:
        comp = read_completion(body, model, mock=mock)
    except CallError as exc:
        return Malformed(where, exc.detail or exc.reason, cid)
    except (TypeError, ValueError, AttributeError) as exc:
        return Malformed(where, f"unreadable completion ({type(exc).__name__})", cid)
    return ResultLine(cid, where, status, completion=comp)


def read_results(fh: TextIO | Any, name: str, model: str = ""
                 ) -> Iterator[ResultLine | Malformed]:
    """Every non-blank line of an open result file, parsed (``name`` is used in ``where``)."""
    for no, raw in enumerate(fh, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        where = f"{name}:{no}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Malformed(where, f"not JSON ({exc.msg} at column {exc.colno})",
                            line_custom_id(text))
            continue
        except ValueError as exc:  # e.g. an integer with too many digits
            yield Malformed(where, f"not JSON ({exc})", line_custom_id(text))
            continue
        yield parse_result(obj, where, model)


__all__ = ["CHAT_URL", "MOCK_MARK", "OPENAI_LIMITS", "FileEntry", "Limits", "Malformed",
           "ResultLine", "SplitWriter", "line_custom_id", "parse_result", "read_results",
           "request_line", "written_ids"]
