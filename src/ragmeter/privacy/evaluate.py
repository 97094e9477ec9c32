"""Recall and precision of the personal-data detectors on the labelled set, per kind, with
percentile-bootstrap CIs over items: ``python -m ragmeter.privacy.evaluate [--split test]``.

A labelled value is *found* when every letter and digit of it is covered by detected spans of
the same kind (a partly masked phone number still leaks); a detected span is *correct* when it
overlaps a labelled value of the same kind. The detectors were written looking at the ``dev``
half only; ``test`` is the figure to quote.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragmeter.data.labelled_sets import Records, read_records
from ragmeter.errors import RecordProblem
from ragmeter.privacy.detect import KINDS as KINDS_DETECTED
from ragmeter.privacy.detect import Finding, find_all
from ragmeter.privacy.labelled import KINDS, Item, load_labelled, template_of
from ragmeter.stats.proportion import Proportion, wilson_interval

STRUCTURED = tuple(k for k in KINDS if k != "person")


@dataclass
class KindScore:
    """Recall and precision of one kind (or group of kinds) with 95% bootstrap CIs."""

    kind: str
    n_gold: int
    n_found: int
    n_pred: int
    n_correct: int
    recall: float | None
    recall_ci: tuple[float, float] | None
    precision: float | None
    precision_ci: tuple[float, float] | None


def _covered(text: str, start: int, end: int, spans: Sequence[Finding]) -> bool:
    return all(any(f.start <= i < f.end for f in spans)
               for i in range(start, end) if text[i].isalnum())


def _counts(item: Item, found: Sequence[Finding], kinds: Sequence[str]) -> np.ndarray:
    """``[gold, found, predicted, correct]`` of ``kinds`` in one item."""
    preds = [f for f in found if f.kind in kinds]
    gold = [(a, b, k) for a, b, k in item.spans if k in kinds]
    n_found = sum(_covered(item.text, a, b, [f for f in preds if f.kind == k])
                  for a, b, k in gold)
    n_correct = sum(any(f.kind == k and f.start < b and a < f.end for a, b, k in gold)
                    for f in preds)
    return np.array([len(gold), n_found, len(preds), n_correct], dtype=np.int64)


def _ratio_ci(num: np.ndarray, den: np.ndarray, rng: np.random.Generator, n_boot: int
              ) -> tuple[float | None, tuple[float, float] | None]:
    if den.sum() == 0:
        return None, None
    idx = rng.integers(0, len(num), size=(n_boot, len(num)))
    d = den[idx].sum(axis=1)
    boots = num[idx].sum(axis=1)[d > 0] / d[d > 0]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(num.sum() / den.sum()), (float(lo), float(hi))


def score(items: Sequence[Item], detect: Callable[[str], list[Finding]] = find_all, *,
          seed: int = 0, n_boot: int = 2000) -> list[KindScore]:
    """One row per kind, then ``structured`` (every identifier kind together)."""
    found = [detect(it.text) for it in items]
    groups = [(k, (k,)) for k in KINDS] + [("structured", STRUCTURED)]
    rows = []
    for name, kinds in groups:
        c = np.stack([_counts(it, f, kinds) for it, f in zip(items, found, strict=True)])
        rng = np.random.default_rng(seed)
        rec, rec_ci = _ratio_ci(c[:, 1], c[:, 0], rng, n_boot)
        prec, prec_ci = _ratio_ci(c[:, 3], c[:, 2], rng, n_boot)
        rows.append(KindScore(name, int(c[:, 0].sum()), int(c[:, 1].sum()), int(c[:, 2].sum()),
                              int(c[:, 3].sum()), rec, rec_ci, prec, prec_ci))
    return rows


def misses(items: Sequence[Item], detect: Callable[[str], list[Finding]] = find_all
           ) -> list[str]:
    """What the detectors got wrong on ``items`` (for working on the dev half)."""
    out = []
    for it in items:
        found = detect(it.text)
        for a, b, k in it.spans:
            if not _covered(it.text, a, b, [f for f in found if f.kind == k]):
                out.append(f"MISS {k}: {it.text[a:b]!r} in {it.text!r} -> "
                           f"{[(f.kind, f.text) for f in found]}")
        for f in found:
            if not any(f.kind == k and f.start < b and a < f.end for a, b, k in it.spans):
                out.append(f"FALSE {f.kind}: {f.text!r} in {it.text!r}")
    return out


def wilson_low(k: int, n: int, z: float = 1.959964) -> float | None:
    """Lower end of the Wilson score interval of ``k`` out of ``n`` (informative where the
    bootstrap interval of an all-found kind collapses to [1, 1])."""
    if n == 0:
        return None
    p = k / n
    centre = p + z * z / (2 * n)
    margin = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    return (centre - margin) / (1 + z * z / n)


def _fmt(v: float | None, ci: tuple[float, float] | None) -> str:
    return "—" if v is None or ci is None else f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def markdown(rows: Sequence[KindScore], split: str, n_items: int) -> str:
    """The figures as a Markdown table."""
    lines = [f"Split `{split}`: {n_items} texts. 95% percentile-bootstrap CIs over texts.", "",
             "| kind | labelled | found | recall [95% CI] | recall Wilson low | detected | "
             "correct | precision [95% CI] |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        low = wilson_low(r.n_found, r.n_gold)
        lines.append(f"| {r.kind} | {r.n_gold} | {r.n_found} | {_fmt(r.recall, r.recall_ci)} "
                     f"| {'—' if low is None else f'{low:.3f}'} | {r.n_pred} | {r.n_correct} "
                     f"| {_fmt(r.precision, r.precision_ci)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ragmeter.privacy.evaluate")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="test")
    ap.add_argument("--misses", action="store_true", help="List misses and false alarms.")
    ap.add_argument("--unseen-templates", action="store_true",
                    help="Only test items whose template has no item in the dev half.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    items = load_labelled(None if args.split == "all" else args.split)
    split = args.split
    if args.unseen_templates:
        seen = {template_of(i.id) for i in load_labelled("dev")}
        items = [i for i in items if template_of(i.id) not in seen]
        split += ", templates unseen in dev"
    if args.misses:
        sys.stdout.write("\n".join(misses(items)) + "\n")
        return 0
    rows = score(items)
    if args.json:
        sys.stdout.write(json.dumps([r.__dict__ for r in rows], ensure_ascii=False, indent=1)
                         + "\n")
    else:
        sys.stdout.write(markdown(rows, split, len(items)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ------------------------------------------------------- typed-span sets written by others
#: entity types of the shared typed-span format -> the detectors' kinds (an explicit table:
#: a type missing here is reported as not covered, never matched loosely)
TYPE_KINDS = {"PERSON": "person", "SNILS": "snils", "INN": "inn", "OGRN": "ogrn",
              "PASSPORT_RU": "passport", "PHONE": "phone", "EMAIL": "email", "CARD": "card",
              "DOB": "birth_date", "RECORD_BOOK": "record_book", "ADDRESS": "address"}


@dataclass(frozen=True)
class TypedItem:
    """One text of a typed-span set: ``spans`` are ``(start, end, type)`` in its own types;
    ``lookalike`` marks a line with no labels or noted ``invalid checksum``."""

    id: str
    lang: str
    text: str
    spans: tuple[tuple[int, int, str], ...]
    lookalike: bool


def read_typed_set(path: str | Path) -> tuple[list[TypedItem], Records]:
    """The texts of a typed-span set file (``id``, ``lang``, ``text``, ``entities``: ``{span,
    type, start, end}``, optional ``note``) and its record check."""
    recs = read_records(path, {"id": str, "lang": str, "text": str, "entities": list})
    items: list[TypedItem] = []
    for line, r in recs.records:
        spans = []
        for j, e in enumerate(r["entities"]):
            ok = (isinstance(e, dict) and isinstance(e.get("type"), str)
                  and isinstance(e.get("start"), int) and isinstance(e.get("end"), int)
                  and 0 <= e["start"] < e["end"] <= len(r["text"]))
            if not ok:
                recs.problems.append(RecordProblem(recs.source, line, f"entities[{j}]",
                                                   "needs type, start < end within the text"))
                continue
            spans.append((e["start"], e["end"], e["type"]))
        note = r.get("note")
        items.append(TypedItem(str(r["id"]), r["lang"], r["text"], tuple(spans),
                               not spans or (isinstance(note, str)
                                             and "invalid checksum" in note)))
    return items, recs


@dataclass
class TypeScore:
    """Recall and precision of one type (in one language or all) with Wilson intervals."""

    type: str
    lang: str
    recall: Proportion
    precision: Proportion
    missed: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"  {self.type:12s} {self.lang:4s} recall {self.recall.text():32s} "
                f"precision {self.precision.text()}")


@dataclass
class TypedScore:
    """A detector's figures on a typed-span set."""

    n_texts: int
    rows: list[TypeScore]
    lookalike_texts: int
    lookalike_flags: list[str]       # detections overlapping no label on look-alike lines
    not_covered: list[str]           # label types with no detector kind

    def lines(self) -> list[str]:
        out = [r.line() for r in self.rows]
        out.append(f"  look-alike lines: {self.lookalike_texts}, values flagged on them that "
                   f"are not labelled: {len(self.lookalike_flags)}"
                   + (f" ({'; '.join(self.lookalike_flags)})" if self.lookalike_flags else ""))
        if self.not_covered:
            out.append(f"  types without a detector: {', '.join(self.not_covered)}")
        return out


def score_typed_set(items: Sequence[TypedItem],
                    detect: Callable[[str], list[Finding]] = find_all) -> TypedScore:
    """Recall (every letter and digit of a label inside detections of its kind) and precision
    (a detection overlaps a label of its kind) per type — overall, and per language for
    names — and the values flagged on look-alike lines."""
    found = [detect(it.text) for it in items]
    kinds_of = {v: k for k, v in TYPE_KINDS.items()}
    types = sorted({t for it in items for _, _, t in it.spans}
                   | {kinds_of[f.kind] for fs in found for f in fs if f.kind in kinds_of})
    langs = list(dict.fromkeys(it.lang for it in items))
    rows: list[TypeScore] = []
    for typ in types:
        kind = TYPE_KINDS.get(typ)
        for lang in (["all", *langs] if typ == "PERSON" else ["all"]):
            gold = found_n = pred = correct = 0
            missed, false = [], []
            for it, fs in zip(items, found, strict=True):
                if lang != "all" and it.lang != lang:
                    continue
                mine = [f for f in fs if f.kind == kind]
                labels = [(a, b) for a, b, t in it.spans if t == typ]
                for a, b in labels:
                    gold += 1
                    if _covered(it.text, a, b, mine):
                        found_n += 1
                    else:
                        missed.append(f"{it.id}: {it.text[a:b]!r}")
                for f in mine:
                    pred += 1
                    if any(f.start < b and a < f.end for a, b in labels):
                        correct += 1
                    else:
                        false.append(f"{it.id}: {f.text!r}")
            rows.append(TypeScore(typ, lang, wilson_interval(found_n, gold),
                                  wilson_interval(correct, pred), missed, false))
    flags = [f"{it.id}: {f.kind} {f.text!r}" for it, fs in zip(items, found, strict=True)
             if it.lookalike for f in fs
             if not any(f.start < b and a < f.end for a, b, _ in it.spans)]
    uncovered = sorted({t for it in items for _, _, t in it.spans if t not in TYPE_KINDS}
                       | {t for t in TYPE_KINDS if TYPE_KINDS[t] not in KINDS_DETECTED})
    present = {t for it in items for _, _, t in it.spans}
    return TypedScore(len(items), rows, sum(it.lookalike for it in items), flags,
                      [t for t in uncovered if t in present])
