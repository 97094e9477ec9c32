"""Runs still running: read from the runner's folders (``<runs dir>/<run id>/meta.json`` and
``progress.jsonl``) before the run reaches the store.

The runner appends one record per finished batch (with that batch's per-sample values) and
one per finished tier, and a ``tier_start`` record with each per-sample tier's size; a run is
*running* while it is not in the store and its log changed in the last
:data:`STALE_SECONDS`, *stalled* after that (a process that died without saving: finish it
with ``ragmeter run --resume``). The live page polls :func:`live_json` every few seconds.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.reports.i18n import t

#: a log untouched this long belongs to a process that is gone
STALE_SECONDS = 600.0
#: live runs listed at most (newest first)
MAX_LIVE = 20


@dataclass
class TierProgress:
    """One tier of a live run: samples done of total, status once finished, and per
    system × metric the values of its finished batches."""

    tier: str
    total: int | None = None
    done: int = 0
    status: str | None = None
    reason: str | None = None
    batches: int = 0
    #: (system, metric) → [sum of values, n scored, n unscored, sum of squares,
    #: 1 while every value is 0 or 1, 1 while every value is within 0–1]
    sums: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add_batch(self, record: Mapping[str, Any]) -> None:
        self.batches += 1
        self.done += len(record.get("sample_ids") or [])
        for res in record.get("results") or []:
            for key, m in (res.get("results") or {}).items():
                slot = self.sums.setdefault((str(res.get("name")), str(key)),
                                            [0.0, 0, 0, 0.0, 1, 1])
                for row in m.get("per_sample") or []:
                    v = row.get("value")
                    if v is None or (isinstance(v, float) and math.isnan(v)):
                        slot[2] += 1
                    else:
                        x = float(v)
                        slot[0] += x
                        slot[1] += 1
                        slot[3] += x * x
                        slot[4] = slot[4] and x in (0.0, 1.0)
                        slot[5] = slot[5] and 0.0 <= x <= 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "total": self.total, "done": self.done,
                "status": self.status, "reason": self.reason, "batches": self.batches,
                "values": [{"system": s, "metric": m, "n": int(v[1]), "n_unscored": int(v[2]),
                            **_mean_ci(v)} for (s, m), v in self.sums.items()]}


def _mean_ci(v: Sequence[float]) -> dict[str, Any]:
    """The mean so far and its 95 % CI: the aggregates' interval, from the running sums."""
    from ragmeter.stats import interval_from_moments

    n = int(v[1])
    if not n:
        return {"mean": None, "ci_low": None, "ci_high": None}
    mean = v[0] / n
    ci = interval_from_moments(n, mean, max(v[3] / n - mean * mean, 0.0),
                               "binary" if v[4] else "unit" if v[5] else "real")
    ok = math.isfinite(ci.low) and math.isfinite(ci.high)
    return {"mean": mean, "ci_low": ci.low if ok else None, "ci_high": ci.high if ok else None}


@dataclass
class LiveRun:
    run_id: str
    name: str
    created_at: str
    tags: tuple[str, ...]
    tiers: list[TierProgress]
    updated: float
    state: str  # running | stalled | stored

    @property
    def done(self) -> int:
        return sum(x.done for x in self.tiers)

    @property
    def total(self) -> int | None:
        totals = [x.total for x in self.tiers]
        return None if any(n is None for n in totals) else sum(n or 0 for n in totals)

    def state_text(self, lang: str) -> str:
        return t(f"st_{self.state}", lang)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "name": self.name, "created_at": self.created_at,
                "tags": list(self.tags), "state": self.state, "updated": self.updated,
                "done": self.done, "total": self.total,
                "tiers": [x.to_dict() for x in self.tiers]}


_CACHE: dict[Path, tuple[tuple[int, int], list[dict[str, Any]]]] = {}
_LOCK = threading.Lock()


def _records(path: Path) -> list[dict[str, Any]]:
    """The log's records (a torn last line of a writer mid-append is skipped), re-read only
    when the file changed."""
    st = path.stat()
    key = (st.st_size, st.st_mtime_ns)
    with _LOCK:
        hit = _CACHE.get(path)
        if hit and hit[0] == key:
            return hit[1]
    out = []
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    with _LOCK:
        _CACHE[path] = (key, out)
    return out


def read_live(folder: Path, stored: bool = False) -> LiveRun | None:
    """The progress of the run in ``folder`` (``None`` when it is not a run folder)."""
    meta_path, log = folder / "meta.json", folder / "progress.jsonl"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tiers = {name: TierProgress(name) for name in meta.get("tiers") or []}
    updated = meta_path.stat().st_mtime
    if log.is_file():
        updated = log.stat().st_mtime
        for rec in _records(log):
            tier = tiers.setdefault(str(rec.get("tier")), TierProgress(str(rec.get("tier"))))
            kind = rec.get("type")
            if kind == "tier_start":
                tier.total = int(rec.get("total") or 0)
            elif kind == "batch":
                tier.add_batch(rec)
            elif kind == "tier":
                tier.status, tier.reason = rec.get("status"), rec.get("reason")
    state = "stored" if stored else (
        "running" if time.time() - updated < STALE_SECONDS else "stalled")
    return LiveRun(str(meta.get("run_id") or folder.name), str(meta.get("name") or ""),
                   str(meta.get("created_at") or ""), tuple(meta.get("tags") or ()),
                   list(tiers.values()), updated, state)


def live_rows(runs_dir: str | Path | None, stored_ids: Iterable[str]) -> list[LiveRun]:
    """Runs in ``runs_dir`` not (yet) in the store, newest first."""
    if not runs_dir:
        return []
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    known = set(stored_ids)
    folders = sorted((p for p in root.iterdir() if p.is_dir() and p.name not in known),
                     key=lambda p: p.name, reverse=True)[:MAX_LIVE]
    out = [read_live(p) for p in folders]
    return [x for x in out if x is not None]


def runs_version(runs_dir: str | Path) -> str:
    """Changes when a run folder appears or a recent run's log grows (for caches of pages that
    list the running runs)."""
    root = Path(runs_dir)
    try:
        parts = [str(root.stat().st_mtime_ns)]
        folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name,
                         reverse=True)[:MAX_LIVE]
    except OSError:
        return "-"
    for folder in folders:
        try:
            st = (folder / "progress.jsonl").stat()
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    if folders:  # a run that stopped writing turns "stalled" with time alone
        parts.append(str(int(time.time() // 60)))
    return ",".join(parts)


def find_live(runs_dir: str | Path | None, run_id: str, stored_ids: Sequence[str]
              ) -> LiveRun | None:
    if not runs_dir or "/" in run_id or "\\" in run_id or run_id.startswith("."):
        return None
    folder = Path(runs_dir) / run_id
    return read_live(folder, stored=run_id in set(stored_ids)) if folder.is_dir() else None


LIVE_WORDS = ("st_running", "st_stalled", "st_stored", "st_ok", "st_error", "st_not_run",
              "st_partial", "batches", "system", "metric", "mean", "unscored")


def _mean_text(v: Mapping[str, Any]) -> str:
    """``0.000 [0.000, 0.058]``: a live mean with its CI (``view.js`` writes the same)."""
    if v["mean"] is None:
        return "–"
    ci = "" if v["ci_low"] is None else f" [{v['ci_low']:.3f}, {v['ci_high']:.3f}]"
    return f"{v['mean']:.3f}{ci}"


def live_page(run: LiveRun, lang: str) -> str:
    """The live page's frame; ``view.js`` fills ``#live-tiers`` from :func:`LiveRun.to_dict`
    (first drawn here, then redrawn at every poll)."""
    from html import escape

    from ragmeter.view.links import href, run_href, tags_html

    words = {k: t(k, lang) for k in LIVE_WORDS}
    tiers = []
    for tier in run.tiers:
        rows = "".join(
            f"<tr><td>{escape(v['system'])}</td><td>{escape(v['metric'])}</td><td class=num>"
            f"{_mean_text(v)}</td><td class=num>"
            f"{v['n']}</td><td class=num>{v['n_unscored']}</td></tr>"
            for v in tier.to_dict()["values"])
        table = (f"<table class=live-values><thead><tr><th>{words['system']}</th><th>"
                 f"{words['metric']}</th><th class=num>{words['mean']}</th><th class=num>n"
                 f"</th><th class=num>{words['unscored']}</th></tr></thead><tbody>{rows}"
                 "</tbody></table>"
                 if rows else "")
        total = tier.total if tier.total is not None else max(tier.done, 1)
        status = f" · {escape(t('st_' + tier.status, lang))}" if tier.status else ""
        tiers.append(
            f'<section class=live-tier data-tier="{escape(tier.tier)}"><h2>{escape(tier.tier)}'
            f"</h2><progress max={total} value={tier.done}></progress><span class=count> "
            f"{tier.done} / {tier.total if tier.total is not None else '?'} · {tier.batches} "
            f"{words['batches']}{status}</span>{table}</section>")
    src = href(f"/api/live/{run.run_id}", lang=lang)
    return (f'<h1>{t("v_live_run", lang)} <code>{escape(run.run_id)}</code> · <span '
            f'id=live-state>{escape(run.state_text(lang))}</span></h1>'
            f"<p class=meta>{escape(run.name)} {tags_html(run.tags)} · {t('created', lang)} "
            f"{escape(run.created_at)}</p><p class=intro>{t('v_live_intro', lang)}</p>"
            f'<p id=live-stored class=note{"" if run.state == "stored" else " hidden"}><a href="'
            f'{escape(run_href(run.run_id, lang))}">{t("v_live_stored", lang)}</a></p>'
            f'<div id=live data-src="{escape(src)}" data-state="{escape(run.state)}" '
            f"data-words='{escape(json.dumps(words, ensure_ascii=False))}'>"
            f'<div id=live-tiers>{"".join(tiers)}</div></div>')
