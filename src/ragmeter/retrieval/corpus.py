"""Corpus ingestion: a jsonl file or a folder of .txt/.md/.html files -> :class:`Document` list.

Every problem (bad JSON, missing or empty text, duplicate ids, undecodable files, binary
content, a string holding a lone surrogate) is collected with its file (and line, and field
for jsonl) and raised as one :class:`~ragmeter.errors.DataError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from ragmeter.data import jsontext
from ragmeter.data.reading import has_lone_surrogate
from ragmeter.errors import DataError, RecordProblem

FOLDER_SUFFIXES = (".txt", ".md", ".html", ".htm")
_RESERVED = ("doc_id", "chunk_id", "text", "title", "url", "metadata")
#: control characters no text document holds (tab, line ends and form feed are text)
_BINARY = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
#: more than this share of such characters: a binary file, whatever its name
BINARY_SHARE = 0.01


@dataclass(frozen=True)
class Document:
    """One source document before chunking — or, with ``chunk_id``, one chunk of a
    pre-chunked knowledge base, kept as it is (its id and text) by the chunker."""

    doc_id: str
    text: str
    title: str | None = None
    url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    chunk_id: str | None = None


class _HTMLText(HTMLParser):
    """Visible text of an HTML page (script/style dropped, block tags become newlines)."""

    _SKIP: ClassVar[frozenset[str]] = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCK: ClassVar[frozenset[str]] = frozenset({"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr",
              "table", "section", "article", "header", "footer", "blockquote", "pre", "dd",
                                                  "dt"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self._skip_depth += 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP and self._skip_depth:
            self._skip_depth -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip_depth:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str | None]:
    """Return ``(text, title)`` of an HTML page using the stdlib parser."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    text = "\n".join(line for line in lines if line)
    title = " ".join("".join(parser.title_parts).split()) or None
    return text, title


def load_corpus(path: str | Path) -> list[Document]:
    """Load documents from a ``.jsonl`` file or a folder of ``.txt``/``.md``/``.html`` files.

    jsonl: one object per line with ``doc_id`` and ``text`` (optional ``title``, ``url``,
    ``metadata``; any other key goes into ``metadata``), or BEIR's ``corpus.jsonl`` layout
    (``_id``, ``title``, ``text``), recognised by content. A pre-chunked knowledge base gives
    every line a ``chunk_id`` as well (many lines per ``doc_id``): its chunks are indexed as
    they are, under their own ids, so gold chunk ids from the production system match. Folder: ``doc_id`` is the relative path
    without extension (``/`` separators); HTML is converted to text and ``<title>`` is the title.
    Empty documents and duplicate ids are errors.
    """
    p = Path(path)
    if not p.exists():
        raise DataError(RecordProblem(str(p), None, None, "corpus path does not exist"))
    if p.is_dir():
        return _load_folder(p)
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        return _load_jsonl(p)
    raise DataError(
        RecordProblem(str(p), None, None, "unsupported corpus file type"),
        hint="give a .jsonl file or a folder of .txt/.md/.html files",
    )


def _load_jsonl(path: Path) -> list[Document]:
    problems: list[RecordProblem] = []
    docs: list[Document] = []
    seen: dict[str, int] = {}
    chunked: bool | None = None   # whether the lines carry chunk_id (decided by the first)
    src = str(path)
    try:
        raw = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(RecordProblem(src, None, None, f"not valid UTF-8 ({exc.reason} at byte "
                                                       f"{exc.start})")) from None
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(RecordProblem(src, lineno, None, f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(obj, dict):
            problems.append(RecordProblem(src, lineno, None, "expected a JSON object"))
            continue
        before = len(problems)
        for key, value in obj.items():   # not text: the document cannot be indexed or shown
            if has_lone_surrogate(key) or has_lone_surrogate(value):
                problems.append(RecordProblem(src, lineno, str(key).encode(
                    "utf-8", "backslashreplace").decode(), "holds a lone surrogate (e.g. "
                    "\\ud800): not valid Unicode text"))
        if len(problems) > before:
            continue
        beir = "doc_id" not in obj and "_id" in obj  # BEIR corpus layout: _id, title, text
        id_key = "_id" if beir else "doc_id"
        doc_id = obj.get(id_key)
        if not _an_id(doc_id):
            problems.append(RecordProblem(src, lineno, id_key, "missing or not a string (a "
                                          "corpus line has doc_id and text, or BEIR's _id, "
                                          "title and text)"))
        has_chunk = "chunk_id" in obj
        if chunked is None:
            chunked = has_chunk
        if has_chunk and not _an_id(obj["chunk_id"]):
            problems.append(RecordProblem(src, lineno, "chunk_id", "must be a non-empty "
                                          "string"))
        elif has_chunk != chunked:
            problems.append(RecordProblem(
                src, lineno, "chunk_id", "a pre-chunked corpus gives every line a chunk_id"
                if chunked else "only this line has a chunk_id: give every line one (a "
                "pre-chunked corpus) or none"))
        text = obj.get("text")
        if not isinstance(text, str):
            problems.append(RecordProblem(src, lineno, "text", "missing or not a string"))
        elif not text.strip():
            problems.append(RecordProblem(src, lineno, "text", "empty document"))
        for key in ("title", "url"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                problems.append(RecordProblem(src, lineno, key, "must be a string"))
        meta = obj.get("metadata", {})
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            problems.append(RecordProblem(src, lineno, "metadata", "must be an object"))
        if len(problems) > before:
            continue
        did = str(doc_id)
        cid = str(obj["chunk_id"]) if chunked else None
        key, what = (cid, "chunk_id") if cid is not None else (did, "doc_id")
        if key in seen:
            problems.append(RecordProblem(src, lineno, what, f"duplicate {what} '{key}' "
                                          f"(first on line {seen[key]})"))
            continue
        seen[key] = lineno
        extra = {k: v for k, v in obj.items() if k not in _RESERVED and k != id_key}
        docs.append(Document(did, str(text), obj.get("title"), obj.get("url"),
                             {**extra, **meta}, chunk_id=cid))
    if problems:
        raise DataError(problems)
    if not docs:
        raise DataError(RecordProblem(src, None, None, "corpus has no documents"))
    return docs


def binary_problem(content: str, source: str) -> RecordProblem | None:
    """A binary file's content decoded as text (valid UTF-8 can still be a binary file: NUL
    bytes, control characters), or None for text."""
    first = _BINARY.search(content)
    if first is None:
        return None
    nul = content.find("\x00")
    if nul < 0 and len(_BINARY.findall(content)) <= BINARY_SHARE * len(content):
        return None   # a stray control character in a text document
    at = nul if nul >= 0 else first.start()
    what = "a NUL byte" if nul >= 0 else f"control character {content[at]!r} among many"
    return RecordProblem(source, content.count("\n", 0, at) + 1, None,
                         f"binary content ({what}), not a text document; remove it from the "
                         "corpus folder or convert it to text")


def _an_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != ""


def _load_folder(root: Path) -> list[Document]:
    problems: list[RecordProblem] = []
    docs: list[Document] = []
    seen: dict[str, str] = {}
    files = sorted(f for f in root.rglob("*")
                   if f.is_file() and f.suffix.lower() in FOLDER_SUFFIXES)
    for f in files:
        src = str(f)
        rel = f.relative_to(root)
        doc_id = rel.with_suffix("").as_posix()
        try:
            content = f.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            problems.append(RecordProblem(src, None, None, f"not valid UTF-8 ({exc.reason} at byte "
                                                           f"{exc.start})"))
            continue
        except OSError as exc:
            problems.append(RecordProblem(src, None, None, f"cannot read: {exc}"))
            continue
        binary = binary_problem(content, src)
        if binary is not None:
            problems.append(binary)
            continue
        title: str | None = None
        if f.suffix.lower() in (".html", ".htm"):
            text, title = html_to_text(content)
        else:
            text = content
        if not text.strip():
            problems.append(RecordProblem(src, None, None, "empty document"))
            continue
        if doc_id in seen:
            problems.append(RecordProblem(src, None, None,
                                          f"duplicate doc_id '{doc_id}' (also {seen[doc_id]})"))
            continue
        seen[doc_id] = src
        docs.append(Document(doc_id, text, title, None, {"source_path": rel.as_posix()}))
    if problems:
        raise DataError(problems)
    if not docs:
        raise DataError(RecordProblem(str(root), None, None,
                                      "no .txt/.md/.html files found in corpus folder"))
    return docs
