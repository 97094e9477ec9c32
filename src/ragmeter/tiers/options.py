"""Validate a tier's ``options:`` mapping into its ``Options`` dataclass.

Every key must be a field of the dataclass (an unknown or mistyped key is a
:class:`ConfigError` naming the dotted key and the allowed keys) and every value must match the
field's type: ``bool``, ``int``, ``float`` (an integer is accepted), ``str``, ``Literal``,
``X | None``, ``list[X]`` / ``tuple[X, ...]`` / ``tuple[X, Y]``, ``dict[str, X]`` and nested
dataclasses (validated the same way). ``Any`` accepts anything.

The options the runner itself reads (``limit``, ``sample_ids``) are checked for every tier,
a plug-in's unchecked mapping included: ``limit`` is an integer ≥ 1 (``0`` or ``-1`` would
leave the tier nothing to run, in silence) and ``sample_ids`` a non-empty list.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import ConfigError


def option_names(cls: type) -> list[str]:
    """The keys an ``Options`` dataclass accepts (``[]`` for ``dict``: anything goes)."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [f.name for f in dataclasses.fields(cls) if f.init]


def parse_options(cls: type, data: Any, path: str) -> Any:
    """``data`` (a mapping from the config, or None) as an instance of ``cls``.

    ``cls = dict`` passes the mapping through unchecked (plug-ins without ``Options``).
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(data).__name__}")
    _check_runner_options(data, path)
    if cls is dict:
        return dict(data)
    return _dataclass(cls, data, path)


def _check_runner_options(data: Mapping[str, Any], path: str) -> None:
    """``limit`` and ``sample_ids``, which the runner reads from any tier's options."""
    limit = data.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise ConfigError(f"{path}.limit", f"must be an integer >= 1 (the first N samples), "
                          f"got {limit!r}; leave it out for every sample")
    ids = data.get("sample_ids")
    if ids is not None and (not isinstance(ids, list) or not ids):
        raise ConfigError(f"{path}.sample_ids", f"must be a non-empty list of sample ids, got "
                          f"{ids!r}")


def _dataclass(cls: type, data: Mapping[str, Any], path: str) -> Any:
    allowed = option_names(cls)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in allowed:
            raise ConfigError(f"{path}.{key}", "unknown option", allowed)
        values[str(key)] = _value(value, hints[key], f"{path}.{key}")
    try:
        return cls(**values)
    except ConfigError as exc:  # a check of the dataclass itself (__post_init__)
        raise ConfigError(f"{path}.{exc.key}", _bare(exc), exc.allowed) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(path, str(exc)) from None


def _bare(exc: ConfigError) -> str:
    text = str(exc)
    prefix = f"config key '{exc.key}': "
    text = text[len(prefix):] if text.startswith(prefix) else text
    if exc.allowed:
        suffix = f" (allowed: {', '.join(map(str, exc.allowed))})"
        text = text[: -len(suffix)] if text.endswith(suffix) else text
    return text


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and not typing.get_args(tp):
        return {"str": "a string", "int": "an integer", "float": "a number",
                "bool": "true or false"}.get(tp.__name__, tp.__name__)
    return str(tp).replace("typing.", "")


def _value(value: Any, tp: Any, path: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _value(value, arg, path)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        wanted = " or ".join(_type_name(a) for a in args)
        raise ConfigError(path, f"must be {wanted}, got {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(path, f"unknown value {value!r}", list(args))
        return value
    if origin in (list, tuple, Sequence):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, f"must be a list, got {value!r}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ConfigError(path, f"must be a list of {len(args)} values, got {value!r}")
            return tuple(_value(v, a, f"{path}[{i}]")
                         for i, (v, a) in enumerate(zip(value, args, strict=True)))
        item = args[0] if args else Any
        items = [_value(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"must be a mapping, got {value!r}")
        item = args[1] if len(args) == 2 else Any
        return {str(k): _value(v, item, f"{path}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"must be a mapping, got {value!r}")
        return _dataclass(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"must be an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, f"must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"must be a string, got {value!r}")
        return value
    raise TypeError(f"{path}: option type {tp!r} is not supported in tier Options")


__all__ = ["option_names", "parse_options"]
