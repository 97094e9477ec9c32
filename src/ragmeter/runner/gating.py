"""CI gating: compare a run's metrics with min/max thresholds and say exactly what failed.

A threshold names a metric (``hit_rate@5``, ``doc_hit@5`` — aliases are resolved through the
metric registry) and optionally the result it applies to (``retrieval/bm25:hit_rate@5``);
unqualified thresholds apply to every result of the run that has the metric. A metric that
no result has is a failure ("missing from run"), and so is a metric with no scored sample.
With ``use_ci_bound`` a ``min`` is checked against the CI lower bound and a ``max`` against the
upper bound, so a pass means "passes with 95% confidence".

A judged metric (its values from an LLM judge) gates only when a judge card backs it
(``backing``, see :mod:`ragmeter.judge_trust.backing`): then the bias-corrected estimate's
bound is checked (lower for ``min``, upper for ``max``). Without a matching card the row is
*advisory*: its verdict is shown, not enforced — unless ``require_card``, which fails it with
the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.results.records import EvalResult, MetricResult
from ragmeter.results.statistic import COST_METRICS, USAGE_UNKNOWN, unknown_count
from ragmeter.results.unscored import describe_unscored


@dataclass(frozen=True)
class Threshold:
    """``metric >= min`` and/or ``metric <= max``, optionally for one result key only."""

    metric: str
    min: float | None = None
    max: float | None = None
    target: str | None = None

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise ConfigError(f"thresholds.{self.metric}", "needs 'min' and/or 'max'",
                              ["min", "max"])
        for key, v in (("min", self.min), ("max", self.max)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or math.isnan(float(v))):
                raise ConfigError(f"thresholds.{self.metric}.{key}", f"must be a number, got {v!r}")

    def describe(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        return " and ".join(parts)


@dataclass(frozen=True)
class GateRow:
    """One checked (result, metric) pair, or one missing metric."""

    target: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: str
    passed: bool
    message: str
    checked_value: float | None = None
    #: a judged metric's gate: ``card`` (backed by a matching judge card), ``advisory`` (no
    #: matching card: shown, not enforced) or ``card required`` (failed for lack of one);
    #: empty for a metric no judge scored
    backing: str = ""
    #: the backing card's signature, or why no card matched
    card: str = ""
    #: an advisory row's own verdict (not enforced)
    would_pass: bool | None = None

    @property
    def verdict(self) -> str:
        if self.backing == "advisory":
            return "ADVISORY"
        return "PASS" if self.passed else "FAIL"


def canonical_metric(name: str) -> str:
    """Canonical metric string via the registry; the text itself when it is not registered."""
    try:
        from ragmeter.metrics.registry import parse_metric

        return str(parse_metric(name))
    except Exception:
        return name.strip()


def parse_assignment(text: str, option: str) -> tuple[str | None, str, float]:
    """``[target:]metric=value`` from ``--min``/``--max``."""
    left, sep, right = text.rpartition("=")
    if not sep or not left.strip():
        raise ConfigError(option, f"expected METRIC=VALUE, got {text!r}")
    try:
        value = float(right)
    except ValueError:
        raise ConfigError(option, f"value of {left!r} must be a number, got {right!r}") from None
    target, metric = None, left.strip()
    if ":" in metric:
        t, _, m = metric.partition(":")
        target, metric = t.strip() or None, m.strip()
    return target, metric, value


def thresholds_from_cli(mins: Iterable[str] = (), maxs: Iterable[str] = ()) -> list[Threshold]:
    """Merge ``--min a=0.8 --max b=0.2`` (same metric in both → one threshold)."""
    merged: dict[tuple[str | None, str], dict[str, float]] = {}
    for option, items in (("--min", mins), ("--max", maxs)):
        for text in items:
            target, metric, value = parse_assignment(text, option)
            merged.setdefault((target, metric), {})[option[2:]] = value
    return [Threshold(metric, d.get("min"), d.get("max"), target)
            for (target, metric), d in merged.items()]


def thresholds_from_mapping(data: Mapping[str, object], key: str = "thresholds") \
        -> list[Threshold]:
    """``{"hit_rate@5": {"min": 0.8}, "retrieval/bm25:mrr": {"min": 0.5, "max": 1}}``."""
    out = []
    if not isinstance(data, Mapping):
        raise ConfigError(key, "must be a mapping metric -> {min, max}")
    for name, spec in data.items():
        where = f"{key}.{name}"
        if not isinstance(spec, Mapping):
            raise ConfigError(where, "must be a mapping with 'min' and/or 'max'", ["min", "max"])
        bad = sorted(set(spec) - {"min", "max"})
        if bad:
            raise ConfigError(f"{where}.{bad[0]}", "unknown threshold key", ["min", "max"])
        target, metric = None, str(name)
        if ":" in metric:
            t, _, metric = metric.partition(":")
            target = t or None
        try:
            out.append(Threshold(metric, spec.get("min"), spec.get("max"), target))
        except ConfigError as exc:
            raise ConfigError(where, str(exc)) from None
    return out


def _find(results: Mapping[str, EvalResult], th: Threshold) -> list[tuple[str, MetricResult]]:
    want = canonical_metric(th.metric)
    found = []
    for key, res in results.items():
        if th.target is not None and th.target not in (key, res.name):
            continue
        for mkey, mr in res.results.items():
            if mkey == th.metric or mkey == want or canonical_metric(mkey) == want:
                found.append((key, mr))
    return found


#: ``lookup(result, metric key)``: a judged metric's judge-card backing (``None``: not judged)
BackingLookup = Callable[[EvalResult, str], Any]


def check_thresholds(
    results: Mapping[str, EvalResult] | EvalResult,
    thresholds: Iterable[Threshold],
    *,
    use_ci_bound: bool = False,
    backing: BackingLookup | None = None,
    require_card: bool = False,
) -> list[GateRow]:
    """Every threshold checked against every matching result; see the module doc."""
    if isinstance(results, EvalResult):
        results = {results.name: results}
    rows: list[GateRow] = []
    for th in thresholds:
        matches = _find(results, th)
        if not matches:
            where = f" in '{th.target}'" if th.target else ""
            known = sorted({m for r in results.values() for m in r.results})
            rows.append(GateRow(th.target or "-", th.metric, None, None, None, th.describe(),
                                False, f"metric missing from run{where} (run has: "
                                f"{', '.join(known[:12]) or 'no metrics'})"))
            continue
        for key, mr in matches:
            back = backing(results[key], mr.metric) if backing is not None else None
            if back is not None and back.backed:
                rows.append(_card_row(key, mr, th, back))
                continue
            agg = mr.aggregate
            if agg.mean is None:
                rows.append(GateRow(key, mr.metric, None, None, None, th.describe(), False,
                                    f"no scored sample ({agg.n_unscored} unscored: "
                                    f"{describe_unscored(agg.unscored_by_reason)})"))
                continue
            problems = []
            checked = agg.mean
            if th.min is not None:
                v = agg.ci_low if use_ci_bound and agg.ci_low is not None else agg.mean
                checked = v
                if v < th.min:
                    what = "CI lower bound" if use_ci_bound else "mean"
                    problems.append(f"{what} {_g(v)} < min {th.min:g}")
            if th.max is not None:
                v = agg.ci_high if use_ci_bound and agg.ci_high is not None else agg.mean
                if th.min is None:
                    checked = v
                if v > th.max:
                    what = "CI upper bound" if use_ci_bound else "mean"
                    problems.append(f"{what} {_g(v)} > max {th.max:g}")
            message = "; ".join(problems) if problems else "ok"
            if mr.metric in COST_METRICS:   # a cost is never shown without its unknown count
                message += f"; {USAGE_UNKNOWN}: {unknown_count(mr)}"
            row = GateRow(key, mr.metric, agg.mean, agg.ci_low, agg.ci_high,
                          th.describe(), not problems, message, checked)
            rows.append(row if back is None else _advisory(row, back.reason, require_card))
    return rows


def _g(v: float) -> str:
    """A checked value: four decimals, or four significant digits below 0.01 (a cost)."""
    return f"{v:.4f}" if v == 0 or abs(v) >= 0.01 else f"{v:.4g}"


def _card_row(key: str, mr: MetricResult, th: Threshold, back: Any) -> GateRow:
    """A judged gate backed by a judge card: the bias-corrected bound is checked."""
    problems = []
    checked = back.ci_low if th.min is not None else back.ci_high
    if th.min is not None and back.ci_low < th.min:
        problems.append(f"corrected CI lower bound {back.ci_low:.4f} < min {th.min:g}")
    if th.max is not None and back.ci_high > th.max:
        problems.append(f"corrected CI upper bound {back.ci_high:.4f} > max {th.max:g}")
    raw = "" if back.judge_mean is None else f"; raw judge mean {back.judge_mean:.4f}"
    how = (f"bias-corrected with {back.n_labelled} human labels"
           f"{f' ({back.estimator})' if back.estimator else ''}{raw}")
    return GateRow(key, mr.metric, back.estimate, back.ci_low, back.ci_high, th.describe(),
                   not problems, "; ".join(problems or ["ok"]) + f" ({how})", checked,
                   "card", back.card)


def _advisory(row: GateRow, reason: str, require_card: bool) -> GateRow:
    """A judged gate without a matching judge card: shown, not enforced; or, with
    ``require_card``, failed with the reason."""
    from dataclasses import replace

    if require_card:
        return replace(row, passed=False, backing="card required", card=reason,
                       message=f"judged metric without a matching judge card: {reason}; "
                               f"the judge's own value: {row.message}")
    shown = row.message if row.passed else f"would fail: {row.message}"
    return replace(row, passed=True, backing="advisory", card=reason, would_pass=row.passed,
                   message=f"advisory, not enforced: {reason}; {shown}")


def gate_passed(rows: Iterable[GateRow]) -> bool:
    return all(r.passed for r in rows)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _mark(r: GateRow) -> str:
    """How a judged gate is backed, after its metric name."""
    return {"card": " [card-backed]", "advisory": " [advisory]",
            "card required": " [no card]"}.get(r.backing, "")


def format_rows(rows: list[GateRow]) -> str:
    """Plain-text table (used in AssertionError messages and logs)."""
    header = ("result", "metric", "value", "95% CI", "threshold", "verdict", "message")
    body = [(r.target, r.metric + _mark(r), _f(r.value),
             "-" if r.ci_low is None else f"[{r.ci_low:.4f}, {r.ci_high:.4f}]",
             r.threshold, r.verdict, r.message) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=False)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=False)).rstrip()
             for line in (header, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def rich_table(rows: list[GateRow], title: str = "Quality gate") -> object:
    """A rich Table with failing rows in red."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=title)
    for col in ("result", "metric", "value", "95% CI", "threshold", "verdict", "message"):
        t.add_column(col, overflow="fold")
    for r in rows:
        style = "yellow" if r.backing == "advisory" else "green" if r.passed else "bold red"
        t.add_row(escape(r.target), escape(r.metric + _mark(r)), _f(r.value),
                  "-" if r.ci_low is None else escape(f"[{r.ci_low:.4f}, {r.ci_high:.4f}]"),
                  escape(r.threshold), f"[{style}]{r.verdict}[/]", escape(r.message))
    return t
