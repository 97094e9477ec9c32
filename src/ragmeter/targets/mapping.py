"""Reading a reply and writing a request: paths, templates, ``${env:NAME}`` values, id rules.

* :func:`extract` reads a path from a parsed JSON reply: a JSON pointer (``/data/answer``,
  ``/sources/0/id``) or a dotted path (``data.answer``, ``sources[0].id``) where ``[*]`` or
  ``*`` takes every item of a list (``sources[*].text`` -> a list of texts).
* :func:`render` fills a request template: a string that is exactly one placeholder
  (``"{history}"``, ``"{k}"``) is replaced by the value itself (a list stays a list, a number
  a number); placeholders inside longer strings are replaced by their text.
* :func:`expand_env` turns ``"Bearer ${env:MY_KEY}"`` into the header value and registers the
  value as a secret, so it is masked wherever it could be printed.
* :class:`IdRule` maps the document ids or URLs a target returns onto the evalset's gold ids.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.secrets import register_secret


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_STEP = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")
PLACEHOLDERS = ("question", "history", "session_id", "k", "contexts", "id")
#: ``{name}`` (a placeholder, known or not: checked at load time), ``{{`` / ``}}`` (a brace)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{\s*([A-Za-z_][\w.\-]*)\s*\}")
_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def parse_path(path: str) -> list[str]:
    """Split a path into steps (``*`` = every item); a ConfigError for an empty path."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigError("target.response", f"a path must be a non-empty string, got {path!r}")
    if path.startswith("/"):
        return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    steps: list[str] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
            continue
        m = _STEP.match(text, pos)
        if m is None:
            raise ConfigError("target.response", f"cannot read path {path!r} at {text[pos:]!r}")
        steps.append(m.group(1) if m.group(1) is not None else m.group(2))
        pos = m.end()
    return steps


@functools.lru_cache(maxsize=1024)
def _steps(path: str) -> tuple[str, ...]:
    return tuple(parse_path(path))


def extract(data: Any, path: str) -> Any:
    """The value at ``path`` in ``data``, or :data:`MISSING` (a path is parsed once)."""
    return _walk(data, _steps(path) if isinstance(path, str) else parse_path(path))


def extract_steps(data: Any, steps: Sequence[str]) -> Any:
    """The value at a parsed path (:func:`parse_path`'s steps), or :data:`MISSING`."""
    return _walk(data, steps)


def _walk(node: Any, steps: Sequence[str]) -> Any:
    for i, step in enumerate(steps):
        if step == "*":
            if not isinstance(node, list):
                return MISSING
            rest = steps[i + 1:]
            kept = [x for x in (_walk(x, rest) for x in node) if x is not MISSING]
            if node and rest and not kept:   # a field that no item has is not an empty list
                return MISSING
            return kept
        if isinstance(node, Mapping):
            if step not in node:
                return MISSING
            node = node[step]
        elif isinstance(node, list) and re.fullmatch(r"-?\d+", step):
            idx = int(step)
            if not -len(node) <= idx < len(node):
                return MISSING
            node = node[idx]
        else:
            return MISSING
    return node


def check_template(template: Any, key: str) -> None:
    """A ConfigError naming the first placeholder of ``template`` that is not one of
    :data:`PLACEHOLDERS` (``{questoin}`` would be sent as written), with the known ones."""
    if isinstance(template, str):
        for m in _PLACEHOLDER.finditer(template):
            if m.group(1) is not None and m.group(0)[1:-1] not in PLACEHOLDERS:
                hint = " (write a literal brace as {{ or }})"
                raise ConfigError(key, f"unknown placeholder {m.group(0)!r} in {template!r}"
                                  + hint, [f"{{{p}}}" for p in PLACEHOLDERS])
    elif isinstance(template, Mapping):
        for k, v in template.items():
            check_template(k, f"{key}.{k}")
            check_template(v, f"{key}.{k}")
    elif isinstance(template, list):
        for i, v in enumerate(template):
            check_template(v, f"{key}[{i}]")


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with every placeholder filled (see the module doc); ``{{`` and ``}}``
    are literal braces. Templates are checked at load time (:func:`check_template`)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) is not None:
            return values.get(whole.group(1))
        return _PLACEHOLDER.sub(lambda m: _filled(m, values), template)
    if isinstance(template, Mapping):
        return {str(k): render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    return template


def _filled(m: re.Match[str], values: Mapping[str, Any]) -> str:
    if m.group(1) is None:
        return m.group(0)[0]          # {{ -> {, }} -> }
    return _text(values.get(m.group(1)))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n\n".join(map(str, value))
    return str(value)


def env_names(value: str) -> list[str]:
    """The environment variables a ``${env:NAME}`` value names."""
    return _ENV.findall(value)


def expand_env(value: str, key: str) -> str:
    """``${env:NAME}`` replaced by the variable's value (registered as a secret); an unset
    variable is a ConfigError naming it."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        got = os.environ.get(name)
        if got is None:
            raise ConfigError(key, f"environment variable {name} is not set")
        register_secret(got)
        return got

    return _ENV.sub(one, value)


ID_RULES = ("exact", "last_segment", "regex", "map")


@dataclass(frozen=True)
class IdRule:
    """How a returned document id or URL becomes a gold id.

    ``exact``: as returned; ``last_segment``: the last non-empty path segment of a URL
    (``https://wiki/x/dorm-payment/`` -> ``dorm-payment``); ``regex``: the first group of
    ``pattern``; ``map``: a table ``{url or id: gold id}`` (``table``). Unmapped values are
    kept as returned (they count as not relevant)."""

    rule: str = "exact"
    pattern: str | None = None
    table: Mapping[str, str] = field(default_factory=dict)

    def apply(self, value: str) -> str:
        v = str(value)
        if self.rule == "last_segment":
            path = v.split("?", 1)[0].split("#", 1)[0].rstrip("/")
            return path.rsplit("/", 1)[-1] or v
        if self.rule == "regex" and self.pattern:
            m = re.search(self.pattern, v)
            return (m.group(1) if m and m.groups() else m.group(0)) if m else v
        if self.rule == "map":
            return self.table.get(v, self.table.get(v.rstrip("/"), v))
        return v

    def describe(self) -> str:
        if self.rule == "regex":
            return f"regex:{self.pattern}"
        if self.rule == "map":
            return f"map:{len(self.table)}"
        return self.rule


__all__ = ["ID_RULES", "MISSING", "PLACEHOLDERS", "IdRule", "check_template", "env_names",
           "expand_env", "extract", "extract_steps", "parse_path", "render"]
