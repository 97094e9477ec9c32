"""The one list of tiers: name -> :class:`Tier` (what it is, what it needs, its options, how
it runs).

Every built-in tier declares itself next to its implementation with :func:`register_tier`;
the config validator, the runner, the CLI and the reports read tier names and properties from
here only. :func:`all_tiers` gives them in the order a benchmark runs them.

Adding a built-in tier: write its module in ``ragmeter/tiers/`` (an ``Options`` dataclass, a
``run(ctx, samples, options)`` function and a ``register_tier(Tier(...))`` call) and add the
module to :data:`BUILTIN_MODULES`. A user's own tier needs no change here: it is a plug-in
(``plugins: {name: "module:function"}``), loaded by :func:`load_plugin`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragmeter.errors import ConfigError
from ragmeter.registry import Registry, import_module_or_file

if TYPE_CHECKING:
    from ragmeter.data.sample import Sample
    from ragmeter.results.records import EvalResult
    from ragmeter.tiers.context import TierContext

JudgeUse = Literal["none", "optional", "required"]

#: Modules that declare the built-in tiers, in the order the tiers run.
BUILTIN_MODULES = (
    "ragmeter.tiers.tier0",            # tier0
    "ragmeter.tiers.retrieval_eval",   # retrieval
    "ragmeter.tiers.generation",       # generation, e2e
    "ragmeter.tiers.judge_quality",    # judge_quality
    "ragmeter.tiers.judge_pipeline",   # judge_pipeline
    "ragmeter.tiers.ux",               # ux
    "ragmeter.tiers.real_users",       # real_users
    "ragmeter.tiers.stress",           # stress (a target's generator among distractors)
)

#: Older names of tiers, accepted in configs and ``--tier``.
TIER_ALIASES = {"tier1": "retrieval", "tier2": "generation", "tier3": "e2e"}


@dataclass(frozen=True)
class TierOptions:
    """Options every tier accepts; the runner reads them to choose the tier's samples.

    ``limit``: only the first N samples. ``sample_ids``: only these samples, in this order
    (e.g. a slow local judge on a few chosen cases).
    """

    limit: int | None = None
    sample_ids: list[str | int] | None = None


@dataclass(frozen=True)
class Tier:
    """One tier: how the config names it and what it needs.

    ``judge``: ``"none"`` (never asks a judge), ``"optional"`` (runs without one, with fewer
    metrics) or ``"required"``. ``default_judge``: with no judge named in the tier, it uses
    the configured judges (otherwise only a judge the tier names). ``per_sample``: called batch
    by batch and its results merged (resumable per batch); otherwise called once on the whole
    data. ``title``/``title_ru``: shown in reports and the viewer. ``options``: the dataclass the tier's ``options:`` mapping is validated into (``dict``
    for a plug-in without one: passed through unchecked). ``run(ctx, samples, options)``
    returns the tier's results.
    """

    name: str
    title: str
    doc: str
    run: Callable[[TierContext, list[Sample], Any], list[EvalResult]]
    judge: JudgeUse = "none"
    default_judge: bool = False
    per_sample: bool = False
    options: type = TierOptions
    plugin: bool = field(default=False, compare=False)
    title_ru: str = ""

    def display_title(self, lang: str = "en") -> str:
        """The title shown in reports and the viewer (Russian when asked and given)."""
        return self.title_ru if lang == "ru" and self.title_ru else self.title

    def option_names(self) -> list[str]:
        from ragmeter.tiers.options import option_names

        return option_names(self.options)


#: The built-in tiers by name (the generic name table; modules load on first lookup).
TIERS: Registry[Tier] = Registry("tier", key="tier", modules=BUILTIN_MODULES)
for _alias, _name in TIER_ALIASES.items():
    TIERS.alias(_alias, _name)


def register_tier(tier: Tier) -> Tier:
    """Add a built-in tier (called at the top level of the module that implements it); a
    module imported again replaces its tier."""
    if tier.name in TIER_ALIASES:
        raise ValueError(f"tier name {tier.name!r} is an alias of {TIER_ALIASES[tier.name]!r}")
    return TIERS.register(tier.name, tier, replace=True)


def all_tiers() -> list[Tier]:
    """Every built-in tier, in the order a benchmark runs them."""
    order = {m: i for i, m in enumerate(BUILTIN_MODULES)}
    return sorted(TIERS, key=lambda t: order.get(t.run.__module__, len(order)))


def tier_names() -> list[str]:
    return [t.name for t in all_tiers()]


def canonical_tier(name: str) -> str:
    """The tier's name for an alias (``tier2`` -> ``generation``); other names unchanged."""
    return TIER_ALIASES.get(name, name)


def is_builtin(name: str) -> bool:
    return name in TIERS


def get_tier(name: str) -> Tier:
    """The built-in tier of that name (or alias); :class:`ConfigError` listing the names."""
    tier = TIERS.find(name)
    if tier is None:
        raise ConfigError("tier", f"unknown tier {name!r}", tier_names())
    return tier


def judged_tier_names() -> frozenset[str]:
    """Tiers that ask the configured judges without naming one (judge scores per sample)."""
    return frozenset(t.name for t in all_tiers() if t.default_judge)


# --------------------------------------------------------------------------- plug-ins
class _PluginRun:
    """Calls a plug-in function as ``fn(ctx, samples)`` or, when it takes three positional
    parameters (a built-in tier's signature), ``fn(ctx, samples, options)``; the options are
    also ``ctx.options``. The form is decided once, when the plug-in is loaded."""

    def __init__(self, fn: Callable[..., Any], with_options: bool = False):
        self.fn = fn
        self.with_options = with_options
        self.__module__ = getattr(fn, "__module__", __name__)

    def __call__(self, ctx: TierContext, samples: list[Sample], options: Any) -> Any:
        if self.with_options:
            return self.fn(ctx, samples, options)
        return self.fn(ctx, samples)


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional parameters ``fn`` requires (None: ``*args`` or not inspectable)."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is p.empty for p in params)


def _options_from_annotation(fn: Callable[..., Any]) -> type | None:
    """The dataclass annotated on the third parameter of ``fn(ctx, samples, options: X)``."""
    import dataclasses
    import inspect
    import typing

    try:
        hints = typing.get_type_hints(fn)
        name = list(inspect.signature(fn).parameters)[2]
    except Exception:  # unresolvable annotations: the options stay the config mapping
        return None
    hint = hints.get(name)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def load_plugin(name: str, target: str, base_dir: Path) -> Tier:
    """A user tier from ``module:function`` or ``path/file.py:function`` (relative paths
    against ``base_dir``).

    The function is called ``fn(ctx, samples)`` batch by batch and returns an ``EvalResult``
    (or a list) for those samples; a function with three positional parameters is called
    ``fn(ctx, samples, options)`` like a built-in tier (its options class: ``fn.Options``, else
    the dataclass annotated on ``options``); ``fn.per_sample = False`` makes it run once on the whole
    data. ``fn.Options`` (a dataclass, ideally a subclass of :class:`TierOptions` so that
    ``limit`` / ``sample_ids`` work) makes the tier's options validated like a built-in tier's
    and gives them to the function as ``ctx.options``; without it ``ctx.options`` is the
    mapping from the config, unchecked.
    """
    key = f"plugins.{name}"
    mod_name, _, fn_name = target.rpartition(":")
    src_file: str | None = None
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        src_file = str(path if path.is_absolute() else base_dir / path)
    try:
        module = import_module_or_file(src_file or mod_name, f"ragmeter_plugin_{name}")
    except FileNotFoundError:
        raise ConfigError(key, f"cannot load plugin file {src_file}") from None
    except ImportError as exc:
        raise ConfigError(key, f"cannot import {mod_name!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # the user's module raised while it was imported
        where = ""
        tb = exc.__traceback__
        while tb is not None:  # the innermost line of the plug-in's own file
            if src_file is not None and tb.tb_frame.f_code.co_filename == src_file:
                where = f" at line {tb.tb_lineno}"
            tb = tb.tb_next
        raise ConfigError(key, f"importing {mod_name!r} failed{where}: "
                               f"{type(exc).__name__}: {exc}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ConfigError(key, f"{mod_name!r} has no function {fn_name!r}")
    arity = _positional_arity(fn)
    if arity is not None and arity > 3:
        raise ConfigError(key, f"{fn_name} takes {arity} positional parameter(s); a plug-in "
                               "tier is fn(ctx, samples) or fn(ctx, samples, options)")
    with_options = arity == 3
    options = getattr(fn, "Options", None) or (
        _options_from_annotation(fn) if with_options else None) or dict
    if options is not dict:
        import dataclasses

        if not (isinstance(options, type) and dataclasses.is_dataclass(options)):
            raise ConfigError(key, f"{fn_name}.Options must be a dataclass, got {options!r}")
    doc = (fn.__doc__ or "").strip()
    return Tier(name=name, title=name, doc=doc.split("\n")[0], run=_PluginRun(fn, with_options),
                judge="optional", per_sample=bool(getattr(fn, "per_sample", True)),
                options=options, plugin=True)


__all__ = ["BUILTIN_MODULES", "TIERS", "TIER_ALIASES", "Tier", "TierOptions", "all_tiers",
           "canonical_tier", "get_tier", "is_builtin", "judged_tier_names", "load_plugin",
           "register_tier", "tier_names"]

