"""Resolve what a CLI argument names: a run id in the store, ``latest``, or a JSON file.

JSON files may hold one EvalResult (``ragmeter score retrieval --out``), a list of them, a retriever
comparison (``comparison.json`` of ``ragmeter score baselines``: one result per retriever) or a
whole run exported with ``ragmeter runs export ID --format json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.data import jsontext
from ragmeter.errors import DataError, RagmeterError, RecordProblem
from ragmeter.results.records import EvalResult
from ragmeter.results.store import ResultStore, StoredRun, TierRecord, utc_now


@dataclass
class Source:
    label: str
    run: StoredRun

    @property
    def results(self) -> dict[str, EvalResult]:
        return self.run.results()


def _from_json(path: Path) -> StoredRun:
    try:
        data: Any = jsontext.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(RecordProblem(str(path), None, None, f"not readable JSON: {exc}")) \
            from None
    try:
        if isinstance(data, dict) and "tiers" in data and "id" in data:
            return StoredRun.from_dict(data)
        if isinstance(data, dict) and isinstance(data.get("results"), dict) \
                and "rows" in data and "ks" in data:  # `ragmeter score baselines` comparison.json
            items: Any = list(data["results"].values())
        else:
            items = data if isinstance(data, list) else [data]
        results = [EvalResult.from_dict(d) for d in items]
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(RecordProblem(str(path), None, None,
                                      f"not an EvalResult or run export: {exc}")) from None
    tier = str(results[0].meta.get("tier", "results")) if results else "results"
    return StoredRun(id=path.stem, created_at=utc_now(), name=path.stem,
                     tiers={tier: TierRecord(tier, "ok", None, results)},
                     meta={"source_file": str(path)})


def load_source(ref: str, store_url: str | None = None) -> Source:
    """A run from a JSON file (when ``ref`` is an existing file) or from the store."""
    path = Path(ref)
    if path.is_file():
        return Source(str(path), _from_json(path))
    store = ResultStore(store_url)
    if ref == "latest":
        latest = store.latest_run_id()
        if latest is None:
            raise RagmeterError("the results store has no runs yet")
        ref = latest
    elif ref.endswith(".json"):
        raise RagmeterError(f"file not found: {ref}")
    return Source(ref, store.load_run(ref))
