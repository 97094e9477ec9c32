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

import numpy as np

from ragmeter.reports.decision import latency_label
from ragmeter.reports.i18n import plural_form, t
from ragmeter.results.statistic import LATENCY_BLOCK, LATENCY_METRICS, PERCENTILES, WALL_MS

#: a log untouched this long belongs to a process that is gone
STALE_SECONDS = 600.0
#: live runs listed at most (newest first)
MAX_LIVE = 20


@dataclass
class TierProgress:
    """One tier of a live run: samples done of total, status once finished, per system ×
    metric the values of its finished batches, and per target the calls' durations (its
    latency block: percentiles over every call so far, never a mean of batch means)."""

    tier: str
    total: int | None = None
    done: int = 0
    status: str | None = None
    reason: str | None = None
    batches: int = 0
    #: (system, metric) → [sum of values, n scored, n unscored, sum of squares,
    #: 1 while every value is 0 or 1, 1 while every value is within 0–1]
    sums: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    #: target → the calls so far (:class:`CallTimes`)
    calls: dict[str, CallTimes] = field(default_factory=dict)

    def add_batch(self, record: Mapping[str, Any]) -> None:
        ids, results = record.get("sample_ids"), record.get("results")
        if not isinstance(ids, list) or not isinstance(results, list):
            raise ValueError("a batch record's 'sample_ids' and 'results' must be lists")
        self.batches += 1
        self.done += len(ids)
        for res in _dicts(results):
            metrics = res.get("results")
            if not isinstance(metrics, Mapping):
                continue
            name = str(res.get("name"))
            meta = res.get("meta")
            if (isinstance(meta, Mapping) and meta.get("block") == LATENCY_BLOCK) or (
                    metrics and all(k in LATENCY_METRICS for k in metrics)):
                self.calls.setdefault(latency_label(name), CallTimes()).add(metrics)
                continue
            for key, m in metrics.items():
                slot = self.sums.setdefault((name, str(key)), [0.0, 0, 0, 0.0, 1, 1])
                for row in _dicts(m.get("per_sample") if isinstance(m, Mapping) else None):
                    v = _number(row.get("value"))
                    if v is None:
                        slot[2] += 1
                    else:
                        x = v
                        slot[0] += x
                        slot[1] += 1
                        slot[3] += x * x
                        slot[4] = slot[4] and x in (0.0, 1.0)
                        slot[5] = slot[5] and 0.0 <= x <= 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "total": self.total, "done": self.done,
                "status": self.status, "reason": self.reason, "batches": self.batches,
                "values": [{"system": s, "metric": m, "n": int(v[1]), "n_unscored": int(v[2]),
                            **_mean_ci(v)} for (s, m), v in self.sums.items()],
                "latency": [row for target, times in self.calls.items()
                            for row in times.rows(target)]}


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


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list (anything else: none)."""
    return [x for x in value if isinstance(x, Mapping)] if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    """A finite number, else None (unscored, or a value that is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


@dataclass
class CallTimes:
    """A target's calls in the finished batches: each call's seconds and time to first
    token, the failed calls and the batches' wall time."""

    seconds: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    calls: int = 0
    failed: int = 0
    wall_ms: int = 0

    def add(self, metrics: Mapping[str, Any]) -> None:
        for key, into in (("latency_p50", self.seconds), ("ttft_p50", self.ttft)):
            m = metrics.get(key)
            if isinstance(m, Mapping):
                into.extend(v for row in _dicts(m.get("per_sample"))
                            if (v := _number(row.get("value"))) is not None)
        err = metrics.get("error_rate")
        rows = _dicts(err.get("per_sample")) if isinstance(err, Mapping) else []
        self.calls += len(rows)
        self.failed += sum(1 for row in rows if _number(row.get("value")) == 1.0)
        tp = metrics.get("throughput")
        counts = tp.get("counts") if isinstance(tp, Mapping) else None
        wall = _number(counts.get(WALL_MS)) if isinstance(counts, Mapping) else None
        self.wall_ms += int(wall) if wall is not None else 0

    def rows(self, target: str) -> list[dict[str, Any]]:
        """The latency block's rows of this target: percentiles of every call so far,
        requests per second and the share of failed calls."""
        out = []
        for stem, values in (("latency", self.seconds), ("ttft", self.ttft)):
            if values:
                qs = np.quantile(np.asarray(values), [p / 100 for p in PERCENTILES])
                out += [{"system": target, "metric": f"{stem}_p{p}", "value": float(q),
                         "n": len(values), "unit": "s", "higher_is_better": False}
                        for p, q in zip(PERCENTILES, qs, strict=True)]
        if self.seconds and self.wall_ms:
            out.append({"system": target, "metric": "throughput",
                        "value": len(self.seconds) / (self.wall_ms / 1000.0),
                        "n": len(self.seconds), "unit": "requests/s",
                        "higher_is_better": True})
        if self.calls:
            out.append({"system": target, "metric": "error_rate",
                        "value": self.failed / self.calls, "n": self.calls, "unit": "share",
                        "higher_is_better": False})
        return out


@dataclass
class LiveRun:
    run_id: str
    name: str
    created_at: str
    tags: tuple[str, ...]
    tiers: list[TierProgress]
    updated: float
    state: str  # running | stalled | stored | unreadable
    #: why the folder cannot be read (state ``unreadable``)
    error: str | None = None

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
                "done": self.done, "total": self.total, "error": self.error,
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
    """The progress of the run in ``folder`` (``None`` when it is not a run folder: neither
    ``meta.json`` nor ``progress.jsonl``). A folder that cannot be read (a ``meta.json`` that
    is not a JSON object, a log record of the wrong shape, a file that cannot be opened) is a
    :class:`LiveRun` in the state ``unreadable`` with the reason: that row's error alone."""
    meta_path, log = folder / "meta.json", folder / "progress.jsonl"
    if not meta_path.exists() and not log.exists():
        return None
    try:
        return _read_live(folder, meta_path, log, stored)
    except Exception as exc:  # this folder's error alone; the other runs are shown
        try:
            updated = folder.stat().st_mtime
        except OSError:
            updated = 0.0
        why = str(exc).splitlines()[0][:300] if str(exc) else ""
        return LiveRun(folder.name, "", "", (), [], updated, "unreadable",
                       error=f"{type(exc).__name__}: {why}")


def _read_live(folder: Path, meta_path: Path, log: Path, stored: bool) -> LiveRun:
    if not meta_path.is_file():
        raise ValueError(f"{meta_path.name} is missing")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if not isinstance(meta, Mapping):
        raise ValueError(f"{meta_path.name} is not a JSON object")
    names = meta.get("tiers") or []
    tags = meta.get("tags") or []
    if not isinstance(names, list) or not isinstance(tags, list):
        raise ValueError(f"{meta_path.name}: 'tiers' and 'tags' must be lists")
    tiers = {str(name): TierProgress(str(name)) for name in names}
    updated = meta_path.stat().st_mtime
    if log.exists():
        updated = log.stat().st_mtime
        for n, rec in enumerate(_records(log), 1):
            if not isinstance(rec, Mapping):
                raise ValueError(f"{log.name}: record {n} is not a JSON object")
            tier = tiers.setdefault(str(rec.get("tier")), TierProgress(str(rec.get("tier"))))
            kind = rec.get("type")
            if kind == "tier_start":
                total = rec.get("total") or 0
                if isinstance(total, bool) or not isinstance(total, int):
                    raise ValueError(f"{log.name}: record {n}: 'total' is not a whole number")
                tier.total = total
            elif kind == "batch":
                tier.add_batch(rec)
            elif kind == "tier":
                tier.status = str(rec["status"]) if rec.get("status") is not None else None
                tier.reason = str(rec["reason"]) if rec.get("reason") is not None else None
    state = "stored" if stored else (
        "running" if time.time() - updated < STALE_SECONDS else "stalled")
    return LiveRun(str(meta.get("run_id") or folder.name), str(meta.get("name") or ""),
                   str(meta.get("created_at") or ""), tuple(str(x) for x in tags),
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
              "st_partial", "st_unreadable", "batches", "system", "metric", "mean", "unscored",
              "latency_block", "target", "value", "direction", "lower_better",
              "higher_better", "unit_s", "unit_requests/s", "unit_share")


def latency_table(rows: Sequence[Mapping[str, Any]], words: Mapping[str, str]) -> str:
    """A tier's latency block on the live page (the same rows ``view.js`` redraws)."""
    from html import escape

    if not rows:
        return ""
    trs = "".join(
        f'<tr data-metric="{escape(str(v["metric"]))}"><td>{escape(str(v["system"]))}</td>'
        f'<td>{escape(str(v["metric"]))}</td><td class=num>{float(v["value"]):.3f} '
        f'{escape(words.get("unit_" + str(v["unit"]), str(v["unit"])))}</td><td class=num>'
        f'{v["n"]}</td><td>{escape(words["higher_better" if v["higher_is_better"] else "lower_better"])}'
        "</td></tr>" for v in rows)
    return (f"<h3>{escape(words['latency_block'])}</h3><table class=live-latency><thead><tr>"
            f"<th>{escape(words['target'])}</th><th>{escape(words['metric'])}</th><th class=num>"
            f"{escape(words['value'])}</th><th class=num>n</th><th>"
            f"{escape(words['direction'])}</th></tr></thead><tbody>{trs}</tbody></table>")


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
    words["lang"] = lang
    tiers = []
    for tier in run.tiers:
        data = tier.to_dict()
        rows = "".join(
            f"<tr><td>{escape(v['system'])}</td><td>{escape(v['metric'])}</td><td class=num>"
            f"{_mean_text(v)}</td><td class=num>"
            f"{v['n']}</td><td class=num>{v['n_unscored']}</td></tr>"
            for v in data["values"])
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
            f"{plural_form(tier.batches, words['batches'].split('|'), lang)}{status}</span>"
            f"{table}"
            f"{latency_table(data['latency'], words)}</section>")
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
