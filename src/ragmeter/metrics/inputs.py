"""The one rule for "this sample lacks an input", shared by every answer metric.

Lexical, semantic and judged metrics name the sample fields they read; a sample without one of
them is unscored with a reason (never 0): ``missing_field:<name>`` when the field is absent
(``None``) or an empty list, ``empty_input`` when it is present but blank. A judged metric asks
the judge nothing about such a sample.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmeter.data.sample import Sample


def missing_field(sample: Sample, names: Sequence[str]) -> str | None:
    """Why ``sample`` cannot be scored for lack of input, or ``None``.

    ``missing_field:<name>`` when a required field is absent (``None``) or an empty list;
    ``empty_input`` when it is present but blank (no judge call is made for it).
    """
    for name in names:
        value = getattr(sample, name)
        if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
            return f"missing_field:{name}"
    for name in names:
        value = getattr(sample, name)
        if isinstance(value, str) and not value.strip():
            return "empty_input"
        if isinstance(value, (list, tuple)) and all(not str(v).strip() for v in value):
            return "empty_input"
    return None


__all__ = ["missing_field"]
