"""A target's reply -> :class:`TargetReply`: declared paths for JSON replies, and the
plain shapes a Python function or a command may return.

A path the config declares that is not in the reply is ``target_unmapped`` naming the path
(that sample is unscored with this reason, never 0); a field the config does not declare is
simply absent. The entry point decides what is required: ``answer`` / ``generate`` need the
answer, ``retrieve`` needs ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.calls.errors import CallError
from ragmeter.targets.base import TargetReply
from ragmeter.targets.mapping import MISSING, extract

#: the mapping used when a config declares none: the field names of the reference service
DEFAULT_RESPONSE = {"answer": "answer", "contexts": "contexts", "context_ids": "context_ids",
                    "doc_ids": "doc_ids", "scores": "scores", "metadata": "metadata"}
_TEXT_KEYS = ("text", "content", "page_content", "chunk", "passage")
_ID_KEYS = ("id", "chunk_id", "context_id")
_DOC_KEYS = ("doc_id", "document_id", "url", "source")
_ALIASES = {"answer": ("answer", "response", "output", "text", "result"),
            "contexts": ("contexts", "retrieved_contexts", "source_documents", "documents",
                         "sources", "context"),
            "context_ids": ("context_ids", "retrieved_ids", "ids", "chunk_ids"),
            "doc_ids": ("doc_ids", "document_ids", "urls"),
            "scores": ("scores", "retrieved_scores"),
            "cache_hit": ("cache_hit",),
            "tokens_in": ("tokens_in", "prompt_tokens", "input_tokens"),
            "tokens_out": ("tokens_out", "completion_tokens", "output_tokens")}


_INVALID = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> tuple[str, int]:
    """``text`` with every invalid character — a lone surrogate (``"\\ud800"`` in JSON, an
    undecodable byte read with ``surrogateescape``) — replaced by U+FFFD, and how many were
    replaced. Such a character cannot be written as UTF-8 anywhere (store, report, terminal)."""
    if text.isascii():
        return text, 0
    return _INVALID.subn("\ufffd", text)


def clean_value(value: Any) -> tuple[Any, int]:
    """:func:`clean_text` over every string of a parsed JSON value (keys included)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        n = 0
        for k, v in value.items():
            k2, a = clean_value(k)
            v2, b = clean_value(v)
            out[k2] = v2
            n += a + b
        return out, n
    if isinstance(value, list):
        items = [clean_value(v) for v in value]
        return [v for v, _ in items], sum(c for _, c in items)
    return value, 0


def parse_json(text: str) -> Any:
    """The reply body as JSON, or ``target_bad_reply`` with the start of what came back."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        snippet = (text or "")[:120].replace("\n", " ")
        raise CallError("bad_reply", f"the reply is not JSON: {snippet!r}",
                        raw=text) from None


def stream_reply(chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A streamed chat completion (its parsed ``data:`` chunks) as one ``chat.completion``
    object: the content deltas joined into ``choices[0].message.content``, every other
    top-level field of the chunks kept (``sources``, ``usage``, ...; the last non-null value
    wins). A ``response:`` mapping of an ``openai`` target reads its paths from this object."""
    out: dict[str, Any] = {}
    parts: list[str] = []
    for chunk in chunks:
        for key, value in chunk.items():
            if key != "choices" and value is not None:
                out[key] = value
        for choice in chunk.get("choices") or ():
            delta = (choice or {}).get("delta") or {} if isinstance(choice, Mapping) else {}
            text = delta.get("content") if isinstance(delta, Mapping) else None
            if text:
                parts.append(str(text))
    out["object"] = "chat.completion"
    out["choices"] = [{"index": 0, "message": {"role": "assistant", "content": "".join(parts)}}]
    return out


def reply_data(raw: str | None) -> Any:
    """The parsed reply behind a recorded raw text — JSON, or a streamed chat completion
    (``data:`` lines) as :func:`stream_reply` builds it; :data:`MISSING` when it is neither."""
    if not raw:
        return MISSING
    try:
        return json.loads(raw)
    except ValueError:
        pass
    if not raw.lstrip().startswith("data:"):
        return MISSING
    chunks = []
    for line in raw.splitlines():
        payload = line.strip()[5:].strip() if line.strip().startswith("data:") else ""
        if not payload or payload == "[DONE]":
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
            return MISSING
        if isinstance(chunk, Mapping):
            chunks.append(chunk)
    return stream_reply(chunks)


def read_mapped(data: Any, mapping: Mapping[str, str], entry: str, raw: str) -> TargetReply:
    """Read the fields ``mapping`` declares (defaults: :data:`DEFAULT_RESPONSE`, optional)."""
    declared = dict(mapping)
    paths = declared or DEFAULT_RESPONSE
    got: dict[str, Any] = {}
    for name, path in paths.items():
        value = extract(data, path)
        if value is MISSING or value is None:
            if declared and _needed(name, entry):
                raise CallError("unmapped",
                                      f"{name}: path {path!r} is not in the reply", raw=raw)
            continue
        got[name] = value
    return _reply(got, entry, raw, strict=bool(declared))


def _needed(name: str, entry: str) -> bool:
    if entry == "retrieve":
        return name in ("context_ids", "doc_ids")
    return name in ("answer", "contexts", "context_ids", "doc_ids")


def read_plain(obj: Any, entry: str, raw: str) -> TargetReply:
    """A reply returned by a function or printed by a command: a string (the answer), a
    list (ids for ``retrieve``), a mapping, or an object with attributes named like the
    fields (``answer`` / ``response``, ``contexts`` / ``source_documents``, ...)."""
    if isinstance(obj, str):
        return _reply({"answer": obj} if entry != "retrieve" else {"context_ids": [obj]},
                      entry, raw, strict=False)
    if isinstance(obj, (list, tuple)):
        key = "context_ids" if entry == "retrieve" else "contexts"
        return _reply({key: list(obj)}, entry, raw, strict=False)
    got: dict[str, Any] = {}
    for name, names in _ALIASES.items():
        for n in names:
            v = obj.get(n) if isinstance(obj, Mapping) else getattr(obj, n, None)
            if v is not None and not callable(v):
                got[name] = v
                break
    meta = obj.get("metadata") if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    if isinstance(meta, Mapping):
        got["metadata"] = dict(meta)
    usage = obj.get("usage") if isinstance(obj, Mapping) else getattr(obj, "usage", None)
    if isinstance(usage, Mapping):   # an OpenAI-style usage block: the call's token usage
        for name, names in (("tokens_in", ("prompt_tokens", "input_tokens")),
                            ("tokens_out", ("completion_tokens", "output_tokens"))):
            got.setdefault(name, next((usage[n] for n in names if n in usage), None))
    return _reply(got, entry, raw, strict=False)


def _reply(got: dict[str, Any], entry: str, raw: str, *, strict: bool) -> TargetReply:
    rep = TargetReply(raw=raw)
    answer = got.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise CallError("unmapped", f"answer: expected text, got "
                              f"{type(answer).__name__}", raw=raw)
    rep.answer = answer
    _contexts(rep, got.get("contexts"), raw, strict=strict)
    for name in ("context_ids", "doc_ids"):
        value = got.get(name)
        if value is not None:
            items = value if isinstance(value, list) else [value]
            ids = [str(x) for x in items if x is not None]
            setattr(rep, name, ids)
    scores = got.get("scores")
    if scores is not None:
        try:
            rep.scores = [float(x) for x in (scores if isinstance(scores, list) else [scores])]
        except (TypeError, ValueError):
            raise CallError("unmapped", "scores: not numbers", raw=raw) from None
    meta = got.get("metadata")
    if isinstance(meta, Mapping):
        rep.metadata = dict(meta)
    for name in ("tokens_in", "tokens_out"):
        v = got.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            setattr(rep, name, v)
    cache_hit = got.get("cache_hit")
    if cache_hit is not None:
        flag = _flag(cache_hit)
        if flag is None:
            raise CallError("unmapped", f"cache_hit: expected true / false, got "
                            f"{cache_hit!r}", raw=raw)
        rep.metadata["cache_hit"] = flag
    if entry == "retrieve":
        if rep.context_ids is None and rep.doc_ids is None:
            raise CallError("unmapped", "retrieve: the reply has no ids "
                                  "(context_ids or doc_ids)", raw=raw)
    elif rep.answer is None:
        raise CallError("unmapped", "answer: the reply has no answer", raw=raw)
    _clean(rep)
    return rep


def _flag(value: Any) -> bool | None:
    """A cache flag as the reply gives it: a boolean, 0 / 1, or hit / miss, true / false."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return {"true": True, "false": False, "hit": True, "miss": False, "yes": True,
                "no": False, "1": True, "0": False}.get(value.strip().lower())
    return None


def _clean(rep: TargetReply) -> None:
    """Invalid characters replaced in every text of the reply, and counted."""
    n = 0
    if rep.answer is not None:
        rep.answer, c = clean_text(rep.answer)
        n += c
    for name in ("contexts", "context_ids", "doc_ids"):
        items = getattr(rep, name)
        if items:
            cleaned, c = clean_value(items)
            setattr(rep, name, cleaned)
            n += c
    if rep.metadata:
        rep.metadata, c = clean_value(rep.metadata)
        n += c
    raw_n = 0
    if rep.raw is not None:
        rep.raw, raw_n = clean_text(rep.raw)
    rep.invalid_text = max(rep.invalid_text, n, raw_n)


def _contexts(rep: TargetReply, value: Any, raw: str, *, strict: bool) -> None:
    """Contexts as texts; items that are mappings or objects (a LangChain ``Document``)
    give their text, id and document id / URL too. Items with ids and no text (sources that
    cite documents without quoting them) keep their ids and give no contexts — unless the
    config declared the contexts path (``strict``): then a missing text is the reply's
    ``target_unmapped``."""
    if value is None:
        return
    items = value if isinstance(value, list) else [value]
    texts: list[str] = []
    ids: list[str] = []
    docs: list[str] = []
    textless = 0
    for it in items:
        if isinstance(it, str):
            texts.append(it)
            continue
        get = (lambda k, it=it: it.get(k)) if isinstance(it, Mapping) else \
            (lambda k, it=it: getattr(it, k, None))
        text = next((get(k) for k in _TEXT_KEYS if isinstance(get(k), str)), None)
        meta = get("metadata")
        look = [get, (lambda k, m=meta: m.get(k))] if isinstance(meta, Mapping) else [get]
        cid = next((str(f(k)) for f in look for k in _ID_KEYS if f(k) is not None), None)
        doc = next((str(f(k)) for f in look for k in _DOC_KEYS if f(k) is not None), None)
        if text is None:
            if strict or (cid is None and doc is None):
                raise CallError("unmapped", "contexts: an item has no text "
                                f"({'/'.join(_TEXT_KEYS)})", raw=raw)
            textless += 1
        else:
            texts.append(text)
        if cid is not None:
            ids.append(cid)
        if doc is not None:
            docs.append(doc)
    rep.contexts = texts if not textless else None
    if ids and len(ids) == len(items) and rep.context_ids is None:
        rep.context_ids = ids
    if docs and len(docs) == len(items) and rep.doc_ids is None:
        rep.doc_ids = docs


__all__ = ["DEFAULT_RESPONSE", "clean_text", "clean_value", "parse_json", "read_mapped",
           "read_plain", "reply_data", "stream_reply"]
