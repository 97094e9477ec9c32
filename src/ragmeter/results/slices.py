"""Results broken down by slices (question type, section, language, turn, any metadata key),
with honest uncertainty per slice.

* :func:`slice_keys` — each sample's slice: the values of the ``by`` fields (a sample field
  such as ``type``, ``turn`` — the index of the current turn in its conversation —,
  ``language`` — the ``language`` metadata key, else detected from the question —, or any
  metadata key such as ``section`` or ``target``);
* :func:`slice_results` — per slice and metric: mean, 95% CI and ``n``. A cell with fewer than
  ``min_n`` scored samples is *withheld*: its ``n`` is shown, its mean is not;
* :func:`compare_slices` — a paired test of system B against system A per slice and metric
  (the samples both scored), with the p-values of the whole family (every slice × metric
  tested) adjusted by Holm (family-wise error, default) or Benjamini–Hochberg (false-discovery
  rate). Only adjusted p-values decide ``significant`` and ``regression``.

Intervals per slice: the one interval of a mean (:func:`ragmeter.stats.mean_interval`, as
the aggregates use): Clopper–Pearson for yes/no (0/1) values, Clopper–Pearson on the effective
sample size for other values in 0–1 (graded verdicts, MRR near 1), Student's t otherwise (the
percentile bootstrap under-covers at the small ``n`` of a slice and collapses at 0 or 1); the
seeded simulations in ``benchmarks/slice_error_rates.py`` and ``benchmarks/ci_coverage.py``
check coverage and error rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from ragmeter.data.sample import Sample
from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult, MetricResult, Signature
from ragmeter.stats import DEFAULT_N_RESAMPLES, DEFAULT_SEED, mean_interval, paired_test
from ragmeter.stats.multiple import CORRECTIONS, adjust

DEFAULT_MIN_N = 10
NONE_VALUE = "(none)"
_SAMPLE_FIELDS = {f.name for f in fields(Sample)}
_DERIVED = ("turn", "language")


def parse_by(by: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"type,section"`` or ``["type", "section"]`` → ``("type", "section")``."""
    if by is None:
        return ()
    items = by.split(",") if isinstance(by, str) else [x for b in by for x in str(b).split(",")]
    out = tuple(dict.fromkeys(x.strip() for x in items if x.strip()))
    if not out and by:
        raise ConfigError("by", f"no field named in {by!r}")
    return out


def _text(v: Any) -> str | None:
    if v is None or v == "" or v == [] or v == {}:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def slice_value(sample: Sample, name: str) -> str | None:
    """The value of field ``name`` for ``sample`` as text (``None`` when it has none)."""
    if name in sample.metadata:
        return _text(sample.metadata[name])
    if name == "turn":
        return str(sample.turn)
    if name == "language":
        from ragmeter.text import detect_language

        text = [t for t in (sample.user_input, sample.response) if t]
        return detect_language(text) if text else None
    if name in _SAMPLE_FIELDS:
        return _text(getattr(sample, name))
    return None


def slice_keys(samples: Sequence[Sample], by: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Sample id → its slice (one value per ``by`` field; ``(none)`` where missing).

    A field that no sample has is a :class:`ConfigError` (a typo would make one slice).
    """
    if not by:
        raise ConfigError("by", "name at least one field to slice by")
    keys: dict[str, tuple[str, ...]] = {}
    seen = dict.fromkeys(by, False)
    for s in samples:
        vals = []
        for name in by:
            v = slice_value(s, name)
            seen[name] = seen[name] or v is not None
            vals.append(NONE_VALUE if v is None else v)
        keys[s.id] = tuple(vals)
    missing = [n for n, ok in seen.items() if not ok]
    if missing and samples:
        raise ConfigError("by", f"no sample has a value for {', '.join(missing)} (slice by a "
                          "sample field — type, turn, language, … — or a metadata key)")
    return keys


def mean_ci(x: np.ndarray, level: float = 0.95) -> tuple[float, float, str]:
    """``(low, high, method)`` of the mean of ``x``: :func:`ragmeter.stats.mean_interval`."""
    ci = mean_interval(x, level)
    return (ci.low, ci.high, ci.method)


def slice_label(by: Sequence[str], key: Sequence[str]) -> str:
    return ",".join(f"{b}={v}" for b, v in zip(by, key, strict=True))


@dataclass(frozen=True)
class SliceCell:
    """One slice × metric: mean and CI over the slice's scored samples (``None`` when
    withheld: fewer than ``min_n`` scored)."""

    metric: str
    key: tuple[str, ...]
    label: str
    n: int
    n_unscored: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    withheld: bool
    ci_method: str = "-"


@dataclass(frozen=True)
class SliceTest:
    """B against A on one slice × metric (B − A), raw and family-adjusted p-value."""

    metric: str
    key: tuple[str, ...]
    label: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    significant: bool
    regression: bool
    ci_method: str = "-"


@dataclass
class SliceTable:
    """Per-slice cells of one system, and (from :func:`compare_slices`) per-slice tests."""

    by: tuple[str, ...]
    system: str
    cells: list[SliceCell]
    min_n: int = DEFAULT_MIN_N
    level: float = 0.95
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    tests: list[SliceTest] = field(default_factory=list)
    baseline: str | None = None
    correction: str = "holm"
    alpha: float = 0.05
    seed: int = DEFAULT_SEED
    n_resamples: int = DEFAULT_N_RESAMPLES
    #: size of the family the p-values were adjusted over (default: this table's tests)
    family: int | None = None

    @property
    def signature(self) -> Signature:
        methods = sorted({c.ci_method for c in self.cells if c.ci_method != "-"})
        diff_methods = sorted({t.ci_method for t in self.tests if t.ci_method != "-"})
        return Signature.make(
            slices="+".join(self.by), min_n=self.min_n,
            ci=f"{'/'.join(methods) or '-'}@{self.level:g}",
            test=f"paired-randomization~{self.n_resamples}" if self.tests else None,
            diff_ci="/".join(diff_methods) if diff_methods else None,
            correction=self.correction if self.tests else None,
            family=(self.family or len(self.tests)) if self.tests else None,
            alpha=self.alpha if self.tests else None, seed=self.seed)

    def metrics(self) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.cells))

    def worst(self, metric: str) -> SliceCell | None:
        """The shown slice with the worst mean of ``metric`` (withheld cells never count)."""
        shown = [c for c in self.cells if c.metric == metric and not c.withheld]
        if not shown:
            return None
        hib = self.higher_is_better.get(metric, True)
        return (min if hib else max)(shown, key=lambda c: c.mean)  # type: ignore[arg-type,return-value]

    def regressed(self, metric: str | None = None) -> list[SliceTest]:
        """Slices where B is significantly worse than A after the family's adjustment."""
        return [t for t in self.tests if t.regression and metric in (None, t.metric)]

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("cells", "tests")}
        d["cells"] = [asdict(c) for c in self.cells]
        d["tests"] = [asdict(t) for t in self.tests]
        d["signature"] = str(self.signature)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SliceTable:
        def cell(c: Mapping[str, Any]) -> SliceCell:
            return SliceCell(**{**c, "key": tuple(c["key"])})

        def test(t: Mapping[str, Any]) -> SliceTest:
            return SliceTest(**{**t, "key": tuple(t["key"])})

        keep = {f.name for f in fields(cls)} - {"cells", "tests", "by"}
        return cls(by=tuple(d["by"]), cells=[cell(c) for c in d["cells"]],
                   tests=[test(t) for t in d.get("tests", [])],
                   **{k: v for k, v in d.items() if k in keep})


def _groups(keys: Mapping[str, tuple[str, ...]], ids: Sequence[str]
            ) -> dict[tuple[str, ...], list[int]]:
    out: dict[tuple[str, ...], list[int]] = {}
    for i, sid in enumerate(ids):
        k = keys.get(sid)
        if k is not None:
            out.setdefault(k, []).append(i)
    return dict(sorted(out.items()))


def _keys(samples: Sequence[Sample] | Mapping[str, tuple[str, ...]], by: Sequence[str]
          ) -> dict[str, tuple[str, ...]]:
    if isinstance(samples, Mapping):
        return dict(samples)
    return slice_keys(samples, by)


def _clip(lo: float, hi: float, rng: tuple[float, float] | None) -> tuple[float, float]:
    """An interval cut to the metric's declared range (a t interval may pass it)."""
    if rng is None:
        return lo, hi
    return max(lo, rng[0]), min(hi, rng[1])


def _cells(mr: MetricResult, keys: Mapping[str, tuple[str, ...]], by: Sequence[str],
           min_n: int, level: float, rng: tuple[float, float] | None = None
           ) -> list[SliceCell]:
    out = []
    for key, idx in _groups(keys, mr.sample_ids).items():
        v = mr.values[idx]
        x = v[~np.isnan(v)]
        n = int(x.size)
        withheld = n < min_n
        lo = hi = mean = None
        method = "-"
        if not withheld:
            lo, hi, method = mean_ci(x, level)
            lo, hi = _clip(lo, hi, rng)
            mean = float(x.mean())
        out.append(SliceCell(mr.metric, key, slice_label(by, key), n, len(idx) - n, mean,
                             lo, hi, withheld, method))
    return out


def slice_results(result: EvalResult, samples: Sequence[Sample] | Mapping[str, tuple[str, ...]],
                  by: str | Sequence[str], *, min_n: int = DEFAULT_MIN_N, level: float = 0.95,
                  metrics: Sequence[str] | None = None,
                  value_ranges: Mapping[str, tuple[float, float] | None] | None = None
                  ) -> SliceTable:
    """Per-slice mean, CI and ``n`` of every metric of ``result`` (or ``metrics``).

    ``samples``: the evaluated samples (their fields give the slices) or a ready
    ``sample id → slice`` mapping; ``value_ranges``: metric → its declared range, to which
    the intervals are cut (``ragmeter.reports.slices.value_ranges``).
    """
    fields_ = parse_by(by)
    if min_n < 1:
        raise ConfigError("min_n", f"must be >= 1, got {min_n}")
    keys = _keys(samples, fields_)
    names = list(metrics) if metrics is not None else list(result.results)
    rngs = value_ranges or {}
    cells = [c for m in names
             for c in _cells(result[m], keys, fields_, min_n, level, rngs.get(m))]
    return SliceTable(fields_, result.name, cells, min_n, level,
                      {m: result[m].higher_is_better for m in names})


def compare_slices(a: EvalResult, b: EvalResult,
                   samples: Sequence[Sample] | Mapping[str, tuple[str, ...]],
                   by: str | Sequence[str], *, min_n: int = DEFAULT_MIN_N,
                   correction: str = "holm", alpha: float = 0.05, seed: int = DEFAULT_SEED,
                   n_resamples: int = DEFAULT_N_RESAMPLES, level: float = 0.95,
                   metrics: Sequence[str] | None = None,
                   value_ranges: Mapping[str, tuple[float, float] | None] | None = None
                   ) -> SliceTable:
    """B's per-slice cells and a paired test of B against A per slice × metric, the whole
    family's p-values adjusted by ``correction`` (``holm`` or ``bh``)."""
    if correction not in CORRECTIONS or correction == "none":
        raise ConfigError("correction", f"unknown correction {correction!r}",
                          [c for c in CORRECTIONS if c != "none"])
    names = [m for m in (metrics or list(b.results)) if m in a.results and m in b.results]
    table = slice_results(b, samples, by, min_n=min_n, level=level, metrics=names,
                          value_ranges=value_ranges)
    keys = _keys(samples, table.by)
    raw: list[tuple[str, tuple[str, ...], Any]] = []
    for m in names:
        ma, mb = a[m], b[m]
        va, vb = ma.by_id(), mb.by_id()
        for key, idx in _groups(keys, mb.sample_ids).items():
            ids = [mb.sample_ids[i] for i in idx]
            both = [s for s in ids if va.get(s) is not None and vb.get(s) is not None]
            if len(both) < min_n:
                continue
            # each test its own resamples (seed + its index): Monte Carlo error independent
            pc = paired_test(np.asarray([va[s] for s in both]), np.asarray([vb[s] for s in both]),
                             metric=m, seed=seed + len(raw), n_resamples=n_resamples,
                             level=level, higher_is_better=mb.higher_is_better)
            raw.append((m, key, pc))
    p_adj = adjust([pc.p_value for _, _, pc in raw], correction)
    for (m, key, pc), q in zip(raw, p_adj, strict=True):
        worse = pc.diff < 0 if pc.higher_is_better else pc.diff > 0
        table.tests.append(SliceTest(m, key, slice_label(table.by, key), pc.n, pc.mean_a,
                                     pc.mean_b, pc.diff, pc.ci_low, pc.ci_high, pc.p_value,
                                     float(q), bool(q < alpha), bool(q < alpha and worse),
                                     pc.ci_method))
    table.baseline, table.correction, table.alpha = a.name, correction, alpha
    table.seed, table.n_resamples = seed, n_resamples
    return table


def adjust_family(tables: Sequence[SliceTable], correction: str) -> None:
    """Adjust the per-slice tests of several tables (several systems, several result pairs)
    as one family; each table then states the family's size and correction."""
    from dataclasses import replace

    tests = [t for tb in tables for t in tb.tests]
    q = adjust([t.p_value for t in tests], correction)
    k = 0
    for tb in tables:
        new = []
        for x in tb.tests:
            worse = x.diff < 0 if tb.higher_is_better.get(x.metric, True) else x.diff > 0
            sig = bool(q[k] < tb.alpha)
            new.append(replace(x, p_adjusted=float(q[k]), significant=sig,
                               regression=sig and worse))
            k += 1
        tb.tests, tb.correction, tb.family = new, correction, len(tests)


# ------------------------------------------------------------------- slices kept with results
@dataclass(frozen=True)
class SliceSpec:
    """How a run slices its results (config key ``slices``, CLI ``--by``)."""

    by: tuple[str, ...]
    min_n: int = DEFAULT_MIN_N
    correction: str = "holm"

    def __post_init__(self) -> None:
        if not self.by:
            raise ConfigError("slices.by", "name at least one field to slice by")
        if self.min_n < 1:
            raise ConfigError("slices.min_n", f"must be >= 1, got {self.min_n}")
        if self.correction not in ("holm", "bh"):
            raise ConfigError("slices.correction", f"unknown correction {self.correction!r}",
                              ["holm", "bh"])


META_KEY = "slices"


def attach_slices(results: Sequence[EvalResult], samples: Sequence[Sample],
                  spec: SliceSpec) -> None:
    """Keep each sample's slice with the results (``meta["slices"]``), so reports, the
    viewer and ``compare`` can slice them later without the samples."""
    keys = slice_keys(samples, spec.by)
    for r in results:
        ids = {sid for m in r.results.values() for sid in m.sample_ids}
        if not ids & keys.keys():  # results about other things than these samples
            continue
        r.meta[META_KEY] = {"by": list(spec.by), "min_n": spec.min_n,
                            "correction": spec.correction,
                            "keys": {sid: list(k) for sid, k in keys.items() if sid in ids}}


def stored_slices(result: EvalResult) -> tuple[SliceSpec, dict[str, tuple[str, ...]]] | None:
    """The slice spec and keys kept with ``result`` (``None`` when it was not sliced)."""
    d = result.meta.get(META_KEY)
    if not isinstance(d, Mapping) or not d.get("by"):
        return None
    spec = SliceSpec(tuple(d["by"]), int(d.get("min_n", DEFAULT_MIN_N)),
                     str(d.get("correction", "holm")))
    return spec, {str(k): tuple(v) for k, v in (d.get("keys") or {}).items()}


__all__ = ["DEFAULT_MIN_N", "META_KEY", "SliceCell", "SliceSpec", "SliceTable", "SliceTest",
           "adjust_family", "attach_slices", "compare_slices", "mean_ci", "parse_by", "slice_keys",
           "slice_label", "slice_results", "slice_value", "stored_slices"]
