"""Validate a tier's ``options:`` mapping into its ``Options`` dataclass.

The ``Options`` dataclass is the schema (:mod:`ragmeter.schema`): every key must be one of its
fields (an unknown or mistyped key is a :class:`ConfigError` naming the dotted key and the
allowed keys) and every value must match the field's type and rules.

The options the runner itself reads (``limit``, ``sample_ids``) are checked for every tier,
a plug-in's unchecked mapping included: ``limit`` is an integer ≥ 1 (``0`` or ``-1`` would
leave the tier nothing to run, in silence) and ``sample_ids`` a non-empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter import schema
from ragmeter.errors import ConfigError


def option_names(cls: type) -> list[str]:
    """The keys an ``Options`` dataclass accepts (``[]`` for ``dict``: anything goes)."""
    return schema.keys(cls)


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
    return schema.parse(cls, data, path, what="option")


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


__all__ = ["option_names", "parse_options"]
