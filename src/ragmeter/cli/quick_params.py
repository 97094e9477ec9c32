"""Plain option values without building typer's pydantic validators.

typer coerces every option of the invoked command, defaults included, through a pydantic
``TypeAdapter`` built on first use; importing pydantic and building one adapter per option is a
tenth of a second of every invocation. :func:`install` gives each option whose value is a plain
``bool``, ``str``, ``int``, ``float`` or ``Path`` (no range, parser or path existence rule) a coercer
that returns what typer's would for the unambiguous spellings (``"12"``, ``"-0.5"``, a path)
and hands every other value to typer's own coercion, so results and error messages are the same.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")
_PLAIN = (bool, str, int, float, Path)
_UNSET = object()


class QuickCoercion:
    """Stands in for typer's runtime coercion of one option (``coerce(value, param, ctx)``)."""

    def __init__(self, annotation: Any, low: float | None = None,
                 high: float | None = None) -> None:
        self.annotation, self.low, self.high = annotation, low, high
        self._full: Any = None

    def quick(self, value: Any, param: Any, ctx: Any) -> Any:
        """The coerced value, or ``_UNSET`` where typer's own coercion must decide."""
        if self.annotation == list[str]:  # a repeated option: every value a string
            if value is None:
                return ()
            ok = isinstance(value, (list, tuple)) and all(type(v) is str for v in value)
            return list(value) if ok else _UNSET
        if value is None:
            return None  # what typer's coercion returns for any single-valued option
        out = self._one(value, param, ctx)
        if out is _UNSET or (self.low is None and self.high is None):
            return out
        inside = (self.low is None or out >= self.low) and (self.high is None or out <= self.high)
        return out if inside else _UNSET  # out of range: typer's message

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        kind = self.annotation
        if type(value) is kind:
            return value
        if not isinstance(value, str) or kind is bool:
            return _UNSET
        if kind is str:
            return value
        if kind is int:
            return int(value) if _INT.fullmatch(value) else _UNSET
        if kind is float:
            return float(value) if _FLOAT.fullmatch(value) else _UNSET
        if value:  # a Path: typer's own existence, type and access checks
            from typer._param_types import coerce_cli_path

            return coerce_cli_path(Path(value), param.type_descriptor.parameter_info,
                                   path_type=kind, param=param, ctx=ctx)
        return _UNSET

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        out = self.quick(value, param, ctx)
        if out is not _UNSET:
            return out
        if self._full is None:
            from typer._coercion import build_runtime_param

            self._full = build_runtime_param(param.type_descriptor)
        return self._full.coerce(value, param=param, ctx=ctx)


def quick_for(param: Any) -> QuickCoercion | None:
    """The quick coercion of ``param``, or None where only typer's may decide."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or getattr(param, "_runtime_param", _UNSET) is not None:
        return None
    info, kind = desc.parameter_info, desc.annotation
    repeated = kind == list[str] and param.multiple
    if not (kind in _PLAIN or repeated) or desc.file_annotation is not None \
            or param.nargs != 1 or param.multiple != repeated or info.parser is not None \
            or getattr(info, "click_type", None) is not None:
        return None
    ranged = info.min is not None or info.max is not None
    if ranged and (kind not in (int, float) or info.clamp):
        return None
    if kind is Path and (info.exists or info.resolve_path or info.path_type is not None
                         or info.allow_dash):
        return None
    return QuickCoercion(kind, info.min, info.max)


def _typer_has_the_hooks() -> bool:
    """The typer modules the fallback and path coercion import lazily are there (found without
    importing them: they load pydantic); another typer keeps its own coercion everywhere."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None
                   for m in ("typer._coercion", "typer._param_types"))
    except (ImportError, ValueError):
        return False


def install(cmd: Any) -> None:
    """Give every eligible option of ``cmd`` and its subcommands the quick coercion (``--help``
    included: click makes it on first use and keeps it)."""
    if not _typer_has_the_hooks():
        return
    _install(cmd)


def _install(cmd: Any) -> None:
    names = (getattr(cmd, "context_settings", None) or {}).get("help_option_names")
    make_help = getattr(cmd, "get_help_option", None)
    helper = make_help(SimpleNamespace(help_option_names=names or ["--help"])) \
        if make_help is not None else None
    for p in [*getattr(cmd, "params", []), *([helper] if helper is not None else [])]:
        quick = quick_for(p)
        if quick is not None:
            p._runtime_param = quick
    for sub in getattr(cmd, "commands", {}).values():
        _install(sub)
