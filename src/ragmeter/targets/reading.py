"""A target's reply -> :class:`TargetReply`: declared paths for JSON replies, and the
plain shapes a Python function or a command may return.

A path the config declares that is not in the reply is ``target_unmapped`` naming the path
(that sample is unscored with this reason, never 0); a field the config does not declare is
simply absent. The entry point decides what is required: ``answer`` / ``generate`` need the
answer, ``retrieve`` needs ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
            "scores": ("scores", "retrieved_scores")}


def parse_json(text: str) -> Any:
    """The reply body as JSON, or ``target_bad_reply`` with the start of what came back."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        snippet = (text or "")[:120].replace("\n", " ")
        raise CallError("bad_reply", f"the reply is not JSON: {snippet!r}",
                        raw=text) from None


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
    return _reply(got, entry, raw, strict=False)


def _reply(got: dict[str, Any], entry: str, raw: str, *, strict: bool) -> TargetReply:
    rep = TargetReply(raw=raw)
    answer = got.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise CallError("unmapped", f"answer: expected text, got "
                              f"{type(answer).__name__}", raw=raw)
    rep.answer = answer
    _contexts(rep, got.get("contexts"), raw)
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
    if entry == "retrieve":
        if rep.context_ids is None and rep.doc_ids is None:
            raise CallError("unmapped", "retrieve: the reply has no ids "
                                  "(context_ids or doc_ids)", raw=raw)
    elif rep.answer is None:
        raise CallError("unmapped", "answer: the reply has no answer", raw=raw)
    return rep


def _contexts(rep: TargetReply, value: Any, raw: str) -> None:
    """Contexts as texts; items that are mappings or objects (a LangChain ``Document``)
    give their text, id and document id / URL too."""
    if value is None:
        return
    items = value if isinstance(value, list) else [value]
    texts: list[str] = []
    ids: list[str] = []
    docs: list[str] = []
    for it in items:
        if isinstance(it, str):
            texts.append(it)
            continue
        get = (lambda k, it=it: it.get(k)) if isinstance(it, Mapping) else \
            (lambda k, it=it: getattr(it, k, None))
        text = next((get(k) for k in _TEXT_KEYS if isinstance(get(k), str)), None)
        if text is None:
            raise CallError("unmapped", "contexts: an item has no text "
                                  f"({'/'.join(_TEXT_KEYS)})", raw=raw)
        texts.append(text)
        meta = get("metadata")
        look = [get, (lambda k, m=meta: m.get(k))] if isinstance(meta, Mapping) else [get]
        cid = next((str(f(k)) for f in look for k in _ID_KEYS if f(k) is not None), None)
        doc = next((str(f(k)) for f in look for k in _DOC_KEYS if f(k) is not None), None)
        if cid is not None:
            ids.append(cid)
        if doc is not None:
            docs.append(doc)
    rep.contexts = texts
    if ids and len(ids) == len(texts) and rep.context_ids is None:
        rep.context_ids = ids
    if docs and len(docs) == len(texts) and rep.doc_ids is None:
        rep.doc_ids = docs


__all__ = ["DEFAULT_RESPONSE", "parse_json", "read_mapped", "read_plain"]
