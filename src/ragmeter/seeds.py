"""The range of a random seed, one rule for options and configs.

Seeds feed numpy generators and are stored with every run (a 64-bit integer column); the
conventional 32-bit range fits both. A seed outside it is a usage error naming the option or
key, found when it is read rather than when the run is saved.
"""

from __future__ import annotations

from typing import Any

from ragmeter.errors import ConfigError

#: the largest seed accepted (seeds are 0 … 2**32 - 1)
MAX_SEED = 2 ** 32 - 1


def check_seed(value: Any, where: str = "seed") -> int:
    """``value`` as a seed, or :class:`ConfigError` naming ``where`` (an option or key)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(where, f"must be an integer seed, got {value!r}")
    if not 0 <= value <= MAX_SEED:
        raise ConfigError(where, f"must be between 0 and {MAX_SEED} (2**32 - 1), got {value}")
    return value


__all__ = ["MAX_SEED", "check_seed"]
