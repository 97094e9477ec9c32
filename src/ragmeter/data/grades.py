"""Relevance grades: integers within a signed 32-bit range, checked wherever gold is read.

A grade is stored in 32-bit integer arrays when metrics are computed; a larger one would wrap
around silently (an NDCG of 1.0 instead of 0.63), so it is refused as an input error instead.
"""

from __future__ import annotations

#: Largest accepted relevance grade (and ``-MAX_GRADE - 1`` the smallest).
MAX_GRADE = 2**31 - 1


def grade_problem(grade: object) -> str | None:
    """Why ``grade`` is not a usable relevance grade, or None when it is."""
    if isinstance(grade, bool) or not isinstance(grade, int):
        return f"must be an integer grade, got {grade!r}"
    if grade > MAX_GRADE or grade < -MAX_GRADE - 1:
        return (f"grade {grade} is out of range (relevance grades must lie within "
                f"±{MAX_GRADE:,}, a signed 32-bit integer)")
    return None
