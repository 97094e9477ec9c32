"""One way to validate configuration: a dataclass is the schema of a config section.

The fields of the dataclass are the section's keys. A field's type hint says what its value may
be — ``bool``, ``int``, ``float`` (an integer is accepted), ``str``, ``Path`` (from a string),
``Literal[...]``, ``X | None``, ``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``,
``dict[str, X]`` / ``Mapping[str, X]``, a nested dataclass (validated the same way) or ``Any``
— and its metadata adds what a type cannot say (:func:`spec` writes it; a module that may
import nothing of ragmeter writes the same keys with ``dataclasses.field(metadata=...)``):

``ge`` / ``gt`` / ``le``   bounds of a number
``nonempty``              a string that is not blank
``choices``               the allowed values (listed in the error; ``noun`` names them)
``one_or_many``           a single value stands for a list of one (``judges: a`` = ``[a]``)
``check``                 ``check(value, path)``: a rule of its own; raises ConfigError

:func:`parse` turns a mapping into an instance: an unknown key is a
:class:`~ragmeter.errors.ConfigError` naming the dotted key and listing the allowed ones, a
wrong value names the key and says what it must be, and an error raised by the dataclass
itself (its ``__post_init__``) is reported under the section's path. :func:`validate` checks
an instance built in Python (``JudgeConfig(...)``) by the same rules. :func:`read_config_file`
reads a YAML / JSON file so that an error also names the file and the line of the key
(``bench.yaml:12: config key 'tiers[0].options.limt': unknown option (allowed: ...)``).

Floor 0: imports nothing of ragmeter but :mod:`ragmeter.errors`. The benchmark config
(``runner/config.py``), a target (``targets/config.py``), a judge (``judges/config.py``) and
a tier's options (``tiers/options.py``) are all validated here.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ragmeter.errors import ConfigError

T = TypeVar("T")
_MISSING: Any = dataclasses.MISSING


def spec(default: Any = _MISSING, *, default_factory: Any = _MISSING,
         ge: float | None = None, gt: float | None = None, le: float | None = None,
         nonempty: bool = False, choices: Sequence[Any] | None = None,
         one_or_many: bool = False, check: Callable[[Any, str], Any] | None = None,
         noun: str | None = None, repr: bool = True) -> Any:
    """A dataclass field with validation rules (see the module's table); ``noun`` names a
    value outside ``choices`` (``unknown backend 'claude'``)."""
    meta = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("choices", choices),
                              ("check", check), ("noun", noun)) if v is not None}
    if nonempty:
        meta["nonempty"] = True
    if one_or_many:
        meta["one_or_many"] = True
    if default_factory is not _MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta, repr=repr)
    return dataclasses.field(default=default, metadata=meta, repr=repr)


def keys(cls: type) -> list[str]:
    """The keys a schema dataclass accepts (its init fields, in order)."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [f.name for f in dataclasses.fields(cls) if f.init]


def join(path: str, key: object) -> str:
    """``path.key`` (``key`` alone at the root)."""
    return f"{path}.{key}" if path else str(key)


def mapping(data: Any, path: str, allowed: Sequence[str] | None = None, *,
            required: Sequence[str] = (), what: str = "key") -> Mapping[str, Any]:
    """``data`` as a mapping whose keys are all in ``allowed`` (None: any) and that holds
    every ``required`` key with a value; else the ConfigError naming the key."""
    if not isinstance(data, Mapping):
        raise ConfigError(path or "config", f"must be a mapping, got {_kind(data)}")
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise ConfigError(join(path, str(key)), f"unknown {what}", list(allowed))
    for key in required:
        if data.get(key) in (None, ""):
            raise ConfigError(join(path, key), "is required")
    return data


def parse(cls: type[T], data: Any, path: str = "", /, *, what: str = "key",
          **given: Any) -> T:
    """``data`` (a mapping from a config) as an instance of the dataclass ``cls``; ``given``
    are constructor arguments that do not come from ``data`` (a resolved path, a name)."""
    if data is None:
        data = {}
    allowed = [k for k in keys(cls) if k not in given]
    d = mapping(data, path, allowed, required=required(cls), what=what)
    values = fields_of(cls, d, path, only=allowed, what=what)
    return construct(cls, path, **values, **given)


def required(cls: type) -> list[str]:
    """The keys of a schema dataclass without a default (a config must give them)."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [f.name for f in dataclasses.fields(cls) if f.init and
            f.default is _MISSING and f.default_factory is _MISSING]


def fields_of(cls: type, data: Mapping[str, Any], path: str,
              only: Sequence[str] | None = None, what: str = "key") -> dict[str, Any]:
    """The values in ``data`` for the fields of ``cls`` (those in ``only``), each converted and
    checked by its type and rules; keys of ``data`` that are no such field are left out."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in fields and (only is None or key in only):
            out[str(key)] = field_value(value, fields[key], hints[key], join(path, key), what)
    return out


def construct(cls: type[T], path: str, /, **values: Any) -> T:
    """``cls(**values)``; a ConfigError of its own checks reported under ``path``."""
    try:
        return cls(**values)
    except ConfigError as exc:
        raise exc.under(path) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(path or "config", str(exc)) from None


def validate(obj: Any, path: str = "") -> None:
    """Check every field of the dataclass instance ``obj`` by its type and rules (converted
    values — a list for a tuple — are written back, also on a frozen instance)."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        new = field_value(value, f, hints[f.name], join(path, f.name))
        if new is not value:
            object.__setattr__(obj, f.name, new)


def field_value(value: Any, f: dataclasses.Field[Any], tp: Any, path: str,
                what: str = "key") -> Any:
    """One field's value checked and converted by its type and rules."""
    return checked(value, tp, f.metadata, path, what)


def value(value: Any, tp: Any, path: str, **rules: Any) -> Any:
    """One config value checked and converted by the type ``tp`` and the ``spec`` rules
    (``schema.value(v, int, "limit", ge=1)``): a key that is not a dataclass field."""
    return checked(value, tp, rules, path)


def checked(value: Any, tp: Any, meta: Mapping[str, Any], path: str,
            what: str = "key") -> Any:
    """``value`` checked by the type ``tp`` and the rules in ``meta`` (see :func:`spec`)."""
    if meta.get("one_or_many") and value is not None and not isinstance(value, (list, tuple)):
        value = [value]
    out = value_of(value, tp, path, what)
    if out is not None:
        _rules(out, meta, path)
    check = meta.get("check")
    if check is not None:
        replaced = check(out, path)
        if replaced is not None:
            out = replaced
    return out


def _rules(value: Any, meta: Mapping[str, Any], path: str) -> None:
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(path, f"unknown {meta.get('noun', 'value')} {value!r}",
                          [str(c) for c in choices])
    if meta.get("nonempty") and isinstance(value, str) and not value.strip():
        raise ConfigError(path, f"must be a non-empty string, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for rule, ok, word in (("ge", lambda v, b: v >= b, ">="), ("gt", lambda v, b: v > b, ">"),
                               ("le", lambda v, b: v <= b, "<=")):
            bound = meta.get(rule)
            if bound is not None and not ok(value, bound):
                raise ConfigError(path, f"must be {word} {bound:g}, got {value:g}")


def value_of(value: Any, tp: Any, path: str, what: str = "key") -> Any:
    """``value`` checked against the type ``tp`` (converted where the config's spelling
    differs: a list for a tuple, a string for a Path, an integer for a float)."""
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(value, args, path, what)
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(path, f"unknown value {value!r}", [str(a) for a in args])
        return value
    if origin in (list, tuple, Sequence):
        return _sequence(value, origin, args, path, what)
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"must be a mapping, got {_kind(value)}")
        item = args[1] if len(args) == 2 else Any
        return {str(k): value_of(v, item, join(path, k), what) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        return parse(tp, value, path, what=what)
    return _scalar(value, tp, path)


def _union(value: Any, args: tuple[Any, ...], path: str, what: str) -> Any:
    if value is None and type(None) in args:
        return None
    errors = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return value_of(value, arg, path, what)
        except ConfigError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    wanted = " or ".join(type_name(a) for a in args)
    raise ConfigError(path, f"must be {wanted}, got {value!r:.80}")


def _sequence(value: Any, origin: Any, args: tuple[Any, ...], path: str, what: str) -> Any:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(path, f"must be a list, got {value!r:.80}")
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(value) != len(args):
            raise ConfigError(path, f"must be a list of {len(args)} values, got {value!r:.80}")
        return tuple(value_of(v, a, f"{path}[{i}]", what)
                     for i, (v, a) in enumerate(zip(value, args, strict=True)))
    item = args[0] if args else Any
    items = [value_of(v, item, f"{path}[{i}]", what) for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _scalar(value: Any, tp: Any, path: str) -> Any:
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {value!r:.80}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"must be an integer, got {value!r:.80}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and math.isnan(value)):
            raise ConfigError(path, f"must be a number, got {value!r:.80}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"must be a string, got {value!r:.80}")
        return value
    if tp is Path:
        if isinstance(value, Path):
            return value
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(path, f"must be a path, got {value!r:.80}")
        return Path(value).expanduser()
    if isinstance(tp, type):
        if isinstance(value, tp):
            return value
        raise ConfigError(path, f"must be {type_name(tp)}, got {value!r:.80}")
    raise TypeError(f"{path}: type {tp!r} is not supported by ragmeter.schema")


def type_name(tp: Any) -> str:
    """How an error says a type (``an integer``, ``a number``, ``null``)."""
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and not typing.get_args(tp):
        return {"str": "a string", "int": "an integer", "float": "a number",
                "bool": "true or false", "Path": "a path"}.get(tp.__name__, tp.__name__)
    origin = typing.get_origin(tp)
    if origin in (list, tuple, Sequence):
        return "a list"
    if origin in (dict, Mapping):
        return "a mapping"
    return str(tp).replace("typing.", "")


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.60}" if value is not None else "null"


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


# -------------------------------------------------------------------------- files and lines
def read_config_file(path: str | Path, parse_fn: Callable[[Any], T], key: str = "config",
                     root: Callable[[Any], tuple[str, str]] | None = None) -> T:
    """Read a YAML / JSON file and ``parse_fn`` its content; a ConfigError raised while
    parsing names the file and the line of the key it names (or of the nearest enclosing one).

    ``root(data)`` gives ``(prefix, in_file)`` when the parser names keys under a prefix the
    file does not spell (``targets[1].url`` for the file's ``url``, or its ``target.url``)."""
    from ragmeter.errors import read_yaml_file

    lines: dict[int, tuple[Any, dict[Any, int]]] = {}
    data = read_yaml_file(path, key, lines=lines)
    try:
        return parse_fn(data)
    except ConfigError as exc:
        if exc.where is not None:
            raise
        file_key = exc.key
        if root is not None:
            prefix, in_file = root(data)
            if prefix and (file_key == prefix or file_key.startswith((f"{prefix}.",
                                                                       f"{prefix}["))):
                file_key = (in_file + file_key[len(prefix):]).lstrip(".")
        line = line_of(data, file_key, lines)
        raise exc.at(f"{path}:{line}" if line else str(path)) from None


def line_of(data: Any, key_path: str, lines: Mapping[int, tuple[Any, dict[Any, int]]]
            ) -> int | None:
    """The line of ``key_path`` (``tiers[0].options.limt``) in the file ``data`` was read
    from: the key's own line, or the nearest enclosing key's when the path goes further than
    the file (a default filled in, a name expanded)."""
    node, rest, found = data, key_path, None
    while rest:
        entry = lines.get(id(node))
        if entry is None or entry[0] is not node:
            break
        table = entry[1]
        if isinstance(node, Mapping):
            # the longest key the path starts with (keys may hold dots: metric names)
            match = max((k for k in node if isinstance(k, str) and
                         (rest == k or rest.startswith((f"{k}.", f"{k}[")))),
                        key=len, default=None)
            if match is None:
                break
            found = table.get(match, found)
            node, rest = node[match], rest[len(match):].lstrip(".")
        elif isinstance(node, list) and rest.startswith("["):
            index, _, tail = rest[1:].partition("]")
            if not index.isdigit() or int(index) >= len(node):
                break
            found = table.get(int(index), found)
            node, rest = node[int(index)], tail.lstrip(".")
        else:
            break
    return found


__all__ = ["checked", "construct", "field_value", "fields_of", "join", "keys", "line_of", "mapping",
           "parse", "read_config_file", "required", "spec", "type_name", "validate", "value", "value_of"]
