"""The one JSON writer for result documents (``--out``, exports): strict JSON only.

Python's :mod:`json` writes a float NaN or infinity as the bare words ``NaN`` / ``Infinity``,
which strict parsers (JavaScript's ``JSON.parse``, jq, most databases) reject. Here every
non-finite number becomes ``null``; the document says why next to the value (a metric's
``reason``, an aggregate's ``n == 0``), so nothing is hidden by the null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every NaN / ±inf (Python or numpy) replaced by ``None``, recursively
    through mappings, lists and tuples; numpy scalars and arrays become plain Python values."""
    if isinstance(obj, float | np.floating):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return finite_or_none(obj.tolist())
    if isinstance(obj, Mapping):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_or_none(v) for v in obj]
    return obj


def dumps(obj: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of ``obj`` (non-finite numbers as ``null``; other unknown objects as
    their ``str``)."""
    return json.dumps(finite_or_none(obj), ensure_ascii=False, indent=indent, default=str,
                      allow_nan=False, sort_keys=sort_keys)


__all__ = ["dumps", "finite_or_none"]
