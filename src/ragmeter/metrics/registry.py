"""The metric registry: one declarative :class:`MetricSpec` per metric, one canonical string.

A metric *value* is a :class:`Metric` — a spec name, an optional cutoff ``k`` and parameters.
Its string form round-trips (``str(parse_metric(s)) == canonical(s)``) and serves as the
result key, the config key and part of every cache key::

    ndcg@10                   hit_rate@5(level=doc)        recall@10(level=doc)
    mrr                       mrr@10                       ndcg@10(gain=exp)
    rouge_l(measure=f)        answer_correctness(preset=equal)

Parameters equal to their defaults are omitted; the rest are sorted by name. Aliases
(``doc_hit@5`` → ``hit_rate@5(level=doc)``) parse to the canonical form.

This module is the one home of the metric-name grammar::

    metric      := name [ "@" k ] [ "(" key "=" value { "," key "=" value } ")" ]
    metric-list := item { "," item }       item := metric | name "@" k { "," k } [ "(" ... ")" ]

:func:`parse_metric` reads one metric; :func:`split_metric_list` splits a command-line list
(``ndcg@5,10,mrr`` → ``ndcg@5,10``, ``mrr``: a bare number continues the cutoff list before it);
:func:`expand_cutoffs` expands a cutoff list (``hit_rate@1,5(level=doc)`` → two metrics);
:func:`parse_metrics` does both for a list and drops duplicates; :func:`split_metric_key` splits a
result key that may not be registered (``accuracy``) for reports and threshold bands.

Families register their metrics from their own module (``ragmeter.metrics.<family>``) with
:func:`register`; each spec may carry a ``compute`` callable whose signature is defined by the
family (for example the retrieval family passes padded rank arrays). *What* is measured is the
spec; *who* computes it is the family's evaluator.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter.errors import MetricSpecError
from ragmeter.registry import Registry
from ragmeter.results.names import METRIC_NAMES

KPolicy = Literal["required", "optional", "none"]
ParamValue = int | float | str | bool


@dataclass(frozen=True)
class Param:
    """A typed metric parameter with a default and, optionally, a closed set of choices."""

    name: str
    type: type
    default: ParamValue
    choices: tuple[ParamValue, ...] | None = None
    doc: str = ""

    def coerce(self, raw: Any, metric: str) -> ParamValue:
        try:
            if self.type is bool:
                if isinstance(raw, bool):
                    value: ParamValue = raw
                elif str(raw).lower() in ("true", "1", "yes"):
                    value = True
                elif str(raw).lower() in ("false", "0", "no"):
                    value = False
                else:
                    raise ValueError(raw)
            elif self.type is int:
                value = int(raw)
            elif self.type is float:
                value = float(raw)
            else:
                value = str(raw)
        except (TypeError, ValueError):
            raise MetricSpecError(
                f"metric '{metric}': parameter '{self.name}' must be {self.type.__name__}, got {raw!r}"
            ) from None
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise MetricSpecError(
                f"metric '{metric}': parameter '{self.name}' must be one of {allowed}, got {raw!r}"
            )
        return value


@dataclass(frozen=True)
class MetricSpec:
    """Declarative description of one metric. The docstring-like ``doc`` carries the formula."""

    name: str
    family: str
    doc: str
    params: tuple[Param, ...] = ()
    k: KPolicy = "none"
    higher_is_better: bool = True
    required_fields: tuple[str, ...] = ()
    value_range: tuple[float, float] | None = (0.0, 1.0)
    aliases: Mapping[str, Mapping[str, ParamValue]] = field(default_factory=dict)
    compute: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    #: ranking metrics: the value depends only on the rank of the first relevant item, so the
    #: rank arrays need not reach the metric's cutoff (that rank comes with the arrays)
    first_only: bool = False

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise MetricSpecError(
            f"metric '{self.name}' has no parameter '{name}' "
            f"(known: {', '.join(p.name for p in self.params) or 'none'})"
        )


@dataclass(frozen=True, order=True)
class Metric:
    """A configured metric: spec name, cutoff and all parameter values (defaults filled in)."""

    name: str
    k: int | None = None
    params: tuple[tuple[str, ParamValue], ...] = ()

    @property
    def spec(self) -> MetricSpec:
        return get_spec(self.name)

    def get(self, name: str) -> ParamValue:
        for key, value in self.params:
            if key == name:
                return value
        return self.spec.param(name).default

    def __str__(self) -> str:
        spec = self.spec
        text = self.name if self.k is None else f"{self.name}@{self.k}"
        shown = [
            f"{key}={_fmt(value)}"
            for key, value in self.params
            if value != spec.param(key).default
        ]
        if shown:
            text += "(" + ",".join(shown) + ")"
        return text

    def with_k(self, k: int | None) -> Metric:
        return make_metric(self.name, k=k, **dict(self.params))


def _fmt(value: ParamValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


_ALIASES: dict[str, tuple[str, Mapping[str, ParamValue]]] = {}
_CUTOFF_ALIASES: dict[str, str] = {}
_PATTERN = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_\-]*)\s*(?:@\s*(?P<k>[^\s(]+)\s*)?"
    r"(?:\((?P<params>[^()]*)\)\s*)?$"  # no adjacent overlapping quantifiers: linear
)
# no two adjacent quantifiers can match the same characters: linear on any input
_KLIST = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_\-]*)\s*@\s*(?P<ks>[0-9][0-9,\s]*)"
                    r"(?P<rest>\(.*\)\s*)?$")


def _load_builtin_metrics() -> None:
    """Import every module of ``ragmeter.metrics`` so that all built-in specs are registered."""
    import ragmeter.metrics as pkg

    for info in pkgutil.walk_packages(pkg.__path__, prefix="ragmeter.metrics."):
        if info.name.rsplit(".", 1)[-1].startswith("_") or info.name.endswith(".registry"):
            continue
        importlib.import_module(info.name)


#: Every metric spec by name (the generic name table; the families load on first lookup).
#: Aliases with fixed parameters (``doc_hit`` → ``hit_rate(level=doc)``) live beside it.
SPECS: Registry[MetricSpec] = Registry("metric", key="metric", loader=_load_builtin_metrics)


def register(spec: MetricSpec) -> MetricSpec:
    """Add a spec to the registry (called once, from the module that defines the metric)."""
    known = SPECS.find(spec.name, load=False)
    if known is not None and known != spec:
        raise MetricSpecError(f"metric '{spec.name}' is registered twice")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", spec.name):
        raise MetricSpecError(f"metric name '{spec.name}' must be lower_snake_case")
    SPECS.register(spec.name, spec, replace=True)
    for alias, fixed in spec.aliases.items():
        _ALIASES[alias] = (spec.name, fixed)
    return spec


def register_cutoff_alias(prefix: str, name: str) -> None:
    """``<prefix>_<k>`` parses as ``name@k`` (trec_eval's measure names: ``P_5`` →
    ``precision@5``)."""
    _CUTOFF_ALIASES[prefix] = name


def _known(name: str) -> bool:
    """``name`` is a metric (not an alias) registered so far: found without importing the other
    families (a command that imports its own family's module parses its names alone)."""
    return SPECS.find(name, load=False) is not None and name not in _ALIASES


def _cutoff_alias(name: str) -> tuple[str, int | None]:
    if _known(name) or name in _ALIASES or name in SPECS:  # (a miss loads the families)
        return name, None
    prefix, _, k = name.rpartition("_")
    if prefix in _CUTOFF_ALIASES and k.isdigit():
        return _CUTOFF_ALIASES[prefix], int(k)
    return name, None


@contextmanager
def scoped() -> Iterator[None]:
    """Metrics registered inside the ``with`` block are forgotten at its end (tests)."""
    aliases = dict(_ALIASES)
    with SPECS.scoped():
        try:
            yield
        finally:
            _ALIASES.clear()
            _ALIASES.update(aliases)


def get_spec(name: str) -> MetricSpec:
    spec = SPECS.find(name, load=False) if _known(name) else SPECS.find(name)
    if spec is None:
        raise MetricSpecError(
            f"unknown metric '{name}'. Known metrics: {', '.join(sorted(SPECS.names()))}"
        )
    return spec


def list_specs(family: str | None = None) -> list[MetricSpec]:
    return sorted(
        (s for s in SPECS if family is None or s.family == family),
        key=lambda s: (s.family, s.name),
    )


def make_metric(name: str, k: int | None = None, **params: Any) -> Metric:
    """Build a validated :class:`Metric` (aliases resolved, defaults filled, types coerced)."""
    fixed: Mapping[str, ParamValue] = {}
    if not _known(name) and name in _ALIASES and name not in SPECS:
        name, fixed = _ALIASES[name]
        for key, value in fixed.items():
            if key in params and params[key] != value:
                raise MetricSpecError(f"alias fixes {key}={value}, got {key}={params[key]}")
        params = {**params, **fixed}
    spec = get_spec(name)
    if spec.k == "required" and k is None:
        raise MetricSpecError(f"metric '{name}' needs a cutoff, e.g. '{name}@10'")
    if spec.k == "none" and k is not None:
        raise MetricSpecError(f"metric '{name}' takes no cutoff '@{k}'")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise MetricSpecError(f"metric '{name}': cutoff must be a positive integer, got {k!r}")
    values: dict[str, ParamValue] = {}
    for key, raw in params.items():
        values[key] = spec.param(key).coerce(raw, name)
    full = tuple(sorted((p.name, values.get(p.name, p.default)) for p in spec.params))
    return Metric(name=name, k=k, params=full)


def parse_metric(text: str | Metric) -> Metric:
    """Parse ``name[@k][(key=value,...)]`` into a :class:`Metric`."""
    if isinstance(text, Metric):
        return text
    m = _PATTERN.match(text)
    if not m:
        raise MetricSpecError(
            f"cannot parse metric '{text}': expected name[@k][(key=value,...)], e.g. 'ndcg@10'"
        )
    k: int | None = None
    if m.group("k") is not None:
        try:
            k = int(m.group("k"))
        except ValueError:
            raise MetricSpecError(f"metric '{text}': cutoff must be an integer") from None
    params: dict[str, str] = {}
    if m.group("params"):
        for part in m.group("params").split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise MetricSpecError(f"metric '{text}': parameter '{part}' must be key=value")
            key, value = (s.strip() for s in part.split("=", 1))
            if key in params:
                raise MetricSpecError(f"metric '{text}': parameter '{key}' given twice")
            params[key] = value
    name = m.group("name").replace("-", "_")
    if k is None:
        name, k = _cutoff_alias(name)
    return make_metric(name, k=k, **params)


def split_metric_key(text: str) -> tuple[str, int | None, str]:
    """``(name, k, params text)`` of a metric key without validating it against the registry
    (reports and threshold bands also see keys that are not registered metrics, such as
    ``accuracy``). A key that does not follow the grammar is returned whole as the name."""
    m = _PATTERN.match(text)
    if not m:
        return text.strip(), None, ""
    raw_k = m.group("k")
    k = int(raw_k) if raw_k is not None and raw_k.isdigit() else None
    return m.group("name"), k, (m.group("params") or "").strip()


def metric_base(text: str) -> str:
    """A metric key without its parameters: ``hit_rate@1(level=doc)`` → ``hit_rate@1``."""
    name, k, _ = split_metric_key(text)
    return name if k is None else f"{name}@{k}"


def with_cutoffs(text: str, ks: Iterable[int]) -> str:
    """A metric written without ``@k`` given the cutoff list ``ks``:
    ``recall(level=doc)``, ``[5, 10]`` → ``recall@5,10(level=doc)``."""
    name, _, params = split_metric_key(text)
    return f"{name}@{','.join(map(str, ks))}" + (f"({params})" if params else "")


def split_metric_list(text: str) -> list[str]:
    """Split ``"ndcg@5,10,mrr,ndcg@3(gain=exp,level=doc)"`` into metric items.

    Commas inside parentheses belong to the parameters; a bare number continues the cutoff list
    of the metric before it (``ndcg@5,10`` stays one item, see :func:`expand_cutoffs`).
    """
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    out: list[str] = []
    for p in filter(None, parts):
        if p.isdigit() and out and "@" in out[-1] and "(" not in out[-1]:
            out[-1] += f",{p}"
        else:
            out.append(p)
    return out


def expand_cutoffs(item: str) -> list[str]:
    """``"ndcg@5,10(gain=exp)"`` → ``["ndcg@5(gain=exp)", "ndcg@10(gain=exp)"]``; an item
    without a cutoff list is returned as is."""
    m = _KLIST.match(item)
    if not m or "," not in m.group("ks"):
        return [item]
    ks = [k.strip() for k in m.group("ks").split(",") if k.strip()]
    if not ks:
        raise MetricSpecError(f"metric '{item}': empty cutoff list")
    return [f"{m.group('name')}@{k}{m.group('rest') or ''}" for k in ks]


def needs_cutoff(text: str) -> bool:
    """Whether a metric written without ``@k`` requires a cutoff (unknown names: ``False``)."""
    name, _, params = text.partition("(")
    try:
        probe = parse_metric(f"{name.strip()}@1" + (f"({params}" if params else ""))
    except MetricSpecError:
        return False
    return probe.spec.k == "required"


# results find a metric by any spelling of its name through this grammar (results never
# import metrics)
METRIC_NAMES.register("canonical", lambda text: str(parse_metric(text)))


def parse_metrics(items: str | Iterable[str | Metric]) -> list[Metric]:
    """Parse a metric list (a comma-separated string or items), expanding cutoff lists
    (``"ndcg@5,10"`` → ``ndcg@5``, ``ndcg@10``); duplicates are dropped (first kept)."""
    if isinstance(items, str):
        items = split_metric_list(items)
    out: list[Metric] = []
    for item in items:
        parsed = [item] if isinstance(item, Metric) else [
            parse_metric(one) for one in expand_cutoffs(item)]
        for metric in parsed:
            if metric not in out:
                out.append(metric)
    return out
