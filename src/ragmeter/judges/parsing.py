"""Robust JSON extraction from model text and validation against the JSON-schema subset we use.

Supported schema keywords: ``type`` (object, array, string, number, integer, boolean, null, or a
list of them), ``properties``, ``required``, ``additionalProperties`` (bool), ``items``,
``enum``, ``const``, ``minimum``, ``maximum``, ``minItems``, ``maxItems``, ``minLength``,
``maxLength``. Unknown keywords are ignored (``description``, ``title``, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class JSONExtractError(ValueError):
    """No JSON value could be found in the text."""


@dataclass(frozen=True)
class ParseOutcome:
    """``data`` when the text held a schema-valid JSON value, else ``reason`` + ``detail``."""

    data: Any | None
    reason: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: bare, inside code fences, after prose, with trailing commas.

    Raises :class:`JSONExtractError` when there is none.
    """
    if text is None:
        raise JSONExtractError("empty reply")
    s = (_THINK.sub("", text) if "<" in text else text).strip()
    if not s:
        raise JSONExtractError("empty reply")
    if s[0] in "{[":   # most replies are one bare JSON value: the first candidate, tried first
        try:
            return json.loads(s)
        except ValueError:
            pass
    candidates: list[str] = [s]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(s)]
    for cand in candidates:
        for variant in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            try:
                return json.loads(variant)
            except ValueError:
                pass
    # Scan for the first balanced {...} or [...] block (prose before/after it).
    for start, ch in enumerate(s):
        if ch not in "{[":
            continue
        end = _balanced_end(s, start)
        if end is None:
            continue
        block = s[start:end + 1]
        for variant in (block, _TRAILING_COMMA.sub(r"\1", block)):
            try:
                return json.loads(variant)
            except ValueError:
                pass
    raise JSONExtractError(f"no JSON value found in reply ({len(text)} chars)")


def _balanced_end(s: str, start: int) -> int | None:
    depth = 0
    in_str = False
    esc = False
    for i in range(start, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i
    return None


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every violation of ``schema`` by ``value`` as ``"<path>: <problem>"`` (empty = valid)."""
    errors: list[str] = []
    if not isinstance(schema, dict):
        return errors
    stype = schema.get("type")
    if stype is not None:
        names = stype if isinstance(stype, list) else [stype]
        if not any(_is_type(value, n) for n in names):
            errors.append(f"{path}: expected {'|'.join(names)}, got {type(value).__name__}")
            return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must equal {schema['const']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required property '{key}'")
        for key, sub in props.items():
            if key in value:
                errors.extend(validate(value[key], sub, f"{path}.{key}"))
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    errors.append(f"{path}: unexpected property '{key}'")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                errors.extend(validate(item, items, f"{path}[{i}]"))
    return errors


def coerce_integers(value: Any, schema: dict[str, Any]) -> Any:
    """Turn ``2.0`` into ``2`` where the schema says integer (models often write floats)."""
    if not isinstance(schema, dict):
        return value
    stype = schema.get("type")
    if stype == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: coerce_integers(v, props.get(k, {})) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [coerce_integers(v, schema["items"]) for v in value]
    return value


Check = Callable[[Any, str, list[str]], None]


def _no_check(value: Any, path: str, errors: list[str]) -> None:
    return None


def compile_validator(schema: Any) -> Check:
    """``schema`` compiled once into ``check(value, path, errors)``: appends exactly the
    problems :func:`validate` returns, without re-reading the schema for every reply."""
    if not isinstance(schema, dict):
        return _no_check
    stype = schema.get("type")
    names = None if stype is None else (stype if isinstance(stype, list) else [stype])
    steps = [f for f in (_scalar_checks(schema), _object_check(schema), _array_check(schema))
             if f is not None]
    # plain types are one isinstance; numbers need _is_type (bool is not a number, 2.0 is
    # an integer)
    simple = names is not None and not ({"number", "integer"} & set(names))
    types = tuple(t for n in names or () for t in _TYPES.get(n, (object,)))

    def check(value: Any, path: str, errors: list[str]) -> None:
        if names is not None and not (isinstance(value, types) if simple
                                      else any(_is_type(value, n) for n in names)):
            errors.append(f"{path}: expected {'|'.join(names)}, got {type(value).__name__}")
            return
        for step in steps:
            step(value, path, errors)

    return check


def _scalar_checks(schema: dict[str, Any]) -> Check | None:
    keys = ("enum", "const", "minimum", "maximum", "minLength", "maxLength")
    scalar = {k: schema[k] for k in keys if k in schema}
    if not scalar:
        return None

    def check(value: Any, path: str, errors: list[str]) -> None:
        errors.extend(validate(value, scalar, path))   # the scalar keywords only

    return check


def _object_check(schema: dict[str, Any]) -> Check | None:
    props = schema.get("properties", {})
    required = list(schema.get("required", []))
    closed = schema.get("additionalProperties") is False
    if not props and not required and not closed:
        return None
    subs = [(k, compile_validator(v)) for k, v in props.items()]

    def check(value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, dict):
            return
        for key in required:
            if key not in value:
                errors.append(f"{path}: missing required property '{key}'")
        for key, sub in subs:
            if key in value:
                sub(value[key], f"{path}.{key}", errors)
        if closed:
            for key in value:
                if key not in props:
                    errors.append(f"{path}: unexpected property '{key}'")

    return check


def _array_check(schema: dict[str, Any]) -> Check | None:
    lo, hi, items = schema.get("minItems"), schema.get("maxItems"), schema.get("items")
    if lo is None and hi is None and not isinstance(items, dict):
        return None
    sub = compile_validator(items) if isinstance(items, dict) else None

    def check(value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, list):
            return
        if lo is not None and len(value) < lo:
            errors.append(f"{path}: fewer than {lo} items")
        if hi is not None and len(value) > hi:
            errors.append(f"{path}: more than {hi} items")
        if sub is not None:
            for i, item in enumerate(value):
                sub(item, f"{path}[{i}]", errors)

    return check


def compile_ok(schema: Any) -> Callable[[Any], bool]:
    """``schema`` compiled into ``ok(value)``: True exactly when :func:`compile_validator`'s
    check finds no problem, without building a path or a message (most replies are valid:
    the messages are made only for one that is not)."""
    if not isinstance(schema, dict):
        return _always
    stype = schema.get("type")
    names = None if stype is None else (stype if isinstance(stype, list) else [stype])
    simple = names is not None and not ({"number", "integer"} & set(names))
    types = tuple(t for n in names or () for t in _TYPES.get(n, (object,)))
    enum, const = schema.get("enum"), schema.get("const", _ABSENT)
    lo_n, hi_n = schema.get("minimum"), schema.get("maximum")
    lo_s, hi_s = schema.get("minLength"), schema.get("maxLength")
    props = schema.get("properties", {})
    required = list(schema.get("required", []))
    closed = schema.get("additionalProperties") is False
    subs = [(k, compile_ok(v)) for k, v in props.items()]
    lo_a, hi_a, items = schema.get("minItems"), schema.get("maxItems"), schema.get("items")
    item_ok = compile_ok(items) if isinstance(items, dict) else None

    one = names[0] if names is not None and len(names) == 1 else None
    numeric = lo_n is not None or hi_n is not None
    sized = lo_s is not None or hi_s is not None

    # plain loops, not any()/all() over generators: this runs for every value of every reply
    def ok(value: Any) -> bool:
        if names is not None:
            if simple:
                if not isinstance(value, types):
                    return False
            elif one is not None:
                if not _is_type(value, one):
                    return False
            elif not any(_is_type(value, n) for n in names):
                return False
        if enum is not None and value not in enum:
            return False
        if const is not _ABSENT and value != const:
            return False
        if (numeric and isinstance(value, (int, float)) and not isinstance(value, bool)
                and _outside(value, lo_n, hi_n)):
            return False
        if sized and isinstance(value, str) and _outside(len(value), lo_s, hi_s):
            return False
        if isinstance(value, dict):
            for key in required:
                if key not in value:
                    return False
            for key, sub in subs:
                if key in value and not sub(value[key]):
                    return False
            if closed:
                for key in value:
                    if key not in props:
                        return False
        elif isinstance(value, list):
            if _outside(len(value), lo_a, hi_a):
                return False
            if item_ok is not None:
                for item in value:
                    if not item_ok(item):
                        return False
        return True

    return ok


_ABSENT = object()


def _outside(x: Any, lo: Any, hi: Any) -> bool:
    return (lo is not None and x < lo) or (hi is not None and x > hi)


def _always(value: Any) -> bool:
    return True


def compile_coerce(schema: Any) -> Callable[[Any], Any] | None:
    """:func:`coerce_integers` compiled for ``schema``, visiting only the parts of a reply
    that hold an integer (None: the schema has none)."""
    if not _has_integers(schema):
        return None
    integer = schema.get("type") == "integer"
    subs = {k: c for k, v in (schema.get("properties") or {}).items()
            if (c := compile_coerce(v)) is not None}
    items = schema.get("items")
    item = compile_coerce(items) if isinstance(items, dict) else None

    def coerce(value: Any) -> Any:
        if integer and isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict) and subs:
            return {k: subs[k](v) if k in subs else v for k, v in value.items()}
        if isinstance(value, list) and item is not None:
            return [item(v) for v in value]
        return value

    return coerce


def _has_integers(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "integer":
        return True
    return (any(_has_integers(v) for v in (schema.get("properties") or {}).values())
            or _has_integers(schema.get("items")))


@dataclass(frozen=True)
class CompiledSchema:
    """A schema prepared once for many replies: :meth:`parse` equals :func:`parse_reply`."""

    schema: dict[str, Any]
    check: Check
    ok: Callable[[Any], bool]
    coerce: Callable[[Any], Any] | None

    @classmethod
    def of(cls, schema: dict[str, Any]) -> CompiledSchema:
        return cls(schema, compile_validator(schema), compile_ok(schema),
                   compile_coerce(schema))

    def problems(self, value: Any) -> list[str]:
        if self.ok(value):
            return []
        errors: list[str] = []
        self.check(value, "$", errors)
        return errors

    def parse(self, text: str | None) -> ParseOutcome:
        return _parse(text, self.schema, self)


def parse_reply(text: str | None, schema: dict[str, Any]) -> ParseOutcome:
    """Extract and validate; ``parse_error`` when no JSON, ``schema_error`` when it mismatches."""
    return _parse(text, schema, None)


def _parse(text: str | None, schema: dict[str, Any],
           compiled: CompiledSchema | None) -> ParseOutcome:
    if text is None or not str(text).strip():
        return ParseOutcome(None, "parse_error", "empty reply")
    try:
        value = extract_json(text)
    except JSONExtractError as exc:
        return ParseOutcome(None, "parse_error", str(exc))
    if compiled is None:
        value = coerce_integers(value, schema)
        problems = validate(value, schema)
    else:
        if compiled.coerce is not None:
            value = compiled.coerce(value)
        problems = compiled.problems(value)
    if problems:
        return ParseOutcome(None, "schema_error", "; ".join(problems[:5]))
    return ParseOutcome(value)


def example_instance(schema: dict[str, Any], seed: int = 0) -> Any:
    """A deterministic instance valid against ``schema`` (used by the fake server and docs)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][seed % len(schema["enum"])]
    stype = schema.get("type", "object")
    if isinstance(stype, list):
        stype = next((t for t in stype if t != "null"), "null")
    if stype == "object":
        props = schema.get("properties", {})
        return {k: example_instance(v, seed + i) for i, (k, v) in enumerate(props.items())}
    if stype == "array":
        n = max(int(schema.get("minItems", 1)), 1)
        n = min(n, int(schema.get("maxItems", n)))
        item_schema = schema.get("items", {"type": "string"})
        items = [example_instance(item_schema, seed + i) for i in range(n)]
        id_schema = (item_schema.get("properties") or {}).get("id") \
            if isinstance(item_schema, dict) else None
        if isinstance(id_schema, dict) and id_schema.get("type") == "integer" \
                and "enum" not in id_schema:
            # items that carry an integer "id" are numbered 1..n, as prompts that list
            # numbered inputs expect from a judge
            for i, item in enumerate(items):
                item["id"] = i + 1
        return items
    if stype == "string":
        text = f"text {seed}"
        lo = int(schema.get("minLength", 0))
        return text + "x" * max(0, lo - len(text))
    if stype in ("number", "integer"):
        lo = schema.get("minimum", 0)
        hi = schema.get("maximum", lo + 10)
        span = int(hi - lo)
        v = lo + (seed % (span + 1) if span >= 0 else 0)
        return int(v) if stype == "integer" else float(v)
    if stype == "boolean":
        return seed % 2 == 0
    return None
