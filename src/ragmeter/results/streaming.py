"""Write an :class:`EvalResult` with per-sample values without building it in memory first.

``EvalResult.to_json()`` builds one dict per (metric, sample) and then one string of the whole
document: a million queries × five metrics is gigabytes. :func:`write_result_json` writes the
same document (the same keys, read back by ``EvalResult.from_dict``) block by block, one
per-sample record per line; :func:`write_per_query_csv` writes the per-query table (one row per
query, one column per metric, queries in first-seen order) the same way. Secrets are masked in
every JSON block, as ``to_json`` masks the whole text.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from json.encoder import encode_basestring
from typing import IO, Any

import numpy as np

from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.secrets import mask

BLOCK = 20_000


def _dumps(obj: Any, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str, indent=indent)


def _per_sample_lines(r: MetricResult) -> Iterator[str]:
    """The ``per_sample`` records of one metric, ``BLOCK`` per string."""
    ids, values = r.sample_ids, r.values
    for a in range(0, len(ids), BLOCK):
        b = min(len(ids), a + BLOCK)
        vals = values[a:b].tolist()
        lines = []
        for i, (sid, v) in enumerate(zip(ids[a:b], vals, strict=True), start=a):
            det = r.details[i] if r.details else None
            if v != v:  # NaN: unscored, with its reason
                reason = encode_basestring(r.reasons.get(i, "unscored"))
                rec = f'{{"sample_id": {encode_basestring(sid)}, "value": null, "reason": {reason}'
            else:
                rec = f'{{"sample_id": {encode_basestring(sid)}, "value": {v!r}, "reason": null'
            if det:
                rec += f', "details": {_dumps(dict(det))}'
            lines.append(rec + "}")
        yield ",\n      ".join(lines)


def write_result_json(result: EvalResult, fh: IO[str]) -> None:
    """Write ``result`` as JSON (``to_json``'s keys, per-sample values included), streamed."""
    fh.write('{\n  "name": ' + mask(_dumps(result.name)) + ',\n  "meta": '
             + mask(_dumps(result.meta)) + ',\n  "results": {')
    for n_metric, (key, r) in enumerate(result.results.items()):
        head = {"metric": r.metric, "aggregate": r.aggregate.to_dict(), "counts": dict(r.counts),
                "higher_is_better": r.higher_is_better, "signature": str(r.signature)}
        text = _dumps(head)
        fh.write(("," if n_metric else "") + "\n    " + mask(_dumps(key)) + ": "
                 + mask(text[:-1]) + ', "per_sample": [')
        first = True
        for block in _per_sample_lines(r):
            fh.write(("," if not first else "") + "\n      " + mask(block))
            first = False
        fh.write("\n    ]}")
    fh.write("\n  }\n}\n")


def _query_order(result: EvalResult) -> dict[str, int]:
    """Every query id → its row, in first-seen order over the metrics."""
    order: dict[str, int] = {}
    for r in result.results.values():
        for sid in r.sample_ids:
            if sid not in order:
                order[sid] = len(order)
    return order


def aligned_values(result: EvalResult) -> tuple[list[str], list[np.ndarray]]:
    """``(query ids, one float64 column per metric)``: NaN where a query is unscored or not in
    that metric's population."""
    order = _query_order(result)
    cols = []
    for r in result.results.values():
        col = np.full(len(order), np.nan)
        idx = np.fromiter(map(order.__getitem__, r.sample_ids), dtype=np.int64,
                          count=len(r.sample_ids))
        col[idx] = r.values
        cols.append(col)
    return list(order), cols


def write_per_query_csv(result: EvalResult, fh: IO[str]) -> None:
    """Per-query CSV: ``query`` then one column per metric; an unscored value is empty."""
    writer = csv.writer(fh)
    writer.writerow(["query", *result.results])
    qids, cols = aligned_values(result)
    for a in range(0, len(qids), BLOCK):
        b = min(len(qids), a + BLOCK)
        blocks = [c[a:b].tolist() for c in cols]
        writer.writerows(
            [q, *("" if v != v else repr(v) for v in vals)]
            for q, *vals in zip(qids[a:b], *blocks, strict=True))
