"""Consistent, reversible pseudonyms: ``Иванова Мария`` → ``[PERSON_1]``, ``+7 912 …`` →
``[PHONE_1]``.

One :class:`Pseudonymiser` gives the same value the same token for as long as it lives (a
conversation, a file, a run): identifiers are compared by their digits (``123-456-789 01`` and
``12345678901`` are one СНИЛС), e-mails case-insensitively, names by the dictionary forms of
their words (``Ивановой Марии`` and ``Иванова Мария`` are one person; a mention whose words are
a subset of a known person's — ``Иванова`` — is that person). The map from tokens back to the
values lives in memory and is written only where the caller asks (:meth:`save_map`), never to
the results store, reports or logs; :func:`restore` reverses a text with it.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem
from ragmeter.privacy.detect import Finding, find_all

#: the pseudonymiser's rules; part of the signature of a pseudonymised run
VERSION = "pii-v1"
#: ``[PERSON_1]``: square brackets, never tag-like, so a token quoted back by the judge (a
#: claim) survives the prompt builder's neutralisation of ``<tags>`` unchanged
TOKEN = re.compile(r"\[([A-Z_]+)_(\d+)\]")
_SEEN_LIMIT = 100_000
_NUMERIC = ("snils", "inn", "ogrn", "card", "phone", "passport")


def _person_words(text: str) -> frozenset[str]:
    from ragmeter.privacy.names import lemma, natasha_available

    words = [w for w in re.findall(r"[^\W\d_]+", text) if len(w) > 1]
    titles = {"mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "dame"}
    norm = (lemma if natasha_available() else str.lower)
    return frozenset(norm(w).replace("ё", "е") for w in words if w.lower() not in titles)


class Pseudonymiser:
    """Replace personal data in texts by tokens, consistently; keep the map in memory."""

    def __init__(self, *, names: bool = True,
                 detect: Callable[[str], list[Finding]] | None = None) -> None:
        self.names = names
        if names and detect is None:
            from ragmeter.errors import MissingExtraError
            from ragmeter.privacy.names import natasha_available

            if not natasha_available():
                raise MissingExtraError("natasha", "privacy", "finding Russian names")
        self._detect = detect or (lambda text: find_all(text, names=self.names))
        self._keys: dict[tuple[str, str], str] = {}
        self._people: list[tuple[frozenset[str], str]] = []
        self._next: Counter[str] = Counter()
        #: token → the first text it stood for
        self.originals: dict[str, str] = {}
        #: values replaced, per kind (every occurrence)
        self.counts: Counter[str] = Counter()
        self._seen: dict[str, list[Finding]] = {}

    def _new(self, kind: str, surface: str) -> str:
        self._next[kind] += 1
        token = f"[{kind.upper()}_{self._next[kind]}]"
        self.originals[token] = surface
        return token

    def token_for(self, f: Finding) -> str:
        """The token of one finding (a new one for a value not seen before)."""
        if f.kind == "person":
            words = _person_words(f.text)
            for people_words, person in self._people:
                if words and (words <= people_words or people_words <= words):
                    return person
            token = self._new("person", f.text)
            self._people.append((words, token))
            return token
        key = re.sub(r"\D", "", f.text) if f.kind in _NUMERIC else f.text.strip().lower()
        if f.kind == "phone" and len(key) == 11 and key[0] in "78":
            key = "7" + key[1:]  # 8 912 … and +7 912 … are one number
        known = self._keys.get((f.kind, key))
        if known is None:
            known = self._keys[(f.kind, key)] = self._new(f.kind, f.text)
        return known

    def _findings(self, line: str) -> list[Finding]:
        """Detections of one line, remembered (a prompt template's lines repeat in every
        request; only the sample's own lines are new)."""
        found = self._seen.get(line)
        if found is None:
            found = self._detect(line) if line.strip() else []
            if len(self._seen) < _SEEN_LIMIT:
                self._seen[line] = found
        return found

    def __call__(self, text: str) -> str:
        """``text`` with every detected value replaced by its token (line by line)."""
        if not text:
            return text
        out = []
        for line in text.split("\n"):
            pos = 0
            for f in self._findings(line):
                out.append(line[pos:f.start])
                out.append(self.token_for(f))
                self.counts[f.kind] += 1
                pos = f.end
            out.append(line[pos:] + "\n")
        return "".join(out)[:-1]

    def restore(self, text: str) -> str:
        """``text`` with this pseudonymiser's tokens replaced by the values they stand for."""
        return restore(text, self.originals)

    def save_map(self, path: str | Path) -> Path:
        """Write the token map (readable by the owner only) to ``path``: see
        :func:`write_private`."""
        text = json.dumps({"version": VERSION, "tokens": self.originals}, ensure_ascii=False,
                          indent=1)
        return write_private(path, text)

    def signature(self) -> dict[str, str]:
        """What a pseudonymised run records in its signature (never the values)."""
        return {"pii": VERSION + ("" if self.names else "-no-names")}

    def redaction_counts(self) -> dict[str, int]:
        """``{"redacted_phone": 3, ...}``: counts only, never values."""
        return {f"redacted_{k}": int(v) for k, v in sorted(self.counts.items())}


def check_private_path(path: str | Path) -> Path:
    """``path`` as a place for a private file, or a :class:`DataError` naming it: a symbolic
    link there is refused (the map is never written through a link to somewhere else), as is
    a folder."""
    p = Path(path)
    if p.is_symlink():
        raise DataError(RecordProblem(str(p), None, None, "is a symbolic link: the pseudonym "
                                      "map is never written through a link; remove the link "
                                      "or name another file"))
    if p.is_dir():
        raise DataError(RecordProblem(str(p), None, None, "is a folder, not a file for the "
                                      "pseudonym map"))
    return p


def write_private(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` readable by the owner only (mode 600), atomically.

    The text goes to a new file beside ``path``, created exclusively without following links
    (``O_CREAT | O_EXCL | O_NOFOLLOW``) with mode 600, synced, then renamed over ``path``:
    an existing file is replaced whole (whatever its mode was, the new one is 600), a reader
    never sees half a map, and a symbolic link at ``path`` is refused
    (:func:`check_private_path`), never written through.
    """
    p = check_private_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), 0o600)   # exactly 600, whatever the umask
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        check_private_path(p)   # a link put there meanwhile: refused (rename would replace it)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def load_map(path: str | Path) -> dict[str, str]:
    """A token map written by :meth:`Pseudonymiser.save_map`."""
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(RecordProblem(str(p), None, None, f"not a pseudonym map: {exc}")
                        ) from None
    tokens = data.get("tokens") if isinstance(data, Mapping) else None
    if not isinstance(tokens, Mapping):
        raise DataError(RecordProblem(str(p), None, "tokens", "missing (not a pseudonym map)"))
    return {str(k): str(v) for k, v in tokens.items()}


def restore(text: str, originals: Mapping[str, str]) -> str:
    """``text`` with every known token replaced by its value (unknown tokens stay)."""
    return TOKEN.sub(lambda m: originals.get(m.group(0), m.group(0)), text)


def pseudonymise_sample(sample: Any, p: Pseudonymiser) -> Any:
    """A copy of a :class:`~ragmeter.data.sample.Sample` whose texts (question, answer,
    reference, contexts, the conversation history, and the history and hop texts/queries in its
    metadata)
    are pseudonymised with ``p``; ids and scores are kept."""
    from dataclasses import replace

    def texts(values: list[str] | None) -> list[str] | None:
        return None if values is None else [p(v) for v in values]

    def turns(history: Any) -> Any:
        if not isinstance(history, list):
            return history
        return [{**t, "content": p(t["content"])}
                if isinstance(t, dict) and isinstance(t.get("content"), str) else t
                for t in history]

    meta = dict(sample.metadata)
    if isinstance(meta.get("history"), list):
        meta["history"] = turns(meta["history"])
    if isinstance(meta.get("hops"), list):
        meta["hops"] = [{**h, "texts": [p(t) if isinstance(t, str) else t
                                        for t in h.get("texts") or []],
                         **({"query": p(h["query"])} if isinstance(h.get("query"), str)
                            else {})} if isinstance(h, dict) else h for h in meta["hops"]]
    return replace(sample, user_input=p(sample.user_input) if sample.user_input else
                   sample.user_input, response=p(sample.response) if sample.response else
                   sample.response, reference=p(sample.reference) if sample.reference else
                   sample.reference, retrieved_contexts=texts(sample.retrieved_contexts),
                   reference_contexts=texts(sample.reference_contexts),
                   history=turns(sample.history), metadata=meta)
