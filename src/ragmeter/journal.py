"""The one progress log: an append-only JSON Lines file that survives ``kill -9``.

Every record is one line, written through :func:`ragmeter.secrets.mask_text`, flushed and
(by default) fsynced before :meth:`Journal.append` returns, so a crash loses only work in
flight. On opening an existing file, a torn last line (a record cut off mid-write) is cut
from the file and dropped; a broken line before it is an error naming the file and line.
The benchmark runner logs finished batches and tiers in one (``progress.jsonl`` of a run);
the synthetic-set generator logs every model reply in one (``--progress``), under a header.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragmeter.errors import DataError, RecordProblem
from ragmeter.secrets import mask_text


class Journal:
    """Append-only JSON Lines; ``records`` holds what the file held when opened plus every
    record appended since. ``fresh=True`` starts the file over; ``header`` is written as the
    first record of a new file (``header_record`` is the one read back from an old one)."""

    def __init__(self, path: str | Path, *, header: dict[str, Any] | None = None,
                 fresh: bool = False, sync: bool = True):
        self.path = Path(path)
        self.sync = sync
        self.records: list[dict[str, Any]] = []
        self.header_record: dict[str, Any] | None = None
        self.torn_lines = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and not fresh
        if existed:
            self.records = self._read()
            if header is not None and self.records:
                self.header_record = self.records.pop(0)
        self._fh = self.path.open("a" if existed else "w", encoding="utf-8")
        if header is not None and (not existed or self.header_record is None):
            self.header_record = header
            self._write(header)

    def _read(self) -> list[dict[str, Any]]:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        out: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if i >= len(lines) - 2:  # the torn last record of a killed process
                    with self.path.open("r+b") as fh:
                        fh.truncate(len(b"\n".join(lines[:i])) + (1 if i else 0))
                    self.torn_lines += 1
                    break
                raise DataError(RecordProblem(str(self.path), i + 1, None,
                                              "corrupt progress record")) from None
            if not isinstance(rec, dict):
                raise DataError(RecordProblem(str(self.path), i + 1, None,
                                              "a progress record must be a JSON object"))
            out.append(rec)
        return out

    def _write(self, record: dict[str, Any]) -> None:
        self._fh.write(mask_text(json.dumps(record, ensure_ascii=False, default=str)) + "\n")
        self._fh.flush()
        if self.sync:
            os.fsync(self._fh.fileno())

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` durably, then keep it in :attr:`records`."""
        self._write(record)
        self.records.append(record)

    def close(self) -> None:
        self._fh.close()


__all__ = ["Journal"]
