"""Reading JSON text with every failure as a :class:`json.JSONDecodeError` (line, column).

Python refuses to convert an integer of more than 4,300 digits (a guard against quadratic
time) with a plain ``ValueError`` that names no position; input files meet it as an internal
error. :func:`loads` turns it into a decode error at the offending number, so every reader
reports it like any other malformed JSON: file, line, column.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

#: the digits Python converts at most (``sys.get_int_max_str_digits``; 4300 by default)
_LIMIT = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 0


def loads(text: str, **kwargs: Any) -> Any:
    """:func:`json.loads`, with an over-long integer reported as a :class:`JSONDecodeError`."""
    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        m = re.search(rf"\d{{{_LIMIT + 1},}}", text) if _LIMIT else None
        if m is None:
            raise
        raise json.JSONDecodeError(f"a number of {len(m.group())} digits (at most {_LIMIT} "
                                   "can be read)", text, m.start()) from exc


__all__ = ["loads"]
