"""Run a benchmark config: tiers in order, samples in batches, every finished batch on disk.

Resumability: each run has a directory ``<run_dir>/<run_id>/`` with ``meta.json`` (config
fingerprint, tiers, limit) and ``progress.jsonl``, an append-only log flushed and fsynced
after every record:

* ``{"type": "batch", "tier", "sample_ids", "results": [EvalResult...], "stats"}`` — one
  finished batch of a per-sample tier;
* ``{"type": "tier_start", "tier", "total", "at"}`` — a per-sample tier started (its size);
* ``{"type": "tier", "tier", "status", "reason", "stats", "results"?}`` — a finished tier
  (``results`` only for whole-dataset tiers; per-sample tiers are merged from their batches).

``--resume RUN_ID`` reads the log (a torn last line from ``kill -9`` is ignored), skips every
finished (tier, sample id) and finished tier, runs the rest and merges. Merged results are
ordered by the dataset, so a resumed run equals a clean run. LLM calls of a batch that was
cut off are repeated only if the judge cache did not keep them (the engine caches replies).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ragmeter.cost.pricing import is_cost_block
from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError, MissingExtraError, RagmeterError, UsageError
from ragmeter.journal import Journal
from ragmeter.results.lost import scored_nothing
from ragmeter.results.records import EvalResult, MetricResult, SampleScore, Signature
from ragmeter.results.runs import run_id_problem
from ragmeter.results.store import (
    ResultStore,
    StoredRun,
    TierRecord,
    git_commit,
    new_run_id,
    utc_now,
)
from ragmeter.runner.config import BenchConfig, TierConfig, parse_tags
from ragmeter.runner.costing import with_judge_cost
from ragmeter.secrets import mask_text
from ragmeter.tiers.context import TierContext, TierNotRunnable, TierStats
from ragmeter.tiers.registry import Tier, canonical_tier, judged_tier_names

ProgressHook = Callable[[str, str, dict[str, Any]], None]
#: ``-v`` shows the main steps (tiers, datasets) with their times; ``-vv`` every batch
_logger = logging.getLogger("ragmeter.runner")


# --------------------------------------------------------------------------- progress log
class ProgressLog(Journal):
    """The run's journal of finished batches and tiers (one fsynced line each)."""

    def batches(self, tier: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == "batch" and r.get("tier") == tier]

    def tier_done(self, tier: str) -> dict[str, Any] | None:
        done = [r for r in self.records if r.get("type") == "tier" and r.get("tier") == tier]
        return done[-1] if done else None


# --------------------------------------------------------------------------- merging
def merge_batches(batches: Iterable[Sequence[Mapping[str, Any]]],
                  order: Mapping[str, int] | None = None) -> list[EvalResult]:
    """Concatenate per-batch EvalResults (dicts) into one EvalResult per system.

    Per-sample values are concatenated (ordered by ``order`` — the dataset position — when
    given), ``counts`` are summed, signature/meta come from the first batch.
    """
    systems: dict[str, dict[str, Any]] = {}
    for batch in batches:
        for res in batch:
            sys_ = systems.setdefault(res["name"], {"meta": dict(res.get("meta", {})),
                                                    "metrics": {}})
            for key, m in res.get("results", {}).items():
                slot = sys_["metrics"].setdefault(key, {"first": m, "rows": [], "counts": {}})
                slot["rows"].extend(m.get("per_sample", []))
                for c, v in m.get("counts", {}).items():
                    slot["counts"][c] = slot["counts"].get(c, 0) + int(v)
    out = []
    big = 1 << 60
    for name, sys_ in systems.items():
        er = EvalResult(name, meta=sys_["meta"])
        for key, slot in sys_["metrics"].items():
            rows = slot["rows"]
            if order is not None:
                rows = sorted(rows, key=lambda r: order.get(r["sample_id"], big))
            first = slot["first"]
            agg = first.get("aggregate", {})
            mr = MetricResult.from_scores(
                first["metric"],
                [SampleScore(r["sample_id"], r.get("value"), r.get("reason"), r.get("details"))
                 for r in rows],
                Signature.parse(first["signature"]), counts=slot["counts"],
                higher_is_better=bool(first.get("higher_is_better", True)),
                **({"seed": int(agg["seed"])} if "seed" in agg else {}),
                **({"n_boot": int(agg["n_boot"])} if "n_boot" in agg else {}),
            )
            er.results[key] = mr
        out.append(er)
    return out


# --------------------------------------------------------------------------- datasets
def load_dataset(config: BenchConfig, name: str | None) -> tuple[list[Sample], str]:
    """Samples of a configured dataset and its hash."""
    ds = config.dataset(name)
    if ds is None:
        return [], "none"
    if not ds.path.exists():
        raise ConfigError(f"datasets[{config.datasets.index(ds)}].path",
                          f"file not found: {ds.path}")
    # [contact, issue 11] layout detected by content (not by file name); hash over gold fields
    from ragmeter.data.hashing import gold_hash
    from ragmeter.data.loaders import load_dataset_file

    loaded = load_dataset_file(ds.path, format=ds.format, skip_invalid=ds.skip_invalid)
    samples = list(loaded.samples)
    return samples, gold_hash(samples)


# --------------------------------------------------------------------------- runner
@dataclass
class RunPlan:
    run_id: str
    run_dir: Path
    tiers: list[TierConfig]
    limit: int | None
    resumed: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


def plan_run(config: BenchConfig, *, tiers: Sequence[str] | None = None,
             limit: int | None = None, resume: str | None = None,
             run_id: str | None = None, tags: Sequence[str] = ()) -> RunPlan:
    """Decide run id, tiers and limit; on resume check the config is the one of that run.

    The run's tags are the config's ``tags`` plus ``tags`` (``run --tag``); a resumed run keeps
    its own and gains the new ones."""
    extra_tags = parse_tags(list(tags), "--tag") if tags else ()
    for option, value in (("--resume", resume), ("--run-id", run_id)):
        if value is not None and (why := run_id_problem(value)) is not None:
            raise UsageError(option, why)
    if resume:
        run_dir = config.run_dir / resume
        meta_path = run_dir / "meta.json"
        if not meta_path.is_file():
            raise RagmeterError(f"cannot resume run '{resume}': {meta_path} does not exist")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("fingerprint") != config.fingerprint():
            raise ConfigError("config", f"differs from the config run '{resume}' was started "
                              "with; start a new run instead of --resume")
        want = list(meta.get("tiers", []))
        if tiers:
            want = [canonical_tier(t) for t in tiers]
        if limit is not None and limit != meta.get("limit"):
            raise UsageError("--limit", f"run '{resume}' was started with limit "
                              f"{meta.get('limit')}, got {limit}")
        chosen = [t for t in config.tiers if t.name in want]
        meta["tags"] = list(dict.fromkeys([*meta.get("tags", []), *config.tags, *extra_tags]))
        return RunPlan(resume, run_dir, chosen, meta.get("limit"), True, meta)
    names = [t.name for t in config.tiers]
    chosen = list(config.tiers)
    if tiers:
        wanted = [canonical_tier(t) for t in tiers]
        for t in wanted:
            if t not in names:
                raise UsageError("--tier", f"tier {t!r} is not in the config", names)
        chosen = [t for t in config.tiers if t.name in wanted]
    rid = run_id or new_run_id()
    run_dir = config.run_dir / rid
    if (run_dir / "meta.json").exists():
        raise RagmeterError(f"run '{rid}' already exists in {config.run_dir}; use --resume {rid}")
    lim = limit if limit is not None else config.limit
    meta = {"run_id": rid, "name": config.name, "fingerprint": config.fingerprint(),
            "tiers": [t.name for t in chosen], "limit": lim, "created_at": utc_now(),
            "git_commit": git_commit(config.base_dir),
            "tags": list(dict.fromkeys([*config.tags, *extra_tags]))}
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return RunPlan(rid, run_dir, chosen, lim, False, meta)


def _reason(exc: BaseException) -> str:
    # [contact, issue 11] keep the whole reason (a DataError's file:line:field list starts on
    # its second line); long texts are cut at 2000 characters, lines joined with "; "
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    joined = "; ".join(lines)
    return mask_text(joined if len(joined) <= 2000 else joined[:2000] + " ...")


def _not_run_reason(exc: BaseException) -> str | None:
    if isinstance(exc, TierNotRunnable):
        return _reason(exc)
    if isinstance(exc, MissingExtraError):
        return _reason(exc)
    if isinstance(exc, ModuleNotFoundError):
        return f"module {exc.name or '?'} is not available ({_reason(exc)})"
    if isinstance(exc, ImportError):
        return f"import failed: {_reason(exc)}"
    return None


class BenchmarkRunner:
    """Runs the tiers of a plan; ``hook(tier, event, info)`` receives progress events."""

    def __init__(self, config: BenchConfig, plan: RunPlan, hook: ProgressHook | None = None):
        self.config = config
        self.plan = plan
        self.hook = hook or (lambda tier, event, info: None)
        self.log = ProgressLog(plan.run_dir / "progress.jsonl")
        self.tiers: dict[str, Tier] = {t.name: config.tier(t.name) for t in config.tiers}
        self._datasets: dict[str | None, tuple[list[Sample], str]] = {}
        self.used_samples: dict[str, dict[str, Any]] = {}
        self.records: dict[str, TierRecord] = {}
        self.current: TierConfig | None = None

    def samples_for(self, tier: TierConfig) -> tuple[list[Sample], str]:
        """The tier's samples: ``options.sample_ids`` (chosen from the whole dataset, in that
        order) or the dataset, then capped by ``--limit``/``limit`` and ``options.limit``."""
        if tier.dataset not in self._datasets:
            t0 = time.perf_counter()
            samples, dh = load_dataset(self.config, tier.dataset)
            if samples:
                _logger.info("dataset %s: %d samples loaded in %.2f s (hash %s)",
                             tier.dataset or "(first)", len(samples),
                             time.perf_counter() - t0, dh[:12])
            ids = [s.id for s in samples]
            if len(set(ids)) != len(ids):
                dup = next(i for i in ids if ids.count(i) > 1)
                raise ConfigError(f"datasets ({tier.dataset or 'first'})",
                                  f"sample id {dup!r} appears twice; ids must be unique")
            self._datasets[tier.dataset] = (samples, dh)
        samples, dh = self._datasets[tier.dataset]
        wanted = _runner_option(tier.options, "sample_ids")
        if wanted:
            # a chosen subset (e.g. a slow local judge on a few mixed cases), in config order
            by_id = {s.id: s for s in samples}
            unknown = [i for i in wanted if str(i) not in by_id]
            if unknown:
                raise ConfigError(f"tiers.{tier.name}.options.sample_ids",
                                  f"unknown sample ids {unknown[:5]}")
            samples = [by_id[str(i)] for i in wanted]
        for cap in (self.plan.limit, _runner_option(tier.options, "limit")):
            if cap is not None:
                samples = samples[: max(0, int(cap))]
        return samples, dh

    def run(self) -> dict[str, TierRecord]:
        try:
            for tier in self.plan.tiers:
                self.current = tier
                self.records[tier.name] = self._sliced(tier, self.run_tier(tier))
            self.current = None
        finally:
            self.log.close()
        return self.records

    def _sliced(self, tier: TierConfig, rec: TierRecord) -> TierRecord:
        """Keep each sample's slice (config ``slices``) with the tier's results."""
        if self.config.slices is None or rec.status != "ok" or not rec.results:
            return rec
        from ragmeter.errors import RagmeterError
        from ragmeter.results.slices import attach_slices

        try:
            samples, _ = self.samples_for(tier)
            attach_slices(rec.results, samples, self.config.slices)
        except RagmeterError as exc:  # e.g. this tier's dataset lacks the field
            _logger.warning("tier %s: not sliced: %s", tier.name, exc)
        return rec

    def interrupted_records(self) -> dict[str, TierRecord]:
        """The finished tiers plus, for a per-sample tier cut off mid-run, its finished
        batches merged as a ``partial`` tier (what ``--resume`` would not redo)."""
        out = dict(self.records)
        tier = self.current
        if tier is None or tier.name in out or not self.tiers[tier.name].per_sample:
            return out
        batches = self.log.batches(tier.name)
        if not batches:
            return out
        stats = TierStats()
        for b in batches:
            stats.merge(b.get("stats", {}))
        samples = self._datasets.get(tier.dataset, ([], ""))[0]
        order = {s.id: i for i, s in enumerate(samples)}
        done = sum(len(b["sample_ids"]) for b in batches)
        total = len(self.samples_for(tier)[0]) if tier.dataset in self._datasets else None
        of = f" of {total}" if total is not None else ""
        out[tier.name] = TierRecord(
            tier.name, "partial",
            f"interrupted after {done}{of} samples; finish it with --resume {self.plan.run_id}",
            merge_batches((b["results"] for b in batches), order), stats.to_dict())
        return out

    def run_tier(self, tier: TierConfig) -> TierRecord:
        done = self.log.tier_done(tier.name)
        spec = self.tiers[tier.name]
        stats = TierStats()
        if done is not None:
            stats.merge(done.get("stats", {}))
            results = ([EvalResult.from_dict(r) for r in done.get("results", [])]
                       if "results" in done else None)
            if results is None:
                samples, _ = self.samples_for(tier)
                self._remember(samples)
                results = merge_batches((b["results"] for b in self.log.batches(tier.name)),
                                        {s.id: i for i, s in enumerate(samples)})
                for b in self.log.batches(tier.name):
                    self._annotate(b.get("annotations"))
            self._annotate(done.get("annotations"))
            self.hook(tier.name, "skipped_done", {"status": done["status"],
                                                  "stats": stats.to_dict()})
            return TierRecord(tier.name, done["status"], done.get("reason"), results,
                              stats.to_dict())
        t0 = time.perf_counter()
        _logger.info("tier %s: started", tier.name)
        try:
            samples, dh = self.samples_for(tier)
            self._remember(samples)
            ctx = TierContext(self.config, tier, dh, samples, stats)
            if spec.per_sample:
                results = self._run_batches(tier, spec, ctx, samples)
            else:
                _logger.debug("tier %s: one pass over %d sample(s), options %s", tier.name,
                              len(samples), tier.options)
                self.hook(tier.name, "start", {"total": 1, "done": 0, "stats": stats})
                results = with_judge_cost(partial(_tier_results, spec, ctx, samples,
                                                  tier.options), tier.name,
                                          [s.id for s in samples], dataset=dh, seed=ctx.seed)
                self.hook(tier.name, "advance", {"n": 1, "stats": stats})
            status, reason = "ok", None
            if not results:
                status, reason = "not_run", "the tier produced no results"
            elif scored_nothing(measured := [r for r in results if not is_cost_block(r)]):
                status, reason = "error", scored_nothing(measured)  # scored nothing: not ok
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # one broken tier never stops the others
            not_run = _not_run_reason(exc)
            status = "not_run" if not_run else "error"
            reason = not_run or f"{type(exc).__name__}: {_reason(exc)}"
            results = []
        rec: dict[str, Any] = {"type": "tier", "tier": tier.name, "status": status,
                               "reason": reason, "stats": stats.to_dict()}
        if not spec.per_sample or status != "ok":
            rec["results"] = [r.to_dict() for r in results]
        if not spec.per_sample and status == "ok":
            rec["annotations"] = ctx.take_annotations()
            self._annotate(rec["annotations"])
        self.log.append(rec)
        _logger.info("tier %s: %s in %.2f s (%d result(s))%s", tier.name, status,
                     time.perf_counter() - t0, len(results), f": {reason}" if reason else "")
        self.hook(tier.name, "end", {"status": status, "reason": reason, "stats": stats})
        return TierRecord(tier.name, status, reason, results, stats.to_dict())

    def _annotate(self, annotations: Mapping[str, Mapping[str, Any]] | None) -> None:
        for sid, extra in (annotations or {}).items():
            self.used_samples.setdefault(sid, {"id": sid}).update(extra)

    def _remember(self, samples: Sequence[Sample]) -> None:
        for s in samples:
            self.used_samples.setdefault(s.id, s.to_dict())

    def _run_batches(self, tier: TierConfig, spec: Tier, ctx: TierContext,
                     samples: list[Sample]) -> list[EvalResult]:
        previous = self.log.batches(tier.name)
        finished = {sid for b in previous for sid in b["sample_ids"]}
        for b in previous:
            ctx.stats.merge(b.get("stats", {}))
            self._annotate(b.get("annotations"))
        todo = [s for s in samples if s.id not in finished]
        size = tier.batch_size or self.config.batch_size
        self.hook(tier.name, "start", {"total": len(samples), "done": len(samples) - len(todo),
                                       "stats": ctx.stats})
        # the tier's size, for a live view of the run (readers of batches ignore it)
        self.log.append({"type": "tier_start", "tier": tier.name, "total": len(samples),
                         "at": time.time()})
        for start in range(0, len(todo), size):
            batch = todo[start:start + size]
            before = ctx.stats.to_dict()
            tb = time.perf_counter()
            results = with_judge_cost(partial(_tier_results, spec, ctx, batch, tier.options),
                                      tier.name, [s.id for s in batch],
                                      dataset=ctx.dataset_hash, seed=ctx.seed)
            _logger.debug("tier %s: batch of %d sample(s) (%d-%d of %d to do) in %.2f s",
                          tier.name, len(batch), start + 1, start + len(batch), len(todo),
                          time.perf_counter() - tb)
            ids = {s.id for s in batch}
            for r in results:
                for m in r.results.values():
                    extra = set(m.sample_ids) - ids
                    if extra:
                        raise RagmeterError(f"tier '{tier.name}' returned values for samples "
                                            f"outside its batch: {sorted(extra)[:3]}")
            after = ctx.stats.to_dict()
            delta = {k: after[k] - before[k] for k in after}
            notes = ctx.take_annotations()
            self.log.append({"type": "batch", "tier": tier.name,
                             "sample_ids": [s.id for s in batch],
                             "results": [r.to_dict(aggregate=False) for r in results],
                             "stats": delta,
                             "annotations": notes, "at": time.time()})
            self._annotate(notes)
            self.hook(tier.name, "advance", {"n": len(batch), "stats": ctx.stats})
        order = {s.id: i for i, s in enumerate(samples)}
        return merge_batches((b["results"] for b in self.log.batches(tier.name)), order)


def _runner_option(options: Any, key: str) -> Any:
    """``limit`` / ``sample_ids`` of a tier's options (an ``Options`` instance or a plug-in's
    mapping)."""
    return options.get(key) if isinstance(options, Mapping) else getattr(options, key, None)


def _tier_results(spec: Tier, ctx: TierContext, samples: list[Sample], options: Any
                  ) -> list[EvalResult]:
    return _as_results(spec.run(ctx, samples, options))


def _as_results(res: Any) -> list[EvalResult]:
    if isinstance(res, EvalResult):
        return [res]
    if res is None:
        return []
    out = list(res.values()) if isinstance(res, Mapping) else list(res)
    for r in out:
        if not isinstance(r, EvalResult):
            raise RagmeterError(f"a tier returned {type(r).__name__}, not EvalResult")
    return out


def run_signature(config: BenchConfig, plan: RunPlan) -> str:
    return str(Signature.make(bench=config.name, config=config.fingerprint(), seed=config.seed,
                              k=list(config.k), limit=plan.limit,
                              tiers=[t.name for t in plan.tiers]))


def demo_judges(config: BenchConfig, records: Mapping[str, TierRecord] | None = None) \
        -> list[str]:
    """Demo (``local-demo``) judges behind tiers that produced results."""
    used: set[str] = set()
    judged = judged_tier_names()
    for t in config.tiers:
        rec = (records or {}).get(t.name)
        if records is not None and (rec is None or rec.status != "ok"):
            continue
        if t.judges:
            used.update(t.judges)
        elif t.judge:
            used.add(t.judge)
        elif t.name in judged and config.judges:
            used.add(config.judges[0].name if t.name != "judge_quality"
                     else ",".join(j.name for j in config.judges))
    names = {n for u in used for n in u.split(",")}
    return [j.name for j in config.judges if j.backend == "local-demo" and j.name in names]


def build_stored_run(config: BenchConfig, plan: RunPlan, records: Mapping[str, TierRecord],
                     samples: Mapping[str, Mapping[str, Any]], status: str) -> StoredRun:
    # tiers of the config that were not selected are listed as not run, with the reason
    tiers: dict[str, TierRecord] = {}
    for t in config.tiers:
        if t.name in records:
            tiers[t.name] = records[t.name]
        elif status in ("complete", "failed"):
            tiers[t.name] = TierRecord(t.name, "not_run", "not selected (--tier)")
    meta = {"run_dir": str(plan.run_dir), "limit": plan.limit,
            "demo_judges": demo_judges(config, tiers), "resumed": plan.resumed,
            "k": list(config.k), "seed": config.seed, "tags": list(plan.meta.get("tags", []))}
    return StoredRun(id=plan.run_id, created_at=plan.meta.get("created_at") or utc_now(),
                     name=config.name, signature=run_signature(config, plan),
                     config=config.masked(), git_commit=plan.meta.get("git_commit"),
                     status=status, tiers=tiers, samples={k: dict(v) for k, v in samples.items()},
                     meta=meta)


def run_benchmark(config: BenchConfig, *, tiers: Sequence[str] | None = None,
                  limit: int | None = None, resume: str | None = None,
                  run_id: str | None = None, store: str | None = None,
                  hook: ProgressHook | None = None, save: bool = True,
                  on_plan: Callable[[str], Any] | None = None,
                  tags: Sequence[str] = ()) -> StoredRun:
    """Run (or resume) a benchmark and save it to the results store; returns the stored run.

    On ``KeyboardInterrupt`` the partial run is saved with status ``interrupted`` (finished
    tiers, and the finished batches of the tier that was cut off as a ``partial`` tier) and the
    exception is re-raised; ``--resume`` finishes it.
    """
    if config.targets:   # an unset ${env:NAME} or a missing module: exit 2 before any work
        from ragmeter.targets.session import check_targets

        check_targets(config.targets, mode=config.target_mode)
    plan = plan_run(config, tiers=tiers, limit=limit, resume=resume, run_id=run_id, tags=tags)
    _logger.info("run %s%s: tiers %s, limit %s, folder %s", plan.run_id,
                 " (resumed)" if plan.resumed else "", ", ".join(t.name for t in plan.tiers),
                 plan.limit, plan.run_dir)
    if on_plan is not None:
        on_plan(plan.run_id)
    runner = BenchmarkRunner(config, plan, hook)
    url = store or config.store
    try:
        records = runner.run()
    except KeyboardInterrupt:
        if save:
            with contextlib.suppress(Exception):  # best effort on the way out
                partial = build_stored_run(config, plan, runner.interrupted_records(),
                                           runner.used_samples, "interrupted")
                ResultStore(url).save_run(partial)
        raise
    # a run with an errored tier is stored as failed, so the registry never shows it as fine
    status = "failed" if any(r.status == "error" for r in records.values()) else "complete"
    run = build_stored_run(config, plan, records, runner.used_samples, status)
    if save:
        ResultStore(url).save_run(run)
    return run
