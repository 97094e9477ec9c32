"""Citations in answers, parsed deterministically (no judge call), and the metrics on them.

Recognised citation forms: ``[1]``, ``[1, 3]``, ``[2-4]`` (positions in the retrieved list,
1-based), ``[doc-id]`` (an id), footnote marks ``[^2]`` and superscripts ``¹²``, URLs, and
Russian legal references (:mod:`ragmeter.metrics.legal_refs`).

Metrics (per sample; samples whose answer cites nothing are unscored ``not_applicable:no_citations``):

- ``citation_precision``: cited sources that are gold / cited sources;
- ``citation_recall``: gold documents cited / gold documents;
- ``fabricated_citation``: citations that point at nothing retrieved / citations;
- ``legal_ref_exact_match``: 1 when the answer's legal references equal the reference
  answer's (after normalisation), else 0;
- ``legal_ref_unsupported``: the answer's legal references found in no retrieved context /
  the answer's legal references.

A source matches a gold id when it equals a gold chunk id, a gold document id, or a chunk id
of that document (``doc#3``, ``doc_chunk_3``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragmeter.metrics.legal_refs import parse_legal_refs
from ragmeter.metrics.registry import Metric, MetricSpec, register
from ragmeter.results.records import MetricResult, SampleScore

_BRACKET = re.compile(r"\[(\^?)([^\[\]\n]{1,80})\]")
_SUPERSCRIPT = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_SUP_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_URL = re.compile(r"https?://[^\s\])>\"'«»]+")
_RANGE = re.compile(r"^\s*(\d+)\s*[-–—]\s*(\d+)\s*$")
_ID = re.compile(r"^[\w.:/#@-]+$")


@dataclass(frozen=True)
class Citation:
    """One citation: ``kind`` is index / footnote / id / url; ``value`` the index or id."""

    kind: str
    value: str


def parse_citations(text: str | None) -> list[Citation]:
    """Citations of sources in ``text`` (legal references excluded), in order."""
    if not text:
        return []
    out = [Citation("url", m.group(0).rstrip(".,;")) for m in _URL.finditer(text)]
    no_urls = _URL.sub(" ", text)
    for m in _BRACKET.finditer(no_urls):
        caret, body = m.group(1), m.group(2).strip()
        if caret:
            out.append(Citation("footnote", body))
            continue
        rng = _RANGE.match(body)
        if rng and int(rng.group(2)) - int(rng.group(1)) <= 50:
            out += [Citation("index", str(i))
                    for i in range(int(rng.group(1)), int(rng.group(2)) + 1)]
            continue
        items = [p.strip() for p in re.split(r"[,;]", body) if p.strip()]
        if items and all(p.isdigit() for p in items):
            out += [Citation("index", p) for p in items]
        elif items and all(_ID.match(p) for p in items):
            out += [Citation("id", p) for p in items]
    for m in _SUPERSCRIPT.finditer(no_urls):
        out.append(Citation("footnote", m.group(0).translate(_SUP_DIGITS)))
    return out


def _doc_of(source: str) -> str:
    return re.sub(r"(?:#\d+|_chunk_\d+)$", "", source)


def resolve(c: Citation, retrieved: list[str]) -> str | None:
    """The retrieved source a citation points at, or None when it points at nothing."""
    if c.kind in ("index", "footnote"):
        i = int(c.value) if c.value.isdigit() else 0
        return retrieved[i - 1] if 1 <= i <= len(retrieved) else None
    if c.value in retrieved:
        return c.value
    docs = {_doc_of(r): r for r in retrieved}
    return docs.get(c.value)


def _is_gold(source: str, gold: set[str]) -> bool:
    return source in gold or _doc_of(source) in gold


def _cites(s: Any) -> tuple[list[Citation], list[str]]:
    return parse_citations(s.response), [str(x) for x in (s.retrieved_ids or [])]


def _precision(s: Any) -> SampleScore:
    cites, retrieved = _cites(s)
    gold = set(s.gold_chunk_ids or []) | set(s.gold_doc_ids or [])
    if not gold:
        return SampleScore(s.id, None, "missing_field:gold_doc_ids")
    sources = {resolve(c, retrieved) or c.value for c in cites}
    if not sources:
        return SampleScore(s.id, None, "not_applicable:no_citations")
    return SampleScore(s.id, sum(_is_gold(x, gold) for x in sources) / len(sources))


def _recall(s: Any) -> SampleScore:
    cites, retrieved = _cites(s)
    gold_docs = set(s.gold_doc_ids or [])
    if not gold_docs:
        return SampleScore(s.id, None, "missing_field:gold_doc_ids")
    if not cites:
        return SampleScore(s.id, None, "not_applicable:no_citations")
    cited = {_doc_of(resolve(c, retrieved) or c.value) for c in cites}
    return SampleScore(s.id, len(gold_docs & cited) / len(gold_docs))


def _fabricated(s: Any) -> SampleScore:
    cites, retrieved = _cites(s)
    if not cites:
        return SampleScore(s.id, None, "not_applicable:no_citations")
    if s.retrieved_ids is None:
        return SampleScore(s.id, None, "missing_field:retrieved_ids")
    bad = [c for c in cites if resolve(c, retrieved) is None]
    return SampleScore(s.id, len(bad) / len(cites), None,
                       {"fabricated": [f"{c.kind}:{c.value}" for c in bad]})


def _legal_match(s: Any) -> SampleScore:
    if s.reference is None:
        return SampleScore(s.id, None, "missing_field:reference")
    gold, got = set(parse_legal_refs(s.reference)), set(parse_legal_refs(s.response or ""))
    if not gold and not got:
        return SampleScore(s.id, None, "not_applicable:no_legal_references")
    return SampleScore(s.id, float(gold == got), None,
                       {"missing": sorted(map(str, gold - got)),
                        "extra": sorted(map(str, got - gold))})


def _legal_unsupported(s: Any) -> SampleScore:
    got = set(parse_legal_refs(s.response or ""))
    if not got:
        return SampleScore(s.id, None, "not_applicable:no_legal_references")
    if s.retrieved_contexts is None:
        return SampleScore(s.id, None, "missing_field:retrieved_contexts")
    found: set[Any] = set()
    for ctx in s.retrieved_contexts:
        found |= set(parse_legal_refs(ctx))
    bad = sorted(map(str, got - found))
    return SampleScore(s.id, len(bad) / len(got), None, {"unsupported": bad})


_METRICS: dict[str, tuple[Callable[[Any], SampleScore], bool, tuple[str, ...], str]] = {
    "citation_precision": (_precision, True, ("response",),
                           "|cited sources that are gold| / |cited sources| (no judge call)"),
    "citation_recall": (_recall, True, ("response",),
                        "|gold documents cited| / |gold documents| (no judge call)"),
    "fabricated_citation": (_fabricated, False, ("response", "retrieved_ids"),
                            "|citations pointing at nothing retrieved| / |citations|"),
    "legal_ref_exact_match": (_legal_match, True, ("response", "reference"),
                              "1 if the answer's normalised legal references (ст./ч./п./пп., "
                              "codes, laws) equal the reference answer's, else 0"),
    "legal_ref_unsupported": (_legal_unsupported, False, ("response", "retrieved_contexts"),
                              "|answer's legal references in no retrieved context| / "
                              "|answer's legal references|"),
}


def _compute(metric: Metric, ctx: Any) -> MetricResult:
    fn = _METRICS[metric.name][0]
    scores = [SampleScore(s.id, None, "missing_field:response") if s.response is None
              else fn(s) for s in ctx.samples]
    sig = ctx.signature(str(metric), citations="parser-v1")
    return MetricResult.from_scores(str(metric), scores, sig, seed=ctx.seed)


for _name, (_fn, _hib, _fields, _doc) in _METRICS.items():
    register(MetricSpec(name=_name, family="citations", doc=_doc, higher_is_better=_hib,
                        required_fields=_fields, compute=_compute))
