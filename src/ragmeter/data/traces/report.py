"""What an import found: requests, documents, hops, sessions, and for each field the format
documents the share of requests that carry it. A field that no request carries, or retrieval
spans that yield no document in any request, is a warning naming the attributes looked for
(``ragmeter traces import --strict`` makes a warning exit 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.sample import Sample

#: the documented fields, in report order
FIELDS = ("user_input", "response", "retrieved_ids", "retrieved_contexts", "retrieved_scores",
          "latency_ms", "model", "session_id", "user_id", "tokens", "error")
_META = ("latency_ms", "model", "session_id", "user_id", "error")


def looked_for(fmt: str) -> dict[str, str]:
    """What each field is read from in ``fmt`` (the importer's own table)."""
    from ragmeter.data.traces import langfuse, mlflow, otlp, phoenix

    tables = {"otlp": otlp.LOOKED_FOR, "phoenix": phoenix.LOOKED_FOR,
              "langfuse": langfuse.LOOKED_FOR, "mlflow": mlflow.LOOKED_FOR}
    return tables.get(fmt, {})


@dataclass
class ImportReport:
    """Counts of one import (every valid request read, before any sampling)."""

    format: str
    trace: bool = True
    requests: int = 0
    documents: int = 0
    hops: int = 0
    hop_documents: int = 0
    sessions: int = 0
    skipped: int = 0
    have: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))
    warnings: list[str] = field(default_factory=list)

    def count(self, s: Sample) -> None:
        self.requests += 1
        self.documents += len(s.retrieved_ids or s.retrieved_contexts or [])
        hops = s.metadata.get("hops") if s.metadata else None
        if isinstance(hops, list):
            self.hops += len(hops)
            self.hop_documents += sum(len(h.get("ids") or []) for h in hops
                                      if isinstance(h, dict))
        have = self.have
        for name in ("user_input", "response", "retrieved_ids", "retrieved_contexts",
                     "retrieved_scores"):
            if getattr(s, name):
                have[name] += 1
        meta = s.metadata or {}
        for name in _META:
            if meta.get(name) is not None:
                have[name] += 1
        if any(meta.get(k) is not None for k in ("tokens_in", "tokens_out", "tokens_total")):
            have["tokens"] += 1

    def finish(self) -> None:
        """The warnings (trace formats: every documented field is expected somewhere)."""
        if not self.trace or not self.requests:
            return
        where = looked_for(self.format)
        if self.hops and not self.hop_documents:
            self.warnings.append(
                f"{self.hops} retrieval span(s) but no document in any request: looked for "
                f"{where.get('retrieved_ids', 'documents')}")
        for name in FIELDS:
            if not self.have[name] and name in where:
                self.warnings.append(f"no request has {name}: looked for {where[name]}")

    def share(self, name: str) -> float:
        return self.have[name] / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "documents": self.documents, "hops": self.hops,
                "sessions": self.sessions, "skipped": self.skipped,
                "fields": {k: round(self.share(k), 4) for k in FIELDS},
                "warnings": list(self.warnings)}

    def lines(self) -> list[str]:
        """The report for the console."""
        out = [f"{self.requests} request(s), {self.documents} document(s), {self.hops} hop(s), "
               f"{self.sessions} session(s)"
               + (f", {self.skipped} problem(s) skipped" if self.skipped else "")]
        if self.trace:
            out.append("fields (share of requests): " + ", ".join(
                f"{k} {self.share(k):.0%}" for k in FIELDS))
        out.extend(f"warning: {w}" for w in self.warnings)
        return out
