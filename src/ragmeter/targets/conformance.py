"""Whether a target's mapping can be right at all, judged over a whole run of its replies.

One reply cannot show a mapping mistake that gives every reply a plausible value: a ``[*]``
path whose field no item has, a declared path that is empty in every reply, an id rule that
maps no returned id onto any id the evalset or the corpus knows — or, with the corpus
configured, one that maps most returned ids onto none of its ids (a rule that fits some URLs
only: the rest count as misses and hit@5 looks like a weak system). Each gives a column of
zeros — hit@5 = 0.000 — with exit 0. :class:`Conformance` counts, per entry point, what every
reply gave for each declared response path and how many replies returned an id that meets a
known one; :meth:`Conformance.check` raises :class:`TargetMappingError` (exit 3) naming the
path or the rule with three example raw values once the evidence is conclusive: nothing
useful in any reply of the run (checked after its last call), or in the first
:data:`CONCLUSIVE` replies. A single reply that lacks a declared path stays that sample's
``target_unmapped`` reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.errors import WorkFailedError
from ragmeter.targets.base import TargetReply
from ragmeter.targets.config import TargetConfig
from ragmeter.targets.mapping import MISSING, extract, extract_steps, parse_path
from ragmeter.targets.reading import reply_data

#: replies after which "nothing in any of them" is conclusive before the run ends
CONCLUSIVE = 20
#: with the corpus known, the share of returned ids that may meet no id of it before the id
#: rule is taken for a partly wrong one (a rule that fits maps every returned id onto one)
OUTSIDE_SHARE = 0.5
_CHUNK_N = re.compile(r"(.+)_chunk_\d+")


class TargetMappingError(WorkFailedError):
    """The target's response mapping or id rule does not fit its replies across the run (exit 3);
    the message names the path or rule, shows three raw values and says how to fix it."""


@dataclass
class _PathStats:
    path: str
    seen: int = 0        # replies that could be read (JSON, or a joined stream)
    useful: int = 0      # replies in which the path gave a non-empty value
    examples: list[str] = field(default_factory=list)


@dataclass
class _IdStats:
    seen: int = 0        # successful replies that returned ids, for samples with gold
    matched: int = 0     # ... of which at least one id met a known id
    chunks: int = 0      # ... of which at least one id is a known chunk
    documents: int = 0   # ... of which no id is a known chunk and one is a known document
    examples: list[tuple[str, str]] = field(default_factory=list)
    doc_examples: list[tuple[str, str]] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    chunk_metrics: tuple[str, ...] = ()
    chunk_gold: bool = False   # some chunk id is known (gold chunks, the corpus' chunks)
    corpus: bool = False       # the corpus' ids are known: every returned id should meet one
    returned: int = 0    # ids returned in those replies (counted when the corpus is known)
    outside: int = 0     # ... of which the mapped id meets no known id
    outside_examples: list[tuple[str, str]] = field(default_factory=list)


def doc_part(item_id: str) -> str:
    """The document of a chunk id by the default rules (``doc#n``, ``doc_chunk_n``)."""
    base = item_id.rsplit("#", 1)[0]
    m = _CHUNK_N.fullmatch(base)
    return m.group(1) if m else base


@dataclass(frozen=True)
class KnownIds:
    """The ids a returned id may meet, by level, and the run's metrics that score chunks."""

    chunks: frozenset[str] = frozenset()
    #: the gold and corpus documents, and the documents of the gold chunks
    docs: frozenset[str] = frozenset()
    #: metrics of the run scored at chunk level (named when the ids are documents)
    chunk_metrics: tuple[str, ...] = ()
    #: the configured corpus' ids are among them (an id the target returns should meet one)
    corpus: bool = False

    def __bool__(self) -> bool:
        return bool(self.chunks or self.docs)

    def meets(self, mapped: str) -> bool:
        """Whether a mapped id is a known id, or a chunk of a known document."""
        return mapped in self.chunks or mapped in self.docs or doc_part(mapped) in self.docs


def known_ids(samples: Iterable[Sample], chunks: Iterable[str] = (), docs: Iterable[str] = (),
              *, chunk_metrics: Sequence[str] = ()) -> KnownIds:
    """Every id a returned id may meet: the samples' gold chunk and document ids, the
    documents of the gold chunks, and the corpus' ``chunks`` and ``docs`` (given: the corpus
    is known); ``chunk_metrics``: the run's metrics scored at chunk level
    (:func:`chunk_level_metrics`)."""
    known_chunks: set[str] = set(chunks)
    known_docs: set[str] = set(docs)
    corpus = bool(known_chunks or known_docs)
    for s in samples:
        for g in s.gold_chunk_ids or ():
            known_chunks.add(str(g))
            known_docs.add(doc_part(str(g)))
        known_docs.update(str(g) for g in s.gold_doc_ids or ())
    return KnownIds(frozenset(known_chunks), frozenset(known_docs), tuple(chunk_metrics),
                    corpus)


def chunk_level_metrics(metrics: Iterable[Any], samples: Iterable[Sample]) -> tuple[str, ...]:
    """The ranking metrics of ``metrics`` scored at chunk level on ``samples``: ``level=chunk``,
    or no level (``auto``) when some sample has gold chunk ids."""
    from ragmeter.metrics.registry import parse_metric
    from ragmeter.metrics.retrieval import RANKING_METRICS

    chunk_gold: bool | None = None
    out: list[str] = []
    for m in metrics:
        parsed = parse_metric(m) if isinstance(m, str) else m
        if parsed.name not in RANKING_METRICS:
            continue
        level = str(parsed.get("level"))
        if level == "auto":
            if chunk_gold is None:
                chunk_gold = any(s.gold_chunk_ids for s in samples)
            level = "chunk" if chunk_gold else "doc"
        if level == "chunk":
            out.append(str(parsed))
    return tuple(out)


def _useful(value: Any) -> bool:
    if value is MISSING or value is None:
        return False
    if isinstance(value, (str, list, dict, tuple)):
        return len(value) > 0
    return True


def _show(value: Any, width: int = 140) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[:width] + "…"


def _where(data: Any, path: str) -> str:
    """What the reply has where ``path`` leads: the value at its longest existing prefix (a
    list's first item, a mapping's keys)."""
    steps = parse_path(path)
    for j in range(len(steps), -1, -1):
        prefix = steps[:j]
        value = extract_steps(data, prefix)
        if value is MISSING:
            continue
        shown = _dotted(prefix) or "(the reply)"
        if j == len(steps):
            return f"{shown} = {_show(value)}"
        if isinstance(value, list) and value and prefix and prefix[-1] == "*":
            return f"{shown} = {_show(value[0])}"
        if isinstance(value, Mapping):
            return f"{shown} has keys {sorted(map(str, value))[:8]}"
        return f"{shown} = {_show(value)}"
    return _show(data)


def _dotted(steps: Sequence[str]) -> str:
    out = ""
    for s in steps:
        out += "[*]" if s == "*" else f"[{s}]" if s.lstrip("-").isdigit() else (
            f".{s}" if out else s)
    return out


class Conformance:
    """What a target's replies gave across a run (see the module doc)."""

    def __init__(self, config: TargetConfig):
        self.config = config
        self.paths: dict[tuple[str, str], _PathStats] = {}
        self.ids: dict[str, _IdStats] = {}

    def observe(self, entry: str, replies: Sequence[TargetReply]) -> None:
        """Count each declared response path of ``entry`` over ``replies``."""
        ec = self.config.entries.get(entry)
        mapping = dict(ec.response) if ec is not None else {}
        if not mapping:
            return
        for rep in replies:
            if rep.reason not in (None, "target_unmapped"):
                continue              # no reply to read: the call's own reason says why
            data = reply_data(rep.raw)
            if data is MISSING:
                continue
            for name, path in mapping.items():
                st = self.paths.setdefault((entry, name), _PathStats(path))
                st.seen += 1
                if _useful(extract(data, path)):
                    st.useful += 1
                elif len(st.examples) < 3:
                    st.examples.append(_where(data, path))

    def observe_ids(self, entry: str, samples: Sequence[Sample],
                    replies: Sequence[TargetReply], known: KnownIds) -> None:
        """Count the replies whose returned ids (under the config's id rule) meet ``known``,
        and those whose ids are documents only."""
        if not known:
            return
        st = self.ids.setdefault(entry, _IdStats())
        if not st.known:
            st.known = sorted(known.chunks | known.docs)[:3]
        st.chunk_metrics = known.chunk_metrics
        st.chunk_gold = bool(known.chunks)
        st.corpus = known.corpus
        rule = self.config.ids
        for s, rep in zip(samples, replies, strict=True):
            if not rep.ok or not (s.gold_chunk_ids or s.gold_doc_ids):
                continue
            returned = self._returned(rep)
            if not returned:
                continue
            st.seen += 1
            mapped = [rule.apply(v) for v in returned]
            if known.corpus:
                st.returned += len(mapped)
                for raw, m in zip(returned, mapped, strict=True):
                    if not known.meets(m):
                        st.outside += 1
                        if len(st.outside_examples) < 3 and raw not in (
                                a for a, _ in st.outside_examples):
                            st.outside_examples.append((raw, m))
            if any(known.meets(m) for m in mapped):
                st.matched += 1
            elif len(st.examples) < 3:
                st.examples.append((returned[0], mapped[0]))
            if any(m in known.chunks for m in mapped):
                st.chunks += 1
                continue
            doc = next((i for i, m in enumerate(mapped) if m in known.docs), None)
            if doc is not None:
                st.documents += 1
                if len(st.doc_examples) < 3:
                    st.doc_examples.append((returned[doc], mapped[doc]))

    def _returned(self, rep: TargetReply) -> list[str]:
        src = self.config.ids_from
        values = rep.context_ids if src in ("auto", "context_ids") else rep.doc_ids
        if values is None and src == "auto":
            values = rep.doc_ids
        return [str(v) for v in values or ()]

    def check(self, *, final: bool) -> None:
        """:class:`TargetMappingError` when a declared path or the id rule gave nothing in
        every reply so far and the evidence is conclusive (``final``: the run's last call)."""
        problems: list[str] = []
        for (entry, name), st in self.paths.items():
            if st.seen and not st.useful and (final or st.seen >= CONCLUSIVE):
                key = "response" if entry == "answer" else f"entries.{entry}.response"
                problems.append(
                    f"the response path {name}: {st.path!r} (target.{key}.{name}) is absent "
                    f"or empty in every one of the {st.seen} replies of this run ({entry}); "
                    "what the replies have there: " + "; ".join(st.examples)
                    + ". Fix the path (dotted, [*] for every item of a list, or a JSON "
                      "pointer), or drop it from the mapping")
        for entry, ids in self.ids.items():
            if ids.seen and not ids.matched and (final or ids.seen >= CONCLUSIVE):
                shown = ", ".join(f"{a!r} -> {b!r}" for a, b in ids.examples)
                problems.append(
                    f"the id rule {self.config.ids.describe()} (ids from "
                    f"{self.config.ids_from}) maps no returned id onto a known id (the "
                    f"samples' gold ids, the corpus' ids) in any of the {ids.seen} replies of "
                    f"this run ({entry}): e.g. {shown}; known ids look like "
                    f"{', '.join(map(repr, ids.known))}. Fix target.ids: 'from' (context_ids "
                    "or doc_ids), 'rule' (last_segment, regex with the id as the pattern's "
                    "first group, or a map table {returned: gold id}); when the returned ids "
                    "are documents, score with level=doc metrics (hit_rate@5(level=doc))")
            elif (ids.corpus and ids.outside > OUTSIDE_SHARE * ids.returned
                  and (final or ids.seen >= CONCLUSIVE)):
                problems.append(self._outside_problem(entry, ids))
            elif (ids.seen and ids.chunk_metrics and ids.chunk_gold and not ids.chunks
                  and ids.documents and (final or ids.seen >= CONCLUSIVE)):
                problems.append(self._documents_problem(entry, ids))
        if problems:
            raise TargetMappingError(
                f"target {self.config.name!r}: its mapping does not fit its replies, so its "
                "metrics would be computed from a configuration mistake:\n  "
                + "\n  ".join(problems))


    def _outside_problem(self, entry: str, ids: _IdStats) -> str:
        """With the corpus known, most returned ids map onto none of its ids: the rule fits
        some of them only, and the others would count as misses."""
        shown = ", ".join(f"{a!r} -> {b!r}" for a, b in ids.outside_examples)
        return (f"the id rule {self.config.ids.describe()} (ids from {self.config.ids_from}) "
                f"maps {ids.outside} of the {ids.returned} ids returned in the "
                f"{ids.seen} replies of this run ({entry}) onto no id of the corpus (its "
                f"documents and chunks; e.g. {shown}); a rule that fits maps every returned "
                "id onto one, and each of the others would count as a miss, so the metrics "
                "would measure the rule, not the system. Fix target.ids ('rule': a map table "
                "{returned: corpus id}, or a regex whose first group is the id), or configure "
                "the corpus the target searches")

    def _documents_problem(self, entry: str, ids: _IdStats) -> str:
        """The returned ids are documents while metrics of the run score chunks: each of
        them would be 0 for every question."""
        shown = ", ".join(f"{a!r} -> {b!r}" if a != b else repr(a) for a, b in ids.doc_examples)
        metrics = ", ".join(ids.chunk_metrics[:6]) + (" …" if len(ids.chunk_metrics) > 6
                                                       else "")
        docs = ", ".join(doc_level(m) for m in ids.chunk_metrics[:3])
        return (f"the ids the target returns (from {self.config.ids_from}, rule "
                f"{self.config.ids.describe()}) are documents: in {ids.documents} of the "
                f"{ids.seen} replies of this run ({entry}) they name gold or corpus documents "
                f"(e.g. {shown}) and in none a chunk, while {metrics} score chunks (level=chunk, "
                "or no level with gold_chunk_ids in the data), so they would be 0 for every "
                "question. Score "
                f"documents ({docs}, or --level doc on the command line: a returned document "
                "is a hit when it is a gold chunk's document), or map the target's chunk ids "
                "(target.response.context_ids, target.ids.from: context_ids)")


def doc_level(metric: str) -> str:
    """``metric`` asked at document level (its other parameters kept)."""
    from ragmeter.metrics.registry import make_metric, parse_metric

    m = parse_metric(metric)
    return str(make_metric(m.name, k=m.k, **{**dict(m.params), "level": "doc"}))


__all__ = ["CONCLUSIVE", "OUTSIDE_SHARE", "Conformance", "KnownIds", "TargetMappingError",
           "chunk_level_metrics", "doc_level", "doc_part", "known_ids"]
