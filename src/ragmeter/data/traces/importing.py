"""``ragmeter import``'s Python side: a trace export (or any samples file) → samples, with gold
merged in by id, duplicates out and a recorded sample; written as samples JSON Lines with a
``<name>.import.json`` sidecar that records the source, the layout and the selection."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.sample import Sample
from ragmeter.data.traces.sampling import Selection, select
from ragmeter.errors import DataError, RecordProblem

#: fields a gold file contributes to an imported sample (matched by id)
GOLD_FIELDS = ("gold_doc_ids", "gold_chunk_ids", "gold_grades", "reference",
               "reference_contexts", "type")


@dataclass
class Imported:
    """Samples of one import and how they were chosen."""

    samples: list[Sample]
    source: str
    format: str
    selection: Selection
    n_skipped: int = 0
    gold: dict[str, Any] = field(default_factory=dict)
    #: pseudonymiser version and redaction counts, when the texts were pseudonymised
    privacy: dict[str, Any] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "n_skipped": self.n_skipped,
                "selection": self.selection.to_dict(),
                **({"gold": self.gold} if self.gold else {}),
                **({"privacy": self.privacy} if self.privacy else {})}


def merge_gold(samples: list[Sample], gold_path: str | Path) -> dict[str, Any]:
    """Copy gold fields from ``gold_path`` (an evalset) into the samples with the same id; a gold
    id that matches no sample is a problem of the gold file."""
    from ragmeter.data.loaders import load_samples

    gold = load_samples(gold_path)
    by_id = {s.id: s for s in samples}
    unmatched = []
    for g, line in zip(gold.samples, gold.lines, strict=True):
        s = by_id.get(g.id)
        if s is None:
            unmatched.append(RecordProblem(gold.source, line, "id",
                                           f"'{g.id}' matches no imported request"))
            continue
        for name in GOLD_FIELDS:
            value = getattr(g, name)
            if value is not None:
                setattr(s, name, value)
    if unmatched and len(unmatched) == len(gold.samples):
        raise DataError(unmatched, hint="gold ids must be the trace ids of the export "
                                        "(metadata.trace_id of the imported samples)")
    return {"path": str(gold_path), "matched": len(gold.samples) - len(unmatched),
            "unmatched": len(unmatched)}


def import_samples(path: str | Path, *, format: str = "auto", gold: str | Path | None = None,
                   dedup: bool = False, sample: int | None = None, stratify: str | None = None,
                   seed: int = 42, skip_invalid: bool = False,
                   ci_width: float | None = None) -> Imported:
    """Load ``path`` in layout ``format`` (``auto`` detects), merge ``gold``, then select."""
    from ragmeter.data.formats import detect_format
    from ragmeter.data.loaders import load_samples
    from ragmeter.data.reading import read_table

    fmt = format
    if format == "auto":
        fmt = detect_format(read_table(path).records)
    loaded = load_samples(path, format=fmt, skip_invalid=skip_invalid)
    samples = loaded.samples
    if not samples:
        raise DataError(loaded.skipped or [RecordProblem(loaded.source, None, None,
                                                         "no request to import")],
                        hint="every trace of the file was skipped: nothing to write")
    gold_info = merge_gold(samples, gold) if gold is not None else {}
    chosen, selection = select(samples, dedup=dedup, n=sample, stratify=stratify, seed=seed,
                               ci_width=ci_width)
    return Imported(chosen, loaded.source, fmt, selection, loaded.n_skipped, gold_info)


def sidecar(out: str | Path) -> Path:
    """``samples.jsonl`` → ``samples.import.json``."""
    p = Path(out)
    return p.with_name(f"{p.stem}.import.json")


def render_samples(imported: Imported) -> tuple[str, dict[str, Any]]:
    """The samples as JSON Lines text, and the sidecar's content."""
    lines = [json.dumps(s.to_dict(), ensure_ascii=False, sort_keys=True)
             for s in imported.samples]
    body = "\n".join(lines) + ("\n" if lines else "")
    return body, {**imported.meta(), "n_samples": len(lines),
                  "samples_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}


def write_samples(imported: Imported, out: str | Path) -> dict[str, Any]:
    """Write the samples as JSON Lines and the sidecar; returns the sidecar's content."""
    body, meta = render_samples(imported)
    p = Path(out)
    p.write_text(body, encoding="utf-8")
    sidecar(p).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return meta
